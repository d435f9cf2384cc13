#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# many-apps.sh DROCE-RUN DROCED N [--kill]
#
# N applications on each of two droced joined by one link (one data-path
# queue each), all at once: N pairs of unmodified ibv_rc_pingpong -c
# (every byte received is checked), server attached to A, client to B.
# Each pair must exit 0 and report its transfer.
#
# With --kill, an ib_write_bw pair runs beside them and its client is
# killed with SIGKILL mid-run (its server too, a moment later): the
# pingpong pairs must be unaffected, and once every program is gone both
# daemons' telemetry must show no application, no QP left on the port,
# and the killed ones' QPs reclaimed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
. "$here/../common/daemon-lib.sh"
run=$1 droced=$2 n=$3 kill_bw=${4:-}
command -v ibv_rc_pingpong >/dev/null || { echo "no ibv_rc_pingpong: skip"; exit 77; }

work=$(mktemp -d /tmp/droced-many.XXXXXX)
pids=()
dpid_a=
dpid_b=
cleanup() {
	kill_all "${pids[@]}" $dpid_a $dpid_b
	rm -rf "$work"
}
trap cleanup EXIT
daemons_start "$droced" "$work"

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_listen() {
	local p=$1 pid=$2
	for _ in $(seq 1 200); do
		ss -ltn 2>/dev/null | grep -q "[:.]$p " && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
}

iters=${MANY_ITERS:-400}
[ -n "$kill_bw" ] && iters=${MANY_ITERS:-20000}
if [ -n "$kill_bw" ]; then
	p=$(free_port)
	"$run" "DROCE_DAEMON=$work/a.sock" ib_write_bw -x 1 -D 60 -p "$p" \
		> "$work/bws.log" 2>&1 &
	bws=$!
	pids+=($bws)
	wait_listen "$p" "$bws"
	# line-buffered: its results header says when it runs (a file
	# would get it only at exit)
	"$run" "DROCE_DAEMON=$work/b.sock" stdbuf -oL ib_write_bw -x 1 -D 60 -p "$p" 127.0.0.1 \
		> "$work/bwc.log" 2>&1 &
	bwc=$!
	pids+=($bwc)
	# its QPs are connected and moving data before the pairs start
	for _ in $(seq 1 600); do
		grep -q "bytes" "$work/bwc.log" 2>/dev/null && break
		kill -0 "$bwc" 2>/dev/null || break
		sleep 0.1
	done
fi
srv=() cli=()
for i in $(seq 1 "$n"); do
	p=$(free_port)
	timeout -k 5 240 "$run" "DROCE_DAEMON=$work/a.sock" ibv_rc_pingpong -c -g 1 \
		-n "$iters" -s 4096 -p "$p" > "$work/s$i.log" 2>&1 &
	srv[$i]=$!
	pids+=(${srv[$i]})
	wait_listen "$p" "${srv[$i]}"
	timeout -k 5 240 "$run" "DROCE_DAEMON=$work/b.sock" stdbuf -oL \
		ibv_rc_pingpong -c -g 1 -n "$iters" -s 4096 -p "$p" 127.0.0.1 \
		> "$work/c$i.log" 2>&1 &
	cli[$i]=$!
	pids+=(${cli[$i]})
done

if [ -n "$kill_bw" ]; then
	# the pingpong pairs must be running beside it, or the kill proves
	# nothing about them: each client connected (its peer's address
	# printed) and not done; 20,000 round trips last long past that
	for i in $(seq 1 "$n"); do
		for _ in $(seq 1 600); do
			grep -q "remote address" "$work/c$i.log" 2>/dev/null && break
			kill -0 "${cli[$i]}" 2>/dev/null || break
			sleep 0.1
		done
	done
	live=0
	for i in $(seq 1 "$n"); do kill -0 "${cli[$i]}" 2>/dev/null && live=$((live + 1)); done
	echo "killing ib_write_bw's client (pid $bwc) with SIGKILL, $live of $n pingpong clients running"
	kill -9 $bwc
	sleep 0.5
	kill -9 $bws
fi

fail=0
for i in $(seq 1 "$n"); do
	wait "${cli[$i]}"; crc=$?
	wait "${srv[$i]}"; src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || ! grep -q "bytes in" "$work/c$i.log"; then
		echo "FAIL: pair $i: server exit $src, client exit $crc"
		cat "$work/s$i.log" "$work/c$i.log"
		fail=1
	else
		echo "ok: pair $i: $(grep 'bytes in' "$work/c$i.log")"
	fi
done

if [ -n "$kill_bw" ]; then
	[ "$live" -gt 0 ] || { echo "FAIL: no pingpong pair was running at the kill"; fail=1; }
	# the daemons notice and reclaim; then nothing is left anywhere
	sleep 1
	"$here/telemetry-check.py" "$tele_a" "$tele_b" || fail=1
fi
daemons_stop "$work" || fail=1
[ $fail -eq 0 ] && echo "PASS: $n applications per daemon"
exit $fail
