#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job of ./droce.sh demo:
#  1. lib/wire decodes and verifies every RoCEv2 frame of real rxe captures;
#  2. two droce processes on the default link (a DPDK net_memif pair) run
#     droce-perf: RDMA WRITE, SEND, READ and atomics, every byte verified,
#     each figure beside the raw rate of the same PMD in the same run.
# (An unmodified perftest comes with the libibverbs drop-in: see doc/.)
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
echo "== 1. real rxe traffic through droce's wire library"
"$build/app/droce-pcap" --verify "$top"/test/data/*.pcap | grep -E 'RoCEv2|droce-pcap'
echo
echo "== 2. droce-perf between two processes over net_memif"
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write,send,read,fetch_add --size 64,4096,65536 --iters 200000 \
	--verify
