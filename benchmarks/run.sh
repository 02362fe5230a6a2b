#!/usr/bin/env bash
# Benchmark: stage-compositor (release) against the equivalent ffmpeg command line and the
# equivalent GStreamer pipeline, same inputs, same encoder settings, same output (HLS, 2 s
# MPEG-TS segments; GStreamer's in one MPEG-TS file, see gst_cmd).
#   (a) 4 x 1280x720@30 participants -> 1280x720@30, 2.5 Mbps
#   (b) 12 x 640x360@30 participants -> 1920x1080@30, 6 Mbps
# The inputs are camera-like (scripts/make-fixture.sh --content camera: a photograph per
# participant, panned and zoomed slowly, with temporal sensor noise, 720p at 2.5 Mbit/s and
# 360p at 800 kbit/s, a keyframe every 2 s); `--scenario flat` runs (a) and (b) on the flat
# colour fields of the test fixtures instead (`--content flat` does it for any scenario).
# Prints, for each of ours, ffmpeg and GStreamer: real-time factor, CPU seconds per output
# second, peak RSS, and our CPU over each peer's; the codec floor (the CPU to decode every
# input and to encode the output alone, same threads and settings) and each one's overhead
# above it; and the SSIM of the composites against an uncompressed reference (NO_SSIM=1
# skips it; NO_GST=1 skips GStreamer).
# --repeat N runs them alternately N times and reports the medians (CPU time on a shared VM
# varies by +-20 % from run to run; alternating spreads that over all of them).
# --scenario hidden compares ours with and without decoding stopped participants' video.
# --scenario overlays: (a) as it is against (a) with overlays (a label on each of the four tiles,
# a 200x80 logo with an alpha gradient, a lower-third banner), ours only: what overlays cost.
# --scenario simulcast: a 12-person 1080p grid of 720p simulcast publishers, composed from their
# 1280x720 layers (without the rule that picks the smallest layer covering the tile) and from
# their 640x360 layers (with it: the tiles are 478x268); the same media path a live composition
# decodes with (benchmarks/simulcast_bench.py shows the rule choosing the layer live).
# Usage: benchmarks/run.sh [--duration SECONDS] [--scenario a|b|all|flat|hidden|overlays|simulcast]
#                          [--content camera|flat] [--repeat N] [--long MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."

duration=30
scenario=all
content=camera
long=""
repeat=1
while (($#)); do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --scenario) scenario=$2; shift 2 ;;
    --content) content=$2; shift 2 ;;
    --long) long=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
case $scenario in
  a | b | all | hidden | overlays | simulcast) ;;
  flat) content=flat ;;
  *) echo "unknown scenario $scenario (a, b, all, flat, hidden, overlays, simulcast)" >&2; exit 2 ;;
esac
[[ $content == camera || $content == flat ]] || { echo "--content: camera or flat, not $content" >&2; exit 2; }

# BIN: another build to measure; COMPOSE_ARGS: extra `compose` options (experiments).
bin=${BIN:-.build/release/stage-compositor}
[[ -x $bin ]] || swift build -c release
read -r -a compose_args <<< "${COMPOSE_ARGS:-}"
work=benchmarks/.work
inputs=$work/inputs
mkdir -p "$inputs"

