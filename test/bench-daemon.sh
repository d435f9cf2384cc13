#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-daemon.sh [BUILD]: droced's figures (doc/perf-apps.md), never pass/fail.
# Each beside the in-process drop-in (inline mode: the application's
# thread and droce's progress thread per process) and the raw net_memif
# frame rate in the same run:
#  1. ib_write_bw -s 64 message rate: in process, attached to droced;
#  2. ib_write_lat -s 64: in process, attached, and droce-perf's own round
#     trip (--lat);
#  3. 8 applications sharing each daemon's one data-path queue: the sum
#     of their rates against one application alone;
#  4. many RC QPs (DAEMON_BENCH_QPS, default 10000, spread over 4
#     applications per side) against 1 QP, and memory per QP;
#  5. the shared path alone: ONE droced, its port a net_memif server with
#     no peer (frames to its own MAC loop back inside droce), the daemon
#     on CPU 0 and two attached ib_write_bw (server and client) on the
#     other CPUs, 64 B and 64 KB, busy and idle polling, against the same
#     pair in process. Items 1-4 (two daemons, two applications, two
#     CPUs) measure the scheduler as much as droce.
# DAEMON_POLL=busy|idle (default idle: on 2 CPUs two busy daemons leave
# the applications no core). DAEMON_BENCH_ONLY=one: item 5 alone.
set -uo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/test/common/pair-lib.sh"
. "$top/test/common/daemon-lib.sh"
run="$build/app/droce-run"
droced="$build/app/droced"
pair="$top/test/verbs/verbs-pair.sh"
work=$(mktemp -d /tmp/droced-bench.XXXXXX)
pids=()
dpid_a=
dpid_b=
cleanup() {
	kill_all "${pids[@]}" $dpid_a $dpid_b
	rm -rf "$work"
}
trap cleanup EXIT
export VP_TIMEOUT=${VP_TIMEOUT:-180}
nqps=${DAEMON_BENCH_QPS:-10000}

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

items_1_to_4() {
echo "machine: $(nproc) CPUs; droced polling: ${DAEMON_POLL:-idle}"
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write --size 64 --iters 200000 > "$work/raw" 2>&1
raw=$(awk '$1 == "write" && $2 == 64 { print $6; exit }' "$work/raw")
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--lat --op write --size 64 --iters 20000 > "$work/perflat" 2>&1
echo "raw net_memif: ${raw:-?} frames/s at 64 B"
echo "droce-perf (embedded, one process per side) write latency 64 B:"
grep -E "^ *write" "$work/perflat" | head -2

rate() {	# Mmsg/s from a perftest bw client log
	awk '$1 == 64 && NF >= 5 { print $5; exit }' "$1"
}
latency() {	# typical and p99 usec from a perftest lat client log
	awk '$1 == 64 && NF >= 7 { print $5 " " $8; exit }' "$1"
}

"$pair" "$run" -- ib_write_bw -x 1 -s 64 -n 500000 > "$work/inproc" 2>&1
"$pair" "$run" --daemons "$droced" -- ib_write_bw -x 1 -s 64 -n 500000 \
	> "$work/attached" 2>&1
ri=$(sed -n '/^----- client/,$p' "$work/inproc" | rate /dev/stdin)
ra=$(sed -n '/^----- client/,$p' "$work/attached" | rate /dev/stdin)
echo "ib_write_bw 64 B: in process ${ri:-?} Mmsg/s, attached ${ra:-?} Mmsg/s" \
	"($(awk -v a="${ra:-0}" -v b="${ri:-1}" 'BEGIN { printf "%.0f", 100 * a / b }')%" \
	"of in process; raw $(awk -v a="${ra:-0}" -v r="${raw:-1}" 'BEGIN { printf "%.0f", 100 * a * 1e6 / r }')%)"

"$pair" "$run" -- ib_write_lat -x 1 -s 64 -n 5000 > "$work/lin" 2>&1
"$pair" "$run" --daemons "$droced" -- ib_write_lat -x 1 -s 64 -n 5000 > "$work/lat" 2>&1
echo "ib_write_lat 64 B typ/p99 usec: in process" \
	"$(sed -n '/^----- client/,$p' "$work/lin" | latency /dev/stdin)," \
	"attached $(sed -n '/^----- client/,$p' "$work/lat" | latency /dev/stdin)"

# apps N ARGS...: N attached ib_write_bw pairs at once; prints the sum
apps() {
	local n=$1 i p s
	shift
	local cl=() sv=()
	for i in $(seq 1 "$n"); do
		p=$(free_port)
		"$run" "DROCE_DAEMON=$work/a.sock" ib_write_bw -x 1 -s 64 -p "$p" "$@" \
			> "$work/s$i" 2>&1 &
		sv+=($!)
		for _ in $(seq 1 100); do
			ss -ltn | grep -q "[:.]$p " && break
			sleep 0.1
		done
		"$run" "DROCE_DAEMON=$work/b.sock" ib_write_bw -x 1 -s 64 -p "$p" "$@" \
			127.0.0.1 > "$work/c$i" 2>&1 &
		cl+=($!)
	done
	for p in "${cl[@]}"; do wait "$p"; done
	# (a subshell's: the script's cleanup never sees these pids)
	sleep 1
	kill_all "${sv[@]}" > /dev/null 2>&1
	s=0
	for i in $(seq 1 "$n"); do
		s=$(awk -v s="$s" -v r="$(rate "$work/c$i")" 'BEGIN { print s + r }')
	done
	echo "$s"
}
daemons_start "$droced" "$work" DROCE_APP_REGION_MB=512 DROCE_APP_MAX_QP=8192
one=$(apps 1 -D 5)
eight=$(apps 8 -D 5)
echo "one application: $one Mmsg/s; 8 at once through the same data-path" \
	"queue: $eight Mmsg/s in all ($(awk -v a="$eight" -v b="$one" 'BEGIN { printf "%.0f", 100 * a / b }')%)"

# perftest sizes one CQ for all its QPs, tx depth x QPs: 16 x 2500 stays
# under the device's max_cqe (65536), its default 128 would not
per=$((nqps / 4))
q1=$(apps 1 -D 5 -q 1 -t 16)
# the daemon's peak RSS with 4 applications of one QP each, then of
# $per each (writing 5 to clear_refs resets VmHWM to the current RSS:
# the 8 applications above raised it): what a QP adds, apart from what
# an application does (its region, its buffers)
echo 5 > /proc/$dpid_a/clear_refs 2>/dev/null
rss0=$(awk '/VmRSS/ { print $2 }' /proc/$dpid_a/status)
apps 4 -D 5 -q 1 -t 16 > /dev/null
hwm1=$(awk '/VmHWM/ { print $2 }' /proc/$dpid_a/status)
echo 5 > /proc/$dpid_a/clear_refs 2>/dev/null
many=$(apps 4 -D 10 -q "$per" -t 16)
hwm=$(awk '/VmHWM/ { print $2 }' /proc/$dpid_a/status)
echo "RC QPs: 1 QP $q1 Mmsg/s; $((per * 4)) QPs (4 applications) $many Mmsg/s" \
	"($(awk -v a="$many" -v b="$q1" 'BEGIN { printf "%.0f", 100 * a / b }')%)"
daemons_stop "$work" > "$work/stop" 2>&1
echo "daemon A RSS ${rss0} kB; peak with 4 applications of 1 QP ${hwm1} kB" \
	"($(( (hwm1 - rss0) / 4 )) kB an application), of $per QPs ${hwm} kB:" \
	"$(( (hwm - hwm1) / (4 * (per - 1)) )) kB per QP in the daemon (its" \
	"rings: doc/perf-apps.md's arithmetic)"

}
[ "${DAEMON_BENCH_ONLY:-}" = one ] || items_1_to_4

