#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# hostile.sh TEST_DP_HOSTILE: a veth pair in a network namespace of its
# own, droce's net_af_packet port on one end and the hostile peer's
# AF_PACKET socket on the other; torn down on any exit.
set -uo pipefail
prog=$1
[ "$(id -u)" -eq 0 ] || { echo "needs root: skip"; exit 77; }
command -v ip >/dev/null || { echo "no iproute2: skip"; exit 77; }
tag=$$
ns="drH$tag"
ip netns add "$ns" || { echo "cannot create netns: skip"; exit 77; }
trap 'ip netns del "$ns" 2>/dev/null; rm -rf /var/run/dpdk/dphostile*' EXIT
ip -n "$ns" link add "hd$tag" type veth peer name "hp$tag" || exit 1
for dev in "hd$tag" "hp$tag"; do
	# no addresses and no IPv6: the kernel stays silent on both ends
	ip netns exec "$ns" sysctl -q -w "net.ipv6.conf.$dev.disable_ipv6=1"
	ip -n "$ns" link set "$dev" up
done
ip netns exec "$ns" "$prog" "hd$tag" "hp$tag"
