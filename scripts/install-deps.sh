#!/usr/bin/env bash
# Installs the Debian packages stage-compositor builds and tests with, when missing.
# Idempotent and quiet when everything is there. Needs root (or sudo) only to install.
# Usage: scripts/install-deps.sh [--test] [--bench]
set -euo pipefail

test=""
bench=""
for arg in "$@"; do
  case "$arg" in
    --test) test=1 ;;
    --bench) bench=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (--test, --bench)" >&2; exit 2 ;;
  esac
done

packages=(
  pkg-config ffmpeg curl
  libavcodec-dev libavformat-dev libswscale-dev libswresample-dev libavutil-dev libopus-dev
  libssl-dev libsrtp2-dev
)
if [[ -n "$test" ]]; then
  # systemd: systemd-analyze for the unit tests (OpsTests).
  # GStreamer: rtmp2sink, a second RTMP publisher independent of FFmpeg (live ingest tests).
  # python3-numpy: measuring composites (tones, onsets) in scripts/daemon-tests.
  # libnginx-mod-stream: a TLS front for nginx-rtmp (RTMPS push tests); openssl: their certificate.
  packages+=(nginx libnginx-mod-rtmp libnginx-mod-stream openssl systemd
             gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
             gstreamer1.0-plugins-ugly
             # WHIP tests: webrtcbin (plugins-bad, nice) driven from Python, headless chromium,
             # and network namespaces (iproute2) for libnice, which skips loopback.
             gstreamer1.0-nice python3-gi gir1.2-gst-plugins-bad-1.0 gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
             chromium iproute2
             # The PostgreSQL store's tests start their own server (initdb in a temp dir).
             postgresql)
fi
if [[ -n "$bench" ]]; then
  # benchmarks/run.sh: its camera-like inputs are photographs of plasma-workspace-wallpapers
  # (scripts/make-fixture.sh --content camera); its GStreamer peer is a gst-launch-1.0
  # pipeline (qtdemux, h264parse, avdec_h264 from gstreamer1.0-libav, videoscale, compositor,
  # audiomixer, x264enc, avenc_aac, hlssink2); /usr/bin/time measures every run.
  packages+=(time plasma-workspace-wallpapers
             gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
             gstreamer1.0-plugins-ugly gstreamer1.0-libav)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The daemon tests drive `stage-compositor serve` with the AWS CLI and boto3 (PyPI).
if [[ -n "$test" ]]; then
  if ! command -v aws >/dev/null || ! python3 -c "import boto3" 2>/dev/null; then
    echo "installing: awscli boto3 (pip)"
    python3 -m pip install -q awscli boto3
  fi
  # The live tests measure composites with numpy.
  if ! python3 -c "import numpy" 2>/dev/null; then
    echo "installing: numpy (pip)"
    python3 -m pip install -q numpy
  fi
  # WHIP tests publish with aiortc (a WebRTC peer from PyPI) and sign tokens with cryptography.
  if ! python3 -c "import aiortc, cryptography" 2>/dev/null; then
    echo "installing: aiortc cryptography (pip)"
    python3 -m pip install -q aiortc cryptography
  fi
  # S3StorageTests run against moto_server (a local S3 that checks SigV4 signatures).
  if ! command -v moto_server >/dev/null || ! python3 -c "import moto.server, flask" 2>/dev/null; then
    echo "installing: moto[server] (pip)"
    python3 -m pip install -q "moto[server]"
  fi
fi
