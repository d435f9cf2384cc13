#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rxe-pair.sh DROCE-RUN DROCE-PCAP ROLE [options] -- PROGRAM ARGS...
#
# An unmodified verbs program (ibv_*_pingpong, perftest) between droce on
# the host and the Linux kernel's Soft-RoCE (rdma_rxe) in a qemu guest
# (../shared/rxe-peer), over a tap device of this test's own:
#   ROLE droce-server: droce runs the server, rxe the client;
#   ROLE droce-client: rxe runs the server, droce the client.
# droce attaches to the tap with net_af_packet, with its own IP and MAC on
# the tap's subnet; ARP resolves both ways (no static entries). The
# programs' own TCP exchange goes to the host kernel's address on the tap.
#
# Options: --loss PPM     droce drops PPM/1e6 of the frames it receives and
#                         of those it sends (its fault injection)
#          --loss-frames N  only in the first N RoCE frames each way (for
#                         programs whose last exchange cannot survive
#                         loss: ibv_rc_pingpong, doc/interop.md)
#          --expect RE    droce's output must match RE (repeatable)
#          --tag N        1..200: the tap, subnet and port of this test
#          --cm           an rdma_cm program (rping, perftest -R): the client
#                         is given the server's RoCE address, not the host's;
#                         in ARGS @ROLE@ becomes s (server) or c (client) and
#                         @SRV@ the server's RoCE address
#          --client-extra S  appended to the client's arguments (after the
#                         substitutions), e.g. "@SRV@" for perftest -R
# RXE_SUITE=trixie runs the guest on Debian 13 (kernel 6.12: ATOMIC WRITE,
# FLUSH), with its image in a directory of its own. A PROGRAM given as a
# path (a test program of this build) reaches the guest over virtio-9p.
# Every frame droce sends is captured on the tap and checked: its ICRC
# (droce-pcap --verify, and Scapy / zlib) and tshark's decoding (no
# malformed packet, no expert warning). Passes when both sides exit 0, the
# expectations hold and the capture is clean. Skips (77) only when qemu
# cannot run at all.
set -uo pipefail
run=$1; pcaptool=$2; role=$3; shift 3
loss=0
loss_frames=0
cm=0
client_extra=""
tag=$(( ($$ % 200) + 1 ))
expects=()
while [ $# -gt 0 ]; do
	case "$1" in
	--loss) loss=$2; shift 2 ;;
	--loss-frames) loss_frames=$2; shift 2 ;;
	--expect) expects+=("$2"); shift 2 ;;
	--tag) tag=$2; shift 2 ;;
	--cm) cm=1; shift ;;
	--client-extra) client_extra=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "rxe-pair: bad argument $1" >&2; exit 2 ;;
	esac
done
prog=$1; shift
top=$(cd "$(dirname "$0")/../.." && pwd)
peer_dir=${RXE_PEER_SRC:-$top/../shared/rxe-peer}
peer="$peer_dir/run-rxe-peer.sh"
# each suite's image in its own directory (run-rxe-peer.sh refuses the
# other suite's)
case "${RXE_SUITE:-bookworm}" in
trixie) export RXE_PEER_DIR=${RXE_PEER_DIR:-/var/tmp/rxe-peer-trixie} ;;
*) export RXE_PEER_DIR=${RXE_PEER_DIR:-/var/tmp/rxe-peer} ;;
esac

skip() { echo "SKIP: $*"; exit 77; }
[ -x "$peer" ] || skip "no rxe peer at $peer_dir"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (qemu-system-x86)"
command -v "$prog" >/dev/null || skip "$prog missing"
[ -e /dev/net/tun ] || skip "no /dev/net/tun"

# the guest image: built once, shared by every test (flock: one builder)
mkdir -p "$RXE_PEER_DIR"
(
	flock 9
	if [ ! -s "$RXE_PEER_DIR/img/vmlinuz" ]; then
		"$peer" build >&2 || exit 1
	fi
) 9> "$RXE_PEER_DIR/.build.lock" || skip "the rxe guest image cannot be built"

