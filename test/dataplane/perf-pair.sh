#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# perf-pair.sh PERF LINK [--nft] [--telemetry] -- CLIENT-ARGS...
#
# Two droce-perf processes, a server and a client, each its own DPDK
# primary (own --file-prefix), over:
#   memif     net_memif on a unique socket
#   afpacket  net_af_packet on a veth pair between two network namespaces
#             (--nft: the kernel drops 2% on ingress and duplicates on
#             egress with nftables netdev hooks, since there is no netem)
# The client's arguments select the test; its exit status is the result.
# --telemetry: while the client runs, read the server's counters through
# its telemetry socket and require that they moved, and that Debian's
# dpdk-telemetry.py lists droce's commands and ports.
# PAIR_MEMIF_ARGS: more net_memif devargs for both (bsize=8192 for jumbo
# frames in one buffer).
# PAIR_SRV_LCORES / PAIR_CLI_LCORES: the sides' EAL lcore lists (0 and 1),
# for --cores N; PAIR_EAL_EXTRA: more EAL arguments for both.
# PAIR_CLI_WRAP / PAIR_SRV_WRAP: a command the client / server runs under
# (valgrind --tool=callgrind ...: test/bench-perf-instructions.sh).
# PAIR_AFPACKET_QPAIRS: net_af_packet queue pairs (1; the kernel spreads
# received frames over them by flow hash: PACKET_FANOUT).
# PAIR_EXPECT: extended regular expressions, one a line, that lines of
# the client's output must match, each (or the test fails).
# Everything started is torn down on exit, failed or not.
set -uo pipefail
perf=$1 link=$2; shift 2
nft=0 tele=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	case $1 in
	--ipv6) PAIR_IPV6=1 ;;
	--nft) nft=1 ;;
	--telemetry) tele=1 ;;
	esac
	shift
done
[ "${1:-}" = "--" ] && shift

id="$$_$RANDOM"
tag=$(printf '%s' "$id" | md5sum | cut -c1-6)
port=$((20000 + RANDOM % 20000))
work=$(mktemp -d /tmp/droce-pair.XXXXXX)
srv_pid=""
nsa="drA$tag" nsb="drB$tag"
eal_common="--no-pci --log-level=lib.eal:4 --log-level=pmd:4 ${PAIR_EAL_EXTRA:-}"

cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	[ -n "$srv_pid" ] && wait "$srv_pid" 2>/dev/null
	if [ "$link" = afpacket ]; then
		ip netns del "$nsa" 2>/dev/null
		ip netns del "$nsb" 2>/dev/null
	fi
	rm -rf "$work" "/var/run/dpdk/drs$tag" "/var/run/dpdk/drc$tag"
	# a side that did not run its EAL cleanup leaves its pages behind
	rm -f /dev/hugepages/drs${tag}map_* /dev/hugepages/drc${tag}map_*
}
trap cleanup EXIT

case $link in
memif)
	sock="$work/memif.sock"
	srv_vdev="net_memif0,role=server,socket=$sock${PAIR_MEMIF_ARGS:+,$PAIR_MEMIF_ARGS}"
	cli_vdev="net_memif0,role=client,socket=$sock${PAIR_MEMIF_ARGS:+,$PAIR_MEMIF_ARGS}"
	srv_ns="" cli_ns=""
	sc_addr=127.0.0.1
	;;
afpacket)
	command -v ip >/dev/null || { echo "no iproute2: skip"; exit 77; }
	ip netns add "$nsa" || { echo "cannot create netns: skip"; exit 77; }
	ip netns add "$nsb"
	ip link add "va$tag" netns "$nsa" type veth peer name "vb$tag" netns "$nsb"
	for ns in "$nsa" "$nsb"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$nsa" link set "va$tag" up
	ip -n "$nsb" link set "vb$tag" up
	# the kernel's addresses carry the side channel; droce has its own
	ip -n "$nsa" addr add 10.199.0.1/24 dev "va$tag"
	ip -n "$nsb" addr add 10.199.0.2/24 dev "vb$tag"
	# qdisc_bypass=0: frames go through the kernel's transmit path,
	# where the nftables egress hook sees them. (An AF_PACKET socket
	# receives before the ingress hook runs, so loss is made on egress.)
	srv_vdev="net_af_packet0,iface=va$tag,framecnt=4096,qpairs=${PAIR_AFPACKET_QPAIRS:-1},qdisc_bypass=0"
	cli_vdev="net_af_packet0,iface=vb$tag,framecnt=4096,qpairs=${PAIR_AFPACKET_QPAIRS:-1},qdisc_bypass=0"
	srv_ns="ip netns exec $nsa" cli_ns="ip netns exec $nsb"
	sc_addr=10.199.0.1
	if [ $nft = 1 ]; then
		command -v nft >/dev/null || { echo "no nftables: skip"; exit 77; }
		for side in a b; do
			if [ $side = a ]; then ns=$nsa dev=va$tag; else ns=$nsb dev=vb$tag; fi
			ip netns exec "$ns" nft -f - <<NFT || exit 1
