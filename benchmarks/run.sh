#!/usr/bin/env bash
# Benchmark: stage-compositor (release) against an equivalent ffmpeg command line, same
# inputs, same encoder settings, same output (HLS, 2 s MPEG-TS segments).
#   (a) 4 x 1280x720@30 participants -> 1280x720@30, 2.5 Mbps
#   (b) 12 x 640x360@30 participants -> 1920x1080@30, 6 Mbps
# Prints real-time factor, CPU seconds per output second, peak RSS, and our CPU / ffmpeg's.
# Usage: benchmarks/run.sh [--duration SECONDS] [--scenario a|b|all] [--long MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."

duration=30
scenario=all
long=""
while (($#)); do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --scenario) scenario=$2; shift 2 ;;
    --long) long=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

bin=.build/release/stage-compositor
[[ -x $bin ]] || swift build -c release
work=benchmarks/.work
inputs=$work/inputs
mkdir -p "$inputs"

make_inputs() { # name participants size
  local dir=$inputs/$1-$duration
  [[ -f $dir/manifest.json ]] || scripts/make-fixture.sh --out "$dir" --participants "$2" --size "$3" --duration "$duration" >/dev/null
  echo "$dir"
}

# Runs a command under /usr/bin/time; prints "elapsed user sys maxrss_kb".
measure() {
  local log
  log=$(mktemp)
  /usr/bin/time -f "%e %U %S %M" -o "$log" "$@" >/dev/null 2>"$log.err" || { cat "$log.err" >&2; exit 1; }
  cat "$log"
  rm -f "$log" "$log.err"
}

# ffmpeg equivalent of our grid: scale each input into its tile (bilinear), xstack on a
# black canvas, amix, libx264 with our settings, AAC, HLS.
ffmpeg_cmd() { # stage columns rows tile_w tile_h gap out_w out_h bitrate out_dir
  local stage=$1 cols=$2 rows=$3 tw=$4 th=$5 gap=$6 ow=$7 oh=$8 bitrate=$9 out=${10}
  local files=() filter="" layout="" n=0
  for f in "$stage"/p*; do files+=(-i "$f"); done
  n=${#files[@]}; n=$((n / 2))
  local gw=$((cols * tw + (cols - 1) * gap)) gh=$((rows * th + (rows - 1) * gap))
  for ((i = 0; i < n; i++)); do
    filter+="[$i:v]scale=${tw}:${th}:flags=bilinear,setsar=1[v$i];"
    local c=$((i % cols)) r=$((i / cols))
    layout+="$((c * (tw + gap)))_$((r * (th + gap)))|"
  done
  for ((i = 0; i < n; i++)); do filter+="[v$i]"; done
  filter+="xstack=inputs=$n:layout=${layout%|}:fill=black,pad=${ow}:${oh}:$(((ow - gw) / 2)):$(((oh - gh) / 2)):black,format=yuv420p[v];"
  for ((i = 0; i < n; i++)); do filter+="[$i:a]"; done
  filter+="amix=inputs=$n:normalize=0,aresample=48000,aformat=channel_layouts=stereo[a]"
  mkdir -p "$out"
  FFMPEG_ARGS=(ffmpeg -nostdin -v error -y "${files[@]}" -filter_complex "$filter" -map "[v]" -map "[a]" \
    -c:v libx264 -preset veryfast -profile:v main -b:v "$bitrate" -maxrate "$bitrate" -bufsize $((bitrate * 2)) \
    -g 60 -keyint_min 60 -sc_threshold 0 -bf 0 -r 30 \
    -c:a aac -b:a 128k -ar 48000 -ac 2 \
    -f hls -hls_time 2 -hls_playlist_type vod -hls_segment_filename "$out/%d.ts" "$out/playlist.m3u8")
}

report() { # label duration elapsed user sys rss
  awk -v l="$1" -v d="$2" -v e="$3" -v u="$4" -v s="$5" -v m="$6" 'BEGIN {
    printf "  %-16s real-time factor %6.2fx   CPU %6.3f s per output s   wall %6.2f s   peak RSS %5.0f MiB\n", l, d / e, (u + s) / d, e, m / 1024 }'
}

run_scenario() { # label participants in_size encoder cols rows tile_w tile_h out_w out_h bitrate
  local label=$1 stage
  stage=$(make_inputs "$label" "$2" "$3")
  echo "scenario $label: $2 x $3@30 -> $4, ${duration} s"
  read -r e u s m < <(measure "$bin" compose --stage "$stage" --encoder "$4" --out "$work/out-$label" --pace fast)
  report "stage-compositor" "$duration" "$e" "$u" "$s" "$m"
  ffmpeg_cmd "$stage" "$5" "$6" "$7" "$8" 2 "$9" "${10}" "${11}" "$work/ffmpeg-$label"
  read -r fe fu fs fm < <(measure "${FFMPEG_ARGS[@]}")
  report "ffmpeg" "$duration" "$fe" "$fu" "$fs" "$fm"
  awk -v a="$u" -v b="$s" -v c="$fu" -v d="$fs" 'BEGIN { printf "  CPU ratio (ours / ffmpeg): %.2f\n", (a + b) / (c + d) }'
}

if [[ $scenario == a || $scenario == all ]]; then
  run_scenario a 4 1280x720 1280x720@30:2500000 2 2 638 358 1280 720 2500000
fi
if [[ $scenario == b || $scenario == all ]]; then
  run_scenario b 12 640x360 1920x1080@30:6000000 4 3 478 268 1920 1080 6000000
fi
if [[ -n $long ]]; then
  # Steady memory: RSS at 1 minute and at $long minutes of output, same composition.
  stage=$(duration=$((long * 60)) make_inputs long 4 640x360)
  for minutes in 1 "$long"; do
    read -r e u s m < <(measure "$bin" compose --stage "$stage" --encoder 1280x720@30:2500000 --out "$work/out-long" --pace fast --duration $((minutes * 60)))
    echo "  long run: ${minutes} min of output: peak RSS $((m / 1024)) MiB, real-time factor $(awk -v d=$((minutes * 60)) -v e="$e" 'BEGIN{printf "%.2f", d/e}')x"
  done
fi