work=$(mktemp -d /tmp/droce-rxe.XXXXXX)
tap="drxe$tag"
net="10.78.$tag"
host_ip="$net.1"; guest_ip="$net.2"; droce_ip="$net.3"
droce_mac=$(printf '02:d0:ce:4e:%02x:03' "$tag")
guest_mac=$(printf '52:54:00:4e:%02x:02' "$tag")
port=$(( 20000 + tag * 7 + RANDOM % 7 ))
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	pkill -f "qemu-system-x86_64.*$tap" 2>/dev/null
	ip link del "$tap" 2>/dev/null
	# debugging aid: RXE_PAIR_KEEP=DIR keeps the capture and the logs
	[ -n "${RXE_PAIR_KEEP:-}" ] && cp -r "$work/." "$RXE_PAIR_KEEP/" 2>/dev/null
	rm -rf "$work" "/var/run/dpdk/drxe$tag"
}
trap cleanup EXIT

ip link del "$tap" 2>/dev/null
ip tuntap add dev "$tap" mode tap || skip "cannot create a tap device"
ip addr add "$host_ip/24" dev "$tap"
ip link set "$tap" up

# capture everything on the tap for the frame checks
dumpcap -q -i "$tap" -w "$work/all.pcap" > "$work/dumpcap.log" 2>&1 &
pids+=($!)
sleep 1

# qdisc_bypass=0: frames droce sends must pass the packet taps (capture)
droce_env=("DROCE_DEVARGS=net_af_packet0,iface=$tap,framecnt=4096,qpairs=1,qdisc_bypass=0"
	"DROCE_IPV4=$droce_ip" "DROCE_MAC=$droce_mac" DROCE_MTU=1500 DROCE_DEBUG=1)
if [ "$loss" -gt 0 ]; then
	droce_env+=("DROCE_FAULT=$loss,0,0,0,$loss_frames"
		"DROCE_FAULT_TX=$loss,0,0,0,$loss_frames")
