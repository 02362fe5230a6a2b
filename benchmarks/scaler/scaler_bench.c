// Tile scaler shoot-out: FFmpeg's swscale against Debian's libyuv for TileScaler.
//
// TileScaler (Sources/FFmpeg/Scaler.swift) scales a crop of a decoded YUV420P frame straight
// into a rectangle of the YUV420P output canvas with one sws_scale call (SWS_X, cached
// context) per tile per output frame. This program does exactly that call for each tile
// geometry of our scenarios, and the same job with libyuv's I420Scale (kFilterLinear,
// kFilterBilinear, kFilterBox), plus a few other swscale flags for scale, and reports:
//
//   speed    median time per tile call (CPU time of this thread, so that other processes on
//            a loaded 2-core machine count less; wall time is printed too) and output
//            megapixels/s. Methods are timed round-robin (round 1 of every method, then
//            round 2, ...) so load changes hit them alike; the median of the rounds is kept.
//            The source cycles through the loaded frames: all of them by default (with 120
//            frames of 1280x720, 166 MB, more than any cache: a cold source), or only the
//            first N with -f N (-f 1: one picture, hot in cache).
//   quality  SSIM (Wang et al. 2004: 11x11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03,
//            valid windows only) of the Y, U and V planes, and Y PSNR, against a reference:
//            our own double-precision, separable Lanczos-3 scale of the same crop, kernel
//            widened by the scale factor when downscaling (antialiased, like Pillow's or
//            ImageMagick's), pixel centres aligned ((i + 0.5) * src / dst - 0.5), edges
//            clamped to the crop, each plane on its own (centred chroma, the siting both
//            libraries assume). The reference is kept in double, not rounded to 8 bits.
//   safety   bytes written outside the destination rectangle (the canvas is filled with a
//            sentinel, twice with two different sentinels, and every byte of all three
//            planes outside the rectangle, stride padding included, is compared), and how
//            far right of the rectangle the farthest such byte is. swscale's SIMD output may
//            write past the right edge (TileScaler saves and restores 32 bytes there).
//
// Result (2-core AMD EPYC VM with AVX2, load 2-5; FFmpeg 5.1, Debian libyuv 0.0~git20230123;
// photo SSIM-Y; cold-source CPU time, median of 3 runs of 5 rounds): libyuv is ahead only on
// exact power-of-two ratios: 2x down 249 us against swscale's 509 us at SSIM 0.9735/0.9710,
// 4x down (kFilterBox) 219 against 356 us at 0.9785/0.9812 (U/V better), 2x up 180 against
// 484 us at equal quality. On the tile sizes our gapped grids really produce it is not:
// 1280x719 -> 638x358 bilinear 636 against 699 us but SSIM 0.932 against 0.977 (box worse and
// slower), 640x359 -> 478x268 equal (215 against 210 us, 0.9835 against 0.9804), 1.5x up
// 568 against 374 us and 0.971 against 0.976 (libyuv's non-2x upscale maps corners, not
// centres). libyuv never wrote outside the rectangle; swscale wrote up to 7 B right of it.
//
// Build (zero warnings expected):
//   gcc -O2 -Wall -Wextra -o scaler_bench scaler_bench.c $(pkg-config --cflags --libs libswscale libavutil) -lyuv -lm
// (apt-get install libyuv-dev libswscale-dev libavutil-dev; run.sh next to this file builds
// it, makes the source pictures with the ffmpeg CLI and runs it.)
//
// Usage: scaler_bench [-t SECONDS] [-r ROUNDS] [-q FRAMES] [-f FRAMES] [-n] [-g] [-c CASE] [-o DIR] SRC720.yuv SRC360.yuv
//   SRC720.yuv / SRC360.yuv  raw yuv420p, 1280x720 and 640x360, one or more frames each
//                            (at most 240 are loaded)
//                            (e.g. ffmpeg -f lavfi -i testsrc2=size=1280x720:rate=30
//                             -frames:v 30 -pix_fmt yuv420p -f rawvideo /tmp/src720.yuv)
//   -t SECONDS  time spent per case and method, over all rounds (default 1.5)
//   -r ROUNDS   timing rounds, the median is reported (default 5)
//   -q FRAMES   frames the SSIM is averaged over (default 3)
//   -f FRAMES   frames the timing loops cycle through (default: all loaded)
//   -n          quality and safety only, no timing
//   -c CASE     only the cases whose name contains CASE
//   -g          skip the overrun sweep (each method at every even tile width 2..256 and
//               640..800, from the 640x360 source, checked as above) printed at the end
//   -o DIR      also write each method's first tile and the reference (rounded to 8 bits)
//               as DIR/CASE-METHOD.yuv and DIR/CASE-reference.yuv, raw yuv420p, to check the
//               SSIM with another tool (ffmpeg -lavfi ssim)
#define _XOPEN_SOURCE 700  // M_PI, clock_gettime, getopt under -std=c11 too
#include <libswscale/swscale.h>
#include <libavutil/pixfmt.h>
#include <libyuv/scale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// ---------------------------------------------------------------------------------------
// Pictures

