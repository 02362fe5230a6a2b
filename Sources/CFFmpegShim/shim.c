#include "CFFmpegShim.h"
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <libavutil/log.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/frame.h>

int cffshim_error_again(void) { return AVERROR(EAGAIN); }
int cffshim_error_eof(void) { return AVERROR_EOF; }
int cffshim_error_nomem(void) { return AVERROR(ENOMEM); }
int cffshim_error_invalid(void) { return AVERROR(EINVAL); }
int cffshim_error_timedout(void) { return AVERROR(ETIMEDOUT); }
int cffshim_error_pipe(void) { return AVERROR(EPIPE); }
int cffshim_error_exit(void) { return AVERROR_EXIT; }
int cffshim_averror(int posix_errno) { return AVERROR(posix_errno); }
int64_t cffshim_nopts(void) { return AV_NOPTS_VALUE; }
int cffshim_time_base(void) { return AV_TIME_BASE; }

void cffshim_strerror(int code, char *buf, size_t size) {
    if (size == 0) return;
    if (av_strerror(code, buf, size) < 0) {
        snprintf(buf, size, "FFmpeg error %d", code);
    }
    buf[size - 1] = 0;
}

void cffshim_channel_layout_default(struct AVChannelLayout *layout, int channels) {
    av_channel_layout_default(layout, channels);
}

double cffshim_frame_rotation(const struct AVFrame *frame) {
    AVFrameSideData *sd = av_frame_get_side_data(frame, AV_FRAME_DATA_DISPLAYMATRIX);
    if (!sd) return 0;
    return av_display_rotation_get((const int32_t *)sd->data);
}

static _Thread_local char cffshim_tls_error[256];

static void cffshim_log_callback(void *avcl, int level, const char *fmt, va_list vl) {
    if (avcl != NULL && level <= AV_LOG_ERROR) {
        // A protocol logs through its URLContext, whose item name is the protocol's name.
        const AVClass *cls = *(const AVClass **)avcl;
        const char *name = cls == NULL ? NULL : (cls->item_name != NULL ? cls->item_name(avcl) : cls->class_name);
        if (name != NULL && strcmp(name, "tls") == 0) {
            va_list copy;
            va_copy(copy, vl);
            vsnprintf(cffshim_tls_error, sizeof cffshim_tls_error, fmt, copy);
            va_end(copy);
            size_t length = strlen(cffshim_tls_error);
            while (length > 0 && (cffshim_tls_error[length - 1] == '\n' || cffshim_tls_error[length - 1] == '\r')) {
                cffshim_tls_error[--length] = 0;
            }
        }
    }
    av_log_default_callback(avcl, level, fmt, vl);
}

void cffshim_install_tls_error_capture(void) { av_log_set_callback(cffshim_log_callback); }

size_t cffshim_take_tls_error(char *buf, size_t size) {
    if (size == 0) return 0;
    size_t length = strlen(cffshim_tls_error);
    if (length >= size) length = size - 1;
    memcpy(buf, cffshim_tls_error, length);
    buf[length] = 0;
    cffshim_tls_error[0] = 0;
    return length;
}
