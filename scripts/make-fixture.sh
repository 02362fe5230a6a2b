#!/usr/bin/env bash
# Generates a recorded stage directory (manifest.json + one media file per participant) with
# the ffmpeg CLI and lavfi sources. See fixtures/README.md for the format and the catalogue.
#
# Every participant i (0-based) is distinct by sight and sound:
#   colour  PALETTE[i]  (solid background; the centre of the frame is always that colour)
#   pattern a small testsrc2 box moving along the bottom-right edge (< 10% of the frame)
#   name    "p<i> <colour>" drawn top-left when a font is available (fc-match)
#   tone    sine at 300 + 150*i Hz; mono when i is even, stereo when i is odd
#
# --content camera replaces the colour, pattern and name with a photograph per participant
# (plasma-workspace-wallpapers), panned and zoomed slowly, with temporal sensor noise, encoded
# like a real publisher (720p 2.5 Mbit/s, 360p 800 kbit/s, a keyframe every 2 s): the inputs
# of the benchmark (benchmarks/run.sh), where flat colours leave the codecs nothing to do.
set -euo pipefail

PALETTE_NAMES=(red green blue yellow magenta cyan orange purple teal pink lime brown)
PALETTE_HEX=(FF0000 00FF00 0000FF FFFF00 FF00FF 00FFFF FF8000 8000FF 008080 FF80C0 80FF00 804000)

usage() {
  cat <<'EOF'
usage: make-fixture.sh --out DIR [options]

Generic stage:
  --participants N      number of regular participants (1..12; default 2, or 0 when only
                        edge cases are asked for)
  --size WxH            video size (default 320x180)
  --fps F               frame rate, integer (default 30)
  --duration SECONDS    stage length, integer seconds (default 4)
  --codec h264|vp8      video codec (default h264; vp8 forces webm)
  --container C         mp4|mkv|webm|flv (default mp4; webm uses VP8 + Opus)
  --joins-leaves        participant i >= 1 publishes at min(i, duration/2) s instead of 0;
                        the last participant (if N >= 2) unpublishes at 3/4 of the duration
  --stage-id ID         stage id in the ARN (default: derived from the directory name)
  --content flat|camera flat (default): colour + moving pattern + name, as described above;
                        camera: participant i shows photograph CAMERA_PHOTOS[i] of
                        plasma-workspace-wallpapers (scripts/install-deps.sh --bench), slowly
                        panned and zoomed, with temporal noise; H.264 at the bitrate of a
                        webcam publisher, a keyframe every 2 s; same tones
  --noise N             camera: sensor noise strength (ffmpeg noise filter, default 6)
  --video-kbps K        video bitrate (default: flat 200 per 320x180 up to 2000; camera 2500
                        from 720 lines, 800 from 360, less below)

Edge cases (each appends one participant "edge-<name>", after the regular ones):
  --resolution-change   MPEG-TS whose video switches 320x180 -> 480x270 at half time
  --samplerate-change   MPEG-TS whose audio switches 48000 -> 44100 Hz at half time
  --corrupt             MP4 (moov first) with 32 KiB of random bytes written over its middle
  --rotated             MP4 with display rotation 90 degrees (320x180 coded)
  --odd-size            WebM, VP8 + Opus 317x181 (H.264 4:2:0 cannot code odd sizes)
  --above-1080p         MP4 2560x1440, low bitrate

Committed fixtures:
  --preset two-people|four-grid|ivs-hls   (ignore the generic options except --out)
EOF
}