typedef struct {
    int w, h;         // luma size
    int stride[3];    // bytes per row of Y, U, V
    uint8_t *plane[3];
} Picture;

static int chroma(int n) { return (n + 1) / 2; }
static int plane_w(const Picture *p, int i) { return i ? chroma(p->w) : p->w; }
static int plane_h(const Picture *p, int i) { return i ? chroma(p->h) : p->h; }

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

// Rows padded by `pad` bytes so that writes past the right edge land in memory we check.
static Picture picture_new(int w, int h, int pad) {
    Picture p = { w, h, { 0 }, { 0 } };
    for (int i = 0; i < 3; i++) {
        p.stride[i] = ((i ? chroma(w) : w) + pad + 63) & ~63;
        p.plane[i] = xmalloc((size_t)p.stride[i] * (size_t)plane_h(&p, i));
    }
    return p;
}

static void picture_fill(Picture *p, uint8_t value) {
    for (int i = 0; i < 3; i++) memset(p->plane[i], value, (size_t)p->stride[i] * (size_t)plane_h(p, i));
}

static void picture_free(Picture *p) {
    for (int i = 0; i < 3; i++) free(p->plane[i]);
}

// Every frame of a raw yuv420p file (at most `max` frames).
static Picture *load_frames(const char *path, int w, int h, int max, int *count) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    Picture *frames = xmalloc(sizeof *frames * (size_t)max);
    int n = 0;
    while (n < max) {
        Picture p = picture_new(w, h, 64);
        int ok = 1;
        for (int i = 0; i < 3 && ok; i++)
            for (int r = 0; r < plane_h(&p, i) && ok; r++)
                ok = fread(p.plane[i] + (size_t)r * p.stride[i], 1, (size_t)plane_w(&p, i), f) == (size_t)plane_w(&p, i);
        if (!ok) { picture_free(&p); break; }
        frames[n++] = p;
    }
    fclose(f);
    if (n == 0) { fprintf(stderr, "%s: not one whole %dx%d yuv420p frame\n", path, w, h); exit(1); }
    *count = n;
    return frames;
}

// ---------------------------------------------------------------------------------------
// Cases: one tile of one of our layouts. Crops and destinations are even, as TileGeometry
// makes them (cover crop: centred, even origin, the odd last row kept).

typedef struct {
    const char *name;
    const char *what;
    int source;              // 0: the 1280x720 source, 1: the 640x360 one
    int cx, cy, cw, ch;      // crop of the source
    int canvas_w, canvas_h;
    int dx, dy, dw, dh;      // destination rectangle on the canvas
} Case;

