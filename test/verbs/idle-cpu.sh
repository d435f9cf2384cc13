#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# idle-cpu.sh DROCE-RUN [SECONDS] [--daemon DROCED]: the CPU time per
# second of wall time of an idle application that blocks on a completion
# channel: `ibv_rc_pingpong -e` as a server, its device open and its QP
# made, waiting for a client that never comes. In process (its own port
# and progress thread) or, with --daemon, attached to a droced (the
# daemon's own CPU is printed beside it). A figure, never pass/fail.
set -uo pipefail
. "$(dirname "$0")/../common/pair-lib.sh"
. "$(dirname "$0")/../common/daemon-lib.sh"
run=$1 secs=${2:-5} droced=""
[ "${3:-}" = --daemon ] && droced=$4
command -v ibv_rc_pingpong >/dev/null || { echo "ibv_rc_pingpong missing: skip"; exit 77; }
work=$(mktemp -d /tmp/droce-idle.XXXXXX)
pid= dpid_a= dpid_b=
cleanup() {
	kill_all $pid
	[ -n "$dpid_a" ] && daemons_stop "$work" > /dev/null
	rm -rf "$work"
}
trap cleanup EXIT

env=(DROCE_MTU=1500 "DROCE_DEVARGS=net_memif0,role=server,socket=$work/memif.sock"
	DROCE_IPV4=10.9.0.1)
if [ -n "$droced" ]; then
	daemons_start "$droced" "$work"
	env=("DROCE_DAEMON=$work/a.sock")
fi
port=$(free_port)
"$run" "${env[@]}" ibv_rc_pingpong -e -g 1 -p "$port" > "$work/app.log" 2>&1 &
pid=$!
wait_listen "$port" "$pid" ||
	{ echo "ibv_rc_pingpong did not listen"; cat "$work/app.log"; exit 1; }
sleep 1		# past the start-up's own work
ticks() {	# utime + stime of a process, all its threads, in clock ticks
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}
hz=$(getconf CLK_TCK)
a=$(ticks "$pid")
[ -n "$droced" ] && da=$(ticks "$dpid_a")
sleep "$secs"
b=$(ticks "$pid")
awk -v a="$a" -v b="$b" -v s="$secs" -v hz="$hz" 'BEGIN {
	printf "idle ibv_rc_pingpong -e: %.2f%% of a CPU (%.1f ms per s)\n",
		100 * (b - a) / hz / s, 1000 * (b - a) / hz / s }'
if [ -n "$droced" ]; then
	db=$(ticks "$dpid_a")
	awk -v a="$da" -v b="$db" -v s="$secs" -v hz="$hz" 'BEGIN {
		printf "its droced meanwhile: %.2f%% of a CPU\n",
			100 * (b - a) / hz / s }'
fi
