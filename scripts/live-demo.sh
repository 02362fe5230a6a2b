#!/usr/bin/env bash
# A live stage on this machine: starts `stage-compositor serve`, creates a stage and three
# ingest configurations, has three ffmpeg publishers push to it (two over RTMPS, one over
# RTMP), starts a composition recording to HLS, and prints the command to watch it.
# Ctrl-C (or --seconds N) stops the publishers; the composition then stops by itself after
# the idle timeout and the recording is finalized (VOD).
#
#   scripts/live-demo.sh [--binary PATH] [--out DIR] [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."

binary=.build/release/stage-compositor
out=out/live-demo
seconds=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "usage: $0 [--binary PATH] [--out DIR] [--seconds N]" >&2; exit 2 ;;
  esac
done
[[ -x "$binary" ]] || { echo "no $binary: run 'make release' first" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
api_port=$(free_port); rtmp_port=$(free_port); rtmps_port=$(free_port); whip_port=$(free_port)
rm -rf "$out"; mkdir -p "$out"
out=$(cd "$out" && pwd)
cat > "$out/config.json" <<EOF
{
  "region": "us-east-1", "account": "123456789012",
  "listen": {"host": "127.0.0.1", "port": $api_port},
  "stateDirectory": "state",
  "buckets": {"recordings": "recordings"},
  "ingest": {"rtmp": {"port": $rtmp_port}, "rtmps": {"port": $rtmps_port}, "whip": {"port": $whip_port}},
  "lifecycle": {"idleTimeoutSeconds": 5},
  "events": {"stdout": false},
  "encoderPreset": "veryfast"
}
EOF

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

"$binary" serve --config "$out/config.json" > "$out/serve.log" 2>&1 &
daemon=$!
pids+=("$daemon")
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$api_port/healthz" > /dev/null && break
  sleep 0.1
done

# The control plane is plain JSON over HTTP (auth is off in this local config); the AWS CLI
# works the same: aws ivs-realtime ... --endpoint-url http://127.0.0.1:$api_port
call() { curl -sf -X POST "http://127.0.0.1:$api_port/$1" -H 'Content-Type: application/json' -d "$2"; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval('d' + sys.argv[1]))" "$1"; }

stage=$(call CreateStage '{"name":"live-demo"}')
stage_arn=$(echo "$stage" | field '["stage"]["arn"]')
rtmp=$(echo "$stage" | field '["stage"]["endpoints"]["rtmp"]')
rtmps=$(echo "$stage" | field '["stage"]["endpoints"]["rtmps"]')
key() {
  call CreateIngestConfiguration "{\"stageArn\":\"$stage_arn\",\"userId\":\"$1\",\"ingestProtocol\":\"$2\"$3}" \
    | field '["ingestConfiguration"]["streamKey"]'
}
alice=$(key alice RTMPS ',"attributes":{"isFeatured":"true"}')
bob=$(key bob RTMPS '')
carol=$(key carol RTMP ',"insecureIngest":true')

publish() { # source, tone, url
  ffmpeg -hide_banner -loglevel error -nostdin -re -f lavfi -i "$1" -f lavfi -i "sine=frequency=$2:sample_rate=48000" \
    -c:v libx264 -preset veryfast -tune zerolatency -g 60 -bf 0 -pix_fmt yuv420p -b:v 1500k \
    -c:a aac -b:a 128k -f flv "$3" >> "$out/publishers.log" 2>&1 &
  pids+=("$!")
}
publish "testsrc2=size=1280x720:rate=30" 440 "$rtmps$alice"
publish "smptehdbars=size=1280x720:rate=30" 660 "$rtmps$bob"
publish "mandelbrot=size=640x360:rate=30" 880 "$rtmp$carol"
sleep 2

encoder=$(call CreateEncoderConfiguration '{"name":"hd","video":{"width":1280,"height":720,"framerate":30,"bitrate":2500000}}' \
  | field '["encoderConfiguration"]["arn"]')
storage=$(call CreateStorageConfiguration '{"name":"local","s3":{"bucketName":"recordings"}}' | field '["storageConfiguration"]["arn"]')
composition=$(call StartComposition "{\"stageArn\":\"$stage_arn\",\"layout\":{\"grid\":{\"featuredParticipantAttribute\":\"isFeatured\"}},
  \"destinations\":[{\"s3\":{\"storageConfigurationArn\":\"$storage\",\"encoderConfigurationArns\":[\"$encoder\"]}}]}")
prefix=$(echo "$composition" | field '["composition"]["destinations"][0]["detail"]["s3"]["recordingPrefix"]')
playlist="$out/recordings/$prefix/media/hls/multivariant.m3u8"

cat <<EOF
Live stage $stage_arn: alice and bob publish over RTMPS, carol over RTMP.
  publish more:    ffmpeg -re -i <file> -c:v libx264 -bf 0 -c:a aac -f flv '$rtmps<streamKey>'
  API:             aws ivs-realtime list-participants --endpoint-url http://127.0.0.1:$api_port --region us-east-1 ...
  watch it:        ffplay '$playlist'
  daemon log:      $out/serve.log
EOF
if (( seconds > 0 )); then
  sleep "$seconds"
else
  echo "Ctrl-C to stop the publishers."
  trap 'echo' INT
  wait "$daemon" || true
fi
# The publishers leave; the composition stops by itself after the idle timeout (5 s here).
for pid in "${pids[@]:1}"; do kill -INT "$pid" 2>/dev/null || true; done
arn=$(echo "$composition" | field '["composition"]["arn"]')
for _ in $(seq 1 60); do
  state=$(call GetComposition "{\"arn\":\"$arn\"}" | field '["composition"]["state"]')
  [[ "$state" == "STOPPED" || "$state" == "FAILED" ]] && break
  sleep 0.5
done
echo "composition $state; recording: $playlist"
