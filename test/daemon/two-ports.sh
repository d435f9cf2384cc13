#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# two-ports.sh DROCE_RUN DROCED
#
# One droced owning two ports, as a host with two NICs: daemons A and B,
# each with port 0 on one net_memif link (10.9.0.1 - 10.9.0.2) and port 1
# on another (10.9.1.1 - 10.9.1.2, DROCE_DEVARGS_1, DROCE_IPV4_1).
# Passes when:
#  - the drop-in attached to A lists both ports as devices, droce0 and
#    droce1, each with its own address in GID 1 (ibv_devinfo -v);
#  - ibv_rc_pingpong runs on droce0 and on droce1 at once, every buffer
#    checked (-c), both pairs through the same two daemons;
#  - ib_write_bw -R (rdma_cm) to port 1's address connects through
#    port 1 (the remote GID perftest prints; its "Device" line names the
#    device it opened first, not the one rdma_cm chose): the server
#    listens on every device, the client's source is the address on the
#    peer's subnet;
#  - each port's counters (telemetry /droce/port/stats,N) show frames,
#    so each pair's traffic crossed its own link;
#  - DROCE_DEVARGS_2 without DROCE_DEVARGS_1 stops droced (exit 2) with
#    a line naming both keys.
set -uo pipefail
. "$(dirname "$0")/../common/pair-lib.sh"
run=$1 droced=$2
for p in ibv_devinfo ibv_rc_pingpong ib_write_bw; do
	command -v $p >/dev/null || { echo "$p missing: skip"; exit 77; }
done
work=$(mktemp -d /tmp/droce-2p.XXXXXX)
tag=$(basename "$work" | tr -dc 'a-zA-Z0-9')
pids=()
dpa= dpb=
cleanup() {
	kill_all "${pids[@]}" $dpa $dpb
	rm -rf "$work" "/var/run/dpdk/d2a$tag" "/var/run/dpdk/d2b$tag"
}
trap cleanup EXIT
fail=0
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# the configuration mistake first: nothing else runs
env -u LD_LIBRARY_PATH "$droced" DROCE_DEVARGS=net_ring0 \
	DROCE_DEVARGS_2=net_ring1 "DROCE_DAEMON=$work/x.sock" \
	> "$work/gap.log" 2>&1
rc=$?
cat "$work/gap.log"
if [ $rc -ne 2 ] || ! grep -q 'DROCE_DEVARGS_2.*DROCE_DEVARGS_1' "$work/gap.log"; then
	echo "FAIL: a gap in the ports: exit $rc, want 2 and both keys named"
	fail=1
fi

# start NAME ROLE HOST: a daemon with two ports
start() {
	env -u LD_LIBRARY_PATH "$droced" \
		"DROCE_DEVARGS=net_memif0,role=$2,socket=$work/m0.sock,socket-abstract=no" \
		DROCE_IPV4=10.9.0.$3 \
		"DROCE_DEVARGS_1=net_memif1,role=$2,socket=$work/m1.sock,socket-abstract=no" \
		DROCE_IPV4_1=10.9.1.$3 \
		"DROCE_DAEMON=$work/$1.sock" "DROCE_EAL=--file-prefix d2$1$tag" \
		DROCE_POLL=idle > "$work/droced-$1.log" 2>&1 &
}
# wait_sockets TENTHS PATH...: until every PATH is a socket, at most
# TENTHS tenths of a second
wait_sockets() {
	local n=$1 f all
	shift
	for _ in $(seq "$n"); do
		all=1
		for f in "$@"; do [ -S "$f" ] || all=; done
		[ -n "$all" ] && return 0
		sleep 0.1
	done
	return 1
}
start a server 1
dpa=$!
wait_sockets 100 "$work/m0.sock" "$work/m1.sock"
start b client 2
dpb=$!
wait_sockets 300 "$work/a.sock" "$work/b.sock"

A=(DROCE_DAEMON=$work/a.sock)
B=(DROCE_DAEMON=$work/b.sock)

# the devices
echo "== ${SECONDS}s: daemons up"
"$run" "${A[@]}" ibv_devinfo -v > "$work/devinfo.log" 2>&1
cat "$work/devinfo.log" | grep -E 'hca_id|GID\[ *1\]' || true
for want in 'hca_id:[[:space:]]*droce0' 'hca_id:[[:space:]]*droce1' \
		'::ffff:10.9.0.1' '::ffff:10.9.1.1'; do
	grep -qE -- "$want" "$work/devinfo.log" ||
		{ echo "FAIL: ibv_devinfo on A lacks /$want/"; fail=1; }
done

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_listen() {
	for _ in $(seq 300); do
		ss -ltn 2>/dev/null | grep -q "[:.]$1 " && return 0
		sleep 0.1
	done
	return 1
}

