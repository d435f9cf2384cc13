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
#          --ce PPM       droce marks PPM/1e6 of the RoCE frames it receives
#                         CE, as a congested switch would: it sends CNPs
#                         to rxe's QPs, which must take no harm from them
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
#          --sr-offer     droce offers selective repeat (DROCE_SELECTIVE_REPEAT
#                         =cm in the environment, droce the client): its
#                         REQs must carry the offer, rxe's REPs must not
#                         answer it, and droce must send no SACK
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
ce=0
loss_frames=0
cm=0
client_extra=""
sr_offer=0
tag=$(( ($$ % 200) + 1 ))
expects=()
while [ $# -gt 0 ]; do
	case "$1" in
	--loss) loss=$2; shift 2 ;;
	--ce) ce=$2; shift 2 ;;
	--loss-frames) loss_frames=$2; shift 2 ;;
	--expect) expects+=("$2"); shift 2 ;;
	--tag) tag=$2; shift 2 ;;
	--cm) cm=1; shift ;;
	--client-extra) client_extra=$2; shift 2 ;;
	--sr-offer) sr_offer=1; shift ;;
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
	local p live i
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	# half a second for what is left to go on TERM (most has exited)
	for i in 1 2 3 4 5; do
		live=
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && live=1; done
		[ -z "$live" ] && break
		sleep 0.1
	done
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

# capture everything on the tap for the frame checks (pcap, not pcapng:
# droce's frames are taken out of it below without tshark). dumpcap
# writes the file's header once the capture is open
dumpcap -q -P -i "$tap" -w "$work/all.pcap" > "$work/dumpcap.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
	[ "$(stat -c %s "$work/all.pcap" 2>/dev/null || echo 0)" -ge 24 ] && break
	kill -0 "${pids[0]}" 2>/dev/null || break
	sleep 0.1
done

# qdisc_bypass=0: frames droce sends must pass the packet taps (capture)
droce_env=("DROCE_DEVARGS=net_af_packet0,iface=$tap,framecnt=4096,qpairs=1,qdisc_bypass=0"
	"DROCE_IPV4=$droce_ip" "DROCE_MAC=$droce_mac" DROCE_MTU=1500 DROCE_DEBUG=1)
[ "$ce" -gt 0 ] && droce_env+=("DROCE_FAULT_CE=$ce")
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
# droce's side gets it too: this 2-core host, running the guest's
# emulation beside it, gave r^2 0.82 once (rxe_send_bw_droce_client).
guest_opts=""
droce_opts=""
case "$prog" in
ib_*) gflag="-x 1"; guest_opts="-F"; droce_opts="-F" ;;
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
# the programs' port option; udaddy's port is fixed (7174) and its -p
# names the port space
portopt="-p $port"
case "$prog" in udaddy) portopt="" ;; esac

