#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-incast-sim.sh [BUILD] [PLOTDIR]: N:1 incast in virtual time
# (droce-incast-sim: N droce transports and a switch, test/transport/
# fabric.c), 8:1 and 64:1 at 25 and 100 Gbit/s, 100 ms each, measured
# after the first 10 ms:
#   - no congestion control, through a switch that marks ECN;
#   - DCQCN with ConnectX's parameters (droce's defaults);
#   - DCQCN with the DCQCN paper's timing (alpha and rate increase every
#     55 us, increases by timer only, the target following every cut,
#     an additive step of 10 Mbit/s per 25 Gbit/s);
#   - the delay-based mode through a switch that marks nothing, and no
#     congestion control through the same switch.
# With PLOTDIR, per-flow rate and queue depth over time for the 64:1 and
# 8:1 cases at 100 Gbit/s (PNG, test/tools/plot-incast.py; doc/perf-loss.md's
# come from here).
set -uo pipefail
build=${1:-build}
plots=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
sim="$build/test/transport/droce-incast-sim"
# the paper's timing; the additive step 10 Mbit/s per 25 Gbit/s of link
paper=rp_clamp_tgt_rate=1,rp_dce_tcp_rtt=55,rp_time_reset=55
paper=$paper,rp_byte_reset=10000000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the hosts' retransmission floor (DROCE_RTO_MIN_US) set for a fabric of
# 4 us round trips: at the default 1 ms, flows that lost their first
# window in the incast's first burst wait it out, doubling, and come
# back into the queue long after the others settled
common=(--senders 8,64 --gbps 25,100 --run-ms 100 --warm-ms 10
	--rto-min-us 200 --pmax 0.2)

echo "== no congestion control (the switch marks; nobody listens)"
"$sim" "${common[@]}" --cc none
echo "== DCQCN, ConnectX's parameters"
"$sim" "${common[@]}" --cc dcqcn --series "$work/cx"
echo "== DCQCN, the paper's timing: --rp $paper,rp_ai_rate=10 (25G), 40 (100G)"
for g in 25 100; do
	"$sim" "${common[@]}" --gbps $g --cc dcqcn \
		--rp "$paper,rp_ai_rate=$((g * 10 / 25))" --series "$work/paper" |
		{ [ $g = 25 ] && cat || tail -n +2; }
done
echo "== delay-based (zero-touch), the switch marks nothing"
"$sim" "${common[@]}" --cc delay --mark none --series "$work/delay"
echo "== no congestion control, the switch marks nothing"
"$sim" "${common[@]}" --cc none --mark none --series "$work/none"

[ -n "$plots" ] || exit 0
py=/usr/bin/python3
plot="$top/test/tools/plot-incast.py"
mkdir -p "$plots"
"$py" "$plot" "$work/paper-64-100-dcqcn.csv" "$plots/incast-dcqcn-64.png" \
	"64:1 incast, 100 Gbit/s, DCQCN (paper's timing), Kmin 30 KB, Kmax 120 KB, Pmax 20%" \
	--smooth 500
"$py" "$plot" "$work/cx-64-100-dcqcn.csv" "$plots/incast-dcqcn-cx-64.png" \
	"64:1 incast, 100 Gbit/s, DCQCN (ConnectX's parameters)" --smooth 500
"$py" "$plot" "$work/delay-8-100-delay.csv" "$plots/incast-delay-8.png" \
	"8:1 incast, 100 Gbit/s, delay-based, tail drop only" --smooth 500
"$py" "$plot" "$work/none-64-100-none.csv" "$plots/incast-none-64.png" \
	"64:1 incast, 100 Gbit/s, no congestion control, tail drop only" \
	--smooth 500
ls -l "$plots"/incast-*.png