static const Case cases[] = {
    { "a-720-640x360", "(a) 2x2 grid on 1280x720 as briefed: 1280x720 -> 640x360, exactly 2x down",
      0, 0, 0, 1280, 720, 1280, 720, 640, 360, 640, 360 },
    { "a-720-638x358", "(a) 2x2 grid on 1280x720 as laid out (gap 2): crop 1280x719 -> 638x358",
      0, 0, 0, 1280, 719, 1280, 720, 0, 0, 638, 358 },
    { "b-360-478x358", "(b) 4x3 grid on 1920x1080 as briefed (4:3-ish tile, cover): crop 480x360+80 -> 478x358",
      1, 80, 0, 480, 360, 1920, 1080, 480, 362, 478, 358 },
    { "b-360-478x268", "(b) 4x3 grid on 1920x1080 as laid out (16:9 tiles, gap 2): crop 640x359 -> 478x268",
      1, 0, 0, 640, 359, 1920, 1080, 480, 406, 478, 268 },
    { "c-720-320x180", "(c) picture-in-picture: 1280x720 -> 320x180, exactly 4x down",
      0, 0, 0, 1280, 720, 1280, 720, 944, 524, 320, 180 },
    { "d-360-1280x720", "(d) one participant large: 640x360 -> 1280x720, exactly 2x up",
      1, 0, 0, 640, 360, 1280, 720, 0, 0, 1280, 720 },
    { "e-360-958x538", "(e) 2x2 grid of 360p on 1920x1080 (gap 2): crop 640x359 -> 958x538, 1.5x up",
      1, 0, 0, 640, 359, 1920, 1080, 0, 0, 958, 538 },
};
enum { CASES = sizeof cases / sizeof cases[0] };

// ---------------------------------------------------------------------------------------
// Methods

typedef struct {
    const char *name;
    int sws_flags;           // swscale when non-zero
    enum FilterMode filter;  // libyuv otherwise
    double param;            // swscale's param[0] when non-zero (SWS_X's exponent)
} Method;

static const Method methods[] = {
    { "sws-x (ours)", SWS_X, kFilterNone, 0 },
    { "sws-x-1.3", SWS_X, kFilterNone, 1.3 },
    { "sws-area", SWS_AREA, kFilterNone, 0 },
    { "sws-bilinear", SWS_BILINEAR, kFilterNone, 0 },
    { "sws-fast-bilinear", SWS_FAST_BILINEAR, kFilterNone, 0 },
    { "sws-bicubic", SWS_BICUBIC, kFilterNone, 0 },
    { "sws-lanczos-accurate", SWS_LANCZOS | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT | SWS_BITEXACT, kFilterNone, 0 },
    { "yuv-linear", 0, kFilterLinear, 0 },
    { "yuv-bilinear", 0, kFilterBilinear, 0 },
    { "yuv-box", 0, kFilterBox, 0 },
};
enum { METHODS = sizeof methods / sizeof methods[0] };

typedef struct {
    const Case *c;
    const Method *m;
    struct SwsContext *sws;
} Scaler;

static void scaler_init(Scaler *s, const Case *c, const Method *m) {
    s->c = c;
    s->m = m;
    s->sws = NULL;
    if (m->sws_flags) {
        s->sws = sws_getContext(c->cw, c->ch, AV_PIX_FMT_YUV420P, c->dw, c->dh, AV_PIX_FMT_YUV420P,
                                m->sws_flags, NULL, NULL, m->param != 0 ? (const double[2]){ m->param, SWS_PARAM_DEFAULT } : NULL);
        if (!s->sws) { fprintf(stderr, "%s: no swscale context for %s\n", c->name, m->name); exit(1); }
    }
}