table netdev loss {
	chain out {
		type filter hook egress device "$dev" priority 0;
		udp dport 4791 numgen random mod 100 < 2 counter drop
		udp dport 4791 numgen random mod 100 < 2 counter dup to "$dev"
	}
}
NFT
		done
	fi
	;;
*)
	echo "unknown link $link"; exit 2 ;;
esac

if [ -n "${DROCE_PAIR_PCAP:-}" ] && [ "$link" = afpacket ]; then
	# debugging aid: capture what the server's side sees
	ip netns exec "$nsa" tshark -q -i "va$tag" -w "$DROCE_PAIR_PCAP" \
		-F pcap udp port 4791 2>/dev/null &
	sleep 1
fi
ip6_srv="" ip6_cli=""
if [ "${PAIR_IPV6:-0}" = 1 ]; then
	ip6_srv="--ip6 fd00:198::1" ip6_cli="--ip6 fd00:198::2"
fi
$srv_ns ${PAIR_SRV_WRAP:-} "$perf" --server --vdev "$srv_vdev" --ip 10.198.0.1 $ip6_srv \
	--sc-addr "$sc_addr" --port "$port" \
	--eal "--file-prefix drs$tag -l ${PAIR_SRV_LCORES:-0} $eal_common" "$@" \
	> "$work/server.log" 2>&1 &
srv_pid=$!
sleep 0.5

if [ $tele = 1 ]; then
	(
		sockp=/var/run/dpdk/drs$tag/dpdk_telemetry.v2
		for i in $(seq 1 100); do [ -S "$sockp" ] && break; sleep 0.2; done
		/usr/bin/python3 "$(dirname "$0")/telemetry-read.py" "$sockp" \
			> "$work/telemetry.out" 2>&1
		r=$?
		# and Debian's own client (package dpdk-dev, which droce.sh
		# installs) lists droce's commands and answers
		if [ $r = 0 ]; then
			printf '/\n/droce/ports\n' | timeout 20 \
				/usr/bin/dpdk-telemetry.py -f "drs$tag" \
				> "$work/dpdk-telemetry.out" 2>&1
			if grep -q '"/droce/port/stats"' "$work/dpdk-telemetry.out" &&
					grep -q '{"/droce/ports": \["' "$work/dpdk-telemetry.out"; then
				echo "telemetry: dpdk-telemetry.py lists droce's commands and ports" \
					>> "$work/telemetry.out"
			else
				echo "telemetry: dpdk-telemetry.py did not list droce:" \
					>> "$work/telemetry.out"
				head -c 600 "$work/dpdk-telemetry.out" >> "$work/telemetry.out"
				r=1
			fi
		fi
		echo $r > "$work/telemetry.rc"
	) &
	tele_pid=$!
fi

$cli_ns ${PAIR_CLI_WRAP:-} "$perf" --client --vdev "$cli_vdev" --ip 10.198.0.2 $ip6_cli \
	--peer-ip 10.198.0.1 --sc-addr "$sc_addr" --port "$port" \
	--eal "--file-prefix drc$tag -l ${PAIR_CLI_LCORES:-1} $eal_common" "$@" \
	> "$work/client.log" 2>&1
rc=$?
grep -v -e '^EAL' -e '^TELEMETRY' "$work/client.log"
# a client that failed before it reached the side channel (its EAL, say)
# leaves the server waiting there for good: 10 s, then it goes
if [ $rc -ne 0 ]; then
	for _ in $(seq 1 100); do
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$srv_pid" 2>/dev/null
fi
wait "$srv_pid"
src=$?
srv_pid=""
if [ $src -ne 0 ]; then
	echo "server exited $src:"; tail -20 "$work/server.log"
	rc=1
elif [ $rc -ne 0 ]; then
	grep -v -e "^EAL" -e "^TELEMETRY" "$work/server.log" | tail -30
else
	grep "frames per burst" "$work/server.log"
fi
if [ -n "${PAIR_EXPECT:-}" ]; then
	while IFS= read -r pat; do
		[ -n "$pat" ] || continue
		if ! grep -Eq -- "$pat" "$work/client.log"; then
			echo "the client's output has no line matching: $pat"
			rc=1
		fi
	done <<<"$PAIR_EXPECT"
fi
if [ $nft = 1 ]; then
	# the kernel really dropped and duplicated frames
	for ns in "$nsa" "$nsb"; do
		ip netns exec "$ns" nft list table netdev loss | grep counter
	done > "$work/nft.out"
	cat "$work/nft.out"
	if ! grep -q 'drop' "$work/nft.out" ||
			grep 'drop' "$work/nft.out" | grep -q 'packets 0 '; then
		echo "nftables dropped nothing"; rc=1
	fi
fi
if [ $tele = 1 ]; then
	wait "$tele_pid"
	cat "$work/telemetry.out"
	[ "$(cat "$work/telemetry.rc" 2>/dev/null)" = 0 ] || rc=1
fi
exit $rc
