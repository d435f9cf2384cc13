#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ./droce.sh bench: the benchmarks (figures, never pass/fail).
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
"$build/app/droce-wire-bench"
echo
"$build/app/droce-tp-bench"
echo
# instructions per message, and by phase and side (callgrind: figures the
# machine's noise does not move; doc/perf.md)
if command -v valgrind >/dev/null; then
	"$top/test/bench-instructions.sh" "$build/app/droce-tp-bench" 64 1
	"$top/test/bench-phases.sh" "$build/app/droce-tp-bench"
	echo
	# the same for unmodified perftest over the drop-in, client side
	"$top/test/bench-verbs-instructions.sh" "$build/app/droce-run"
	echo
fi
# what loss costs, in virtual time at 25 and 100 Gbit/s (doc/perf-loss.md):
# go-back-N, then selective repeat
"$build/test/transport/droce-loss-bench"
echo
"$build/test/transport/droce-loss-bench" --sr 1
echo
# incast through a simulated switch, in virtual time: DCQCN, the
# delay-based mode and no congestion control (doc/perf-loss.md),
# then 4:1 on real ports through droce-switch, scaled for 2 CPUs
"$top/test/bench-incast-sim.sh" "$build"
echo
"$top/test/bench-incast.sh" "$build"
echo
# every droce figure beside the raw rate of the same PMD, three runs each
# (this kind of machine moves by tens of percent from run to run): the
# median ratio and the range; doc/perf.md's tables come from these lines
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write,send,read,fetch_add,cmp_swap --size 64,4096 \
	--iters 2000000 --repeat 3 --verify
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write,send,read --size 65536 --iters 200000 --repeat 3 --verify
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--lat --op write,send,read,fetch_add --size 64,4096,65536 \
	--iters 20000 --repeat 3 --verify
# the same loss rates over net_memif (doc/perf-loss.md)
"$top/test/bench-loss.sh" "$build"
BENCH_SR=1 "$top/test/bench-loss.sh" "$build"
"$top/test/bench-verbs.sh" "$build"
"$top/test/bench-ucx.sh" "$build"
# programs that wait on completion channels against the same polling,
# in process and attached (doc/perf-apps.md, "Completion channels")
"$top/test/bench-events.sh" "$build"