fi
# a program of this build: its directory is the guest's /share
gprog=$prog
share=""
case "$prog" in
*/*) share=$(cd "$(dirname "$prog")" && pwd); gprog=/share/$(basename "$prog") ;;
esac
guest() {	# guest CMD LOG: boot a guest, run CMD, power off
	TAP=$tap HOST_IP="" GUEST_IP="$guest_ip/24" GUEST_MAC=$guest_mac \
		TMPD="$work/guest" RUN_TIMEOUT=400 SHARE="$share" \
		timeout -k 5 420 "$peer" run "$1" > "$2" 2>&1 < /dev/null
}
# rxe's device and RoCEv2 GID; perftest wants -d and -x, pingpong -d and -g.
# perftest in the guest gets -F: its report calibrates the TSC against
# gettimeofday and exits 1 ("Correlation coefficient r^2 < 0.9, Can't
# produce a report") when the fit is poor, which software-emulated qemu on a
# busy host sometimes gives, after a transfer that went right. -F lets the
# guest's report print whatever figure it has; errors still fail the run.
guest_opts=""
case "$prog" in
ib_*) gflag="-x 1"; guest_opts="-F" ;;
*) gflag="-g 1" ;;
esac
# rdma_cm: the CM picks the GID from the address; the programs' own
# options name the roles and the server
if [ $cm -eq 1 ]; then
	gflag=""
	srv_addr=$droce_ip
	[ "$role" = droce-client ] && srv_addr=$guest_ip
	cm_args() {	# cm_args ROLE ARGS...: the substitutions, one per line
		local r=$1 a; shift
		for a in "$@"; do a=${a//@ROLE@/$r}; printf '%s\n' "${a//@SRV@/$srv_addr}"; done
	}
	mapfile -t srv_args < <(cm_args s "$@")
	mapfile -t cli_args < <(cm_args c "$@" $client_extra)
	gdev=""
	case "$prog" in ib_*) gdev="-d rxe0" ;; esac
fi

echo "rxe-pair: $role $prog $* (tap $tap, droce $droce_ip, rxe $guest_ip, loss $loss ppm)"
[ "$loss_frames" -gt 0 ] && echo "rxe-pair: loss only in the first $loss_frames frames each way"
if [ $cm -eq 1 ] && [ "$role" = droce-server ]; then
	# the guest's REQ must find droce listening (a REJ otherwise):
	# droce's telemetry (/droce/cm) says when
	tele=/var/run/dpdk/drxe$tag/dpdk_telemetry.v2
	timeout -k 5 400 "$run" "${droce_env[@]}" "DROCE_EAL=--file-prefix drxe$tag" \
		"$prog" -p "$port" "${srv_args[@]}" > "$work/droce.log" 2>&1 &
	pids+=($!); dpid=$!
	for _ in $(seq 1 600); do
		[ "$(python3 - "$tele" <<'PY' 2>/dev/null
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(12288)
s.send(b"/droce/cm")
print(json.loads(s.recv(65536))["/droce/cm"]["listeners"])
PY
)" -gt 0 ] 2>/dev/null && break
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	guest "$gprog $gdev $guest_opts -p $port ${cli_args[*]}; rc=\$?; ip neigh show; exit \$rc" \
		"$work/guest.log" &
	pids+=($!); gpid=$!
elif [ $cm -eq 1 ]; then
	# the kernel's CM lists the server's ID as listening once it does
	guest "$gprog $gdev $guest_opts -p $port ${srv_args[*]} > /tmp/srv.log 2>&1 & p=\$!; \
		for i in \$(seq 1 300); do rdma res show cm_id 2>/dev/null | grep -q 'state LISTEN' && break; sleep 0.1; done; \
		echo RXE-LIST''ENING; wait \$p; rc=\$?; cat /tmp/srv.log; ip neigh show; exit \$rc" \
		"$work/guest.log" &
	pids+=($!); gpid=$!
	for _ in $(seq 1 1200); do
		grep -q RXE-LISTENING "$work/guest.log" 2>/dev/null && break
		kill -0 "$gpid" 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 400 "$run" "${droce_env[@]}" "$prog" -p "$port" "${cli_args[@]}" \
		> "$work/droce.log" 2>&1 &
	pids+=($!); dpid=$!
elif [ "$role" = droce-server ]; then
	timeout -k 5 400 "$run" "${droce_env[@]}" "$prog" $gflag -p "$port" "$@" \
		> "$work/droce.log" 2>&1 &
	pids+=($!); dpid=$!
	for _ in $(seq 1 100); do
		ss -ltn 2>/dev/null | grep -q "[:.]$port " && break
		sleep 0.1
	done
	guest "$gprog -d rxe0 $gflag $guest_opts -p $port $* $host_ip; rc=\$?; ip neigh show; exit \$rc" \
		"$work/guest.log" &
	pids+=($!); gpid=$!
else
	# the guest says when its server listens (a probe connection would
	# be taken for the client)
	phex=$(printf '%04X' "$port")
	guest "$gprog -d rxe0 $gflag $guest_opts -p $port $* > /tmp/srv.log 2>&1 & p=\$!; \
		for i in \$(seq 1 300); do grep -q ':$phex 00000000:0000 0A' /proc/net/tcp && break; sleep 0.1; done; \
		echo RXE-LIST''ENING; wait \$p; rc=\$?; cat /tmp/srv.log; ip neigh show; exit \$rc" \
		"$work/guest.log" &
	pids+=($!); gpid=$!
	for _ in $(seq 1 1200); do
		grep -q RXE-LISTENING "$work/guest.log" 2>/dev/null && break
		kill -0 "$gpid" 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 400 "$run" "${droce_env[@]}" "$prog" $gflag -p "$port" "$@" \
		"$guest_ip" > "$work/droce.log" 2>&1 &
	pids+=($!); dpid=$!
fi
wait "$dpid"; drc=$?
wait "$gpid"
grc=$(sed -n 's/.*RXE-CMD-EXIT=\([0-9]*\).*/\1/p' "$work/guest.log" | tail -1)
sleep 1
kill "${pids[0]}" 2>/dev/null; wait "${pids[0]}" 2>/dev/null

echo "----- droce (exit $drc)"; cat "$work/droce.log"
echo "----- rxe guest (exit ${grc:-none})"
grep -v '^\[rxe-peer\]' "$work/guest.log" | tail -40
fail=0
[ "$drc" -eq 0 ] || { echo "FAIL: droce side exited $drc"; fail=1; }
[ "${grc:-x}" = 0 ] || { echo "FAIL: rxe side exited ${grc:-without a result}"; fail=1; }
for e in "${expects[@]}"; do
	if grep -qE -- "$e" "$work/droce.log"; then
		echo "ok: droce output matches /$e/"
	else
		echo "FAIL: droce output lacks /$e/"; fail=1
	fi
