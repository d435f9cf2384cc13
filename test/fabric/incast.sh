#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# incast.sh SWITCH PERF MODE: N:1 incast through droce-switch (N = 4,
# INCAST_N), every sender a droce-perf process WRITEing to its own
# receiver behind the one bottleneck link (fabric-lib.sh), with --verify:
# every byte and every completion checked. The link drains at 100 Mbit/s,
# far below what four senders send here, so its queue builds.
#   ecn       RED ECN marking (Kmin 10 KB, Kmax 60 KB, Pmax 0.2), droce's
#             default congestion control: the queue marked frames, the
#             receivers sent CNPs and the senders' reaction point took them
#   ecn-ipv6  the same over IPv6 (the switch marks the traffic class)
#   ecn-nocc  the same switch, --cc none on the hosts (DROCE_CC=none): marks and CNPs,
#             and no sender acted on one
#   taildrop  --no-ecn and a 32 KB buffer: the queue dropped frames and
#             the senders recovered every byte
# Pass or fail on counts only, never on a time or a rate.
set -uo pipefail
sw=$1 perf=$2 mode=$3
here=$(dirname "$0")
. "$here/fabric-lib.sh"
trap fab_cleanup EXIT

n=${INCAST_N:-4}
cc=()
iters=100 size=65536
case $mode in
ecn|ecn-nocc|ecn-ipv6)
	swargs=(--rate-mbps "$n:100" --buffer-kb 512 --kmin-kb 10
		--kmax-kb 60 --pmax 0.2)
	# the hosts' congestion control: droce-perf's --cc (DROCE_CC is
	# the key for other programs; droce-perf's option sets the port)
	[ "$mode" = ecn-nocc ] && cc=(--cc none)
	[ "$mode" = ecn-ipv6 ] && export FAB_IPV6=1
	;;
taildrop)
	swargs=(--rate-mbps "$n:100" --no-ecn --buffer-kb 32)
	;;
*)
	echo "unknown mode $mode"; exit 2 ;;
esac
shared=$n
for ((i = n + 1; i < 2 * n; i++)); do shared+=",$i"; done

fab_start "$sw" "$n" "${swargs[@]}" --shared-link "$shared" || exit 1
# generous ACK timeout (15: 134 ms): nine busy processes share 2 CPUs
fab_incast "$perf" "$n" --op write --size $size --iters $iters --verify \
	--no-raw --timeout 15 "${cc[@]}"
rc=$?
fab_stop || { echo "droce-switch exited non-zero"; rc=1; }
log=$fab_work/switch.log
grep -v -e '^EAL' -e '^TELEMETRY' "$log"
for ((i = 0; i < n; i++)); do
	grep -q "verified" "$fab_work/client$i.log" ||
		{ echo "FAIL: sender $i did not verify its WRITEs"; rc=1; }
	grep -h -e "congestion:" "$fab_work/client$i.log" \
		"$fab_work/server$i.log"
done

# the bottleneck's queue: the one line for the shared link
q="^queue $n:"
depth=$(fab_sum "$q" max_depth_bytes "$log")
marked=$(fab_sum "$q" marked "$log")
tdrop=$(fab_sum "$q" tail_drops "$log")
# droce-perf's congestion lines (absent where no frame met congestion)
cnps=$(fab_sum "congestion:" cnp-sent "$fab_work"/server*.log)
ecnrx=$(fab_sum "congestion:" ecn-marked "$fab_work"/server*.log)
handled=$(fab_sum "congestion:" cnp-handled "$fab_work"/client*.log)
ignored=$(fab_sum "congestion:" cnp-ignored "$fab_work"/client*.log)
echo "bottleneck: max depth $depth bytes, marked $marked, tail drops $tdrop;" \
	"receivers: CE frames $ecnrx, CNPs sent $cnps;" \
	"senders: CNPs acted on $handled, ignored $ignored"
check() {
	if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1 ($2)"; rc=1; fi
}
# every sender's bytes crossed the bottleneck: its flow's line
for ((i = 0; i < n; i++)); do
	if [ "${FAB_IPV6:-0}" = 1 ]; then
		b=$(fab_sum "^flow fd00:198:1::$((i + 1))>fd00:198:2::$((i + 1)):" \
			tx_bytes "$log")
	else
		b=$(fab_sum "^flow 10\.198\.1\.$((i + 1))>10\.198\.2\.$((i + 1)):" \
			tx_bytes "$log")
	fi
	check "flow of sender $i through the bottleneck ($b bytes)" \
		"[ $b -ge $((iters * size)) ]"
done
case $mode in
ecn|ecn-nocc|ecn-ipv6)
	check "the queue built past Kmin" "[ $depth -gt 10240 ]"
	check "ECT frames marked CE" "[ $marked -gt 0 ]"
	check "receivers saw CE frames" "[ $ecnrx -gt 0 ]"
	check "receivers sent CNPs" "[ $cnps -gt 0 ]"
	if [ "$mode" != ecn-nocc ]; then
		check "senders cut their rate on CNPs" "[ $handled -gt 0 ]"
	else
		check "CNPs reached the senders" "[ $ignored -gt 0 ]"
		check "no sender acted on a CNP" "[ $handled -eq 0 ]"
	fi
	;;
taildrop)
	check "the full buffer dropped frames" "[ $tdrop -gt 0 ]"
	check "no frame marked" "[ $marked -eq 0 ]"
	;;
esac
exit $rc
