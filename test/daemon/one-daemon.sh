#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# one-daemon.sh DROCED DEVARGS CMD ARGS...: one droced on DEVARGS (net_ring0:
# a port that loops back to itself) at 10.9.9.1, CMD run with @D@ replaced
# by its socket and @T@ by its DPDK telemetry socket. Passes when CMD exits 0 and the daemon was alive to the
# end and stopped cleanly.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
droced=$1 devargs=$2
shift 2
w=$(mktemp -d /tmp/droced-one.XXXXXX)
tag=$(basename "$w" | tr -dc 'a-zA-Z0-9')
d=
cleanup() {
	kill_all $d
	rm -rf "$w" /var/run/dpdk/dd1$tag
}
trap cleanup EXIT
# its EAL loads Debian's mlx5 PMD, which links the system's libibverbs
env -u LD_LIBRARY_PATH "$droced" "DROCE_DEVARGS=$devargs" DROCE_IPV4=10.9.9.1 "DROCE_DAEMON=$w/d.sock" \
	DROCE_POLL=idle "DROCE_EAL=--file-prefix dd1$tag" > "$w/droced.log" 2>&1 &
d=$!
for _ in $(seq 300); do [ -S "$w/d.sock" ] && break; sleep 0.1; done
args=()
for a in "$@"; do
	a=${a//@D@/$w/d.sock}
	args+=("${a//@T@//var/run/dpdk/dd1$tag/dpdk_telemetry.v2}")
done
timeout -k 5 120 "${args[@]}" > "$w/cmd.log" 2>&1
crc=$?
fail=0
kill -0 $d 2>/dev/null || { echo "FAIL: droced died"; fail=1; }
kill -TERM $d
wait $d; drc=$?
d=
echo "----- droced (exit $drc)"; cat "$w/droced.log"
echo "----- command (exit $crc)"; cat "$w/cmd.log"
[ $crc -eq 0 ] || { echo "FAIL: command exited $crc"; fail=1; }
[ $drc -eq 0 ] || { echo "FAIL: droced exited $drc"; fail=1; }
exit $fail