// The crop of `src` into the destination rectangle of `canvas`, as TileScaler does it.
static void scaler_run(const Scaler *s, const Picture *src, Picture *canvas) {
    const Case *c = s->c;
    const uint8_t *sp[4] = { NULL, NULL, NULL, NULL };
    uint8_t *dp[4] = { NULL, NULL, NULL, NULL };
    int ss[4] = { 0, 0, 0, 0 }, ds[4] = { 0, 0, 0, 0 };
    for (int i = 0; i < 3; i++) {
        int shift = i ? 1 : 0;
        sp[i] = src->plane[i] + (size_t)(c->cy >> shift) * src->stride[i] + (c->cx >> shift);
        dp[i] = canvas->plane[i] + (size_t)(c->dy >> shift) * canvas->stride[i] + (c->dx >> shift);
        ss[i] = src->stride[i];
        ds[i] = canvas->stride[i];
    }
    if (s->sws) {
        if (sws_scale(s->sws, sp, ss, 0, c->ch, dp, ds) != c->dh) { fprintf(stderr, "%s: sws_scale failed\n", c->name); exit(1); }
    } else {
        if (I420Scale(sp[0], ss[0], sp[1], ss[1], sp[2], ss[2], c->cw, c->ch,
                      dp[0], ds[0], dp[1], ds[1], dp[2], ds[2], c->dw, c->dh, s->m->filter) != 0) {
            fprintf(stderr, "%s: I420Scale failed\n", c->name);
            exit(1);
        }
    }
}

static void scaler_free(Scaler *s) { sws_freeContext(s->sws); }

// ---------------------------------------------------------------------------------------
// Reference: separable Lanczos-3 in double precision.

static double sinc(double x) {
    if (fabs(x) < 1e-12) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

static double lanczos3(double x) { return fabs(x) < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0; }

typedef struct { int first, taps; double *w; } Taps;

// Weights of source samples 0..src-1 for each of the `dst` output samples.
static Taps *lanczos_taps(int src, int dst) {
    double scale = (double)src / dst, widen = scale > 1.0 ? scale : 1.0, support = 3.0 * widen;
    Taps *t = xmalloc(sizeof *t * (size_t)dst);
    for (int i = 0; i < dst; i++) {
        double centre = (i + 0.5) * scale - 0.5;
        int first = (int)floor(centre - support) + 1, last = (int)ceil(centre + support) - 1;
        t[i].first = first;
        t[i].taps = last - first + 1;
        t[i].w = xmalloc(sizeof(double) * (size_t)t[i].taps);
        double sum = 0;
        for (int k = 0; k < t[i].taps; k++) sum += t[i].w[k] = lanczos3((first + k - centre) / widen);
        for (int k = 0; k < t[i].taps; k++) t[i].w[k] /= sum;
    }
    return t;
}

static void taps_free(Taps *t, int n) {
    for (int i = 0; i < n; i++) free(t[i].w);
    free(t);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// sw x sh bytes at `src` (stride) -> dw x dh doubles (clamped to 0..255, not rounded).
static double *lanczos_scale(const uint8_t *src, int stride, int sw, int sh, int dw, int dh) {
    Taps *tx = lanczos_taps(sw, dw), *ty = lanczos_taps(sh, dh);
    double *rows = xmalloc(sizeof(double) * (size_t)sh * (size_t)dw);
    for (int r = 0; r < sh; r++)
        for (int x = 0; x < dw; x++) {
            double v = 0;
            for (int k = 0; k < tx[x].taps; k++) v += tx[x].w[k] * src[(size_t)r * stride + clampi(tx[x].first + k, 0, sw - 1)];
            rows[(size_t)r * dw + x] = v;
        }
    double *out = xmalloc(sizeof(double) * (size_t)dw * (size_t)dh);
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++) {
            double v = 0;
            for (int k = 0; k < ty[y].taps; k++) v += ty[y].w[k] * rows[(size_t)clampi(ty[y].first + k, 0, sh - 1) * dw + x];
            out[(size_t)y * dw + x] = v < 0 ? 0 : v > 255 ? 255 : v;
        }
    free(rows);
    taps_free(tx, dw);
    taps_free(ty, dh);
    return out;
}

// ---------------------------------------------------------------------------------------
// SSIM (11x11 Gaussian, sigma 1.5, valid windows) and PSNR of bytes against doubles.

static void gaussian_blur_valid(const double *in, int w, int h, double *out) {
    // `out` is (w - 10) x (h - 10).
    static double g[11];
    if (g[5] == 0) {
        double sum = 0;
        for (int k = 0; k < 11; k++) sum += g[k] = exp(-(k - 5) * (k - 5) / (2 * 1.5 * 1.5));
        for (int k = 0; k < 11; k++) g[k] /= sum;
    }
    int ow = w - 10, oh = h - 10;
    double *tmp = xmalloc(sizeof(double) * (size_t)ow * (size_t)h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < ow; x++) {
            double v = 0;
            for (int k = 0; k < 11; k++) v += g[k] * in[(size_t)y * w + x + k];
            tmp[(size_t)y * ow + x] = v;
        }
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            double v = 0;
            for (int k = 0; k < 11; k++) v += g[k] * tmp[(size_t)(y + k) * ow + x];
            out[(size_t)y * ow + x] = v;
        }
    free(tmp);
}

