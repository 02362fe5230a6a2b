#!/usr/bin/env bash
# `make test-deb`: builds the .deb (scripts/build-deb.sh) and tries it as an operator would.
#
#   scripts/test-deb.sh [--deb FILE] [--skip-build]
#
# By default the package is unpacked with `dpkg-deb -x` into a scratch root and run from there
# (nothing is installed). As root with STAGE_COMPOSITOR_DEB_INSTALL=1 it is installed for real
# with `dpkg -i` (refused when stage-compositor is already installed), used as the service user,
# and purged; the test then checks that the purge left exactly what deploy/README.md says it
# keeps, and removes that too (the state directory and user, when it made them).
#
# Checks: size and Depends printed; lintian (when installed) with no error or warning; the files
# in place; `--version`; `config check` of the installed configuration, and that it refuses the
# placeholder secret once auth is enabled; `compose` of the installed demo stage with the
# `grid-featured` preset found in /usr/share/stage-compositor/layouts (and not found once that
# folder is gone); `serve` under the installed configuration for a few seconds (/healthz, an
# API call, /metrics' build_info with the commit, a clean SIGTERM); `systemd-analyze verify`
# and `security` of the installed unit.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

deb=""
build_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --deb) deb="$2"; shift 2 ;;
    --skip-build) build_args+=(--skip-build); shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "test-deb.sh: unknown argument '$1' (--deb FILE, --skip-build)" >&2; exit 2 ;;
  esac
done

failures=0
step() { echo; echo "== $*"; }
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { # description command...: runs it, passes when it exits 0
  local description=$1; shift
  if "$@"; then pass "$description"; else fail "$description"; fi
}

if [[ -z "$deb" ]]; then
  step "build the package"
  deb=$(scripts/build-deb.sh "${build_args[@]}")
fi
[[ -f "$deb" ]] || { echo "test-deb.sh: no package at '$deb'" >&2; exit 1; }
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)

step "the package"
echo "file:    $deb"
echo "size:    $(stat -c %s "$deb") bytes ($(du -h "$deb" | cut -f1)), installed $(dpkg-deb -f "$deb" Installed-Size) KiB"
echo "Depends: $(dpkg-deb -f "$deb" Depends)"
[[ "$(dpkg-deb -f "$deb" Depends)" == *libavcodec59* ]] && pass "Depends names the FFmpeg libraries" \
  || fail "Depends lacks libavcodec59"
[[ "$(dpkg-deb -f "$deb" Depends)" == *libharfbuzz0b*fonts-dejavu-core* ]] && pass "Depends names the text stack and the default font" \
  || fail "Depends lacks the text stack or fonts-dejavu-core"
[[ "$(dpkg-deb -f "$deb" Depends)" != *swift* ]] && pass "Depends names no Swift runtime" || fail "Depends names a Swift package"

step "lintian"
if command -v lintian >/dev/null; then
  lintian_out=$(lintian --info --display-info --pedantic "$deb" 2>&1) || true
  echo "${lintian_out:-(no tags)}"
  if grep -qE '^[EW]: ' <<< "$lintian_out"; then fail "lintian reports errors or warnings"; else pass "lintian: no error or warning"; fi
else
  echo "lintian is not installed (scripts/install-deps.sh --deb installs it): skipped"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/stage-compositor-test-deb-XXXXXX")
serve_pid=""
installed=""
had_user=""
had_state=""
# What an install by this test made and a purge keeps (deploy/README.md, "Removing"): gone too.
remove_kept() {
  if [[ -z "$had_state" ]]; then rm -rf /var/lib/stage-compositor; fi
  if [[ -z "$had_user" ]] && getent passwd stage-compositor >/dev/null; then
    deluser --system stage-compositor >/dev/null 2>&1 || userdel stage-compositor
  fi
  if [[ -z "$had_user" ]] && getent group stage-compositor >/dev/null; then
    delgroup --system stage-compositor >/dev/null 2>&1 || groupdel stage-compositor
  fi
}
cleanup() {
  if [[ -n "$serve_pid" ]]; then kill "$serve_pid" 2>/dev/null || true; fi
  if [[ -n "$installed" ]]; then # stopped half-way: leave the machine as it was
    echo "test-deb.sh: purging the package it installed" >&2
    dpkg --purge stage-compositor >/dev/null || true
    remove_kept
  fi
  rm -rf "$work"
}
trap cleanup EXIT
chmod 0755 "$work"

