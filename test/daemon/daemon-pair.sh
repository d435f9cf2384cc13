#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# daemon-pair.sh DROCED [--env K=V]... [--expect REGEX]... [--a-dies] CMD ARGS...
#
# Starts two droced joined by a link (test/common/daemon-lib.sh), runs CMD
# with @A@ and @B@ replaced by their sockets (@RUN@ by the directory, where
# a.pid and b.pid hold their process ids; the telemetry sockets are
# @TELE_A@ and @TELE_B@),
# then stops them. Passes when CMD exits 0, its output matches every
# --expect, and both daemons were alive to the end and stopped cleanly
# (B only with --a-dies: the command kills A).
# Everything is torn down on the way out.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
. "$here/../common/daemon-lib.sh"

droced=$1
shift
expects=()
extra=()
a_dies=
while [ $# -gt 0 ]; do
	case $1 in
	--env) extra+=("$2"); shift 2 ;;
	--expect) expects+=("$2"); shift 2 ;;
	--a-dies) a_dies=1; shift ;;
	*) break ;;
	esac
done

work=$(mktemp -d /tmp/droced-test.XXXXXX)
dpid_a=
dpid_b=
cleanup() {
	kill_all $dpid_a $dpid_b
	rm -rf "$work"
}
trap cleanup EXIT

daemons_start "$droced" "$work" "${extra[@]}"
args=()
for a in "$@"; do
	a=${a//@A@/$work/a.sock}
	a=${a//@B@/$work/b.sock}
	a=${a//@RUN@/$work}
	a=${a//@TELE_A@/$tele_a}
	a=${a//@TELE_B@/$tele_b}
	args+=("$a")
done
echo "run: ${args[*]}"
timeout -k 5 "${DAEMON_TEST_TIMEOUT:-150}" "${args[@]}" > "$work/cmd.log" 2>&1
crc=$?
fail=0
daemons_stop "$work" $a_dies || fail=1
echo "----- command (exit $crc)"; cat "$work/cmd.log"
[ $crc -eq 0 ] || { echo "FAIL: command exited $crc"; fail=1; }
if [ ${#expects[@]} -gt 0 ]; then
	expect_all "$work/cmd.log" command "${expects[@]}" || fail=1
fi
exit $fail