static double ssim(const uint8_t *a, int stride, const double *b, int w, int h) {
    if (w < 11 || h < 11) return NAN;
    size_t n = (size_t)w * h, m = (size_t)(w - 10) * (h - 10);
    double *in[5], *out[5];
    for (int i = 0; i < 5; i++) { in[i] = xmalloc(sizeof(double) * n); out[i] = xmalloc(sizeof(double) * m); }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double p = a[(size_t)y * stride + x], q = b[(size_t)y * w + x];
            size_t k = (size_t)y * w + x;
            in[0][k] = p; in[1][k] = q; in[2][k] = p * p; in[3][k] = q * q; in[4][k] = p * q;
        }
    for (int i = 0; i < 5; i++) gaussian_blur_valid(in[i], w, h, out[i]);
    const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
    double total = 0;
    for (size_t k = 0; k < m; k++) {
        double mx = out[0][k], my = out[1][k];
        double vx = out[2][k] - mx * mx, vy = out[3][k] - my * my, cxy = out[4][k] - mx * my;
        total += ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2));
    }
    for (int i = 0; i < 5; i++) { free(in[i]); free(out[i]); }
    return total / (double)m;
}

static double psnr(const uint8_t *a, int stride, const double *b, int w, int h) {
    double se = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double d = a[(size_t)y * stride + x] - b[(size_t)y * w + x];
            se += d * d;
        }
    double mse = se / ((double)w * h);
    return mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : INFINITY;
}

// ---------------------------------------------------------------------------------------
// Safety: bytes outside the destination rectangle that changed.

// Per call: the most bytes changed outside the rectangle, the farthest of them right of
// it, and whether any lay elsewhere (above, below, left).
typedef struct { long bytes; int max_right; int other; } Outside;

static void outside_check(const Picture *canvas, const Case *c, uint8_t sentinel, Outside *o) {
    long bytes = 0;
    for (int i = 0; i < 3; i++) {
        int shift = i ? 1 : 0;
        int x0 = c->dx >> shift, y0 = c->dy >> shift, x1 = x0 + (i ? chroma(c->dw) : c->dw), y1 = y0 + (i ? chroma(c->dh) : c->dh);
        for (int y = 0; y < plane_h(canvas, i); y++)
            for (int x = 0; x < canvas->stride[i]; x++) {
                if (y >= y0 && y < y1 && x >= x0 && x < x1) continue;
                if (canvas->plane[i][(size_t)y * canvas->stride[i] + x] == sentinel) continue;
                bytes++;
                if (y >= y0 && y < y1 && x >= x1) { if (x - x1 + 1 > o->max_right) o->max_right = x - x1 + 1; }
                else o->other = 1;
            }
    }
    if (bytes > o->bytes) o->bytes = bytes;
}

// ---------------------------------------------------------------------------------------
// Dumps for -o

static FILE *open_dump(const char *dir, const char *case_name, const char *method) {
    char path[1024];
    int n = (int)strcspn(method, " ");  // "sws-x (ours)" -> "sws-x"
    snprintf(path, sizeof path, "%s/%s-%.*s.yuv", dir, case_name, n, method);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    return f;
}

