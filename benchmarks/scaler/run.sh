#!/usr/bin/env bash
# Builds scaler_bench.c (swscale against libyuv for TileScaler: speed, SSIM against a
# double-precision Lanczos-3 reference, writes outside the tile; see the header of the C
# file), makes the source pictures with the ffmpeg CLI and runs it:
#   - speed on testsrc2, twice: a cold source (cycling through 120 frames, 166 MB of 720p,
#     more than the caches) and a hot one (-f 1: one picture, in cache);
#   - quality on testsrc2 (sharp synthetic edges, text), mandelbrot (fine detail, smooth
#     gradients) and a photograph (a forest, natural texture) when one is found: PHOTO=path
#     to any image at least 1280 wide, or Debian's plasma-workspace-wallpapers "Path"
#     (apt-get install plasma-workspace-wallpapers), cropped to 16:9 and panned over 8 frames.
# Needs gcc, pkg-config, libyuv-dev, libswscale-dev, libavutil-dev and the ffmpeg CLI
# (libyuv is not in scripts/install-deps.sh: the product does not use it, see TileScaler).
# Usage: benchmarks/scaler/run.sh [extra scaler_bench options, e.g. -t 3 -r 7 or -c b-360]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -Wextra -Werror -o "$work/scaler_bench" "$here/scaler_bench.c" \
  $(pkg-config --cflags --libs libswscale libavutil) -lyuv -lm
ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)
sources=(testsrc2 mandelbrot)
for size in 1280x720 640x360; do
  "${ff[@]}" -f lavfi -i "testsrc2=size=$size:rate=30" -frames:v 120 -pix_fmt yuv420p -f rawvideo "$work/testsrc2-$size.yuv"
  "${ff[@]}" -f lavfi -i "mandelbrot=size=$size:rate=30" -frames:v 8 -pix_fmt yuv420p -f rawvideo "$work/mandelbrot-$size.yuv"
done
photo=${PHOTO:-/usr/share/wallpapers/Path/contents/images/2560x1600.jpg}
if [[ -f $photo ]]; then
  for size in 1280x720 640x360; do
    "${ff[@]}" -loop 1 -i "$photo" \
      -vf "crop=iw:iw*9/16:0:'min(n*8,ih-iw*9/16)',scale=${size/x/:}:flags=lanczos+accurate_rnd+full_chroma_int,format=yuv420p" \
      -frames:v 8 -f rawvideo "$work/photo-$size.yuv"
  done
  sources+=(photo)
else
  echo "(no photograph: set PHOTO=image or install plasma-workspace-wallpapers)"
fi
echo "machine: $(nproc) cores, $(uptime)"
echo "### speed, cold source"
"$work/scaler_bench" -g "$@" "$work/testsrc2-1280x720.yuv" "$work/testsrc2-640x360.yuv"
echo "### speed, hot source"
"$work/scaler_bench" -g -f 1 "$@" "$work/testsrc2-1280x720.yuv" "$work/testsrc2-640x360.yuv"
for source in "${sources[@]}"; do
  echo "### quality: $source"
  "$work/scaler_bench" -n -g -q 8 "$@" "$work/$source-1280x720.yuv" "$work/$source-640x360.yuv"
done
echo "### writes outside the tile"
"$work/scaler_bench" -n -c none "$work/testsrc2-1280x720.yuv" "$work/testsrc2-640x360.yuv" | sed -n '/overrun sweep/,$p'
echo "done: $(uptime)"
