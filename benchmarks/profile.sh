#!/usr/bin/env bash
# Where the CPU goes: samples stage-compositor and the equivalent ffmpeg command (the same
# inputs and settings as benchmarks/run.sh) with `perf record`, and sorts the samples into
# decode, scale, compose, mix, encode and the rest. Run benchmarks/run.sh first (it makes
# the inputs). Usage: benchmarks/profile.sh [--scenario a|b] [--duration SECONDS] [--content camera|flat]
set -euo pipefail
cd "$(dirname "$0")/.."

scenario=a
duration=30
content=camera
while (($#)); do
  case "$1" in
    --scenario) scenario=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --content) content=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "perf is needed (apt install linux-perf)" >&2; exit 1; }

bin=${BIN:-.build/release/stage-compositor}
work=benchmarks/.work
case $scenario in
  a) stage=$work/inputs/$content-a-$duration encoder=1280x720@30:2500000 grid=(crop=1280:719:0:0:exact=1 2 2 638 358 2 1280 720 2500000) ;;
  b) stage=$work/inputs/$content-b-$duration encoder=1920x1080@30:6000000 grid=(crop=640:359:0:0:exact=1 4 3 478 268 2 1920 1080 6000000) ;;
  *) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
[[ -f $stage/manifest.json ]] || { echo "no inputs in $stage: run benchmarks/run.sh --duration $duration --content $content first" >&2; exit 1; }

# The ffmpeg command line of run.sh (FFMPEG_ARGS), without running the rest of it.
encoder_threads=""
eval "$(sed -n '/^participant_files()/,/^}/p; /^grid_graph()/,/^}/p; /^x264_threads()/,/^}/p; /^x264_args()/,/^}/p;
  /^AAC_ARGS=/p; /^ffmpeg_cmd()/,/^}/p' benchmarks/run.sh)"
ffmpeg_cmd "$stage" "${grid[@]}" "$work/profile-ffmpeg"

classify() { # perf.data label
  perf report -i "$1" --stdio --no-children -g none --sort dso,sym -F overhead,dso,sym 2>/dev/null | python3 -c '
import re, sys
label = sys.argv[1]
totals = {}
def bucket(dso, sym):
    if dso.startswith("libx264"): return "encode (x264)"
    if dso.startswith("libswscale"): return "scale (swscale)"
    if dso.startswith("libswresample"): return "mix (resample)"
    if dso.startswith("libavcodec"):
        if re.search(r"aac|psy|quantiz|mdct|tns|search_for|sbr|ps_|fft|opus|celt|silk|lpc", sym, re.I): return "audio codec (AAC/Opus)"
        return "decode (video)"
    if dso.startswith("libavfilter"):
        if re.search(r"mix|volume|resample|aformat|afifo", sym, re.I): return "mix (filters)"
        return "compose (filters)"
    if dso.startswith("libavformat"): return "demux/mux"
    if dso.startswith("libavutil"):
        if re.search(r"float_dsp|fmul|vector", sym, re.I): return "mix (filters)"
        return "libavutil"
    if dso.startswith("stage-compositor"):
        if re.search(r"Audio|Mixer|Ring|Limiter|mix", sym): return "mix (ours)"
        if re.search(r"Compositor|TileScaler|fill|CameraOff|Raster", sym): return "compose (ours)"
        return "our other code"
    if dso.startswith("libc") or dso.startswith("ld-"): return "libc (memcpy/memset/malloc)"
    if dso.startswith("[kernel"): return "kernel"
    if dso.startswith("libswift") or dso.startswith("libFoundation") or dso.startswith("libdispatch"): return "Swift runtime"
    return "other"
for line in sys.stdin:
    m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[.\]\s+(.*)", line)
    if not m: continue
    key = bucket(m.group(2), m.group(3))
    totals[key] = totals.get(key, 0.0) + float(m.group(1))
print(f"  {label}:")
for key, value in sorted(totals.items(), key=lambda kv: -kv[1]):
    if value >= 0.05: print(f"    {value:5.1f} %  {key}")
' "$2"
}

echo "profile of scenario $scenario ($duration s of output), share of each one's samples:"
perf record -q -F 499 -o "$work/perf-ours.data" -- "$bin" compose --stage "$stage" --encoder "$encoder" \
  --out "$work/profile-ours" --pace fast ${COMPOSE_ARGS:-} >/dev/null 2>&1
classify "$work/perf-ours.data" "stage-compositor"
perf record -q -F 499 -o "$work/perf-ffmpeg.data" -- "${FFMPEG_ARGS[@]}" >/dev/null
classify "$work/perf-ffmpeg.data" "ffmpeg"
rm -rf "$work/profile-ours" "$work/profile-ffmpeg"