static void dump_tile(const char *dir, const Case *c, const char *method, const Picture *canvas) {
    FILE *f = open_dump(dir, c->name, method);
    for (int i = 0; i < 3; i++) {
        int shift = i ? 1 : 0, w = i ? chroma(c->dw) : c->dw, h = i ? chroma(c->dh) : c->dh;
        for (int y = 0; y < h; y++)
            fwrite(canvas->plane[i] + (size_t)((c->dy >> shift) + y) * canvas->stride[i] + (c->dx >> shift), 1, (size_t)w, f);
    }
    fclose(f);
}

static void dump_reference(const char *dir, const Case *c, double *const ref[3]) {
    FILE *f = open_dump(dir, c->name, "reference");
    for (int i = 0; i < 3; i++) {
        size_t n = (size_t)(i ? chroma(c->dw) : c->dw) * (size_t)(i ? chroma(c->dh) : c->dh);
        for (size_t k = 0; k < n; k++) fputc((int)lrint(ref[i][k]), f);
    }
    fclose(f);
}

// ---------------------------------------------------------------------------------------
// Timing

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---------------------------------------------------------------------------------------
// Overrun sweep: many tile widths (vector remainders differ), tile at (2, 2) of a canvas
// with room on every side.

static void overrun_sweep(const Picture *src) {
    printf("\n== overrun sweep: 640x360 -> W x 64 at (2,2) of a 1024x128 canvas, W = 2..256 and 640..800 (even)\n");
    printf("%-22s %s\n", "method", "bytes written outside the rectangle");
    Picture canvas = picture_new(1024, 128, 64);
    for (int mi = 0; mi < METHODS; mi++) {
        Outside worst = { 0, 0, 0 };
        int worst_w = 0, widths_hit = 0, widths = 0;
        for (int w = 2; w <= 800; w += 2) {
            if (w > 256 && w < 640) continue;
            Case c = { "sweep", "", 1, 0, 0, 640, 360, 1024, 128, 2, 2, w, 64 };
            Scaler s;
            scaler_init(&s, &c, &methods[mi]);
            Outside o = { 0, 0, 0 };
            const uint8_t sentinels[2] = { 0x00, 0xFF };
            for (int k = 0; k < 2; k++) {
                picture_fill(&canvas, sentinels[k]);
                scaler_run(&s, src, &canvas);
                outside_check(&canvas, &c, sentinels[k], &o);
            }
            scaler_free(&s);
            widths++;
            if (o.bytes) widths_hit++;
            if (o.max_right > worst.max_right) worst_w = w;
            if (o.bytes > worst.bytes) worst.bytes = o.bytes;
            if (o.max_right > worst.max_right) worst.max_right = o.max_right;
            worst.other |= o.other;
        }
        if (widths_hit == 0) printf("%-22s none at any of %d widths\n", methods[mi].name, widths);
        else printf("%-22s at %d of %d widths; at most %d B right of a row (W = %d)%s\n", methods[mi].name, widths_hit, widths,
                    worst.max_right, worst_w, worst.other ? ", and outside the rows too" : "");
    }
    picture_free(&canvas);
}

// ---------------------------------------------------------------------------------------

