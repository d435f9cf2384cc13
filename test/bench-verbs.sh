#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Unmodified perftest over droce's libibverbs.so.1 (two processes,
# net_memif, the drop-in's in-process mode) against droce-perf with the
# same op, size, queue depth, QP count and CQ moderation, run just before
# it on the same PMD. Each row: perftest's rate, droce-perf's, perftest's
# share of droce-perf's, and both against the raw net_memif rate that
# droce-perf measured in the same invocation. Figures, never pass/fail.
#
# BENCH_VERBS_ROUNDS=N: each row N times, perftest and droce-perf
# alternating; the row printed is the round with the median share.
set -uo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
pair="$top/test/verbs/verbs-pair.sh"
perf_pair="$top/test/dataplane/perf-pair.sh"
run="$build/app/droce-run"
perf="$build/app/droce-perf"
rounds=${BENCH_VERBS_ROUNDS:-1}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
export VP_TIMEOUT=${VP_TIMEOUT:-120}

# droce-perf OP SIZE ARGS...: "msgs/s lat_p50 raw_fr/s raw_Gb/s ratio" of
# its row, or nothing
droce_perf() {
	local op=$1 size=$2; shift 2
	# droce-perf loads DPDK's PMDs, which must see the system libibverbs
	env -u LD_LIBRARY_PATH "$perf_pair" "$perf" memif -- \
		--op "$op" --size "$size" "$@" \
		> "$tmp" 2>&1 || return
	awk -v o="$op" -v s="$size" '
		$1 == o && $2 == s && $NF == "ok" {
			if ($6 ~ /\//) { split($6, l, "/");
				print $4, l[1], "-", $8, $9 }
			else print $4, "-", $6, $7, $8
			exit }' "$tmp"
}

# perftest ARGS...: "msgs/s MB/s" (bandwidth) or "typical p99" (latency)
perftest() {
	local size=$1; shift
	"$pair" "$run" -- "$@" -s "$size" > "$tmp" 2>&1 || return
	sed -n '/^----- client/,$p' "$tmp" | awk -v s="$size" '
		$1 == s && NF >= 9 && $5 + 0 > 0 { print $5, $8; exit }
		$1 == s && NF >= 5 && NF < 9 { print $5 * 1e6, $4; exit }'
}

printf '%-26s %6s %-14s %11s %11s %7s %9s %9s\n' test bytes \
	"depth/qps/mod" perftest droce-perf share "dp/raw" "pt/raw"
echo "  (rates in M msgs/s; latency rows: perftest typical and droce-perf p50, us)"

# row NAME SIZE DEPTH QPS CQMOD DP-OP DP-ARGS -- PERFTEST ARGS...
row() {
	local name=$1 size=$2 depth=$3 qps=$4 mod=$5 op=$6 dpargs=$7 r
	local lat=0 out="" results=()
	shift 7; [ "$1" = -- ] && shift
	case "$dpargs" in *--lat*) lat=1 ;; esac
	for ((r = 0; r < rounds; r++)); do
		local pt dp
		pt=$(perftest "$size" "$@")
		if [ "$op" = - ]; then
			dp=""
		else
			# shellcheck disable=SC2086
			dp=$(droce_perf "$op" "$size" --depth "$depth" \
				--qps "$qps" --cq-mod "$mod" $dpargs)
		fi
		results+=("$(awk -v pt="$pt" -v dp="$dp" -v lat="$lat" 'BEGIN {
			np = split(pt, p, " "); nd = split(dp, d, " ");
			if (np < 2) { print "-1 failed"; exit }
			if (lat) {
				v = p[1]; dv = (nd ? d[2] : 0);
				share = (dv > 0) ? v / dv : 0;
				ptraw = (nd && d[5] + 0 > 0) ? d[5] * dv / v : 0;
				printf "%.4f %.2f %s %s %s %s\n", share, v,
					nd ? sprintf("%.2f", dv) : "-",
					nd ? sprintf("%.2fx", share) : "-",
					nd ? d[5] : "-",
					nd ? sprintf("%.1f%%", ptraw) : "-"
			} else {
				v = p[1] / 1e6; dv = (nd ? d[1] / 1e6 : 0);
				share = (dv > 0) ? v / dv : 0;
				ptraw = (nd && d[5] + 0 > 0) ? d[5] * share : 0;
				printf "%.4f %.3f %s %s %s %s\n", share, v,
					nd ? sprintf("%.3f", dv) : "-",
					nd ? sprintf("%.1f%%", 100 * share) : "-",
					nd ? d[5] : "-",
					nd ? sprintf("%.1f%%", ptraw) : "-"
			} }')")
	done
	out=$(printf '%s\n' "${results[@]}" | sort -n | \
		sed -n "$(( (rounds + 1) / 2 ))p")
	# shellcheck disable=SC2086
	set -- $out
	if [ "$1" = -1 ]; then
		printf '%-26s %6s %-14s failed\n' "$name" "$size" "$depth/$qps/$mod"
		return
	fi
	printf '%-26s %6s %-14s %11s %11s %7s %9s %9s\n' "$name" "$size" \
		"$depth/$qps/$mod" "$2" "$3" "$4" "$5" "$6"
}

