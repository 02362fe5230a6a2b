#!/usr/bin/env bash
# Installs the Debian packages stage-compositor builds and tests with, when missing, and (with
# --test) the Python packages the tests use from PyPI into a virtual environment, .build/venv.
# Idempotent and quiet when everything is there. Needs root (or sudo) only to install packages.
# Usage: scripts/install-deps.sh [--test] [--bench] [--deb]
#   --deb: what `make deb` / `make test-deb` use (dpkg-shlibdeps, lintian, systemd-analyze).
#   STAGE_COMPOSITOR_VENV: another place for the virtual environment.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${STAGE_COMPOSITOR_VENV:-$repo/.build/venv}

test=""
bench=""
deb=""
for arg in "$@"; do
  case "$arg" in
    --test) test=1 ;;
    --bench) bench=1 ;;
    --deb) deb=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (--test, --bench, --deb)" >&2; exit 2 ;;
  esac
done

packages=(
  pkg-config ffmpeg curl
  libavcodec-dev libavformat-dev libswscale-dev libswresample-dev libavutil-dev libopus-dev
  libssl-dev libsrtp2-dev
  # Overlays: fontconfig, FriBidi, HarfBuzz, FreeType, Cairo; the fonts they fall back on
  # (DejaVu; Droid Sans Fallback for CJK; Noto Color Emoji).
  libharfbuzz-dev libfreetype-dev libfontconfig-dev libfribidi-dev libcairo2-dev
  fonts-dejavu-core fonts-droid-fallback fonts-noto-color-emoji
)
if [[ -n "$test" ]]; then
  # systemd: systemd-analyze for the unit tests (OpsTests).
  # GStreamer: rtmp2sink, a second RTMP publisher independent of FFmpeg (live ingest tests).
  # libnginx-mod-stream: a TLS front for nginx-rtmp (RTMPS push tests); openssl: their certificate.
  packages+=(nginx libnginx-mod-rtmp libnginx-mod-stream openssl systemd
             gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
             gstreamer1.0-plugins-ugly
             # WHIP tests: webrtcbin (plugins-bad, nice) driven from Python, headless chromium,
             # and network namespaces (iproute2) for libnice, which skips loopback.
             gstreamer1.0-nice python3-gi gir1.2-gst-plugins-bad-1.0 gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
             chromium iproute2
             # Overlay tests read the composite's text back with OCR.
             tesseract-ocr tesseract-ocr-eng
             # The PostgreSQL store's tests start their own server (initdb in a temp dir).
             postgresql
             # The PyPI packages below go into a virtual environment (PEP 668).
             python3 python3-venv)
fi
if [[ -n "$deb" ]]; then
  # dpkg-shlibdeps (Depends:), strip, lintian, systemd-analyze verify, adduser for a real install.
  packages+=(dpkg-dev binutils lintian systemd adduser curl python3)
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

# The tests' Python packages from PyPI, in a virtual environment under the build folder:
# Debian's Python refuses pip installs into the system (PEP 668). It is made from Debian's
# /usr/bin/python3 with --system-site-packages, so Debian's python3-gi (the GStreamer WHIP
# client) stays visible. `make` and scripts/run-tests.sh put its bin/ first on PATH: the
# tests' `python3`, `aws` and `moto_server` are the venv's.
if [[ -n "$test" ]]; then
  base_python=/usr/bin/python3
  [[ -x "$base_python" ]] || base_python=$(command -v python3)
  if [[ ! -x "$venv/bin/python3" ]] || ! "$venv/bin/python3" -c "import sys" 2>/dev/null; then
    echo "creating the Python virtual environment $venv"
    rm -rf "$venv"
    "$base_python" -m venv --system-site-packages "$venv"
  fi
  python="$venv/bin/python3"
  in_venv() { PATH="$venv/bin:$PATH" "$@"; }
  wanted=()
  # The daemon tests drive `stage-compositor serve` with the AWS CLI and boto3, pinned: the
  # conformance suite (conformance_tests.py) checks the daemon against the installed botocore's
  # model, so a new botocore release must not turn a fresh clone's tests red. To see what a
  # newer model adds: `.build/venv/bin/pip install -U awscli boto3`, then run that suite.
  botocore_pin=1.44.8
  if ! in_venv command -v aws >/dev/null \
     || ! "$python" -c "import boto3, botocore, sys; sys.exit(botocore.__version__ != '$botocore_pin')" 2>/dev/null; then
    wanted+=(awscli==1.46.3 "boto3==$botocore_pin" "botocore==$botocore_pin")
  fi
  # The live tests measure composites with numpy.
  if ! "$python" -c "import numpy" 2>/dev/null; then wanted+=(numpy); fi
  # WHIP tests publish with aiortc (a WebRTC peer) and sign tokens with cryptography.
  if ! "$python" -c "import aiortc, cryptography" 2>/dev/null; then wanted+=(aiortc cryptography); fi
  # S3StorageTests run against moto_server (a local S3 that checks SigV4 signatures).
  if ! in_venv command -v moto_server >/dev/null || ! "$python" -c "import moto.server, flask" 2>/dev/null; then
    wanted+=("moto[server]")
  fi
  if ((${#wanted[@]})); then
    echo "installing into $venv: ${wanted[*]} (pip)"
    "$python" -m pip install -q "${wanted[@]}"
  fi
fi
