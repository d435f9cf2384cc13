#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Unmodified perftest over droce's libibverbs.so.1 (two processes,
# net_memif), each figure beside the raw net_memif frame rate measured by
# droce-perf in the same run. Figures, never pass/fail.
set -uo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
pair="$top/test/verbs/verbs-pair.sh"
run="$build/app/droce-run"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
export VP_TIMEOUT=${VP_TIMEOUT:-120}

# raw PMD: frames/s and Gbit/s at 64 B and 4 KB messages' frame sizes
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write --size 64,4096,65536 --iters 100000 > "$tmp" 2>&1
declare -A rawfr rawgb
while read -r op size _ _ _ fr gb _; do
	[ "$op" = write ] || continue
	rawfr[$size]=$fr
	rawgb[$size]=$gb
done < "$tmp"

printf '%-34s %10s %12s %10s %12s %10s %8s\n' test bytes "MB/s|usec" Mmsg/s "raw Mfr/s" "raw Gb/s" ratio
bw() {	# bw NAME SIZE ARGS...
	local name=$1 size=$2; shift 2
	"$pair" "$run" -- "$@" -s "$size" > "$tmp" 2>&1 || { echo "$name: failed"; return; }
	sed -n '/^----- client/,$p' "$tmp" | awk -v n="$name" -v s="$size" \
		-v rf="${rawfr[$size]:-${rawfr[64]}}" -v rg="${rawgb[$size]:-${rawgb[64]}}" '
		$1 == s && NF >= 5 {
			gb = $4 * 8 * 1048576 / 1e9;
			# bandwidth against raw Gbit/s, message rate against raw frames
			r = (s >= 1024) ? 100 * gb / rg : 100 * $5 * 1e6 / rf;
			printf "%-34s %10s %12.1f %10.3f %12.3f %10.2f %7.1f%%\n",
				n, s, $4, $5, rf / 1e6, rg, r; exit }'
}
lat() {	# lat NAME SIZE ARGS...
	local name=$1 size=$2; shift 2
	"$pair" "$run" -- "$@" -s "$size" > "$tmp" 2>&1 || { echo "$name: failed"; return; }
	sed -n '/^----- client/,$p' "$tmp" | awk -v n="$name (typ/avg/p99)" -v s="$size" '
		$1 == s && NF >= 7 { printf "%-34s %10s %5.2f/%5.2f/%6.2f\n", n, s, $5, $6, $8; exit }'
}
bw "ib_write_bw RC" 64 ib_write_bw -x 1 -n 500000
bw "ib_write_bw RC" 4096 ib_write_bw -x 1 -n 100000
bw "ib_write_bw RC" 65536 ib_write_bw -x 1 -n 20000
bw "ib_write_bw RC -q 4" 65536 ib_write_bw -x 1 -n 10000 -q 4
bw "ib_send_bw RC" 64 ib_send_bw -x 1 -n 500000
bw "ib_send_bw RC" 65536 ib_send_bw -x 1 -n 20000
bw "ib_read_bw RC" 64 ib_read_bw -x 1 -n 200000
bw "ib_read_bw RC" 65536 ib_read_bw -x 1 -n 20000
bw "ib_atomic_bw RC (fetch&add)" 8 ib_atomic_bw -x 1 -n 200000
# UD has no flow control: a receiver that falls behind loses messages and
# perftest then waits for them; keep the run short
VP_TIMEOUT=60 bw "ib_send_bw UD" 64 ib_send_bw -x 1 -c UD -n 20000
lat "ib_send_lat RC" 64 ib_send_lat -x 1 -n 10000
lat "ib_read_lat RC" 64 ib_read_lat -x 1 -n 10000
lat "ib_write_lat RC" 64 ib_write_lat -x 1 -n 2000
