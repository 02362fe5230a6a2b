#!/bin/bash
# selftest.sh -- run every WHIP client in this folder against whip_echo_server.py (no daemon
# needed) and print one PASS/FAIL/SKIP line per case, then a summary. Exit 0 if nothing failed.
#   PY=python3 (must have aiortc; the pyenv one here)   GSTPY=/usr/bin/python3 (must have gi)
# Needs root for the network namespace (gst case; skipped otherwise). About 70 s.
# Logs and JSON outputs go to $WORK (default: a fresh /tmp/whip-selftest.XXXX, kept).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
GSTPY=${GSTPY:-/usr/bin/python3}
WORK=${WORK:-$(mktemp -d /tmp/whip-selftest.XXXX)}
NS=${NS:-whipst$$}; NS=${NS:0:13}
HOST_IP=${HOST_IP:-10.201.7.1}; NS_IP=${NS_IP:-10.201.7.2}
TOKEN=selftest-token
pids=()
failed=0; passed=0; skipped=0

cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    sleep 0.5
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    [ -n "${NS_UP:-}" ] && "$HERE/netns_veth.sh" down "$NS" 2>/dev/null
}
trap cleanup EXIT INT TERM

result() {  # name rc expected-rc json-file check-python-expression
    local name=$1 rc=$2 want=$3 out=$4 expr=$5
    if [ "$rc" = "$want" ] && "$PY" -c "import json,sys; d=json.loads([l for l in open('$out') if l.startswith('{')][-1]); sys.exit(0 if ($expr) else 1)" 2>/dev/null; then
        echo "PASS $name"; passed=$((passed+1))
    else
        echo "FAIL $name (rc=$rc, want $want): $(tail -c 600 "$out")"; failed=$((failed+1))
    fi
}

start_echo() {  # tag args...  -> sets ECHO_PORT
    local tag=$1; shift
    "$PY" "$HERE/whip_echo_server.py" --token "$TOKEN" --sample-colour --exit-after 600 "$@" \
        >"$WORK/echo-$tag.out" 2>"$WORK/echo-$tag.err" &
    pids+=($!)
    for _ in $(seq 50); do [ -s "$WORK/echo-$tag.out" ] && break; sleep 0.1; done
    ECHO_PORT=$("$PY" -c "import json; print(json.loads(open('$WORK/echo-$tag.out').readline())['port'])")
}

stats_ok() {  # port expr-over-last-session
    curl -s "http://127.0.0.1:$1/stats" >"$WORK/stats-$1.json"
    "$PY" -c "import json,sys; s=json.load(open('$WORK/stats-$1.json'))['sessions'][-1]; t=s['tracks']; sys.exit(0 if ($2) else 1)"
}

echo "work dir: $WORK"
start_echo lo
URL=http://127.0.0.1:$ECHO_PORT/whip/endpoint

# 1. aiortc H.264 and VP8
for codec in h264 vp8; do
    timeout 60 "$PY" "$HERE/whip_aiortc.py" --url "$URL" --token "$TOKEN" --video-codec $codec --color 255,0,0 \
        --tone-hz 440 --duration 4 --flash-every 1 --width 320 --height 240 >"$WORK/aiortc-$codec.json" 2>"$WORK/aiortc-$codec.err"
    rc=$?
    want=$( [ $codec = h264 ] && echo H264 || echo VP8 )
    stats_ok "$ECHO_PORT" "t['video:0']['frames'] > 60 and t['audio:0']['frames'] > 100 and s['codecs']['video'].startswith('$want')" \
        && result "aiortc $codec" $rc 0 "$WORK/aiortc-$codec.json" "d['status'] == 201 and d['dtls_state'] == 'connected' and d['delete_status'] == 200" \
        || { echo "FAIL aiortc $codec: server stats $(cat "$WORK/stats-$ECHO_PORT.json" | tail -c 400)"; failed=$((failed+1)); }
done

# 2. refusals and --offer-only
timeout 30 "$PY" "$HERE/whip_aiortc.py" --url "$URL" --token wrong --duration 2 >"$WORK/aiortc-401.json" 2>/dev/null
result "aiortc wrong token -> exit 2" $? 2 "$WORK/aiortc-401.json" "d['status'] == 401"
timeout 30 "$PY" "$HERE/whip_aiortc.py" --url "$URL" --token wrong --expect-status 401 >"$WORK/aiortc-401e.json" 2>/dev/null
result "aiortc --expect-status 401" $? 0 "$WORK/aiortc-401e.json" "d['status'] == 401"
timeout 30 "$PY" "$HERE/whip_aiortc.py" --url "$URL" --offer-only >"$WORK/offer.sdp" 2>/dev/null
if grep -q "^m=audio" "$WORK/offer.sdp" && grep -q "^m=video" "$WORK/offer.sdp"; then echo "PASS aiortc --offer-only"; passed=$((passed+1)); else echo "FAIL aiortc --offer-only"; failed=$((failed+1)); fi

