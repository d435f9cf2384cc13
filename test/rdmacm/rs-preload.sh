#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rs-preload.sh DROCE-RUN nc|iperf3 [--daemons DROCED]
#
# Unmodified TCP programs over droce's rsockets: Debian's librspreload
# (librdmacm1) turns their sockets into rsockets of droce's librdmacm,
# two droce processes (or two droced, --daemons) joined by net_memif as
# in cm-pair.sh.
#   nc:     netcat-openbsd sends a 3 MB file of random bytes to socat,
#           which writes it out; the copy's SHA-256 must be the file's.
#           (socat listens: Debian's librspreload predates accept4,
#           which netcat-openbsd's listener calls.)
#   iperf3: a 50 MB iperf3 run, control and data connection both
#           rsockets; its summary must show 50 MB sent and a receiver's
#           figure (the server stops counting at the client's TEST_END,
#           which the control connection can bring before the last data
#           is read, over kernel TCP too: 49.9 MB once).
set -uo pipefail
run=$1; prog=$2; shift 2
here=$(dirname "$0")
pre=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
[ -f "$pre" ] || { echo "$pre missing: skip"; exit 77; }
work=$(mktemp -d /tmp/droce-rsp.XXXXXX)
trap 'rm -rf "$work"' EXIT
case "$prog" in
nc)
	for p in nc socat; do
		command -v $p >/dev/null || { echo "$p missing: skip"; exit 77; }
	done
	head -c 3000000 /dev/urandom > "$work/in"
	sum=$(sha256sum < "$work/in" | cut -d' ' -f1)
	"$here/cm-pair.sh" "$run" "$@" --expect '^sent$' -- \
		bash -c "LD_PRELOAD=$pre socat -u TCP4-LISTEN:7471 OPEN:$work/out,creat,trunc" -- \
		bash -c "LD_PRELOAD=$pre nc -4 -N @SRV@ 7471 < $work/in && echo sent"
	rc=$?
	got=$(sha256sum < "$work/out" 2>/dev/null | cut -d' ' -f1)
	echo "sent $sum"
	echo "got  $got ($(stat -c %s "$work/out" 2>/dev/null) bytes)"
	[ $rc -eq 0 ] || exit 1
	[ "$got" = "$sum" ] || { echo "FAIL: the copy differs"; exit 1; }
	;;
iperf3)
	command -v iperf3 >/dev/null || { echo "iperf3 missing: skip"; exit 77; }
	"$here/cm-pair.sh" "$run" "$@" \
		--expect '50\.0 MBytes .* sender' --expect 'MBytes .* receiver' \
		--expect 'iperf Done' -- \
		bash -c "LD_PRELOAD=$pre iperf3 -s -1 -B @SRV@ -p 7471" -- \
		bash -c "LD_PRELOAD=$pre iperf3 -c @SRV@ -p 7471 -n 50M"
	;;
*)
	echo "rs-preload: unknown program $prog" >&2; exit 2 ;;
esac
