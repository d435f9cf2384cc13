#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test-rxe-guest.sh - self-test of rxe-guest.sh: boots a Linux rxe guest on a
# tap of its own, checks rxe0, runs commands in the foreground and in the
# background (an ibv_rc_pingpong server listening on 18515), reaches the
# guest from the host, stops it, and checks that nothing is left behind:
# also when the test shell fails (traps) or is SIGKILLed (watchdog).
# Prints PASS/FAIL lines; exit 0 when all pass, 1 otherwise, 77 to skip.
# Several copies may run at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=rxe-guest.sh
. "$here/rxe-guest.sh"

fails=0
pass() { echo "PASS: $*"; }
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

rxe_guest_available || exit 77
work=$(mktemp -d /tmp/test-rxe-guest.XXXXXX)
trap 'rm -rf "$work"' EXIT	# the library chains its own cleanup to it

# leftovers: any process whose command line names the tap, the tap itself
gone() {	# gone TAP: 0 when no qemu on TAP and no TAP
	local tap=$1 i
	for i in $(seq 1 100); do
		if ! pgrep -f "ifname=$tap," > /dev/null 2>&1 &&
			! ip link show "$tap" > /dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	pgrep -af "ifname=$tap," || true
	ip link show "$tap" 2> /dev/null || true
	return 1
}