# 3. chromium (fake devices from a Y4M + WAV fixture)
if command -v chromium >/dev/null; then
    "$PY" "$HERE/make_av_fixture.py" --out-dir "$WORK/fixture" --color 0,0,255 --tone-hz 880 --flash-every 1 --duration 2 >/dev/null
    for via in direct proxy; do
        timeout 90 "$PY" "$HERE/whip_chromium.py" --url "$URL" --token "$TOKEN" --video "$WORK/fixture/video.y4m" \
            --audio "$WORK/fixture/audio.wav" --duration 4 --post-via $via >"$WORK/chromium-$via.json" 2>"$WORK/chromium-$via.err"
        result "chromium h264 ($via POST)" $? 0 "$WORK/chromium-$via.json" \
            "d['ok'] and d['status'] == 201 and d['outbound']['video']['codec'] == 'video/H264' and 'connected' in d['times_ms']"
    done
else
    echo "SKIP chromium (not installed: apt-get install -y chromium)"; skipped=$((skipped+1))
fi

# 4. GStreamer webrtcbin inside a network namespace
if [ "$(id -u)" = 0 ] && "$GSTPY" -c "import gi" 2>/dev/null; then
    "$HERE/netns_veth.sh" up "$NS" "$HOST_IP" "$NS_IP" && NS_UP=1
    start_echo ns --host-ip "$HOST_IP"
    timeout 60 ip netns exec "$NS" "$GSTPY" "$HERE/whip_gst.py" --url "http://$HOST_IP:$ECHO_PORT/whip/endpoint" \
        --token "$TOKEN" --duration 4 --width 320 --height 240 >"$WORK/gst.json" 2>"$WORK/gst.err"
    rc=$?
    stats_ok "$ECHO_PORT" "t['video:0']['frames'] > 60 and t['audio:0']['frames'] > 100" \
        && result "gst webrtcbin in netns" $rc 0 "$WORK/gst.json" "d['status'] == 201 and d['dtls_state'] == 'connected' and d['delete_status'] == 200" \
        || { echo "FAIL gst: $(tail -c 600 "$WORK/gst.json") $(tail -c 300 "$WORK/gst.err")"; failed=$((failed+1)); }
else
    echo "SKIP gst (needs root and $GSTPY with python3-gi)"; skipped=$((skipped+1))
fi

# 5. aiortc through the impairment relay (5 % loss, 5 % reorder), advertised address = relay
UDP=$("$PY" -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
RELAY=$("$PY" -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
start_echo relay --udp-port "$UDP" --advertise "127.0.0.1:$RELAY"
"$PY" "$HERE/udp_impair_relay.py" --listen "127.0.0.1:$RELAY" --target "127.0.0.1:$UDP" --seed 7 --loss 0.05 \
    --reorder 0.05 --reorder-delay-ms 30 --duration 120 >"$WORK/relay.json" 2>"$WORK/relay.err" &
relay_pid=$!; pids+=($relay_pid)
sleep 0.5
timeout 60 "$PY" "$HERE/whip_aiortc.py" --url "http://127.0.0.1:$ECHO_PORT/whip/endpoint" --token "$TOKEN" --video-codec h264 \
    --duration 6 --width 320 --height 240 >"$WORK/aiortc-relay.json" 2>"$WORK/aiortc-relay.err"
rc=$?
kill -TERM $relay_pid; wait $relay_pid 2>/dev/null
result "relay counters" 0 0 "$WORK/relay.json" "d['up']['dropped_loss'] > 0 and d['clients'] == 1"
result "aiortc through relay (5 % loss)" $rc 0 "$WORK/aiortc-relay.json" \
    "d['status'] == 201 and d['dtls_state'] == 'connected' and d['selected_pair'].endswith(':$RELAY')"

# 6. the relay alone (per-client upstream sockets, seeded determinism)
timeout 60 "$PY" "$HERE/relay_selftest.py" >"$WORK/relay-selftest.txt" 2>&1 && { echo "PASS relay_selftest"; passed=$((passed+1)); } \
    || { echo "FAIL relay_selftest: $(cat "$WORK/relay-selftest.txt")"; failed=$((failed+1)); }

echo "summary: $passed passed, $failed failed, $skipped skipped (logs in $WORK)"
[ $failed = 0 ]