OUT=""; N=""; SIZE="320x180"; FPS=30; DURATION=4; CODEC=h264; CONTAINER=mp4
JOINS_LEAVES=0; STAGE_ID=""; PRESET=""; EDGES=(); CONTENT=flat; NOISE=6; VIDEO_KBPS=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --participants) N="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    --fps) FPS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --codec) CODEC="$2"; shift 2 ;;
    --container) CONTAINER="$2"; shift 2 ;;
    --joins-leaves) JOINS_LEAVES=1; shift ;;
    --stage-id) STAGE_ID="$2"; shift 2 ;;
    --preset) PRESET="$2"; shift 2 ;;
    --content) CONTENT="$2"; shift 2 ;;
    --noise) NOISE="$2"; shift 2 ;;
    --video-kbps) VIDEO_KBPS="$2"; shift 2 ;;
    --resolution-change|--samplerate-change|--corrupt|--rotated|--odd-size|--above-1080p)
      EDGES+=("${1#--}"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "make-fixture.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ -n "$OUT" ]] || { echo "make-fixture.sh: --out is required" >&2; usage >&2; exit 2; }
command -v ffmpeg >/dev/null || { echo "make-fixture.sh: ffmpeg not found" >&2; exit 1; }
[[ "$CONTENT" == flat || "$CONTENT" == camera ]] || { echo "make-fixture.sh: --content: flat or camera, not '$CONTENT'" >&2; exit 2; }

# The photographs of plasma-workspace-wallpapers (the rest of the package is digital art),
# in participant order: detailed ones first (scenario (a) uses p0..p3), then calmer and darker
# ones, like webcams in different rooms. There are 11: participant 11 shows the first again,
# mirrored, on its own path through it.
WALLPAPERS=${WALLPAPERS:-/usr/share/wallpapers}
CAMERA_PHOTOS=(Path EveningGlow FallenLeaf ColorfulCups BytheWater OneStandsOut Kite summer_1am Grey ColdRipple DarkestHour)
if [[ "$CONTENT" == camera && ! -d "$WALLPAPERS/${CAMERA_PHOTOS[0]}" ]]; then
  echo "make-fixture.sh: --content camera needs the photographs of plasma-workspace-wallpapers in $WALLPAPERS (scripts/install-deps.sh --bench)" >&2
  exit 1
fi

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
if [[ -z "$STAGE_ID" ]]; then
  STAGE_ID="$(basename "$OUT" | tr -cd 'a-zA-Z0-9-')"
  [[ -n "$STAGE_ID" ]] || STAGE_ID="fixture"
fi

FONT=""
if command -v fc-match >/dev/null 2>&1; then
  FONT="$(fc-match -f '%{file}' sans 2>/dev/null || true)"
  [[ -f "$FONT" ]] || FONT=""
fi

FF=(ffmpeg -hide_banner -loglevel error -nostdin -y)

# video_filter INDEX W H FPS SECONDS -> filtergraph text producing [v] from the lavfi inputs
# [0] (colour) and [1] (moving pattern).
video_graph() {
  local i=$1 w=$2 h=$3
  local bw=$(( (w / 6) & ~1 )) bh=$(( (h / 6) & ~1 ))
  (( bw >= 8 )) || bw=8; (( bh >= 8 )) || bh=8
  local travel=$(( w / 4 ))
  local g="[1]scale=${bw}:${bh}[box];[0][box]overlay=x='W-w-4-mod(t*40\,${travel})':y='H-h-4':shortest=1"
  # lavfi sources round odd sizes down to even for 4:2:0; scale to the exact size instead.
  (( w % 2 == 0 && h % 2 == 0 )) || g+=",scale=${w}:${h}"
  if [[ -n "$FONT" ]]; then
    local fs=$(( h / 10 )); (( fs >= 8 )) || fs=8
    g+=",drawtext=fontfile=${FONT}:text='p${i} ${PALETTE_NAMES[$i]}':x=4:y=4:fontsize=${fs}:fontcolor=white:borderw=1:bordercolor=black"
  fi
  echo "${g}[v]"
}

# audio_graph INDEX [INPUT] -> filtergraph text producing [a] from the sine input (default [2]).
audio_graph() {
  local i=$1 input=${2:-2}
  if (( i % 2 == 1 )); then echo "[$input]pan=stereo|c0=c0|c1=c0[a]"; else echo "[$input]anull[a]"; fi
}

# camera_photo INDEX -> the photograph of participant INDEX (a 16:9 size when there is one).
camera_photo() {
  local dir="$WALLPAPERS/${CAMERA_PHOTOS[$(( $1 % ${#CAMERA_PHOTOS[@]} ))]}/contents/images" f
  for f in 2560x1440.jpg 1920x1080.jpg; do [[ -f "$dir/$f" ]] && { echo "$dir/$f"; return; }; done
  f="$(ls -S "$dir" | head -1)"
  [[ -n "$f" ]] || { echo "make-fixture.sh: no photograph in $dir" >&2; exit 1; }
  echo "$dir/$f"
}

# camera_still INDEX W H OUT: the participant's photograph, cropped to 16:9 and scaled once to
# 1.6 times the video size (the pan and zoom below then never magnify it), as a PPM that the
# looping image reader loads without decoding. Participant 11 and up: mirrored.
camera_still() {
  local i=$1 w=$2 h=$3 out=$4
  local sw=$(( (w * 16 / 10 + 1) & ~1 )) sh=$(( (h * 16 / 10 + 1) & ~1 ))
  local g="scale=${sw}:${sh}:force_original_aspect_ratio=increase:flags=lanczos,crop=${sw}:${sh}"
  (( i < ${#CAMERA_PHOTOS[@]} )) || g+=",hflip"
  "${FF[@]}" -i "$(camera_photo "$i")" -vf "$g" -frames:v 1 "$out"
}

# camera_graph INDEX W H FPS -> filtergraph text producing [v] from the looped still [0]: a
# slow zoom between 1.1x and 1.4x (period 45..60 s) and a pan across what the zoom leaves
# (periods 50..85 s; at most about half a pixel per frame), each participant with its own
# periods and phases; then temporal sensor noise (new every frame, like a camera's).
camera_graph() {
  local i=$1 w=$2 h=$3 fps=$4
  local pz=$(( 45 + 5 * (i % 4) )) px=$(( 50 + 7 * (i % 5) )) py=$(( 60 + 5 * (i % 6) ))
  local fz fx fy
  fz=$(awk -v i="$i" 'BEGIN { printf "%.3f", (i * 0.37) - int(i * 0.37) }')
  fx=$(awk -v i="$i" 'BEGIN { printf "%.3f", (i * 0.61 + 0.2) - int(i * 0.61 + 0.2) }')
  fy=$(awk -v i="$i" 'BEGIN { printf "%.3f", (i * 0.29 + 0.5) - int(i * 0.29 + 0.5) }')
  local t="on/${fps}"
  local z="1.25+0.15*sin(2*PI*(${t}/${pz}+${fz}))"
  local x="(iw-iw/zoom)*(0.5+0.5*sin(2*PI*(${t}/${px}+${fx})))"
  local y="(ih-ih/zoom)*(0.5+0.5*sin(2*PI*(${t}/${py}+${fy})))"
  local ew=$(( (w + 1) & ~1 )) eh=$(( (h + 1) & ~1 ))
  local g="[0]format=yuv420p,zoompan=z='${z}':x='${x}':y='${y}':d=1:s=${ew}x${eh}:fps=${fps}"
  (( NOISE > 0 )) && g+=",noise=alls=${NOISE}:allf=t"
  (( w % 2 == 0 && h % 2 == 0 )) || g+=",scale=${w}:${h}"
  echo "${g},format=yuv420p[v]"
}

# encode INDEX OUTFILE CONTAINER CODEC WxH FPS SECONDS [extra ffmpeg output args...]
# Colour and tone come from the palette index; the pattern keeps the frame centre solid.
encode() {
  local i=$1 out=$2 container=$3 codec=$4 size=$5 fps=$6 secs=$7; shift 7
  local w=${size%x*} h=${size#*x}
  local colour="${PALETTE_HEX[$((i % 12))]}" freq=$(( 300 + 150 * i ))
  local rate=48000
  local vcodec acodec fmt
  local kbps=$(( w * h * 200 / (320 * 180) )); (( kbps >= 50 )) || kbps=50; (( kbps <= 2000 )) || kbps=2000
  local gop=$fps
  if [[ "$CONTENT" == camera ]]; then
    # A webcam publisher: 720p at 2.5 Mbit/s, 360p at 800 kbit/s, a keyframe every 2 s.
    if (( h >= 720 )); then kbps=2500; elif (( h >= 360 )); then kbps=800
    else kbps=$(( w * h * 800 / (640 * 360) )); (( kbps >= 100 )) || kbps=100; fi
    gop=$(( 2 * fps ))
  fi
  [[ -z "$VIDEO_KBPS" ]] || kbps=$VIDEO_KBPS
  case "$codec" in
    h264) vcodec=(-c:v libx264 -preset veryfast -profile:v main -bf 0 -g "$gop" -keyint_min "$gop"
                  -sc_threshold 0 -pix_fmt yuv420p -b:v "${kbps}k" -maxrate "${kbps}k" -bufsize "$((kbps * 2))k") ;;
    vp8)  vcodec=(-c:v libvpx -deadline realtime -cpu-used 8 -g "$gop" -b:v "${kbps}k" -pix_fmt yuv420p) ;;
    *) echo "make-fixture.sh: unknown codec $codec" >&2; exit 2 ;;
  esac
  case "$container" in
    mp4)  fmt=(-f mp4 -movflags +faststart); acodec=(-c:a aac -b:a 64k) ;;
    mkv)  fmt=(-f matroska); acodec=(-c:a aac -b:a 64k) ;;
    webm) fmt=(-f webm); acodec=(-c:a libopus -b:a 48k) ;;
    flv)  fmt=(-f flv); acodec=(-c:a aac -b:a 64k) ;;
    ts)   fmt=(-f mpegts); acodec=(-c:a aac -b:a 64k) ;;
    hls)  fmt=(-f hls); acodec=(-c:a aac -b:a 64k) ;;
    *) echo "make-fixture.sh: unknown container $container" >&2; exit 2 ;;
  esac
  if [[ "$CONTENT" == camera ]]; then
    local tmp; tmp="$(mktemp -d)"
    camera_still "$i" "$w" "$h" "$tmp/still.ppm"
    "${FF[@]}" \
      -loop 1 -framerate "$fps" -t "$secs" -i "$tmp/still.ppm" \
      -f lavfi -i "sine=frequency=${freq}:sample_rate=${rate}:duration=${secs}" \
      -filter_complex "$(camera_graph "$i" "$w" "$h" "$fps");$(audio_graph "$i" 1)" \
      -map '[v]' -map '[a]' "${vcodec[@]}" "${acodec[@]}" -ar "$rate" "$@" "${fmt[@]}" "$out"
    rm -rf "$tmp"
    return
  fi
  "${FF[@]}" \
    -f lavfi -i "color=c=0x${colour}:s=$(( (w + 1) & ~1 ))x$(( (h + 1) & ~1 )):r=${fps}:d=${secs}" \
    -f lavfi -i "testsrc2=s=160x90:r=${fps}:d=${secs}" \
    -f lavfi -i "sine=frequency=${freq}:sample_rate=${rate}:duration=${secs}" \
    -filter_complex "$(video_graph "$i" "$w" "$h");$(audio_graph "$i")" \
    -map '[v]' -map '[a]' "${vcodec[@]}" "${acodec[@]}" -ar "$rate" "$@" "${fmt[@]}" "$out"
}