# Our threads, which the peers and the codec floor are given too: one frame thread per
# participant's decoder (DecoderLimits; participants are decoded side by side) and x264's
# threads as EncoderSpec.defaultEncoderThreads (1 up to 640x360, else 2), unless
# COMPOSE_ARGS sets --decoder-threads or --encoder-threads.
decoder_threads=1
encoder_threads=""
for ((k = 0; k < ${#compose_args[@]}; k++)); do
  case ${compose_args[k]} in
    --decoder-threads) decoder_threads=${compose_args[k + 1]} ;;
    --decoder-threads=*) decoder_threads=${compose_args[k]#*=} ;;
    --encoder-threads) encoder_threads=${compose_args[k + 1]} ;;
    --encoder-threads=*) encoder_threads=${compose_args[k]#*=} ;;
  esac
done
x264_threads() { # out_w out_h
  if [[ -n $encoder_threads ]]; then echo "$encoder_threads"; elif (($1 * $2 <= 640 * 360)); then echo 1; else echo 2; fi
}

gst=1
if [[ -n ${NO_GST:-} ]]; then
  gst=""
elif ! command -v gst-launch-1.0 >/dev/null || ! gst-inspect-1.0 avdec_h264 >/dev/null 2>&1 ||
  ! gst-inspect-1.0 x264enc >/dev/null 2>&1 || ! gst-inspect-1.0 mpegtsmux >/dev/null 2>&1; then
  echo "GStreamer (gst-launch-1.0 with avdec_h264, x264enc, mpegtsmux) is missing: skipped; scripts/install-deps.sh --bench installs it" >&2
  gst=""
fi

make_inputs() { # name participants size
  local dir=$inputs/$content-$1-$duration
  if [[ ! -f $dir/manifest.json ]]; then
    scripts/make-fixture.sh --content "$content" --out "$dir" --participants "$2" --size "$3" --duration "$duration" >/dev/null ||
      { echo "could not make the inputs in $dir" >&2; return 1; }
  fi
  echo "$dir"
}

# Runs a command under /usr/bin/time; prints "elapsed user sys maxrss_kb".
measure() {
  local log
  log=$(mktemp)
  /usr/bin/time -f "%e %U %S %M" -o "$log" "$@" >/dev/null 2>"$log.err" ||
    { local rc=$?; cat "$log.err" >&2; echo "failed (exit $rc): ${*:1:6} ..." >&2; exit 1; }
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
# Participants are inputs first..first+n-1; the result is labelled [out]. The grid is
# centred, or at `origin` (x:y of its top-left corner).
grid_graph() { # first n flags crop cols rows tile_w tile_h gap out_w out_h out [origin]
  local first=$1 n=$2 flags=$3 crop=$4 cols=$5 rows=$6 tw=$7 th=$8 gap=$9 ow=${10} oh=${11} label=${12}
  local gw=$((cols * tw + (cols - 1) * gap)) gh=$((rows * th + (rows - 1) * gap)) graph="" layout=""
  local origin=${13:-$(((ow - gw) / 2)):$(((oh - gh) / 2))}
  for ((i = 0; i < n; i++)); do
    graph+="[$((first + i)):v]${crop},scale=${tw}:${th}:flags=${flags},setsar=1[v$i];"
    layout+="$(((i % cols) * (tw + gap)))_$(((i / cols) * (th + gap)))|"
  done
  for ((i = 0; i < n; i++)); do graph+="[v$i]"; done
  graph+="xstack=inputs=$n:layout=${layout%|}:fill=black,pad=${ow}:${oh}:${origin%:*}:${origin#*:}:black,format=yuv420p[$label]"
  echo "$graph"
}

# Our encoder settings as ffmpeg CLI options (Sources/FFmpeg/Encoder.swift): libx264 veryfast,
# main profile, bitrate = maxrate, VBV buffer of 2 s, a closed GOP of 60 frames (the 2 s
# segment) with scene cuts off, no B-frames; AAC-LC 128 kbit/s 48 kHz stereo.
x264_args() { # bitrate threads
  X264_ARGS=(-c:v libx264 -preset veryfast -profile:v main -b:v "$1" -maxrate "$1" -bufsize $(($1 * 2))
    -g 60 -keyint_min 60 -sc_threshold 0 -bf 0 -threads:v "$2" -r 30)
}
AAC_ARGS=(-c:a aac -b:a 128k -ar 48000 -ac 2)

# ffmpeg equivalent of our grid: bilinear scaling (FF_SCALE=experimental gives it our TileScaler's
# swscale flags), amix, libx264 with our settings, AAC, HLS.
# Its decoders keep ffmpeg's own threading (frame threads); x264 gets our thread count.
ffmpeg_cmd() { # stage crop columns rows tile_w tile_h gap out_w out_h bitrate out_dir
  local stage=$1 crop=$2 cols=$3 rows=$4 tw=$5 th=$6 gap=$7 ow=$8 oh=$9 bitrate=${10} out=${11}
  local files=() filter n
  for f in $(participant_files "$stage"); do files+=(-i "$f"); done
  n=$((${#files[@]} / 2))
  filter="$(grid_graph 0 "$n" "${FF_SCALE:-bilinear}" "$crop" "$cols" "$rows" "$tw" "$th" "$gap" "$ow" "$oh" v);"
  for ((i = 0; i < n; i++)); do filter+="[$i:a]"; done
  filter+="amix=inputs=$n:normalize=0,aresample=48000,aformat=channel_layouts=stereo[a]"
  mkdir -p "$out"
  x264_args "$bitrate" "$(x264_threads "$ow" "$oh")"
  FFMPEG_ARGS=(ffmpeg -nostdin -v error -y "${files[@]}" -filter_complex "$filter" -map "[v]" -map "[a]"
    "${X264_ARGS[@]}" "${AAC_ARGS[@]}"
    -f hls -hls_time 2 -hls_playlist_type vod -hls_segment_filename "$out/%d.ts" "$out/playlist.m3u8")
}

# GStreamer equivalent of our grid, one gst-launch-1.0 pipeline: per participant qtdemux,
# h264parse, avdec_h264 (our decoder threads), videocrop to the COVER rectangle, videoscale
# (bilinear over as many taps as the ratio needs, like swscale's bilinear: GST_SCALE=bilinear
# for GStreamer's default 2-tap) into the tile, compositor at our tile positions on black;
# x264enc with our settings (its property defaults give way to the preset; key-int-max,
# bframes, threads, VBV and the option string set what ours sets); every participant's audio
# decoded (avdec_aac), mixed by audiomixer, AAC 128 kbit/s (avenc_aac, FFmpeg's encoder like
# ours, else voaacenc); mpegtsmux into one MPEG-TS file (hlssink2, which would cut it into
# HLS segments, now and then never posts its EOS, and gst-launch-1.0 waits forever).
# compositor places I420 tiles on even columns and rows only (it rounds odd positions up):
# where our grid's origin is odd, GStreamer's grid is one pixel right or down of it, and its
# SSIM reference is too (gst_origin).
gst_origin() { # cols rows tile_w tile_h gap out_w out_h
  local gw=$(($1 * $3 + ($1 - 1) * $5)) gh=$(($2 * $4 + ($2 - 1) * $5))
  echo "$(((($6 - gw) / 2 + 1) & ~1)):$(((($7 - gh) / 2 + 1) & ~1))"
}
gst_cmd() { # stage in_size crop cols rows tile_w tile_h gap out_w out_h bitrate out_dir
  local stage=$1 in=$2 crop=$3 cols=$4 rows=$5 tw=$6 th=$7 gap=$8 ow=$9 oh=${10} bitrate=${11} out=${12}
  local iw=${in%x*} ih=${in#*x} cw ch cx cy rest i=0 f x y origin
  origin=$(gst_origin "$cols" "$rows" "$tw" "$th" "$gap" "$ow" "$oh")
  IFS=: read -r cw ch cx cy rest <<< "${crop#crop=}"
  local videocrop=(videocrop "left=$cx" "top=$cy" "right=$((iw - cw - cx))" "bottom=$((ih - ch - cy))" !)
  # No colour conversion, like ours: every caps keeps the colorimetry and chroma siting
  # GStreamer gives the inputs (their H.264 has no colour description: BT.709 above 576
  # lines, else BT.601; MPEG-2 chroma siting); left open, the tiles and the canvas get their
  # own size's defaults, and videoscale and compositor convert every pixel between them
  # (a quarter more CPU in (a), and 0.01 less SSIM).
  local colour=colorimetry=bt601,chroma-site=mpeg2
  ((ih <= 576)) || colour=colorimetry=bt709,chroma-site=mpeg2
  local aac=avenc_aac
  gst-inspect-1.0 avenc_aac >/dev/null 2>&1 || aac=voaacenc
  local pads=() branches=()
  for f in $(participant_files "$stage"); do
    x=$((${origin%:*} + (i % cols) * (tw + gap))) y=$((${origin#*:} + (i / cols) * (th + gap)))
    pads+=("sink_$i::xpos=$x" "sink_$i::ypos=$y")
    branches+=(filesrc "location=$f" ! qtdemux "name=d$i"
      "d$i.video_0" ! queue ! h264parse ! avdec_h264 "max-threads=$decoder_threads" ! "${videocrop[@]}"
      videoscale "method=${GST_SCALE:-bilinear2}" ! "video/x-raw,width=$tw,height=$th,pixel-aspect-ratio=1/1,$colour" ! "comp.sink_$i"
      "d$i.audio_0" ! queue max-size-time=5000000000 max-size-buffers=0 max-size-bytes=0 ! aacparse ! avdec_aac !
      audioconvert ! audioresample ! "audio/x-raw,format=F32LE,rate=48000,channels=2,layout=interleaved" ! "amix.sink_$i")
    i=$((i + 1))
  done
  mkdir -p "$out"
  # The queues into the muxer are unbounded: x264enc holds its lookahead, and a full queue
  # there would stop a mixer, which stops the demuxers feeding the other (two aggregators
  # waiting on each other). A hang ends after `timeout`, as a failure.
  local unbounded=(queue max-size-time=0 max-size-buffers=0 max-size-bytes=0)
  GST_ARGS=(timeout -k 10 $((duration * 20 + 120)) gst-launch-1.0 -q compositor name=comp background=black "${pads[@]}"
    ! "video/x-raw,format=I420,width=$ow,height=$oh,framerate=30/1,pixel-aspect-ratio=1/1,$colour" ! queue
    ! x264enc speed-preset=veryfast "bitrate=$((bitrate / 1000))" vbv-buf-capacity=2000 key-int-max=60 bframes=0
    "threads=$(x264_threads "$ow" "$oh")" aud=false byte-stream=true option-string=keyint-min=60:scenecut=0:open-gop=0
    ! video/x-h264,profile=main ! h264parse ! "${unbounded[@]}" ! mux.
    audiomixer name=amix ! audio/x-raw,format=F32LE,rate=48000,channels=2 ! "$aac" bitrate=128000 ! aacparse ! "${unbounded[@]}" ! mux.
    mpegtsmux name=mux ! filesink "location=$out/composite.ts"
    "${branches[@]}")
}

# The codec floor, part 1: decoding every input (video and audio) with our decoder threads,
# in one ffmpeg process, to nothing.
decode_floor_cmd() { # stage
  local f i=0 maps=()
  DECODE_ARGS=(ffmpeg -nostdin -v error)
  for f in $(participant_files "$1"); do
    DECODE_ARGS+=(-threads "$decoder_threads" -i "$f")
    maps+=(-map "$i:v" -map "$i:a")
    i=$((i + 1))
  done
  DECODE_ARGS+=("${maps[@]}" -f null -)
}

# The codec floor, part 2: encoding the output alone with our settings and threads. The
# pictures are the composite itself (the scenario's grid, composed by another ffmpeg with our
# TileScaler's swscale flags and piped in raw, so its work is not counted); the audio a
# stereo tone.
encode_floor_cmd() { # stage crop cols rows tile_w tile_h gap out_w out_h bitrate
  local stage=$1 ow=$8 oh=$9 bitrate=${10} files=() n
  for f in $(participant_files "$stage"); do files+=(-i "$f"); done
  n=$((${#files[@]} / 2))
  RAW_ARGS=(ffmpeg -nostdin -v error "${files[@]}"
    -filter_complex "$(grid_graph 0 "$n" experimental "$2" "$3" "$4" "$5" "$6" "$7" "$ow" "$oh" v)"
    -map "[v]" -f rawvideo -pix_fmt yuv420p -)
  x264_args "$bitrate" "$(x264_threads "$ow" "$oh")"
  ENCODE_ARGS=(ffmpeg -nostdin -v error -f rawvideo -pix_fmt yuv420p -video_size "${ow}x${oh}" -framerate 30 -i -
    -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=$duration" -map 0:v -map 1:a
    "${X264_ARGS[@]}" "${AAC_ARGS[@]}" -f null -)
}

# SSIM of a composite (HLS playlist or MPEG-TS file) against an uncompressed reference
# composite of the same stage and geometry, scaled with bicubic + accurate rounding + full
# chroma interpolation and never encoded. Frames are matched by index. Prints the "All" SSIM.
ssim_against_reference() { # playlist stage crop cols rows tile_w tile_h gap out_w out_h [origin]
  local playlist=$1 stage=$2 files=() n graph
  for f in $(participant_files "$stage"); do files+=(-i "$f"); done
  n=$((${#files[@]} / 2))
  graph="$(grid_graph 1 "$n" bicubic+accurate_rnd+full_chroma_int "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" ref0 "${11:-}");"
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

# Reports the median run of a tool (see median_run) and prints its CPU seconds (user + sys).
report_median() { # label runs...
  local label=$1 e u s m
  shift
  read -r e u s m < <(median_run "$duration" "$@")
  report "$label" "$duration" "$e" "$u" "$s" "$m" >&2
  awk -v u="$u" -v s="$s" 'BEGIN { print u + s }'
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

# The median CPU seconds of "elapsed user sys rss" lines.
median_cpu() { # lines...
  printf '%s\n' "$@" | awk '{ print $2 + $3 }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

run_scenario() { # label participants in_size encoder crop cols rows tile_w tile_h out_w out_h bitrate
  local label=$1 stage geometry=("$5" "$6" "$7" "$8" "$9" 2 "${10}" "${11}") bitrate=${12}
  local ours_cpu ffmpeg_cpu gst_cpu="" decode_cpu encode_cpu
  stage=$(make_inputs "$label" "$2" "$3")
  echo "scenario $label ($content): $2 x $3@30 -> $4, ${duration} s"
  ffmpeg_cmd "$stage" "${geometry[@]}" "$bitrate" "$work/ffmpeg-$label"
  [[ -z $gst ]] || gst_cmd "$stage" "$3" "${geometry[@]}" "$bitrate" "$work/gst-$label"
  decode_floor_cmd "$stage"
  encode_floor_cmd "$stage" "${geometry[@]}" "$bitrate"
  local ours_runs=() ffmpeg_runs=() gst_runs=() decode_runs=() encode_runs=()
  for ((r = 0; r < repeat; r++)); do
    rm -rf "$work/out-$label" "$work/ffmpeg-$label" "$work/gst-$label"
    mkdir -p "$work/ffmpeg-$label" "$work/gst-$label"
    ours_runs+=("$(measure "$bin" compose --stage "$stage" --encoder "$4" --out "$work/out-$label" --pace fast "${compose_args[@]}")")
    ffmpeg_runs+=("$(measure "${FFMPEG_ARGS[@]}")")
    [[ -z $gst ]] || gst_runs+=("$(measure "${GST_ARGS[@]}")")
    decode_runs+=("$(measure "${DECODE_ARGS[@]}")")
    encode_runs+=("$("${RAW_ARGS[@]}" | measure "${ENCODE_ARGS[@]}")")
  done
  { ours_cpu=$(report_median "stage-compositor" "${ours_runs[@]}"); } 2>&1
  { ffmpeg_cpu=$(report_median "ffmpeg" "${ffmpeg_runs[@]}"); } 2>&1
  [[ -z $gst ]] || { gst_cpu=$(report_median "gstreamer" "${gst_runs[@]}"); } 2>&1
  awk -v a="$ours_cpu" -v b="$ffmpeg_cpu" 'BEGIN { printf "  CPU ratio (ours / ffmpeg): %.2f\n", a / b }'
  [[ -z $gst ]] || awk -v a="$ours_cpu" -v b="$gst_cpu" 'BEGIN { printf "  CPU ratio (ours / gstreamer): %.2f\n", a / b }'
  decode_cpu=$(median_cpu "${decode_runs[@]}")
  encode_cpu=$(median_cpu "${encode_runs[@]}")
  local n
  n=$(participant_files "$stage" | wc -l)
  awk -v dc="$decode_cpu" -v ec="$encode_cpu" -v d="$duration" -v n="$n" -v dt="$decoder_threads" -v et="$(x264_threads "${10}" "${11}")" 'BEGIN {
    printf "  codec floor: decode %.3f + encode %.3f = %.3f CPU s per output s (%d inputs, %d decoder thread(s) each; libx264 veryfast %d thread(s) + AAC)\n",
      dc / d, ec / d, (dc + ec) / d, n, dt, et }'
  local tool cpu
  for tool in stage-compositor ffmpeg gstreamer; do
    case $tool in
      stage-compositor) cpu=$ours_cpu ;;
      ffmpeg) cpu=$ffmpeg_cpu ;;
      gstreamer) cpu=$gst_cpu ;;
    esac
    [[ -n $cpu ]] || continue
    awk -v t="$tool" -v c="$cpu" -v dc="$decode_cpu" -v ec="$encode_cpu" 'BEGIN {
      printf "  %s overhead above the codec floor: %.1f %%\n", t, (c - (dc + ec)) / (dc + ec) * 100 }'
  done
  if [[ -z ${NO_SSIM:-} ]]; then
    local ours line
    ours=$(find "$work/out-$label" -name playlist.m3u8 | head -1)
    line="  SSIM against an uncompressed reference composite: stage-compositor $(ssim_against_reference "$ours" "$stage" "${geometry[@]}")"
    line+="   ffmpeg $(ssim_against_reference "$work/ffmpeg-$label/playlist.m3u8" "$stage" "${geometry[@]}")"
    [[ -z $gst ]] || line+="   gstreamer $(ssim_against_reference "$work/gst-$label/composite.ts" "$stage" "${geometry[@]}" "$(gst_origin "${geometry[@]:1}")")"
    echo "$line"
  fi
}

if [[ $scenario == a || $scenario == all || $scenario == flat ]]; then
  run_scenario a 4 1280x720 1280x720@30:2500000 crop=1280:719:0:0:exact=1 2 2 638 358 1280 720 2500000
fi
if [[ $scenario == b || $scenario == all || $scenario == flat ]]; then
  run_scenario b 12 640x360 1920x1080@30:6000000 crop=640:359:0:0:exact=1 4 3 478 268 1920 1080 6000000
fi
if [[ $scenario == hidden ]]; then
  # Hidden participants: scenario (a)'s inputs, with p1's video stopped for the middle two
  # thirds and p3's for the middle third. Ours as it is against ours decoding hidden video too
  # (--decode-hidden-video); ffmpeg's filter graph has no notion of stopped video.
  a_stage=$(make_inputs a 4 1280x720)
  stage=$inputs/$content-hidden-$duration
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
  echo "scenario hidden ($content): 4 x 1280x720@30 -> 1280x720@30, ${duration} s, p1's video stopped 2/3 of the time, p3's 1/3"
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
if [[ $scenario == overlays ]]; then
  stage=$(make_inputs a 4 1280x720)
  overlay_dir=$work/overlays
  mkdir -p "$overlay_dir"
  python3 - "$overlay_dir" <<'PY'
import json, struct, sys, zlib
folder = sys.argv[1]
w, h = 200, 80
rows = b"".join(b"\x00" + b"".join(bytes([255, 128, 0, x * 255 // (w - 1)]) for x in range(w)) for _ in range(h))
def chunk(kind, data): return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open(f"{folder}/logo.png", "wb").write(png)
json.dump({"labels": {}, "images": [{"file": "logo.png", "position": "TOP_RIGHT", "margin": 24}],
           "banners": [{"id": "lower-third", "text": "Live from the studio: stage-compositor overlays"}]},
          open(f"{folder}/overlays.json", "w"))
PY
  echo "scenario overlays ($content): (a) 4 x 1280x720@30 -> 1280x720@30, ${duration} s, with 4 labels, a logo and a banner, and without"
  compose=("$bin" compose --stage "$stage" --encoder 1280x720@30:2500000 --out "$work/out-overlays" --pace fast "${compose_args[@]}")
  first_runs=() second_runs=()
  for ((r = 0; r < repeat; r++)); do
    rm -rf "$work/out-overlays"
    first_runs+=("$(measure "${compose[@]}" --overlays "$overlay_dir/overlays.json")")
    rm -rf "$work/out-overlays"
    second_runs+=("$(measure "${compose[@]}")")
  done
  rm -rf "$work/out-overlays"
  report_pair "with overlays" "without" "with / without overlays"
fi
if [[ $scenario == simulcast ]]; then
  full=$(make_inputs simulcast-full 12 1280x720)
  half=$(make_inputs b 12 640x360)
  echo "scenario simulcast ($content): 12 x 720p simulcast publishers -> 1920x1080@30, ${duration} s: their 1280x720 layers, then their 640x360 layers"
  first_runs=() second_runs=()
  for ((r = 0; r < repeat; r++)); do
    rm -rf "$work/out-simulcast"
    first_runs+=("$(measure "$bin" compose --stage "$full" --encoder 1920x1080@30:6000000 --out "$work/out-simulcast" --pace fast "${compose_args[@]}")")
    rm -rf "$work/out-simulcast"
    second_runs+=("$(measure "$bin" compose --stage "$half" --encoder 1920x1080@30:6000000 --out "$work/out-simulcast" --pace fast "${compose_args[@]}")")
  done
  rm -rf "$work/out-simulcast"
  report_pair "full layers" "half layers" "full / half layers"
fi
if [[ -n $long ]]; then
  # Steady memory: RSS at 1 minute and at $long minutes of output, same composition.
  stage=$(duration=$((long * 60)) make_inputs long 4 640x360)
  for minutes in 1 "$long"; do
    read -r e u s m < <(measure "$bin" compose --stage "$stage" --encoder 1280x720@30:2500000 --out "$work/out-long" --pace fast --duration $((minutes * 60)))
    echo "  long run: ${minutes} min of output: peak RSS $((m / 1024)) MiB, real-time factor $(awk -v d=$((minutes * 60)) -v e="$e" 'BEGIN{printf "%.2f", d/e}')x"
  done
fi
