#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-incast.sh [BUILD] [OUT-DIR]: N:1 incast through droce-switch
# (test/fabric/fabric-lib.sh), N droce-perf senders WRITEing 64 KB
# messages to N receivers behind one link drained at RATE Mbit/s, once
# with DCQCN and once with --cc none, the switch's time series on. Writes
# OUT-DIR/incast-dcqcn.csv, incast-none.csv and incast.png (per-flow
# rate and queue depth over time, test/tools/plot-switch-series.py) and prints
# per run the switch's bottleneck counters, the flows' mean rates and
# fairness in the second half, and drops and marks in each half.
#
# Scaled for 2 CPUs (doc/switch.md, "Scaling"): the link 25 Gbit/s ->
# 100 Mbit/s (rates / 250), the round trip 10 us -> ~1 ms (times x 100:
# nine busy processes share two CPUs, so a frame waits for its receiver
# to be scheduled), queue thresholds in bytes x 0.4 (rate x time).
# BENCH_N (4), BENCH_RATE (100), BENCH_ITERS (200 per sender),
# BENCH_KMIN_KB / BENCH_KMAX_KB / BENCH_PMAX (10 / 50 / 0.2),
# BENCH_BUFFER_KB (200: below the senders' windows together, so that
# without congestion control the queue overflows), BENCH_RP="KEY=VALUE
# ..." (DROCE_RP_* for the hosts, the scaled defaults below),
# BENCH_CCS ("dcqcn none").
set -uo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
outdir=${2:-$top/$build/bench-incast}
mkdir -p "$outdir"
n=${BENCH_N:-4}
rate=${BENCH_RATE:-100}
iters=${BENCH_ITERS:-200}
kmin=${BENCH_KMIN_KB:-10} kmax=${BENCH_KMAX_KB:-50} pmax=${BENCH_PMAX:-0.2}
buffer=${BENCH_BUFFER_KB:-200}
# DCQCN with the paper's timing (doc/congestion.md: ConnectX's defaults
# let a many-to-one queue overflow), its times x 100, bytes x 0.4 and
# rates / 250 where the key's unit allows (Mbit/s are whole: AI at its
# smallest step, 1 for 0.16). ConnectX's defaults, scaled the same way:
# BENCH_RP="DROCE_RP_TIME_RESET=30000 DROCE_RP_RATE_REDUCE_MONITOR_PERIOD=400
# DROCE_RP_DCE_TCP_RTT=100 DROCE_NP_MIN_TIME_BETWEEN_CNPS=400
# DROCE_RP_AI_RATE=1 DROCE_RP_HAI_RATE=2"
rp=${BENCH_RP:-"DROCE_RP_DCE_TCP_RTT=5500 DROCE_RP_TIME_RESET=5500
DROCE_RP_BYTE_RESET=4000000 DROCE_RP_AI_RATE=1 DROCE_RP_CLAMP_TGT_RATE=1
DROCE_RP_RATE_REDUCE_MONITOR_PERIOD=400 DROCE_NP_MIN_TIME_BETWEEN_CNPS=400"}
. "$top/test/fabric/fabric-lib.sh"
trap fab_cleanup EXIT
# the hosts read them (droce-switch reads no DROCE_ key)
for kv in $rp; do export "${kv?}"; done

shared=$n
for ((i = n + 1; i < 2 * n; i++)); do shared+=",$i"; done
plots=()
for cc in ${BENCH_CCS:-dcqcn none}; do
	csv="$outdir/incast-$cc.csv"
	fab_start "$top/$build/app/droce-switch" "$n" --rate-mbps "$n:$rate" \
		--buffer-kb "$buffer" --kmin-kb "$kmin" --kmax-kb "$kmax" \
		--pmax "$pmax" --shared-link "$shared" --series "$csv" \
		--interval-us 1000 --quiet || exit 1
	# every sender starts from (and climbs back to) the bottleneck's
	# rate, as a host on a link of the bottleneck's speed
	fab_incast "$top/$build/app/droce-perf" "$n" --op write \
		--size 65536 --iters "$iters" --verify --no-raw --timeout 15 \
		--cc "$cc" --line-rate "$rate"
	rc=$?
	fab_stop
	echo "== $cc (incast $n:1, ${rate} Mbit/s, exit $rc)"
	grep "^queue $n:" "$fab_work/switch.log"
	for ((i = 0; i < n; i++)); do
		awk '$1 == "write" { print "sender '$i': " $5 " Gbit/s, " $NF }' \
			"$fab_work/client$i.log"
	done
	grep -h "congestion:" "$fab_work"/client*.log | head -"$n"
	plots+=("$csv=$cc")
done
/usr/bin/python3 "$top/test/tools/plot-switch-series.py" "$outdir/incast.png" \
	"$n" "$kmin" "$kmax" "${plots[@]}"
echo "series and plot in $outdir"