# --- manifest assembly ---------------------------------------------------------------------
PARTICIPANTS_JSON=()

# add_participant ID USERID ATTRS_JSON MEDIA TIMELINE_JSON
add_participant() {
  PARTICIPANTS_JSON+=("    {
      \"participantId\": \"$1\",
      \"userId\": \"$2\",
      \"attributes\": $3,
      \"media\": \"$4\",
      \"timeline\": $5
    }")
}

# attrs INDEX [extra "key": "value" pairs...]
attrs() {
  local i=$1; shift
  local s="{ \"color\": \"${PALETTE_NAMES[$i]}\", \"toneHz\": \"$(( 300 + 150 * i ))\""
  [[ "$CONTENT" != camera ]] || s+=", \"photo\": \"${CAMERA_PHOTOS[$(( i % ${#CAMERA_PHOTOS[@]} ))]}\""
  for kv in "$@"; do s+=", $kv"; done
  echo "$s }"
}

# timeline "atMs:event" ... -> JSON array
timeline() {
  local s="[" sep=""
  for e in "$@"; do s+="$sep{ \"atMs\": ${e%%:*}, \"event\": \"${e#*:}\" }"; sep=", "; done
  echo "$s]"
}

write_manifest() {
  local duration_ms=$1
  {
    echo "{"
    echo "  \"stageArn\": \"arn:aws:ivs:us-east-1:123456789012:stage/${STAGE_ID}\","
    echo "  \"durationMs\": ${duration_ms},"
    echo "  \"participants\": ["
    local n=${#PARTICIPANTS_JSON[@]} k
    for (( k = 0; k < n; k++ )); do
      if (( k < n - 1 )); then echo "${PARTICIPANTS_JSON[$k]},"; else echo "${PARTICIPANTS_JSON[$k]}"; fi
    done
    echo "  ]"
    echo "}"
  } > "$OUT/manifest.json"
}

# regular INDEX CONTAINER CODEC PUBLISH_MS END_MS [extra attrs...] -- [extra timeline events...]
# Media covers [PUBLISH_MS, END_MS) of the stage; END_MS is the unpublish or the stage end.
regular() {
  local i=$1 container=$2 codec=$3 start_ms=$4 end_ms=$5; shift 5
  local extra_attrs=() extra_events=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do extra_attrs+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  extra_events=("$@")
  local name="p${i}-${PALETTE_NAMES[$i]}"
  local ext=$container
  [[ "$codec" == vp8 ]] && ext=webm && container=webm
  local secs_ms=$(( end_ms - start_ms ))
  local secs; secs=$(printf '%d.%03d' $(( secs_ms / 1000 )) $(( secs_ms % 1000 )))
  encode "$i" "$OUT/${name}.${ext}" "$container" "$codec" "$SIZE" "$FPS" "$secs"
  add_participant "p${i}" "${PALETTE_NAMES[$i]}" "$(attrs "$i" "${extra_attrs[@]}")" "${name}.${ext}" \
    "$(timeline "${start_ms}:publish" "${extra_events[@]}")"
}

# --- edge cases ------------------------------------------------------------------------------
edge() {
  local kind=$1 i=$2 secs=$3
  local tmp; tmp="$(mktemp -d)"
  local half; half=$(printf '%d.%03d' $(( secs * 500 / 1000 )) $(( secs * 500 % 1000 )))
  local file
  case "$kind" in
    resolution-change)
      file="edge-${kind}.ts"
      encode "$i" "$tmp/a.ts" ts h264 320x180 "$FPS" "$half"
      encode "$i" "$tmp/b.ts" ts h264 480x270 "$FPS" "$half" -output_ts_offset "$half"
      "${FF[@]}" -i "concat:$tmp/a.ts|$tmp/b.ts" -c copy -f mpegts "$OUT/$file" ;;
    samplerate-change)
      file="edge-${kind}.ts"
      encode "$i" "$tmp/a.ts" ts h264 "$SIZE" "$FPS" "$half"
      # Same encode with 44.1 kHz audio: -ar after encode's own -ar wins.
      encode "$i" "$tmp/b.ts" ts h264 "$SIZE" "$FPS" "$half" -ar 44100 -output_ts_offset "$half"
      "${FF[@]}" -i "concat:$tmp/a.ts|$tmp/b.ts" -c copy -f mpegts "$OUT/$file" ;;
    corrupt)
      file="edge-${kind}.mp4"
      encode "$i" "$OUT/$file" mp4 h264 "$SIZE" "$FPS" "$secs"
      local size; size=$(stat -c %s "$OUT/$file")
      dd if=/dev/urandom of="$OUT/$file" bs=1 seek=$(( size / 2 )) count=32768 conv=notrunc status=none ;;
    rotated)
      file="edge-${kind}.mp4"
      # ffmpeg 5.1 writes the display matrix from the rotate tag only when stream-copying.
      encode "$i" "$tmp/a.mp4" mp4 h264 320x180 "$FPS" "$secs"
      "${FF[@]}" -i "$tmp/a.mp4" -map 0 -c copy -metadata:s:v:0 rotate=90 -movflags +faststart "$OUT/$file" ;;
    odd-size)
      # H.264 4:2:0 cannot code odd sizes (cropping is in 2-pixel units); VP8 can.
      file="edge-${kind}.webm"
      encode "$i" "$OUT/$file" webm vp8 317x181 "$FPS" "$secs" ;;
    above-1080p)
      file="edge-${kind}.mp4"
      encode "$i" "$OUT/$file" mp4 h264 2560x1440 "$FPS" "$secs" -preset ultrafast ;;
  esac
  rm -rf "$tmp"
  add_participant "edge-${kind}" "${PALETTE_NAMES[$((i % 12))]}" "$(attrs $((i % 12)) "\"edgeCase\": \"${kind}\"")" \
    "$file" "$(timeline "0:publish")"
}

