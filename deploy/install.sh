#!/bin/sh
# Installs stage-compositor under /usr/local as a systemd service: user, binary, unit, layout
# presets, demo stage, configuration (only if absent), daemon-reload. See deploy/README.md;
# the Debian package (make deb) is the other way.
#
#   deploy/install.sh [--dry-run] [--binary PATH] [--start]
#   DESTDIR=/tmp/root deploy/install.sh     # stage files only: no user, chown or systemctl
set -eu

repo=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
binary="$repo/.build/release/stage-compositor"
dry_run=false
start=false
destdir=${DESTDIR:-}
user=stage-compositor

while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry_run=true ;;
        --start) start=true ;;
        --binary) [ $# -ge 2 ] || { echo "install.sh: --binary needs a path" >&2; exit 2; }; binary=$2; shift ;;
        --binary=*) binary=${1#--binary=} ;;
        -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

# Runs a command, or prints it under --dry-run.
run() {
    if $dry_run; then
        echo "+ $*"
    else
        "$@"
    fi
}

note() { echo "install.sh: $*"; }

if [ ! -x "$binary" ]; then
    if $dry_run; then
        note "warning: $binary is missing (make release)"
    else
        echo "install.sh: $binary is missing or not executable; run 'make release' or pass --binary" >&2
        exit 1
    fi
fi

if [ -z "$destdir" ] && ! $dry_run && [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: run as root (or set DESTDIR to stage the files)" >&2
    exit 1
fi

# 1. The system user and group.
if [ -n "$destdir" ]; then
    note "DESTDIR set: not creating user $user"
elif id -u "$user" >/dev/null 2>&1; then
    note "user $user exists"
else
    run useradd --system --user-group --home-dir /var/lib/stage-compositor --no-create-home \
        --shell /usr/sbin/nologin --comment "stage-compositor daemon" "$user"
fi

# 2. Files.
run install -D -m 0755 "$binary" "$destdir/usr/local/bin/stage-compositor"
run install -D -m 0644 "$repo/systemd/stage-compositor.service" "$destdir/etc/systemd/system/stage-compositor.service"
run install -D -m 0644 "$repo/deploy/README.md" "$destdir/usr/local/share/doc/stage-compositor/README.md"
run install -D -m 0644 "$repo/deploy/config.example.json" "$destdir/usr/local/share/doc/stage-compositor/config.example.json"
# Layout presets: the binary looks in <its folder>/../share/stage-compositor/layouts.
run mkdir -p "$destdir/usr/local/share/stage-compositor/layouts"
for preset in "$repo"/layouts/*.json; do
    run install -m 0644 "$preset" "$destdir/usr/local/share/stage-compositor/layouts/"
done
if [ -d "$repo/fixtures/four-grid" ]; then
    run mkdir -p "$destdir/usr/local/share/stage-compositor/stages"
    run rm -rf "$destdir/usr/local/share/stage-compositor/stages/four-grid"
    run cp -R "$repo/fixtures/four-grid" "$destdir/usr/local/share/stage-compositor/stages/four-grid"
fi

# 3. Configuration: never overwrite an existing one.
config="$destdir/etc/stage-compositor/config.json"
run install -d -m 0750 "$destdir/etc/stage-compositor"
if [ -e "$config" ]; then
    note "keeping existing $config"
else
    run install -m 0640 "$repo/deploy/config.example.json" "$config"
    if [ -z "$destdir" ]; then
        run chgrp "$user" "$destdir/etc/stage-compositor" "$config"
    fi
fi

# 4. systemd.
if [ -n "$destdir" ]; then
    note "DESTDIR set: not calling systemctl"
elif [ -d /run/systemd/system ] || $dry_run; then
    run systemctl daemon-reload
    if $start; then
        run systemctl enable --now stage-compositor
    fi
else
    note "systemd is not running: skipped daemon-reload"
fi

note "done${destdir:+ (staged in $destdir)}$($dry_run && echo ' (dry run: nothing changed)')"
