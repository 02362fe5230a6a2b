#!/usr/bin/env bash
# Benchmark: stage-compositor (release) against an equivalent ffmpeg command line, same
# inputs, same encoder settings, same output (HLS, 2 s MPEG-TS segments).
#   (a) 4 x 1280x720@30 participants -> 1280x720@30, 2.5 Mbps
#   (b) 12 x 640x360@30 participants -> 1920x1080@30, 6 Mbps
# Prints real-time factor, CPU seconds per output second, peak RSS, our CPU / ffmpeg's, and
# the SSIM of both composites against an uncompressed reference (NO_SSIM=1 skips it).
# --repeat N runs ours and ffmpeg alternately N times and reports the medians (CPU time on
# a shared VM varies by +-20 % from run to run; alternating spreads that over both).
# --scenario hidden compares ours with and without decoding stopped participants' video.
# Usage: benchmarks/run.sh [--duration SECONDS] [--scenario a|b|all|hidden] [--repeat N] [--long MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."

duration=30
scenario=all
long=""
repeat=1
while (($#)); do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --scenario) scenario=$2; shift 2 ;;
    --long) long=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

# BIN: another build to measure; COMPOSE_ARGS: extra `compose` options (experiments).
bin=${BIN:-.build/release/stage-compositor}
[[ -x $bin ]] || swift build -c release
read -r -a compose_args <<< "${COMPOSE_ARGS:-}"
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

# The participants' files in stage order (p0, p1, ..., p10: the order our grid uses).
participant_files() { # stage
  find "$1" -maxdepth 1 -name 'p*.mp4' | sort -V
}

# The video half of a filter graph equivalent to our grid: scale each participant into its
# tile (swscale `flags`), xstack on a black canvas, pad to the output size. `crop` is the
# source rectangle our grid's default COVER fill takes (TileGeometry: centred, even origin;
# `exact=1`, or the crop filter rounds an odd height down for the chroma).
# Participants are inputs first..first+n-1; the result is labelled [out].
grid_graph() { # first n flags crop cols rows tile_w tile_h gap out_w out_h out
  local first=$1 n=$2 flags=$3 crop=$4 cols=$5 rows=$6 tw=$7 th=$8 gap=$9 ow=${10} oh=${11} label=${12}
  local gw=$((cols * tw + (cols - 1) * gap)) gh=$((rows * th + (rows - 1) * gap)) graph="" layout=""
  for ((i = 0; i < n; i++)); do
    graph+="[$((first + i)):v]${crop},scale=${tw}:${th}:flags=${flags},setsar=1[v$i];"
    layout+="$(((i % cols) * (tw + gap)))_$(((i / cols) * (th + gap)))|"
  done
  for ((i = 0; i < n; i++)); do graph+="[v$i]"; done
  graph+="xstack=inputs=$n:layout=${layout%|}:fill=black,pad=${ow}:${oh}:$(((ow - gw) / 2)):$(((oh - gh) / 2)):black,format=yuv420p[$label]"
  echo "$graph"
}

# ffmpeg equivalent of our grid: bilinear scaling, amix, libx264 with our settings, AAC, HLS.
ffmpeg_cmd() { # stage crop columns rows tile_w tile_h gap out_w out_h bitrate out_dir
  local stage=$1 crop=$2 cols=$3 rows=$4 tw=$5 th=$6 gap=$7 ow=$8 oh=$9 bitrate=${10} out=${11}
  local files=() filter n
  for f in $(participant_files "$stage"); do files+=(-i "$f"); done
  n=$((${#files[@]} / 2))
  filter="$(grid_graph 0 "$n" bilinear "$crop" "$cols" "$rows" "$tw" "$th" "$gap" "$ow" "$oh" v);"
  for ((i = 0; i < n; i++)); do filter+="[$i:a]"; done
  filter+="amix=inputs=$n:normalize=0,aresample=48000,aformat=channel_layouts=stereo[a]"
  mkdir -p "$out"
  FFMPEG_ARGS=(ffmpeg -nostdin -v error -y "${files[@]}" -filter_complex "$filter" -map "[v]" -map "[a]" \
    -c:v libx264 -preset veryfast -profile:v main -b:v "$bitrate" -maxrate "$bitrate" -bufsize $((bitrate * 2)) \
    -g 60 -keyint_min 60 -sc_threshold 0 -bf 0 -r 30 \
    -c:a aac -b:a 128k -ar 48000 -ac 2 \
    -f hls -hls_time 2 -hls_playlist_type vod -hls_segment_filename "$out/%d.ts" "$out/playlist.m3u8")
}

# SSIM of a composite (HLS playlist) against an uncompressed reference composite of the same
# stage and geometry, scaled with bicubic + accurate rounding + full chroma interpolation and
# never encoded. Frames are matched by index. Prints the "All" SSIM.
ssim_against_reference() { # playlist stage crop cols rows tile_w tile_h gap out_w out_h
  local playlist=$1 stage=$2 files=() n graph
  for f in $(participant_files "$stage"); do files+=(-i "$f"); done
  n=$((${#files[@]} / 2))
  graph="$(grid_graph 1 "$n" bicubic+accurate_rnd+full_chroma_int "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" ref0);"
  graph+="[ref0]setpts=N/30/TB[ref];[0:v]format=yuv420p,setpts=N/30/TB[cmp];[cmp][ref]ssim=shortest=1"
  ffmpeg -nostdin -hide_banner -i "$playlist" "${files[@]}" -filter_complex "$graph" -an -f null - 2>&1 |
    sed -n 's/.*SSIM .* All:\([0-9.]*\).*/\1/p' | tail -1
}

# Reports the medians of first_runs and second_runs, labelled $1 and $2, and the CPU ratio;
# leaves the first's user and sys CPU seconds in u and s.
report_pair() { # first_label second_label ratio_label
  local e m fe fu fs fm
  read -r e u s m < <(median_run "$duration" "${first_runs[@]}")
  report "$1" "$duration" "$e" "$u" "$s" "$m"
  read -r fe fu fs fm < <(median_run "$duration" "${second_runs[@]}")
  report "$2" "$duration" "$fe" "$fu" "$fs" "$fm"
  awk -v a="$u" -v b="$s" -v c="$fu" -v d="$fs" -v l="$3" 'BEGIN { printf "  CPU ratio (%s): %.2f\n", l, (a + b) / (c + d) }'
}

report() { # label duration elapsed user sys rss
  awk -v l="$1" -v d="$2" -v e="$3" -v u="$4" -v s="$5" -v m="$6" 'BEGIN {
    printf "  %-16s real-time factor %6.2fx   CPU %6.3f s per output s   wall %6.2f s   peak RSS %5.0f MiB\n", l, d / e, (u + s) / d, e, m / 1024 }'
}

# The run with the median CPU time among "elapsed user sys rss" lines; with more than one
# run, the spread of CPU per output second goes to stderr.
median_run() { # duration lines...
  local d=$1; shift
  printf '%s\n' "$@" | awk -v d="$d" '{ print $2 + $3, $0 }' | sort -n | awk -v d="$d" '
    { line[NR] = $0; sub(/^[^ ]+ /, "", line[NR]); cpu[NR] = $1 }
    END { if (NR > 1) printf "    (%d runs: CPU %.3f to %.3f s per output s)\n", NR, cpu[1] / d, cpu[NR] / d > "/dev/stderr"
          print line[int((NR + 1) / 2)] }'
}

run_scenario() { # label participants in_size encoder crop cols rows tile_w tile_h out_w out_h bitrate
  local label=$1 stage geometry=("$5" "$6" "$7" "$8" "$9" 2 "${10}" "${11}")
  stage=$(make_inputs "$label" "$2" "$3")
  echo "scenario $label: $2 x $3@30 -> $4, ${duration} s"
  ffmpeg_cmd "$stage" "${geometry[@]}" "${12}" "$work/ffmpeg-$label"
  first_runs=() second_runs=()
  for ((r = 0; r < repeat; r++)); do
    rm -rf "$work/out-$label" "$work/ffmpeg-$label"
    mkdir -p "$work/ffmpeg-$label"
    first_runs+=("$(measure "$bin" compose --stage "$stage" --encoder "$4" --out "$work/out-$label" --pace fast "${compose_args[@]}")")
    second_runs+=("$(measure "${FFMPEG_ARGS[@]}")")
  done
  report_pair "stage-compositor" "ffmpeg" "ours / ffmpeg"
  if [[ -z ${NO_SSIM:-} ]]; then
    local ours
    ours=$(find "$work/out-$label" -name playlist.m3u8 | head -1)
    echo "  SSIM against an uncompressed reference composite: stage-compositor $(ssim_against_reference "$ours" "$stage" "${geometry[@]}")   ffmpeg $(ssim_against_reference "$work/ffmpeg-$label/playlist.m3u8" "$stage" "${geometry[@]}")"
  fi
}

if [[ $scenario == a || $scenario == all ]]; then
  run_scenario a 4 1280x720 1280x720@30:2500000 crop=1280:719:0:0:exact=1 2 2 638 358 1280 720 2500000
fi
if [[ $scenario == b || $scenario == all ]]; then
  run_scenario b 12 640x360 1920x1080@30:6000000 crop=640:359:0:0:exact=1 4 3 478 268 1920 1080 6000000
fi
if [[ $scenario == hidden ]]; then
  # Hidden participants: scenario (a)'s inputs, with p1's video stopped for the middle two
  # thirds and p3's for the middle third. Ours as it is against ours decoding hidden video too
  # (--decode-hidden-video); ffmpeg's filter graph has no notion of stopped video.
  a_stage=$(make_inputs a 4 1280x720)
  stage=$inputs/hidden-$duration
  mkdir -p "$stage"
  for f in "$a_stage"/p*.mp4; do ln -sf "$(realpath "$f")" "$stage/"; done
  ms=$((duration * 1000))
  python3 - "$a_stage/manifest.json" "$stage/manifest.json" "$ms" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
ms = int(sys.argv[3])
manifest["stageArn"] = manifest["stageArn"].rsplit("/", 1)[0] + "/hidden"
stops = {"p1": (ms // 6, 5 * ms // 6), "p3": (ms // 3, 2 * ms // 3)}
for participant in manifest["participants"]:
    if participant["participantId"] in stops:
        stop, start = stops[participant["participantId"]]
        participant["timeline"] += [{"atMs": stop, "event": "videoStopped"}, {"atMs": start, "event": "videoStarted"}]
json.dump(manifest, open(sys.argv[2], "w"), indent=2)
PY
  echo "scenario hidden: 4 x 1280x720@30 -> 1280x720@30, ${duration} s, p1's video stopped 2/3 of the time, p3's 1/3"
  compose=("$bin" compose --stage "$stage" --encoder 1280x720@30:2500000 --out "$work/out-hidden" --pace fast "${compose_args[@]}")
  first_runs=() second_runs=()
  for ((r = 0; r < repeat; r++)); do
    rm -rf "$work/out-hidden"
    first_runs+=("$(measure "${compose[@]}")")
    rm -rf "$work/out-hidden"
    second_runs+=("$(measure "${compose[@]}" --decode-hidden-video)")
  done
  report_pair "hidden skipped" "hidden decoded" "skipped / decoded"
fi
if [[ -n $long ]]; then
  # Steady memory: RSS at 1 minute and at $long minutes of output, same composition.
  stage=$(duration=$((long * 60)) make_inputs long 4 640x360)
  for minutes in 1 "$long"; do
    read -r e u s m < <(measure "$bin" compose --stage "$stage" --encoder 1280x720@30:2500000 --out "$work/out-long" --pace fast --duration $((minutes * 60)))
    echo "  long run: ${minutes} min of output: peak RSS $((m / 1024)) MiB, real-time factor $(awk -v d=$((minutes * 60)) -v e="$e" 'BEGIN{printf "%.2f", d/e}')x"
  done
fi