echo "rxe-pair: $role $prog $* (tap $tap, droce $droce_ip, rxe $guest_ip, loss $loss ppm)"
[ "$loss_frames" -gt 0 ] && echo "rxe-pair: loss only in the first $loss_frames frames each way"
if [ $cm -eq 1 ] && [ "$role" = droce-server ]; then
	# the guest's REQ must find droce listening (a REJ otherwise):
	# droce's telemetry (/droce/cm) says when
	tele=/var/run/dpdk/drxe$tag/dpdk_telemetry.v2
	timeout -k 5 400 "$run" "${droce_env[@]}" "DROCE_EAL=--file-prefix drxe$tag" \
		"$prog" $droce_opts $portopt "${srv_args[@]}" > "$work/droce.log" 2>&1 &
	pids+=($!); dpid=$!
	for _ in $(seq 1 600); do
		[ "$(/usr/bin/python3 - "$tele" <<'PY' 2>/dev/null
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
	guest "$gprog $gdev $guest_opts $portopt ${cli_args[*]}; rc=\$?; ip neigh show; exit \$rc" \
		"$work/guest.log" &
	pids+=($!); gpid=$!
elif [ $cm -eq 1 ]; then
	# the kernel's CM lists the server's ID as listening once it does
	guest "$gprog $gdev $guest_opts $portopt ${srv_args[*]} > /tmp/srv.log 2>&1 & p=\$!; \
		for i in \$(seq 1 300); do rdma res show cm_id 2>/dev/null | grep -q 'state LISTEN' && break; sleep 0.1; done; \
		echo RXE-LIST''ENING; wait \$p; rc=\$?; cat /tmp/srv.log; ip neigh show; exit \$rc" \
		"$work/guest.log" &
	pids+=($!); gpid=$!
	for _ in $(seq 1 1200); do
		grep -q RXE-LISTENING "$work/guest.log" 2>/dev/null && break
		kill -0 "$gpid" 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 400 "$run" "${droce_env[@]}" "$prog" $droce_opts $portopt "${cli_args[@]}" \
		> "$work/droce.log" 2>&1 &
	pids+=($!); dpid=$!
elif [ "$role" = droce-server ]; then
	timeout -k 5 400 "$run" "${droce_env[@]}" "$prog" $gflag $droce_opts -p "$port" "$@" \
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
	timeout -k 5 400 "$run" "${droce_env[@]}" "$prog" $gflag $droce_opts -p "$port" "$@" \
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

# One tshark pass over the capture gives every RoCEv2 and ARP frame's
# fields; the counts below are taken from it (tshark's start-up costs a
# second or more on a busy machine, once per filter before).
# frames: NUMBER|SRC|UDP-DPORTS|OPCODE|PSN|ARP-OPCODE|ARP-TARGET
tshark -n -r "$work/all.pcap" -Y "udp.dstport == 4791 || arp" -T fields \
	-E separator='|' -e frame.number -e eth.src -e udp.dstport \
	-e infiniband.bth.opcode -e infiniband.bth.psn -e arp.opcode \
	-e arp.dst.proto_ipv4 > "$work/frames.txt" 2>/dev/null
# count WHAT: the frames of the filter each used to be
count() {
	awk -F'|' -v what="$1" -v dm="$droce_mac" -v gm="$guest_mac" \
		-v dip="$droce_ip" '
	function roce(   i, k, p) {	# udp.dstport == 4791: any of them
		k = split($3, p, ",")
		for (i = 1; i <= k; i++) if (p[i] == 4791) return 1
		return 0
	}
	{ src = tolower($2) }
	what == "droce-frames" && src == dm && roce() { print $1 }
	what == "rxe" && src == gm && roce() { n++ }
	# a request or a READ response (not an ACK) on the wire again
	what == "rexmit" && roce() && $4 != 17 {
		if (seen[src "|" $4 "|" $5]++ == 1) n++ }
	what == "replied" && $6 == 2 && src == gm && $7 == dip { n++ }
	what == "asked" && $6 == 1 && src == gm && $7 == dip { n++ }
	what == "answered" && $6 == 2 && src == dm { n++ }
	# READ responses (opcodes 13 to 16) each side sent
	what == "droce-rresp" && src == dm && roce() && $4 >= 13 && $4 <= 16 { n++ }
	what == "rxe-rresp" && src == gm && roce() && $4 >= 13 && $4 <= 16 { n++ }
	what == "droce-all" && src == dm && roce() { n++ }
	END { if (what != "droce-frames") print n + 0 }' "$work/frames.txt"
}
# every RoCEv2 frame droce sent, into a capture of its own
count droce-frames > "$work/droce-frames.txt"
/usr/bin/python3 - "$work/all.pcap" "$work/droce.pcap" "$work/droce-frames.txt" <<'PY'
import sys
src, dst, nums = sys.argv[1:4]
want = {int(x) for x in open(nums).read().split()}
with open(src, "rb") as f:
    d = f.read()
end = "<" if d[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
out = [d[:24]]
off, num = 24, 0
while off + 16 <= len(d):
    incl = int.from_bytes(d[off + 8:off + 12], "little" if end == "<" else "big")
    num += 1
    if num in want and off + 16 + incl <= len(d):
        out.append(d[off:off + 16 + incl])
    off += 16 + incl
with open(dst, "wb") as f:
    f.write(b"".join(out))
PY
n=$(wc -l < "$work/droce-frames.txt")
m=$(count rxe)
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
# what each side put on the wire (what loss recovery cost: doc/interop.md)
echo "frames: droce sent $(count droce-all) ($(count droce-rresp) READ" \
	"responses), rxe $(count rxe) ($(count rxe-rresp) READ responses)"
# under loss, recovery must have been exercised: some packet other than an
# ACK (a request or a READ response) went on the wire more than once
if [ "$loss" -gt 0 ]; then
	rexmit=$(count rexmit)
	if [ "$rexmit" -gt 0 ]; then
		echo "ok: $rexmit packets sent again (loss recovered)"
	else
		echo "FAIL: loss asked for, but no packet was retransmitted"; fail=1
	fi
fi
# selective repeat offered to a standard peer: the tag (doc/rdmacm.md) is
# the last 8 bytes of a REQ's or REP's MAD, both CM messages ending with
# their private data; a SACK is an RC ACK with a payload
if [ $sr_offer -eq 1 ]; then
	read -r offers answers sacks < <(/usr/bin/python3 - "$work/all.pcap" \
		"$droce_mac" "$guest_mac" <<'PY'
import sys
path, dmac, gmac = sys.argv[1], sys.argv[2].lower(), sys.argv[3].lower()
d = open(path, "rb").read()
end = "little" if d[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else "big"
off, offers, answers, sacks = 24, 0, 0, 0
while off + 16 <= len(d):
    incl = int.from_bytes(d[off + 8:off + 12], end)
    f = d[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(f) < 62 or f[12:14] != b"\x08\x00" or f[23] != 17:
        continue
    ihl = (f[14] & 15) * 4
    udp = 14 + ihl
    if int.from_bytes(f[udp + 2:udp + 4], "big") != 4791:
        continue
    src = ":".join("%02x" % b for b in f[6:12])
    bth = udp + 8
    op, dqpn = f[bth], int.from_bytes(f[bth + 5:bth + 8], "big")
    if op == 0x64 and dqpn == 1 and len(f) >= bth + 20 + 256:
        mad = f[bth + 20:bth + 276]
        attr = int.from_bytes(mad[16:18], "big")
        tagged = mad[248:252] == b"DRSR"
        offers += attr == 0x10 and src == dmac and tagged
        answers += attr == 0x13 and src == gmac and tagged
    # an ACK is UDP 8 + BTH 12 + AETH 4 + ICRC 4 bytes
    if op == 0x11 and src == dmac and int.from_bytes(f[udp + 4:udp + 6], "big") > 28:
        sacks += 1
print(offers, answers, sacks)
PY
)
	echo "selective repeat: droce's REQs offering it $offers, rxe's REPs" \
		"answering ${answers:-?}, SACKs from droce ${sacks:-?}"
	if [ "${offers:-0}" -gt 0 ] && [ "${answers:-1}" -eq 0 ] &&
			[ "${sacks:-1}" -eq 0 ]; then
		echo "ok: rxe ignored the offer, selective repeat stayed off"
	else
		echo "FAIL: selective repeat offered, answered or used"; fail=1
	fi
fi
# ARP both ways, learned, not configured (no DROCE_NEIGH, no PEER_NEIGH):
# droce learned rxe's MAC from rxe's answer to droce's request, or from
# rxe's own request; rxe's kernel holds droce's MAC as a dynamic entry;
# every request rxe sent for droce was answered.
replied=$(count replied)
asked=$(count asked)
answered=$(count answered)
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
