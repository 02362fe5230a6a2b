#!/usr/bin/env bash
# Builds scaler_bench.c, runs it on two sources (testsrc2: sharp synthetic edges and text;
# mandelbrot: fine detail and smooth gradients), and prints each method's SSIM (Y, U, V and
# all) against a reference scale of the same crop: swscale's Lanczos with accurate rounding
# and full chroma interpolation (ffmpeg's scale filter), the closest thing to an exact scale.
# Needs libyuv-dev (not installed by scripts/install-deps.sh: the product does not use
# libyuv, see TileScaler), libswscale-dev and the ffmpeg CLI.
# Usage: benchmarks/scaler/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -Wextra -Werror -o "$work/scaler_bench" "$here/scaler_bench.c" \
  $(pkg-config --cflags --libs libswscale libavutil) -lyuv
ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)
# case: crop (w:h:x:y of the source) and tile size, as in scaler_bench.c
declare -A crop=([a-720-to-636x356]="1280:716:0:0" [b-360-to-476x356]="482:360:80:0"
                 [pip-720-to-320x180]="1280:720:0:0" [up-360-to-1280x720]="640:360:0:0"
                 [up-360-to-956x536]="640:358:0:0")
declare -A tile=([a-720-to-636x356]="636x356" [b-360-to-476x356]="476x356"
                 [pip-720-to-320x180]="320x180" [up-360-to-1280x720]="1280x720"
                 [up-360-to-956x536]="956x536")
for source in testsrc2 mandelbrot; do
  echo "== source: $source"
  mkdir -p "$work/$source"
  for size in 1280x720 640x360; do
    "${ff[@]}" -f lavfi -i "$source=size=$size:rate=30" -frames:v 1 -ss 0 -pix_fmt yuv420p -f rawvideo "$work/$source/src-$size.yuv"
  done
  "$work/scaler_bench" "$work/$source/src-1280x720.yuv" "$work/$source/src-640x360.yuv" "$work/$source"
  for name in "${!crop[@]}"; do
    src=$work/$source/src-1280x720.yuv; srcsize=1280x720
    [[ $name == b-* || $name == up-* ]] && { src=$work/$source/src-640x360.yuv; srcsize=640x360; }
    w=${tile[$name]%x*}; h=${tile[$name]#*x}
    "${ff[@]}" -f rawvideo -pix_fmt yuv420p -s "$srcsize" -i "$src" \
      -vf "crop=${crop[$name]}:exact=1,scale=$w:$h:flags=lanczos+accurate_rnd+full_chroma_int" \
      -f rawvideo -pix_fmt yuv420p "$work/$source/$name-reference.yuv"
    for method in swscale-bilinear libyuv-bilinear libyuv-box; do
      ssim=$("${ff[@]}" -loglevel info -f rawvideo -pix_fmt yuv420p -s "${tile[$name]}" -i "$work/$source/$name-$method.yuv" \
               -f rawvideo -pix_fmt yuv420p -s "${tile[$name]}" -i "$work/$source/$name-reference.yuv" \
               -lavfi ssim -f null - 2>&1 | grep -o 'SSIM Y:.*' || true)
      printf '  %-20s %-18s %s\n' "$name" "$method" "$ssim"
    done
  done
done