# 5. one droced, two applications on the other CPUs
one_rate() {	# ib_write_bw's MB/s and Mmsg/s of a client log: "mbs mmsgs"
	awk -v s="$2" '$1 == s && NF >= 5 { print $4, $5; exit }' "$1"
}
one_daemon() {	# POLL SIZE: "mbs mmsgs" of two attached ib_write_bw
	local poll=$1 size=$2 p d lc=() cpus="1-$(( $(nproc) - 1 ))"
	[ "$(nproc)" -lt 2 ] && cpus=0
	[ "$poll" = busy ] && lc=("DROCE_LCORES=0@0,1@0")
	rm -f "$work/one.sock" "$work/one-d.sock"
	taskset -c 0 env -u LD_LIBRARY_PATH "$droced" \
		"DROCE_DEVARGS=net_memif0,role=server,socket=$work/one.sock,socket-abstract=no" \
		DROCE_IPV4=10.9.0.1 "DROCE_DAEMON=$work/one-d.sock" \
		"DROCE_EAL=--file-prefix dob$$" DROCE_POLL="$poll" "${lc[@]}" \
		> "$work/one-droced.log" 2>&1 &
	d=$!
	for _ in $(seq 1 100); do [ -S "$work/one-d.sock" ] && break; sleep 0.1; done
	p=$(free_port)
	taskset -c "$cpus" "$run" "DROCE_DAEMON=$work/one-d.sock" ib_write_bw -x 1 \
		-s "$size" -p "$p" -D 5 > "$work/one-s" 2>&1 &
	local sv=$!
	for _ in $(seq 1 100); do ss -ltn | grep -q "[:.]$p " && break; sleep 0.1; done
	taskset -c "$cpus" "$run" "DROCE_DAEMON=$work/one-d.sock" ib_write_bw -x 1 \
		-s "$size" -p "$p" -D 5 127.0.0.1 > "$work/one-c" 2>&1
	sleep 1
	kill_all $sv $d > /dev/null 2>&1
	one_rate "$work/one-c" "$size"
}
inproc_bw() {	# SIZE: "mbs mmsgs" of the pair in process
	"$pair" "$run" -- ib_write_bw -x 1 -s "$1" -D 5 > "$work/ip" 2>&1
	sed -n '/^----- client/,$p' "$work/ip" | one_rate /dev/stdin "$1"
}
echo "one droced (CPU 0), two attached ib_write_bw (other CPUs), against" \
	"the pair in process; MB/s and Mmsg/s:"
for size in 64 65536; do
	read -r im imm <<< "$(inproc_bw $size)"
	for poll in busy idle; do
		read -r om omm <<< "$(one_daemon $poll $size)"
		printf '  %6s B %-4s attached %9s MB/s %7s Mmsg/s, in process %9s MB/s %7s Mmsg/s: %s%%\n' \
			"$size" "$poll" "${om:--}" "${omm:--}" "${im:--}" "${imm:--}" \
			"$(awk -v a="${om:-0}" -v b="${im:-0}" 'BEGIN { if (b > 0) printf "%.0f", 100 * a / b; else print "-" }')"
	done
done