install_mode=""
if [[ "${STAGE_COMPOSITOR_DEB_INSTALL:-}" == 1 ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "test-deb.sh: STAGE_COMPOSITOR_DEB_INSTALL=1 needs root" >&2; exit 1; }
  if dpkg-query -W -f='${Status}' stage-compositor 2>/dev/null | grep -q "installed"; then
    echo "test-deb.sh: stage-compositor is installed on this machine; not touching it" >&2
    exit 1
  fi
  install_mode=1
fi

# What the file system holds outside the package manager's own books, to compare after purge.
snapshot() {
  find /etc /usr /lib /var/lib /srv -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/ucf \
    -o -path /usr/share/lintian \) -prune -o -print 2>/dev/null | sort
}

as_user=()
if [[ -n "$install_mode" ]]; then
  step "install (dpkg -i)"
  getent passwd stage-compositor >/dev/null && had_user=1
  [[ -e /var/lib/stage-compositor ]] && had_state=1
  snapshot > "$work/before.txt"
  installed=1
  dpkg -i "$deb"
  root=""
  bin=/usr/bin/stage-compositor
  # setpriv execs the command itself (runuser would stand between it and a signal).
  as_user=(setpriv --reuid=stage-compositor --regid=stage-compositor --init-groups --)
  check "the system user exists" getent passwd stage-compositor
  check "/var/lib/stage-compositor belongs to it" test "$(stat -c %U:%a /var/lib/stage-compositor)" = "stage-compositor:750"
  check "config.json is root:stage-compositor 0640" test "$(stat -c %U:%G:%a /etc/stage-compositor/config.json)" = "root:stage-compositor:640"
  check "the unit is enabled" test -L /etc/systemd/system/multi-user.target.wants/stage-compositor.service
else
  step "unpack (dpkg-deb -x) into a scratch root"
  root="$work/root"
  dpkg-deb -x "$deb" "$root"
  bin="$root/usr/bin/stage-compositor"
  echo "root: $root"
fi

step "files"
for path in usr/bin/stage-compositor lib/systemd/system/stage-compositor.service etc/stage-compositor/config.json \
            usr/share/stage-compositor/layouts/grid-featured.json usr/share/stage-compositor/stages/four-grid/manifest.json \
            usr/share/doc/stage-compositor/copyright usr/share/doc/stage-compositor/README.md usr/share/man/man1/stage-compositor.1.gz; do
  check "/$path" test -e "$root/$path"
done
if ldd "$bin" | grep -q "not found\|libswift"; then fail "ldd: $(ldd "$bin" | grep 'not found\|libswift' | tr '\n' ' ')"; else pass "ldd: every library found, no Swift runtime library"; fi

# Everything runs from an empty folder, so that no ./layouts and no checkout stands in for
# the installed files.
cd "$work"
chmod 0777 "$work"

step "--version"
version_out=$("${as_user[@]}" "$bin" --version)
echo "$version_out"
[[ "$version_out" == *"$version"* ]] && pass "--version says $version" || fail "--version says '$version_out', not $version"
if git -C "$repo" rev-parse -q --verify HEAD >/dev/null 2>&1; then
  commit=$(git -C "$repo" rev-parse --short=12 HEAD)
  [[ "$version_out" == *"commit $commit"* ]] && pass "--version names the commit $commit" \
    || fail "--version does not name the commit $commit (a .deb built from another checkout?)"
fi