int main(int argc, char **argv) {
    double seconds = 1.5;
    int rounds = 5, quality_frames = 3, timing = 1, opt;
    const char *only = NULL, *dump = NULL;
    int sweep = 1, timing_frames = 0;
    while ((opt = getopt(argc, argv, "t:r:q:f:nc:o:g")) != -1) {
        switch (opt) {
        case 't': seconds = atof(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'q': quality_frames = atoi(optarg); break;
        case 'f': timing_frames = atoi(optarg); break;
        case 'n': timing = 0; break;
        case 'c': only = optarg; break;
        case 'o': dump = optarg; break;
        case 'g': sweep = 0; break;
        default:
            fprintf(stderr, "usage: %s [-t SECONDS] [-r ROUNDS] [-q FRAMES] [-f FRAMES] [-n] [-g] [-c CASE] [-o DIR] SRC720.yuv SRC360.yuv\n", argv[0]);
            return 2;
        }
    }
    if (argc - optind != 2 || rounds < 1 || quality_frames < 1 || seconds <= 0) {
        fprintf(stderr, "usage: %s [-t SECONDS] [-r ROUNDS] [-q FRAMES] [-f FRAMES] [-n] [-g] [-c CASE] [-o DIR] SRC720.yuv SRC360.yuv\n", argv[0]);
        return 2;
    }
    int counts[2];
    Picture *sources[2] = { load_frames(argv[optind], 1280, 720, 240, &counts[0]),
                            load_frames(argv[optind + 1], 640, 360, 240, &counts[1]) };
    printf("sources: %s (%d frames), %s (%d frames)\n", argv[optind], counts[0], argv[optind + 1], counts[1]);
    int cycle[2];
    for (int k = 0; k < 2; k++) cycle[k] = timing_frames > 0 && timing_frames < counts[k] ? timing_frames : counts[k];
    printf("reference: double-precision Lanczos-3 (antialiased when downscaling), centre-aligned, per plane\n");
    if (timing)
        printf("timing: %d rounds, %.2f s per case and method, median; ns/call is CPU time of this thread; "
               "sources cycle through %d and %d frames (%.0f and %.0f MB)\n", rounds, seconds, cycle[0], cycle[1],
               cycle[0] * 1280 * 720 * 1.5 / 1e6, cycle[1] * 640 * 360 * 1.5 / 1e6);

    for (int ci = 0; ci < CASES; ci++) {
        const Case *c = &cases[ci];
        if (only && !strstr(c->name, only)) continue;
        const Picture *frames = sources[c->source];
        int nframes = cycle[c->source], qframes = quality_frames < counts[c->source] ? quality_frames : counts[c->source];
        if (qframes > 30) qframes = 30;
        printf("\n== %s: %s, canvas %dx%d at (%d,%d)\n", c->name, c->what, c->canvas_w, c->canvas_h, c->dx, c->dy);

        // References of the first qframes frames, per plane.
        double *ref[30][3];
        for (int f = 0; f < qframes; f++)
            for (int i = 0; i < 3; i++) {
                int shift = i ? 1 : 0;
                const Picture *s = &frames[f];
                ref[f][i] = lanczos_scale(s->plane[i] + (size_t)(c->cy >> shift) * s->stride[i] + (c->cx >> shift), s->stride[i],
                                          i ? chroma(c->cw) : c->cw, i ? chroma(c->ch) : c->ch,
                                          i ? chroma(c->dw) : c->dw, i ? chroma(c->dh) : c->dh);
            }

        if (dump) dump_reference(dump, c, ref[0]);
        Scaler scalers[METHODS];
        Picture canvas = picture_new(c->canvas_w, c->canvas_h, 64);
        double ssim_v[METHODS][3], psnr_y[METHODS];
        Outside outside[METHODS];
        for (int mi = 0; mi < METHODS; mi++) {
            scaler_init(&scalers[mi], c, &methods[mi]);
            // Quality: mean over frames.
            double sum[3] = { 0, 0, 0 }, psum = 0;
            for (int f = 0; f < qframes; f++) {
                picture_fill(&canvas, 16);
                scaler_run(&scalers[mi], &frames[f], &canvas);
                for (int i = 0; i < 3; i++) {
                    int shift = i ? 1 : 0;
                    const uint8_t *t = canvas.plane[i] + (size_t)(c->dy >> shift) * canvas.stride[i] + (c->dx >> shift);
                    int w = i ? chroma(c->dw) : c->dw, h = i ? chroma(c->dh) : c->dh;
                    sum[i] += ssim(t, canvas.stride[i], ref[f][i], w, h);
                    if (i == 0) psum += psnr(t, canvas.stride[i], ref[f][i], w, h);
                }
            }
            if (dump) {
                picture_fill(&canvas, 16);
                scaler_run(&scalers[mi], &frames[0], &canvas);
                dump_tile(dump, c, methods[mi].name, &canvas);
            }
            for (int i = 0; i < 3; i++) ssim_v[mi][i] = sum[i] / qframes;
            psnr_y[mi] = psum / qframes;
            // Safety: two sentinels, every frame used for quality.
            outside[mi] = (Outside){ 0, 0, 0 };
            const uint8_t sentinels[2] = { 0x00, 0xFF };
            for (int k = 0; k < 2; k++)
                for (int f = 0; f < qframes; f++) {
                    picture_fill(&canvas, sentinels[k]);
                    scaler_run(&scalers[mi], &frames[f], &canvas);
                    outside_check(&canvas, c, sentinels[k], &outside[mi]);
                }
        }

        double cpu_ns[METHODS] = { 0 }, wall_ns[METHODS] = { 0 };
        if (timing) {
            long iterations[METHODS];
            double per_round = seconds / rounds;
            picture_fill(&canvas, 16);
            for (int mi = 0; mi < METHODS; mi++) {
                // Calibrate: double until a batch takes 50 ms, then size a round.
                long n = 1;
                double t;
                for (;;) {
                    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
                    for (long k = 0; k < n; k++) scaler_run(&scalers[mi], &frames[k % nframes], &canvas);
                    t = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
                    if (t > 0.05) break;
                    n *= 2;
                }
                iterations[mi] = (long)(per_round / (t / n)) + 1;
            }
            double cpu[METHODS][64], wall[METHODS][64];
            int nr = rounds < 64 ? rounds : 64;
            for (int r = 0; r < nr; r++)
                for (int mi = 0; mi < METHODS; mi++) {
                    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
                    for (long k = 0; k < iterations[mi]; k++) scaler_run(&scalers[mi], &frames[k % nframes], &canvas);
                    cpu[mi][r] = (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0) / iterations[mi] * 1e9;
                    wall[mi][r] = (clock_s(CLOCK_MONOTONIC) - w0) / iterations[mi] * 1e9;
                }
            for (int mi = 0; mi < METHODS; mi++) {
                cpu_ns[mi] = median(cpu[mi], nr);
                wall_ns[mi] = median(wall[mi], nr);
            }
        }

        printf("%-22s %10s %9s %7s %8s  %7s %7s %7s %7s  %s\n", "method", "ns/call", "wall-ns", "Mpx/s", "vs-ours",
               "SSIM-Y", "SSIM-U", "SSIM-V", "PSNR-Y", "outside rect");
        for (int mi = 0; mi < METHODS; mi++) {
            char speed[64] = "", out[96];
            if (timing)
                snprintf(speed, sizeof speed, "%10.0f %9.0f %7.1f %7.2fx", cpu_ns[mi], wall_ns[mi],
                         (double)c->dw * c->dh / cpu_ns[mi] * 1e3, cpu_ns[0] / cpu_ns[mi]);
            else
                snprintf(speed, sizeof speed, "%10s %9s %7s %8s", "-", "-", "-", "-");
            if (outside[mi].bytes == 0) snprintf(out, sizeof out, "none");
            else snprintf(out, sizeof out, "%ld B/call, up to %d B right of it%s", outside[mi].bytes, outside[mi].max_right,
                          outside[mi].other ? ", and elsewhere" : "");
            printf("%-22s %s  %7.4f %7.4f %7.4f %7.2f  %s\n", methods[mi].name, speed,
                   ssim_v[mi][0], ssim_v[mi][1], ssim_v[mi][2], psnr_y[mi], out);
        }
        fflush(stdout);

        for (int mi = 0; mi < METHODS; mi++) scaler_free(&scalers[mi]);
        picture_free(&canvas);
        for (int f = 0; f < qframes; f++)
            for (int i = 0; i < 3; i++) free(ref[f][i]);
    }
    if (sweep) overrun_sweep(&sources[1][0]);
    for (int s = 0; s < 2; s++) {
        for (int f = 0; f < counts[s]; f++) picture_free(&sources[s][f]);
        free(sources[s]);
    }
    return 0;
}