echo "== ${SECONDS}s: ibv_rc_pingpong"
# ibv_rc_pingpong on both ports at once
declare -A srv cli
for dev in droce0 droce1; do
	p=$(free_port)
	timeout -k 5 120 "$run" "${A[@]}" ibv_rc_pingpong -d $dev -g 1 -c \
		-n 500 -p "$p" > "$work/srv-$dev.log" 2>&1 &
	srv[$dev]=$!
	pids+=($!)
	wait_listen "$p"
	timeout -k 5 120 "$run" "${B[@]}" ibv_rc_pingpong -d $dev -g 1 -c \
		-n 500 -p "$p" 127.0.0.1 > "$work/cli-$dev.log" 2>&1 &
	cli[$dev]=$!
	pids+=($!)
done
for dev in droce0 droce1; do
	wait "${srv[$dev]}"; rs=$?
	wait "${cli[$dev]}"; rc=$?
	echo "----- ibv_rc_pingpong -d $dev: server $rs, client $rc"
	cat "$work/srv-$dev.log" "$work/cli-$dev.log"
	if [ $rs -ne 0 ] || [ $rc -ne 0 ] ||
			! grep -q 'iters in' "$work/cli-$dev.log"; then
		echo "FAIL: ibv_rc_pingpong on $dev"; fail=1
	fi
	# the other side's GID in the client's output: its own port's
	want=10.9.0.1; [ $dev = droce1 ] && want=10.9.1.1
	grep -q "GID ::ffff:$want" "$work/cli-$dev.log" ||
		{ echo "FAIL: $dev's peer is not $want"; fail=1; }
done

echo "== ${SECONDS}s: ib_write_bw -R"
# rdma_cm to port 1's address: the listener on every device, the
# connection on droce1
p=$(free_port)
timeout -k 5 120 "$run" "${A[@]}" ib_write_bw -R -F -s 4096 -n 2000 \
	-p "$p" > "$work/cm-srv.log" 2>&1 &
cms=$!
pids+=($!)
# its side channel is rdma_cm: no TCP port to wait for; a REQ before its
# listen is retried (doc/rdmacm.md)
sleep 1
timeout -k 5 120 "$run" "${B[@]}" ib_write_bw -R -F -s 4096 -n 2000 \
	-p "$p" 10.9.1.1 > "$work/cm-cli.log" 2>&1
cmc=$?
wait $cms; cmrs=$?
echo "----- ib_write_bw -R to 10.9.1.1: server $cmrs, client $cmc"
cat "$work/cm-cli.log"
if [ $cmrs -ne 0 ] || [ $cmc -ne 0 ] ||
		! grep -qE '^ *4096 +2000 ' "$work/cm-cli.log" ||
		! grep -q 'GID: .*:10:09:01:01$' "$work/cm-cli.log"; then
	echo "FAIL: ib_write_bw -R over port 1"; fail=1
fi

echo "== ${SECONDS}s: counters"
# each port carried frames of its own; the daemon counts two ports
ports=$(/usr/bin/python3 - "/var/run/dpdk/d2a$tag/dpdk_telemetry.v2" <<'PY' 2>/dev/null
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(12288)
s.send(b"/droced/stats")
print(json.loads(s.recv(65536))["/droced/stats"]["ports"])
PY
)
echo "A's /droced/stats ports: ${ports:-unread}"
[ "${ports:-0}" = 2 ] || { echo "FAIL: /droced/stats ports"; fail=1; }
for n in 0 1; do
	rx=$(/usr/bin/python3 - "/var/run/dpdk/d2a$tag/dpdk_telemetry.v2" $n <<'PY' 2>/dev/null
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(12288)
s.send(("/droce/port/stats,%s" % sys.argv[2]).encode())
st = json.loads(s.recv(65536))["/droce/port/stats"]
print(st["name"], st["nic_rx_pkts"])
PY
)
	echo "A's port $n: ${rx:-unread}"
	read -r name pk <<< "${rx:-x 0}"
	[ "$name" = droce$n ] && [ "${pk:-0}" -gt 500 ] ||
		{ echo "FAIL: A's port $n: want droce$n and over 500 frames"; fail=1; }
done

echo "== ${SECONDS}s: stopping"
kill -TERM $dpa $dpb
wait $dpa; ra=$?
wait $dpb; rb=$?
echo "----- droced A (exit $ra)"; cat "$work/droced-a.log"
echo "----- droced B (exit $rb)"; cat "$work/droced-b.log"
[ $ra -eq 0 ] && [ $rb -eq 0 ] || { echo "FAIL: a daemon did not stop cleanly"; fail=1; }
dpa= dpb=
[ $fail -eq 0 ] && echo "PASS: two ports per droced"
exit $fail
