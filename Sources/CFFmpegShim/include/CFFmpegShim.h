// Prefixed wrappers for the FFmpeg macros Swift cannot import (AVERROR codes, NOPTS,
// channel-layout initialisers, av_err2str). Every function is prefixed `cffshim_`.
#ifndef CFFMPEG_SHIM_H
#define CFFMPEG_SHIM_H

#include <stdint.h>
#include <stddef.h>

struct AVChannelLayout;
struct AVFrame;

/// AVERROR(EAGAIN): the codec wants more input or has no output yet.
int cffshim_error_again(void);
/// AVERROR_EOF: the stream or codec is drained.
int cffshim_error_eof(void);
/// AVERROR(ENOMEM).
int cffshim_error_nomem(void);
/// AVERROR(EINVAL).
int cffshim_error_invalid(void);
/// AVERROR(ETIMEDOUT)
int cffshim_error_timedout(void);
/// AVERROR(EPIPE)
int cffshim_error_pipe(void);
/// AVERROR_EXIT: an interrupt callback asked a blocking I/O call to give up.
int cffshim_error_exit(void);
/// AVERROR(posix_errno), for classifying network failures (ECONNREFUSED ...).
int cffshim_averror(int posix_errno);
/// AV_NOPTS_VALUE.
int64_t cffshim_nopts(void);
/// AV_TIME_BASE.
int cffshim_time_base(void);
/// Writes the av_strerror text of `code` into `buf` (always NUL-terminated).
void cffshim_strerror(int code, char *buf, size_t size);
/// Initialises `layout` to the default layout for `channels` (stereo for 2, mono for 1).
void cffshim_channel_layout_default(struct AVChannelLayout *layout, int channels);
/// Display-matrix rotation of a frame in degrees (0 when absent), from side data.
double cffshim_frame_rotation(const struct AVFrame *frame);

/// Installs a log callback that keeps, per thread, the last error the TLS protocol logged
/// (FFmpeg reports a failed certificate check only in its log), then logs as usual.
void cffshim_install_tls_error_capture(void);
/// Copies and clears this thread's last TLS error into `buf`; returns its length (0: none).
size_t cffshim_take_tls_error(char *buf, size_t size);

#endif
