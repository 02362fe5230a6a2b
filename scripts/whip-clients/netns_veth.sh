#!/bin/sh
# netns_veth.sh up|down|status NAME HOST_IP NS_IP
#
# A network namespace joined to the host by a veth pair, so that a libnice-based client
# (GStreamer webrtcbin), which never gathers loopback candidates, gets a real interface address
# and reaches a server on the host:
#   host side  : veth "h-NAME" with HOST_IP/30   (e.g. 10.201.0.1)
#   namespace  : veth "n-NAME" with NS_IP/30     (e.g. 10.201.0.2), lo up, default route via HOST_IP
# The default route also makes the host's other addresses (192.0.2.2 ...) reachable from inside.
# Run inside with:  ip netns exec NAME /usr/bin/python3 whip_gst.py --url http://HOST_IP:PORT/...
# The WHIP server must listen on 0.0.0.0 (or HOST_IP) and advertise an ICE candidate the
# namespace can reach (HOST_IP, or any host address; NOT 127.0.0.1, that is the namespace's own lo).
#
# Needs root (CAP_NET_ADMIN). Interface names are limited to 15 characters: NAME <= 13 chars.
# Exit status: 0 ok, 1 failure, 2 usage. "up" is idempotent-ish: it removes a stale NAME first.
set -eu

usage() { echo "usage: $0 up|down|status NAME [HOST_IP NS_IP]   (e.g. $0 up whipns 10.201.0.1 10.201.0.2)" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1; name=$2
[ ${#name} -le 13 ] || { echo "NAME must be at most 13 characters" >&2; exit 2; }
host_if="h-$name"; ns_if="n-$name"

down() {
    ip link del "$host_if" 2>/dev/null || true      # deleting one end deletes the pair
    ip netns del "$name" 2>/dev/null || true
}

case "$cmd" in
up)
    [ $# -eq 4 ] || usage
    host_ip=$3; ns_ip=$4
    down
    ip netns add "$name"
    ip link add "$host_if" type veth peer name "$ns_if"
    ip link set "$ns_if" netns "$name"
    ip addr add "$host_ip/30" dev "$host_if"
    ip link set "$host_if" up
    ip netns exec "$name" ip addr add "$ns_ip/30" dev "$ns_if"
    ip netns exec "$name" ip link set "$ns_if" up
    ip netns exec "$name" ip link set lo up
    ip netns exec "$name" ip route add default via "$host_ip"
    # Wait (max 5 s) for carrier on the namespace end (ping is not installed on this machine).
    i=0
    until ip netns exec "$name" ip link show "$ns_if" | grep -q LOWER_UP; do
        i=$((i+1)); [ $i -ge 50 ] && { echo "veth $ns_if has no carrier" >&2; exit 1; }
        sleep 0.1
    done
    echo "netns $name up: host $host_if $host_ip/30 <-> $ns_if $ns_ip/30" >&2
    ;;
down)
    down
    echo "netns $name down" >&2
    ;;
status)
    ip netns list | grep -qw "$name" || { echo "netns $name absent" >&2; exit 1; }
    ip -br addr show "$host_if"
    ip netns exec "$name" ip -br addr
    ;;
*) usage ;;
esac
