#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# perf-args.sh DROCE-PERF: droce-perf refuses bad options with a message
# that names them, before it opens a port (no DPDK, no peer needed).
set -uo pipefail
perf=$1
fails=0

# expect_refused "what the message must say" ARGS...
expect_refused() {
	local want=$1 out rc
	shift
	out=$("$perf" --client --vdev net_null0 --ip 10.0.0.2 \
		--peer-ip 10.0.0.1 "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] || ! grep -q -- "$want" <<<"$out"; then
		echo "FAIL: droce-perf $*: exit $rc, wanted a refusal saying '$want':"
		echo "$out" | tail -3
		fails=$((fails + 1))
	else
		echo "ok: droce-perf $*: $(grep -m1 -- "$want" <<<"$out")"
	fi
}

# the QP's local ACK timeout is a 5-bit exponent: 60 used to pass here and
# fail as 'modify QP: -22' on both sides after they had connected
expect_refused "--timeout 60: the local ACK timeout is an exponent, 0 to 31" \
	--timeout 60
expect_refused "--timeout -1" --timeout -1
expect_refused "--lat runs on one core" --lat --queues 2 --cores 2
# a UD message is one packet: at most the path MTU the Ethernet MTU gives
expect_refused "--size 1025: a UD message is one packet, at most the path MTU (1024 bytes, at --mtu 1500)" \
	--op write,ud_send --size 64,1025
expect_refused "--size 4097: a UD message is one packet, at most the path MTU (4096 bytes, at --mtu 9000)" \
	--op ud_send --size 4097 --mtu 9000
expect_refused "ud_send completes when its frame leaves" --op ud_send --lat
# whole names: "send" is no longer found inside "ud_send" or "sned"
expect_refused "--op send,sned: no op named sned" --op send,sned
[ "$fails" -eq 0 ]
