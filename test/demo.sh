#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job of ./droce.sh demo: Debian's unmodified perftest ib_write_bw
# between two droce processes on the default link (a DPDK net_memif pair),
# through droce's libibverbs.so.1 (droce-run), beside the raw rate of the
# same link measured as doc/perf.md measures it: droce-perf's raw
# baseline (frames of the size droce sends, after its warm-up), in rounds
# that alternate with ib_write_bw, medians of three. What each step
# prints goes to a log; the demo shows perftest's table and the figures,
# and a step's whole log only when it fails.
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
size=${DEMO_SIZE:-65536}
iters=${DEMO_ITERS:-20000}
rounds=${DEMO_ROUNDS:-3}
work=$(mktemp -d /tmp/droce-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

# step NAME LOG COMMAND...: run quietly; on failure show the log, stop
step() {
	local name=$1 log=$2; shift 2
	if ! "$@" > "$log" 2>&1; then
		echo "FAILED: $name; its output:" >&2
		cat "$log" >&2
		exit 1
	fi
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

cat <<EOF
droce demo: unmodified ib_write_bw (Debian's perftest) between two processes,
each on droce's libibverbs.so.1 with a DPDK net_memif port of its own, one RC
QP, ${size}-byte RDMA WRITEs; beside it the raw rate of the same net_memif
link (droce-perf's raw baseline), alternating, ${rounds} rounds.

EOF
printf '%-7s %22s %22s %22s\n' round "ib_write_bw (Gbit/s)" "droce-perf (Gbit/s)" "raw net_memif (Gbit/s)"
for r in $(seq 1 "$rounds"); do
	step "ib_write_bw over droce, round $r" "$work/bw$r.log" \
		"$top/test/verbs/verbs-pair.sh" "$build/app/droce-run" \
		--expect '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' -- \
		ib_write_bw -x 1 -s "$size" -n "$iters"
	# perftest's BW average [MB/s] (MB = 2^20 bytes), client side
	mbs=$(sed -n '/^----- client/,$p' "$work/bw$r.log" |
		awk -v s="$size" '$1 == s && NF >= 5 { print $4; exit }')
	step "droce-perf and the raw baseline, round $r" "$work/raw$r.log" \
		"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
		--op write --size "$size" --iters "$iters"
	# droce-perf's row: op bytes msgs msgs/s Gbit/s raw-fr/s raw-Gb/s ratio
	read -r perf raw < <(awk '$1 == "write" { print $5, $7; exit }' "$work/raw$r.log") || true
	if [ -z "$mbs" ] || [ -z "${raw:-}" ]; then
		echo "FAILED: round $r printed no figure; the outputs:" >&2
		cat "$work/bw$r.log" "$work/raw$r.log" >&2
		exit 1
	fi
	gb=$(awk -v m="$mbs" 'BEGIN { printf "%.2f", m * 8 * 1048576 / 1e9 }')
	printf '%-7s %22.2f %22.2f %22.2f\n' "$r" "$gb" "$perf" "$raw"
	echo "$gb" >> "$work/bw"; echo "$perf" >> "$work/perf"; echo "$raw" >> "$work/raw"
done
echo
echo "perftest's own table (round 1, client side):"
sed -n '/^----- client/,$p' "$work/bw1.log" |
	awk '/#bytes/ { show = 1 } show && /^-+$/ { print; exit } show { print }'
echo
bw=$(median < "$work/bw") perf=$(median < "$work/perf") raw=$(median < "$work/raw")
awk -v bw="$bw" -v perf="$perf" -v raw="$raw" 'BEGIN {
	printf "ib_write_bw over droce: %.2f Gbit/s; raw net_memif: %.2f Gbit/s (medians): %.0f%% of raw\n",
		bw, raw, 100 * bw / raw;
	printf "droce embedded (droce-perf, no verbs layer): %.2f Gbit/s, %.0f%% of raw\n",
		perf, 100 * perf / raw }'
if [ "$(nproc)" -lt 4 ]; then
	cat <<EOF
On this machine's $(nproc) CPUs, each ib_write_bw process runs its own thread
and droce's progress thread: four busy threads share them, where droce-perf
runs one per side (doc/perf.md).
EOF
fi
cat <<EOF

Next: ./droce.sh test (every test), build/app/droce-run --help (the keys),
doc/verbs.md (running programs), doc/daemon.md (droced), doc/perf.md (figures).
EOF