rxe_guest_pick_net rxg
tap=$RXE_NET_TAP
gip=${RXE_NET_GUEST_IP%/*}
echo "tap $tap, host $RXE_NET_HOST_IP, guest $RXE_NET_GUEST_IP"
if rxe_guest_start t "$tap" "$RXE_NET_HOST_IP" "$RXE_NET_GUEST_IP"; then
	pass "guest boots and answers (${RXE_GUEST_BOOT_MS} ms)"
else
	fail "guest does not boot"
	exit 1
fi
gdir=$(rxe_guest_dir t)

if out=$(rxe_guest_exec t 'ibv_devinfo -d rxe0') &&
	grep -q 'state:.*PORT_ACTIVE' <<< "$out"; then
	pass "ibv_devinfo: rxe0 PORT_ACTIVE"
else
	echo "$out"
	fail "ibv_devinfo: rxe0 not PORT_ACTIVE"
fi

rc=0
# shellcheck disable=SC2016 # expanded in the guest
out=$(rxe_guest_exec t 'cd /; echo "out $(pwd)"; echo err >&2; exit 7') || rc=$?
if [ "$rc" -eq 7 ] && grep -qx 'out /' <<< "$out" && grep -qx err <<< "$out"; then
	pass "rxe_guest_exec: output and exit status"
else
	echo "$out"
	fail "rxe_guest_exec: status $rc, output above"
fi

# two callers at once on one guest: serialised, each gets its own output
rxe_guest_exec t 'sleep 2; echo first' > "$work/first" 2>&1 &
cpid=$!
out=$(rxe_guest_exec t 'echo second') || true
rc=0
wait "$cpid" || rc=$?
if [ "$rc" -eq 0 ] && [ "$(cat "$work/first")" = first ] && [ "$out" = second ]; then
	pass "rxe_guest_exec: concurrent calls on one guest"
else
	fail "rxe_guest_exec: concurrent calls: '$(cat "$work/first")' / '$out' ($rc)"
fi

t0=$(date +%s%N)
if rxe_guest_bg t 'ibv_rc_pingpong -d rxe0 -g 1 -n 5' "$work/server.log"; then
	pass "rxe_guest_bg: server started ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
else
	fail "rxe_guest_bg: server not started"
fi
listening=0
for _ in $(seq 1 30); do
	out=$(rxe_guest_exec t 'ss -ltn 2> /dev/null || netstat -ltn') || true
	if grep -q '[:.]18515 ' <<< "$out"; then
		listening=1
		break
	fi
	sleep 0.5
done
if [ $listening = 1 ]; then
	pass "the guest's ibv_rc_pingpong server listens on 18515"
else
	rxe_guest_bg_log t "$work/server.log" || true
	cat "$work/server.log"
	fail "nothing listens on 18515 in the guest"
fi

if ping -c1 -W5 "$gip" > "$work/ping.log" 2>&1 ||
	ping -c1 -W5 "$gip" > "$work/ping.log" 2>&1; then
	pass "host pings the guest at $gip over $tap"
else
	cat "$work/ping.log"
	fail "host cannot ping the guest at $gip"
fi
out=$(rxe_guest_exec t "ip neigh show") || true
if grep -q "^${RXE_NET_HOST_IP%/*} .*lladdr" <<< "$out"; then
	pass "the guest learned the host's MAC"
else
	fail "the guest has no neighbour entry for the host"
fi

rc=0
rxe_guest_bg t 'echo hello; sleep 1; exit 3' "$work/short.log" || rc=$?
[ "$rc" -eq 0 ] && { rxe_guest_wait_bg t "$work/short.log" 30 || rc=$?; }
if [ "$rc" -eq 3 ] && grep -qx hello "$work/short.log"; then
	pass "rxe_guest_wait_bg: output and exit status of a background job"
else
	cat "$work/short.log"
	fail "rxe_guest_wait_bg: status $rc"
fi

# the server still waits for a client: waiting times out, it keeps running
rc=0
rxe_guest_wait_bg t "$work/server.log" 2 || rc=$?
out=$(rxe_guest_exec t 'netstat -ltn') || true
if [ "$rc" -eq 124 ] && grep -q '[:.]18515 ' <<< "$out"; then
	pass "rxe_guest_wait_bg: timeout on a running job, which keeps running"
else
	cat "$work/server.log"
	echo "$out"
	fail "rxe_guest_wait_bg on a running job: status $rc"
fi

rc=0
t0=$(date +%s)
rxe_guest_exec t 'sleep 60' 3 > /dev/null || rc=$?
if [ "$rc" -eq 124 ] && [ $(( $(date +%s) - t0 )) -lt 15 ] &&
	[ "$(rxe_guest_exec t 'echo alive' 20)" = alive ]; then
	pass "rxe_guest_exec: timeout, and the guest's shell answers afterwards"
else
	fail "rxe_guest_exec timeout: status $rc"
fi

rxe_guest_stop t
if gone "$tap" && [ ! -e "$gdir" ]; then
	pass "rxe_guest_stop: no qemu, no $tap, no $gdir left"
else
	fail "rxe_guest_stop left something behind"
fi
rc=0
rxe_guest_exec t true 5 > /dev/null 2>&1 || rc=$?
if [ "$rc" -eq 125 ]; then
	pass "rxe_guest_exec on a stopped guest: 125"
else
	fail "rxe_guest_exec on a stopped guest: $rc"
fi

# a test that fails after starting a guest: its EXIT trap stops the guest
bash -c '
	set -euo pipefail
	. "$1/rxe-guest.sh"
	rxe_guest_pick_net
	echo "$RXE_NET_TAP" > "$2/tap-fail"
	rxe_guest_start f "$RXE_NET_TAP" "$RXE_NET_HOST_IP" "$RXE_NET_GUEST_IP"
	rxe_guest_exec f "exit 1"	# set -e: the test dies here
	echo "not reached"
' child "$here" "$work" > "$work/fail.log" 2>&1 && rc=0 || rc=$?
ftap=$(cat "$work/tap-fail" 2> /dev/null || echo none)
if [ "$rc" -eq 1 ] && ! grep -q 'not reached' "$work/fail.log" && gone "$ftap"; then
	pass "a failing test leaves no qemu and no $ftap behind (trap)"
else
	cat "$work/fail.log"
	fail "after a failing test (status $rc)"
fi

# a test that is SIGKILLed (no traps run): the watchdog stops the guest
bash -c '
	set -euo pipefail
	. "$1/rxe-guest.sh"
	rxe_guest_pick_net
	echo "$RXE_NET_TAP" > "$2/tap-kill"
	rxe_guest_start k "$RXE_NET_TAP" "$RXE_NET_HOST_IP" "$RXE_NET_GUEST_IP"
	rxe_guest_dir k > "$2/dir-kill"
	echo up > "$2/up-kill"
	exec sleep 300	# this pid, traps gone
' child "$here" "$work" > "$work/kill.log" 2>&1 &
kpid=$!
for _ in $(seq 1 600); do
	[ -e "$work/up-kill" ] && break
	kill -0 "$kpid" 2> /dev/null || break
	sleep 0.5
done
ktap=$(cat "$work/tap-kill" 2> /dev/null || echo none)
kill -KILL "$kpid" 2> /dev/null || true
wait "$kpid" 2> /dev/null || true
kdir=$(cat "$work/dir-kill" 2> /dev/null || echo /nonexistent)
for _ in $(seq 1 50); do
	[ -e "$kdir" ] || break
	sleep 0.1
done
if [ -e "$work/up-kill" ] && gone "$ktap" && [ ! -e "$kdir" ]; then
	pass "a SIGKILLed test leaves no qemu, no $ktap, no $kdir behind (watchdog)"
else
	cat "$work/kill.log"
	fail "after a SIGKILLed test"
fi

if [ "$fails" -eq 0 ]; then
	echo "PASS: test-rxe-guest"
	exit 0
fi
echo "FAIL: test-rxe-guest ($fails failed)"
exit 1