done

# every RoCEv2 frame droce sent: ICRC and decoding
tshark -r "$work/all.pcap" -Y "eth.src == $droce_mac && udp.dstport == 4791" \
	-F pcap -w "$work/droce.pcap" 2>/dev/null
n=$(tshark -r "$work/droce.pcap" 2>/dev/null | wc -l)
m=$(tshark -r "$work/all.pcap" -Y "eth.src == $guest_mac && udp.dstport == 4791" 2>/dev/null | wc -l)
echo "capture: $n RoCEv2 frames from droce, $m from rxe"
if [ "$n" -eq 0 ] || [ "$m" -eq 0 ]; then
	echo "FAIL: no RoCEv2 traffic captured in one direction"; fail=1
elif ! "$pcaptool" --verify "$work/droce.pcap" > "$work/verify.log" 2>&1; then
	tail -5 "$work/verify.log"; echo "FAIL: droce-pcap rejects droce's frames"; fail=1
else
	echo "ok: droce-pcap verifies every ICRC and re-encodes every frame"
	/usr/bin/python3 "$top/test/tools/check-roce-pcap.py" "$work/droce.pcap" \
		> "$work/check.log" 2>&1
	rc=$?
	tail -3 "$work/check.log"
	case $rc in
	0) echo "ok: tshark decodes droce's frames cleanly, Scapy agrees on ICRC" ;;
	77) echo "note: tshark/scapy missing, decoding not checked" ;;
	*) echo "FAIL: tshark/scapy found a problem"; fail=1 ;;
	esac
fi
# under loss, recovery must have been exercised: some packet other than an
# ACK (a request or a READ response) went on the wire more than once
if [ "$loss" -gt 0 ]; then
	rexmit=$(tshark -r "$work/all.pcap" -Y "udp.dstport == 4791 && infiniband.bth.opcode != 17" \
		-T fields -e eth.src -e infiniband.bth.opcode -e infiniband.bth.psn 2>/dev/null |
		sort | uniq -d | wc -l)
	if [ "$rexmit" -gt 0 ]; then
		echo "ok: $rexmit packets sent again (loss recovered)"
	else
		echo "FAIL: loss asked for, but no packet was retransmitted"; fail=1
	fi
fi
# ARP both ways, learned, not configured (no DROCE_NEIGH, no PEER_NEIGH):
# droce learned rxe's MAC from rxe's answer to droce's request, or from
# rxe's own request; rxe's kernel holds droce's MAC as a dynamic entry;
# every request rxe sent for droce was answered.
replied=$(tshark -r "$work/all.pcap" -Y "arp.opcode == 2 && eth.src == $guest_mac && arp.dst.proto_ipv4 == $droce_ip" 2>/dev/null | wc -l)
asked=$(tshark -r "$work/all.pcap" -Y "arp.opcode == 1 && eth.src == $guest_mac && arp.dst.proto_ipv4 == $droce_ip" 2>/dev/null | wc -l)
answered=$(tshark -r "$work/all.pcap" -Y "arp.opcode == 2 && eth.src == $droce_mac" 2>/dev/null | wc -l)
echo "ARP: rxe answered droce $replied times, asked for droce $asked times, droce answered $answered"
if [ "$replied" -gt 0 ] || [ "$asked" -gt 0 ]; then
	echo "ok: droce learned rxe's MAC by ARP"
else
	echo "FAIL: droce did not learn rxe's MAC by ARP"; fail=1
fi
# trixie's iproute2 colours its output on the guest's console: uncoloured
if sed 's/\x1b\[[0-9;]*m//g' "$work/guest.log" |
		grep -E "^$droce_ip dev eth0 lladdr $droce_mac" | grep -qv PERMANENT; then
	echo "ok: rxe's kernel learned droce's MAC dynamically"
else
	echo "FAIL: rxe's kernel has no dynamic neighbour entry for droce"; fail=1
fi
if [ "$asked" -gt 0 ] && [ "$answered" -eq 0 ]; then
	echo "FAIL: droce did not answer rxe's ARP requests"; fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $role $prog $*"
exit $fail