# --- IVS individual participant recording (HLS) ---------------------------------------------
# Lays out DIR/media/hls/multivariant.m3u8 -> high/playlist.m3u8 -> high/<n>.ts, like the
# seed's "IVS Individual Participant Recording" (which uses fMP4; TS keeps fixtures simple).
ivs_hls() {
  local i=$1 dir=$2 secs=$3
  mkdir -p "$OUT/$dir/media/hls/high"
  local w=${SIZE%x*} h=${SIZE#*x}
  encode "$i" "$OUT/$dir/media/hls/high/playlist.m3u8" hls h264 "$SIZE" "$FPS" "$secs" \
    -level:v 3.0 -hls_time 2 -hls_playlist_type vod -start_number 1 \
    -hls_segment_filename "$OUT/$dir/media/hls/high/%d.ts"
  cat > "$OUT/$dir/media/hls/multivariant.m3u8" <<EOF
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=${w}x${h},FRAME-RATE=${FPS}.000,CODECS="avc1.4d401e,mp4a.40.2"
high/playlist.m3u8
EOF
}

# --- main --------------------------------------------------------------------------------------
case "$PRESET" in
  two-people)
    SIZE=320x180; FPS=30
    regular 0 mp4 h264 0 6000
    regular 1 mp4 h264 500 4000 -- "4000:unpublish"
    write_manifest 6000 ;;
  four-grid)
    SIZE=320x180; FPS=30
    regular 0 mp4 h264 0 8000 '"isFeatured": "true"'
    regular 1 mkv h264 0 8000 -- "3000:videoStopped" "5000:videoStarted"
    regular 2 webm vp8 0 8000 '"isPip": "true"' -- "2000:audioMuted" "4000:audioUnmuted"
    regular 3 flv h264 2000 8000
    write_manifest 8000 ;;
  ivs-hls)
    SIZE=320x180; FPS=30
    regular 0 mp4 h264 0 5000
    ivs_hls 1 "p1-green" 5
    add_participant "p1" "green" "$(attrs 1 '"source": "ivs-individual-recording"')" \
      "p1-green/media/hls/multivariant.m3u8" "$(timeline "0:publish")"
    write_manifest 5000 ;;
  "")
    if [[ -z "$N" ]]; then if (( ${#EDGES[@]} > 0 )); then N=0; else N=2; fi; fi
    (( N >= 0 && N + ${#EDGES[@]} <= 12 )) || { echo "make-fixture.sh: at most 12 participants" >&2; exit 2; }
    [[ "$CODEC" == vp8 ]] && CONTAINER=webm
    [[ "$CONTAINER" == webm ]] && CODEC=vp8
    dur_ms=$(( DURATION * 1000 ))
    for (( i = 0; i < N; i++ )); do
      start=0; end=$dur_ms; events=()
      if (( JOINS_LEAVES )); then
        start=$(( i * 1000 )); (( start <= dur_ms / 2 )) || start=$(( dur_ms / 2 ))
        if (( N >= 2 && i == N - 1 )); then end=$(( dur_ms * 3 / 4 )); events=("${end}:unpublish"); fi
        (( end > start )) || end=$(( start + 500 ))
      fi
      regular "$i" "$CONTAINER" "$CODEC" "$start" "$end" -- "${events[@]}"
    done
    k=$N
    for e in "${EDGES[@]}"; do edge "$e" "$k" "$DURATION"; k=$(( k + 1 )); done
    write_manifest "$dur_ms" ;;
  *) echo "make-fixture.sh: unknown preset '$PRESET'" >&2; exit 2 ;;
esac
echo "$OUT"
