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
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write,send,read,fetch_add,cmp_swap --size 64,4096,65536 \
	--iters 200000 --verify
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--lat --op write,send,read,fetch_add --size 64,4096,65536 \
	--iters 20000 --verify --no-raw
"$top/test/bench-verbs.sh" "$build"
