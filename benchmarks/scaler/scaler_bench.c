// Tile scaler shoot-out: FFmpeg's swscale (SWS_BILINEAR, what TileScaler uses) against
// Debian's libyuv (I420Scale with kFilterBilinear and kFilterBox), on the tile scalings our
// benchmark scenarios do, each writing a crop of a YUV420P picture into a rectangle of a
// larger canvas exactly as the compositor does.
//
// For each case and method it prints the median time per tile call, writes the tile to
// <outdir>/<case>-<method>.yuv (for SSIM, see run.sh next to this file), and checks that
// nothing outside the destination rectangle was written (swscale's SIMD may write up to
// 32 bytes right of it, which TileScaler saves and restores).
//
// Build: gcc -O2 -Wall -Wextra -o scaler_bench scaler_bench.c
//          $(pkg-config --cflags --libs libswscale libavutil) -lyuv   (run.sh does it)
// Usage: scaler_bench SOURCE720.yuv SOURCE360.yuv OUTDIR   (raw yuv420p, 1280x720 and 640x360)
#include <libswscale/swscale.h>
#include <libavutil/pixfmt.h>
#include <libyuv/scale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { int w, h; uint8_t *y, *u, *v; int ys, us, vs; } Picture;

static Picture picture(int w, int h, uint8_t fill) {
    Picture p = { w, h, NULL, NULL, NULL, w + 64, (w + 64) / 2, (w + 64) / 2 };
    p.y = malloc((size_t)p.ys * h);
    p.u = malloc((size_t)p.us * (h / 2));
    p.v = malloc((size_t)p.vs * (h / 2));
    memset(p.y, fill, (size_t)p.ys * h);
    memset(p.u, fill, (size_t)p.us * (h / 2));
    memset(p.v, fill, (size_t)p.vs * (h / 2));
    return p;
}

static Picture load(const char *path, int w, int h) {
    Picture p = picture(w, h, 0);
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    int ok = 1;
    for (int r = 0; r < h; r++) ok &= fread(p.y + r * p.ys, 1, w, f) == (size_t)w;
    for (int r = 0; r < h / 2; r++) ok &= fread(p.u + r * p.us, 1, w / 2, f) == (size_t)(w / 2);
    for (int r = 0; r < h / 2; r++) ok &= fread(p.v + r * p.vs, 1, w / 2, f) == (size_t)(w / 2);
    fclose(f);
    if (!ok) { fprintf(stderr, "%s: short read\n", path); exit(1); }
    return p;
}

typedef struct { const char *name; int sx, sy, sw, sh; int dw, dh; const Picture *src; } Case;
enum { SWS_BILIN, YUV_BILIN, YUV_BOX, METHODS };
static const char *method_names[METHODS] = { "swscale-bilinear", "libyuv-bilinear", "libyuv-box" };

// The destination rectangle sits at (dx, dy) of a canvas larger than the tile.
static const int dx = 64, dy = 32;

