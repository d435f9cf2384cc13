#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-events.sh [BUILD]: event-driven programs against the same
# programs polling, on droce between two processes (net_memif): qperf's
# rc_lat, rc_bw and rc_rdma_write_bw waiting on a completion channel (its
# default) beside -cp 1 (polling), over rdma_cm, and ibv_rc_pingpong -e
# beside its polling loop; in process and attached to two droced. Each
# row: the polling figure, the waiting one, and their ratio. Figures,
# never pass/fail. qperf runs in a network namespace per side (its TCP
# side channel), as test/eco/fi-pair.sh sets up.
#
# BENCH_EVENTS_SECS: qperf's time per test (3).
set -uo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
run="$build/app/droce-run"
droced="$build/app/droced"
secs=${BENCH_EVENTS_SECS:-3}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# qperf_one TEST MODE-ARGS DAEMON-ARGS: "value unit" of its one figure
qperf_one() {
	local t=$1 mode=$2 dargs=$3
	# shellcheck disable=SC2086
	"$top/test/eco/fi-pair.sh" "$run" --ready-port 19765 --server-stays \
		$dargs -- qperf -- qperf @SRV@ -cm1 $mode -t "$secs" "$t" \
		> "$tmp" 2>&1 || { echo "- -"; return; }
	awk '/(latency|bw) *=/ { print $3, $4; found = 1; exit }
		END { if (!found) print "- -" }' "$tmp"
}

# to_base VALUE UNIT: latency in us, bandwidth in MB/s
to_base() {
	awk -v v="$1" -v u="$2" 'BEGIN {
		if (v == "-") { print "-"; exit }
		m = 1
		if (u == "ns") m = 0.001; else if (u == "ms") m = 1000;
		else if (u == "sec") m = 1000000;
		else if (u ~ /^KB/) m = 0.001; else if (u ~ /^GB/) m = 1000;
		else if (u ~ /^B\//) m = 0.000001;
		printf "%.2f\n", v * m }'
}

# pingpong ARGS... DAEMON-ARGS last: usec/iter
pingpong() {
	local dargs=$1; shift
	# shellcheck disable=SC2086
	"$top/test/verbs/verbs-pair.sh" "$run" $dargs -- ibv_rc_pingpong \
		-g 1 -n 20000 -s 64 "$@" > "$tmp" 2>&1 || { echo "-"; return; }
	awk '/usec\/iter/ { v = $(NF - 1) } END { print (v == "" ? "-" : v) }' \
		"$tmp"
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "-" || b == "-" || a == 0) print "-";
		else printf "%.2f\n", b / a }'
}

printf '%-10s %-18s %12s %12s %8s\n' where test polling waiting "wait/poll"
for where in inproc attached; do
	dq=""; dv=""
	if [ "$where" = attached ]; then
		dq="--daemons $droced"; dv="--daemons $droced"
	fi
	for t in rc_lat rc_bw rc_rdma_write_bw; do
		p=$(to_base $(qperf_one "$t" "-cp 1" "$dq"))
		e=$(to_base $(qperf_one "$t" "" "$dq"))
		unit=MB/s; [ "$t" = rc_lat ] && unit=us
		printf '%-10s %-18s %12s %12s %8s\n' "$where" "qperf $t ($unit)" \
			"$p" "$e" "$(ratio "$p" "$e")"
	done
	p=$(pingpong "$dv")
	e=$(pingpong "$dv" -e)
	printf '%-10s %-18s %12s %12s %8s\n' "$where" "rc_pingpong (us)" \
		"$p" "$e" "$(ratio "$p" "$e")"
done
