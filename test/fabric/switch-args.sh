#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# switch-args.sh DROCE-SWITCH: droce-switch refuses a malformed option
# with a message that names it, and stops before forwarding (its EAL on
# two net_null ports, no hugepages; nothing is started that outlives it).
set -uo pipefail
sw=$1
fails=0
prefix="fbargs$$"
trap 'rm -rf /var/run/dpdk/$prefix' EXIT

# expect_refused "what the message must say" ARGS...
expect_refused() {
	local want=$1 out rc
	shift
	out=$(timeout 60 "$sw" --no-pci --no-huge -m 64 -l 0 \
		--file-prefix "$prefix" --log-level=lib.eal:4 \
		--vdev net_null0 --vdev net_null1 -- "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] || ! grep -q -- "$want" <<<"$out" ||
			grep -q "forwarding" <<<"$out"; then
		echo "FAIL: droce-switch $*: exit $rc, wanted a refusal saying '$want':"
		echo "$out" | tail -3
		fails=$((fails + 1))
	else
		echo "ok: droce-switch $*: $(grep -m1 -- "$want" <<<"$out")"
	fi
}

expect_refused "--pmax 1.5: want a number from 0 to 1" --pmax 1.5
expect_refused "--rate-mbps fast: want a number" --rate-mbps fast
expect_refused "--rate-mbps 2:100: no port 2 (2 ports)" --rate-mbps 2:100
expect_refused "--buffer-kb 0: want a number from 1" --buffer-kb 0
expect_refused "--burst-kb 4: want a number from 10" --burst-kb 4
expect_refused "--ecn 2: want" --ecn 2
expect_refused "port 1: --kmin-kb 50 not below --kmax-kb 20" \
	--kmin-kb 1:50 --kmax-kb 1:20
expect_refused "--shared-link 0: want two ports or more" --shared-link 0
expect_refused "--shared-link 0,0: want distinct ports" --shared-link 0,0
expect_refused "--interval-us 1: want a number from 10" --interval-us 1
expect_refused "unexpected argument extra" extra
# getopt_long would take it for --rate-mbps
expect_refused "unknown option --rate" --rate 100
expect_refused "unknown option --bogus" --bogus
# ... and the same switch with good options runs and stops at its
# --duration, with its report
out=$(timeout 60 "$sw" --no-pci --no-huge -m 64 -l 0 --file-prefix "$prefix" \
	--log-level=lib.eal:4 --vdev net_null0 --vdev net_null1 -- \
	--rate-mbps 1:100 --kmin-kb 5 --kmax-kb 20 --pmax 0.01 \
	--shared-link 0,1 --duration 0.2 2>&1)
if [ $? -eq 0 ] && grep -q "^queue 0: ports 0,1 rate_mbps 0 " <<<"$out"; then
	echo "ok: good options accepted, one queue for the shared link"
else
	echo "FAIL: good options:"; echo "$out" | tail -5
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