static void scale_once(int method, const Case *c, Picture *canvas, struct SwsContext *sws) {
    const Picture *s = c->src;
    const uint8_t *sy = s->y + c->sy * s->ys + c->sx;
    const uint8_t *su = s->u + (c->sy / 2) * s->us + c->sx / 2;
    const uint8_t *sv = s->v + (c->sy / 2) * s->vs + c->sx / 2;
    uint8_t *ty = canvas->y + dy * canvas->ys + dx;
    uint8_t *tu = canvas->u + (dy / 2) * canvas->us + dx / 2;
    uint8_t *tv = canvas->v + (dy / 2) * canvas->vs + dx / 2;
    if (method == SWS_BILIN) {
        const uint8_t *src[4] = { sy, su, sv, NULL };
        int sst[4] = { s->ys, s->us, s->vs, 0 };
        uint8_t *dst[4] = { ty, tu, tv, NULL };
        int dst_st[4] = { canvas->ys, canvas->us, canvas->vs, 0 };
        sws_scale(sws, src, sst, 0, c->sh, dst, dst_st);
    } else {
        I420Scale(sy, s->ys, su, s->us, sv, s->vs, c->sw, c->sh,
                  ty, canvas->ys, tu, canvas->us, tv, canvas->vs, c->dw, c->dh,
                  method == YUV_BOX ? kFilterBox : kFilterBilinear);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Bytes outside the destination rectangle that differ from the sentinel.
static long outside_writes(const Picture *canvas, const Case *c, uint8_t sentinel) {
    long count = 0;
    for (int r = 0; r < canvas->h; r++)
        for (int x = 0; x < canvas->w; x++) {
            int inside = r >= dy && r < dy + c->dh && x >= dx && x < dx + c->dw;
            if (!inside && canvas->y[r * canvas->ys + x] != sentinel) count++;
        }
    for (int r = 0; r < canvas->h / 2; r++)
        for (int x = 0; x < canvas->w / 2; x++) {
            int inside = r >= dy / 2 && r < (dy + c->dh) / 2 && x >= dx / 2 && x < (dx + c->dw) / 2;
            if (!inside && canvas->u[r * canvas->us + x] != sentinel) count++;
            if (!inside && canvas->v[r * canvas->vs + x] != sentinel) count++;
        }
    return count;
}

static void save_tile(const Picture *canvas, const Case *c, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    for (int r = 0; r < c->dh; r++) fwrite(canvas->y + (dy + r) * canvas->ys + dx, 1, c->dw, f);
    for (int r = 0; r < c->dh / 2; r++) fwrite(canvas->u + (dy / 2 + r) * canvas->us + dx / 2, 1, c->dw / 2, f);
    for (int r = 0; r < c->dh / 2; r++) fwrite(canvas->v + (dy / 2 + r) * canvas->vs + dx / 2, 1, c->dw / 2, f);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s SOURCE720.yuv SOURCE360.yuv OUTDIR\n", argv[0]); return 2; }
    Picture s720 = load(argv[1], 1280, 720), s360 = load(argv[2], 640, 360);
    const Case cases[] = {
        // (a) 2x2 grid on 1280x720: a 1280x720 publisher into a 636x356 tile (cover crop).
        { "a-720-to-636x356", 0, 0, 1280, 716, 636, 356, &s720 },
        // (b) 4x3 grid on 1920x1080: a 640x360 publisher into a 476x356 tile (cover crop).
        { "b-360-to-476x356", 80, 0, 482, 360, 476, 356, &s360 },
        // Picture-in-picture window: 1280x720 into 320x180.
        { "pip-720-to-320x180", 0, 0, 1280, 720, 320, 180, &s720 },
        // One small publisher shown large: 640x360 into 1280x720 (exactly 2x).
        { "up-360-to-1280x720", 0, 0, 640, 360, 1280, 720, &s360 },
        // 2x2 grid on 1920x1080 of 640x360 publishers: 956x536 tiles (cover crop), 1.49x.
        { "up-360-to-956x536", 0, 0, 640, 358, 956, 536, &s360 },
    };
    printf("%-20s %-18s %10s %10s %8s\n", "case", "method", "us/call", "Mpx/s", "outside");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const Case *c = &cases[i];
        Picture canvas = picture(c->dw + 2 * dx, c->dh + 2 * dy, 0xAB);
        struct SwsContext *sws = sws_getContext(c->sw, c->sh, AV_PIX_FMT_YUV420P, c->dw, c->dh, AV_PIX_FMT_YUV420P,
                                                SWS_BILINEAR, NULL, NULL, NULL);
        for (int m = 0; m < METHODS; m++) {
            memset(canvas.y, 0xAB, (size_t)canvas.ys * canvas.h);
            memset(canvas.u, 0xAB, (size_t)canvas.us * (canvas.h / 2));
            memset(canvas.v, 0xAB, (size_t)canvas.vs * (canvas.h / 2));
            scale_once(m, c, &canvas, sws);
            long outside = outside_writes(&canvas, c, 0xAB);
            char path[512];
            snprintf(path, sizeof path, "%s/%s-%s.yuv", argv[3], c->name, method_names[m]);
            save_tile(&canvas, c, path);
            // Seven rounds of ~0.3 s each; the median round.
            int iterations = 1;
            for (double t0 = now(); now() - t0 < 0.05; iterations *= 2)
                for (int k = 0; k < iterations; k++) scale_once(m, c, &canvas, sws);
            iterations = iterations * 6;
            double rounds[7];
            for (int r = 0; r < 7; r++) {
                double t0 = now();
                for (int k = 0; k < iterations; k++) scale_once(m, c, &canvas, sws);
                rounds[r] = (now() - t0) / iterations;
            }
            qsort(rounds, 7, sizeof rounds[0], compare_double);
            printf("%-20s %-18s %10.1f %10.1f %8ld\n", c->name, method_names[m], rounds[3] * 1e6,
                   (double)c->dw * c->dh / rounds[3] / 1e6, outside);
        }
        sws_freeContext(sws);
    }
    return 0;
}