# perftest's defaults, given to droce-perf: 128 WRs in flight (-t), one QP,
# a completion every 100 WRs up to 8 KB messages and every WR above
# (perftest turns moderation off for large messages), READs and atomics
# outstanding at the device's maximum (droce-perf's --outs default too).
# Both run the same number of messages, about a second's worth on the
# 2-core VM: at a fifth of a second (perftest's 1 M 64 B WRITEs, 100 k 4 KB
# ones) perftest's first 20-50 ms over the drop-in, a start-up droce-perf
# does not show (most of it net_memif's page faults, which droce-perf's
# warm-up lap takes before its first test), cost it 10-25 points of its
# share (doc/verbs.md).
row "ib_write_bw RC" 64 128 1 100 write "--iters 4000000" -- \
	ib_write_bw -x 1 -n 4000000
row "ib_write_bw RC" 4096 128 1 100 write "--iters 800000" -- \
	ib_write_bw -x 1 -n 800000
row "ib_write_bw RC" 65536 128 1 1 write "--iters 60000" -- \
	ib_write_bw -x 1 -n 60000
row "ib_write_bw RC -q 4" 65536 128 4 1 write "--iters 60000" -- \
	ib_write_bw -x 1 -n 15000 -q 4
row "ib_send_bw RC" 64 128 1 100 send "--iters 4000000" -- \
	ib_send_bw -x 1 -n 4000000
row "ib_send_bw RC" 65536 128 1 1 send "--iters 60000" -- \
	ib_send_bw -x 1 -n 60000
row "ib_read_bw RC" 64 128 1 100 read "--iters 2000000" -- \
	ib_read_bw -x 1 -n 2000000
row "ib_read_bw RC" 65536 128 1 1 read "--iters 60000" -- \
	ib_read_bw -x 1 -n 60000
row "ib_atomic_bw RC fetch&add" 8 128 1 100 fetch_add "--iters 2000000" -- \
	ib_atomic_bw -x 1 -n 2000000
# UD: droce-perf has no UD test. UD has no flow control: a receiver that
# falls behind loses messages and perftest then waits for them; keep the
# run short
VP_TIMEOUT=60 row "ib_send_bw UD" 64 128 1 100 - "" -- \
	ib_send_bw -x 1 -c UD -n 20000
row "ib_send_lat RC" 64 1 1 1 send "--lat --iters 20000" -- \
	ib_send_lat -x 1 -n 20000
row "ib_read_lat RC" 64 1 1 1 read "--lat --iters 20000" -- \
	ib_read_lat -x 1 -n 20000
row "ib_write_lat RC" 64 1 1 1 write "--lat --iters 20000" -- \
	ib_write_lat -x 1 -n 5000

# an idle application that blocks on a completion channel stays idle:
# in process (its progress thread) and attached (droced's, idle mode)
echo
"$top/test/verbs/idle-cpu.sh" "$run" 5
"$top/test/verbs/idle-cpu.sh" "$run" 5 --daemon "$build/app/droced"
