#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job of ./droce.sh demo: Debian's unmodified perftest ib_write_bw
# between two droce processes on the default link (a DPDK net_memif pair),
# through droce's libibverbs.so.1 (droce-run), printing perftest's own
# table; then the raw rate of the same PMD on the same machine, measured
# by droce-perf, and the ratio of the two.
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
size=${DEMO_SIZE:-65536}
iters=${DEMO_ITERS:-20000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

echo "== 1. unmodified ib_write_bw over droce: two processes, net_memif, RC, ${size} B"
"$top/test/verbs/verbs-pair.sh" "$build/app/droce-run" \
	--expect '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' -- \
	ib_write_bw -x 1 -s "$size" -n "$iters" | tee "$out" |
	sed -n '/^----- client/,$p' | grep -v '^ *\(TELEMETRY\|rte_pmd_memif\|EAL\)'
# BW average [MB/s] of perftest's row (client side)
mbs=$(sed -n '/^----- client/,$p' "$out" |
	awk -v s="$size" '$1 == s && NF >= 5 { print $4; exit }')
echo
echo "== 2. the raw rate of the same PMD (droce-perf --raw), same machine, same run"
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write --size "$size" --iters "$iters" | tee "$out" |
	grep -E '^ (op|write)|^---'
raw=$(awk '$1 == "write" { print $7; exit }' "$out")
echo
if [ -n "$mbs" ] && [ -n "$raw" ]; then
	awk -v mbs="$mbs" -v raw="$raw" 'BEGIN {
		gb = mbs * 8 * 1048576 / 1e9;
		printf "ib_write_bw over droce: %.2f Gbit/s; raw net_memif: %.2f Gbit/s; ratio %.1f%%\n",
			gb, raw, 100 * gb / raw }'
fi
