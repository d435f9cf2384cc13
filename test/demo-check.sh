#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# demo-check.sh BUILD: ./droce.sh demo's main job, one short round: it
# prints its figures (ib_write_bw, droce-perf and the raw rate, the
# ratio) and none of the DPDK, memif or droce start-up lines a normal run
# makes (they belong in a failing step's log, which it then prints).
set -uo pipefail
build=$1
command -v ib_write_bw >/dev/null || { echo "no ib_write_bw: skip"; exit 77; }
# droce-perf runs on the shared EAL, whose mlx5 plugin needs the system's
# libibverbs, not the drop-in meson puts on the path
out=$(env -u LD_LIBRARY_PATH DEMO_ROUNDS=1 DEMO_ITERS=2000 "$(dirname "$0")/demo.sh" "$build" 2>&1)
rc=$?
echo "$out"
fail=0
[ $rc -eq 0 ] || { echo "FAIL: demo.sh exited $rc"; fail=1; }
echo "$out" | grep -Eq '^ib_write_bw over droce: [0-9.]+ Gbit/s; raw net_memif: [0-9.]+ Gbit/s \(medians\): [0-9]+% of raw$' ||
	{ echo "FAIL: no result line"; fail=1; }
echo "$out" | grep -Eq '^ *65536 +2000 ' || { echo "FAIL: no perftest row"; fail=1; }
noise=$(echo "$out" | grep -E 'TELEMETRY|rte_pmd_memif|^EAL|memif_|^droce: port|mp action') &&
	{ echo "FAIL: start-up noise in the output:"; echo "$noise"; fail=1; }
exit $fail