step "config check of the installed configuration"
config="$root/etc/stage-compositor/config.json"
if [[ -z "$install_mode" ]]; then
  # As installed, its paths name /usr/share and /var/lib, which are not in the scratch root:
  # checked as is (a warning for the demo stage's folder is expected), then re-rooted.
  "$bin" config check "$config" && pass "config check (as unpacked)" || fail "config check (as unpacked)"
  mkdir -p "$root/var/lib/stage-compositor"
  sed -e "s#/usr/share/stage-compositor#$root/usr/share/stage-compositor#g" \
      -e "s#/var/lib/stage-compositor#$root/var/lib/stage-compositor#g" "$config" > "$work/config.json"
  config="$work/config.json"
  echo "re-rooted copy: $config"
fi
check_out=$("${as_user[@]}" "$bin" config check "$config" 2>&1) && check_status=0 || check_status=$?
echo "$check_out"
[[ $check_status -eq 0 ]] && pass "config check exits 0" || fail "config check exits $check_status"
grep -qi "warning" <<< "$check_out" && fail "config check warns" || pass "config check: no warning"

sed -e 's/"enabled": false,/"enabled": true,/' "$config" > "$work/auth-on.json"
auth_out=$("$bin" config check "$work/auth-on.json" 2>&1) && auth_status=0 || auth_status=$?
echo "auth enabled, secret unchanged: $auth_out"
[[ $auth_status -ne 0 && "$auth_out" == *"AKIDCHANGEME"*placeholder* ]] && pass "the placeholder secret is refused once auth is on" \
  || fail "the placeholder secret is not refused (exit $auth_status)"

step "compose the installed demo stage with a preset layout"
stage="${root}/usr/share/stage-compositor/stages/four-grid"
mkdir -p "$work/compose"; chmod 0777 "$work/compose"
compose_out=$("${as_user[@]}" "$bin" compose --stage "$stage" --layout grid-featured --encoder 640x360@30:800000 \
  --duration 4 --out "$work/compose" 2>&1) && compose_status=0 || compose_status=$?
echo "$compose_out" | tail -n 3
playlist=$(find "$work/compose" -name multivariant.m3u8 | head -n 1)
if [[ $compose_status -eq 0 && -n "$playlist" ]]; then
  pass "compose --layout grid-featured: $playlist"
  if command -v ffprobe >/dev/null; then
    probe=$(ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0 "$playlist" 2>&1 \
      | grep -m 1 . || true)
    [[ "$probe" == "640,360" ]] && pass "ffprobe: 640x360 video" || fail "ffprobe of the recording says '$probe'"
  fi
else
  fail "compose exited $compose_status"
fi
layouts="$root/usr/share/stage-compositor/layouts"
mv "$layouts" "$layouts.away"
if "$bin" compose --stage "$stage" --layout grid-featured --duration 1 --out "$work/compose-none" > "$work/no-layouts.log" 2>&1; then
  fail "compose found grid-featured without the installed layouts folder: the check above proves nothing"
else
  pass "without /usr/share/stage-compositor/layouts grid-featured is not found ($(tail -n 1 "$work/no-layouts.log"))"
fi
mv "$layouts.away" "$layouts"

step "serve under the installed configuration"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
api=$(free_port); rtmp=$(free_port); rtmps=$(free_port); whip=$(free_port)
echo "ports (instead of the file's, which a running daemon may hold): API $api, RTMP $rtmp, RTMPS $rtmps, WHIP $whip"
if [[ -n "$install_mode" ]]; then cd /var/lib/stage-compositor; fi
"${as_user[@]}" "$bin" serve --config "$config" --listen "127.0.0.1:$api" --rtmp-port "$rtmp" --rtmps-port "$rtmps" \
  --whip-port "$whip" > "$work/serve.log" 2>&1 &
serve_pid=$!
cd "$work"
healthy=""
for _ in $(seq 1 100); do
  if curl -sf "http://127.0.0.1:$api/healthz" > /dev/null 2>&1; then healthy=1; break; fi
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.2
done
if [[ -n "$healthy" ]]; then
  pass "/healthz answers $(curl -s "http://127.0.0.1:$api/healthz")"
  stage_json=$(curl -sf -X POST "http://127.0.0.1:$api/GetStage" -H 'Content-Type: application/json' \
    -d '{"arn":"arn:aws:ivs:us-east-1:123456789012:stage/DemoFourGrid"}' || true)
  [[ "$stage_json" == *DemoFourGrid* ]] && pass "GetStage finds the demo stage" || fail "GetStage: '$stage_json'"
  build_info=$(curl -sf "http://127.0.0.1:$api/metrics" | grep '^stage_compositor_build_info' || true)
  echo "$build_info"
  [[ "$build_info" == *"version=\"$version\""* ]] && pass "build_info has the version" || fail "build_info: '$build_info'"
  if [[ -n "${commit:-}" ]]; then
    [[ "$build_info" == *"commit=\"$commit"* ]] && pass "build_info has the commit $commit" \
      || fail "build_info lacks the commit $commit (a .deb built from another checkout?)"
  fi
  sleep 3
  kill -TERM "$serve_pid"
  serve_status=0; wait "$serve_pid" || serve_status=$?
  serve_pid=""
  [[ $serve_status -eq 0 ]] && pass "SIGTERM: serve exits 0" || fail "SIGTERM: serve exits $serve_status"
else
  fail "serve did not answer /healthz"
fi
tail -n 5 "$work/serve.log"

step "systemd-analyze"
unit="$root/lib/systemd/system/stage-compositor.service"
if command -v systemd-analyze >/dev/null; then
  if [[ -z "$install_mode" ]]; then
    # verify wants ExecStart's binary where the unit says: a copy pointed into the scratch root.
    sed "s#/usr/bin/stage-compositor#$bin#" "$unit" > "$work/stage-compositor.service"
    unit="$work/stage-compositor.service"
  fi
  # The unit's Documentation= names man:stage-compositor(1), which verify looks up with man(1):
  # only an installed package has it where man looks.
  man_check=(--man=no)
  if [[ -n "$install_mode" ]] && command -v man >/dev/null; then man_check=(--man=yes); fi
  verify_out=$(systemd-analyze verify "${man_check[@]}" "$unit" 2>&1) && verify_status=0 || verify_status=$?
  [[ $verify_status -eq 0 && -z "$verify_out" ]] && pass "systemd-analyze verify ${man_check[*]}: clean" \
    || fail "systemd-analyze verify (exit $verify_status): $verify_out"
  security=$(systemd-analyze security --offline=yes --no-pager "$unit" 2>&1 | grep "Overall exposure" || true)
  echo "${security:-systemd-analyze security: no rating}"
else
  echo "systemd-analyze is not installed: skipped"
fi

if [[ -n "$install_mode" ]]; then
  step "purge (dpkg --purge)"
  dpkg --purge stage-compositor
  installed=""
  snapshot > "$work/after.txt"
  left=$(comm -13 "$work/before.txt" "$work/after.txt")
  echo "left behind:"; echo "${left:-(nothing)}" | sed 's/^/  /'
  unexpected=$(grep -v '^/var/lib/stage-compositor\(/\|$\)' <<< "$left" || true)
  [[ -z "$unexpected" ]] && pass "purge leaves only /var/lib/stage-compositor" || fail "purge left: $unexpected"
  gone=$(comm -23 "$work/before.txt" "$work/after.txt")
  [[ -z "$gone" ]] && pass "purge removed nothing that was there before" || fail "purge removed: $gone"
  check "the user is kept" getent passwd stage-compositor
  for path in /usr/bin/stage-compositor /etc/stage-compositor /usr/share/stage-compositor /lib/systemd/system/stage-compositor.service; do
    check "$path is gone" test ! -e "$path"
  done
  remove_kept
fi

echo
if ((failures)); then
  echo "test-deb: $failures check(s) failed"
  exit 1
fi
if [[ -n "$install_mode" ]]; then how="installed with dpkg -i, then purged"; else how="unpacked with dpkg-deb -x"; fi
echo "test-deb: every check passed ($how)"
