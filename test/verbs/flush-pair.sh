#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flush-pair.sh DROCE-RUN VERBS-PAIR [--daemons DROCED] [--file] [--crash]
#     [-- FLUSH_PAIR ARGS...]
#
# IBTA 1.5 FLUSH through ibv_wr_flush between two droce processes:
# test/verbs/flush_pair.c built now against Debian 13's libibverbs-dev
# (test/tools/verbs56-headers.sh; Debian 12's headers have no
# ibv_wr_flush), run through verbs-pair.sh (net_memif, or two droced with
# --daemons). --file: the server's MR is a file under /var/tmp, for
# persistence. --crash: the client kills the server as the last FLUSH
# completes; then every flushed byte must be in the file.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
run=$1 vpair=$2; shift 2
daemons=() file=0 crash=0
while [ $# -gt 0 ]; do
	case "$1" in
	--daemons) daemons=(--daemons "$2"); shift 2 ;;
	--file) file=1; shift ;;
	--crash) crash=1; file=1; shift ;;
	--) shift; break ;;
	*) echo "flush-pair: bad argument $1" >&2; exit 2 ;;
	esac
done

work=$(mktemp -d /var/tmp/droce-flush.XXXXXX)
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill_all "$srv_pid"
	rm -rf "$work"
}
trap cleanup EXIT

inc=$("$here/../tools/verbs56-headers.sh" "${DROCE_VERBS56_DIR:-/var/tmp/droce-verbs56}") ||
	{ echo "FAIL: no rdma-core 56 headers to build flush_pair with"; exit 1; }
cc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$inc" -I"$here/../common" \
	-o "$work/flush_pair" \
	"$here/flush_pair.c" -libverbs ||
	{ echo "FAIL: flush_pair does not build against $inc"; exit 1; }
echo "flush_pair built against $inc"

if [ $crash -eq 0 ]; then
	extra=()
	[ $file -eq 1 ] && extra=(--server-extra "-f $work/mr.file")
	# not exec: the EXIT trap removes the work directory
	"$vpair" "$run" "${daemons[@]}" "${extra[@]}" \
		--expect 'WRITE \+ FLUSH pairs completed' \
		--expect 'refused at ibv_wr_complete, nothing posted: selectivity 2' \
		--expect 'FLUSH to an MR without flush access: remote access error' \
		-- "$work/flush_pair" -g 1 -D "$@"
	exit $?
fi

# the crash: the server is killed, so verbs-pair.sh's "both exit 0" does
# not apply; the same set-up by hand
sock="$work/memif.sock"
port=$(free_port)
timeout -k 5 240 "$run" DROCE_MTU=1500 \
	"DROCE_DEVARGS=net_memif0,role=server,socket=$sock" DROCE_IPV4=10.9.0.1 \
	"$work/flush_pair" -g 1 -D -p "$port" -f "$work/mr.file" "$@" \
	> "$work/server.log" 2>&1 &
srv_pid=$!
wait_listen "$port" "$srv_pid" 200
timeout -k 5 240 "$run" DROCE_MTU=1500 \
	"DROCE_DEVARGS=net_memif0,role=client,socket=$sock" DROCE_IPV4=10.9.0.2 \
	"$work/flush_pair" -g 1 -D -p "$port" -k "$@" 127.0.0.1 \
	> "$work/client.log" 2>&1
crc=$?
wait "$srv_pid"; src=$?
srv_pid=
echo "----- server (exit $src)"; cat "$work/server.log"
echo "----- client (exit $crc)"; cat "$work/client.log"
fail=0
[ "$crc" -eq 0 ] || { echo "FAIL: client exited $crc"; fail=1; }
[ "$src" -eq 137 ] || { echo "FAIL: server exited $src, not killed (137)"; fail=1; }
expect_all "$work/client.log" client 'server killed after the last FLUSH completed' \
	'WRITE \+ FLUSH pairs completed \(persistence' || fail=1
# every chunk the client flushed is in the file, the rest is zero
n=$(sed -n 's/^\([0-9]*\) WRITE + FLUSH pairs completed.*/\1/p' "$work/client.log")
python3 - "$work/mr.file" "${n:-0}" <<'PY' || fail=1
import sys
path, n = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
CHUNK, MAX = 8192, 64
bad = 0
for i in range(MAX + 2):
    want = bytes(((j * 2654435761 + i * 977) & 0xffffffff) >> 11 & 0xff
                 for j in range(CHUNK)) if i < n else bytes(CHUNK)
    if data[i * CHUNK:(i + 1) * CHUNK] != want:
        bad += 1
        print("FAIL: chunk %d of the file is not what was flushed" % i)
print("file after the crash: %d chunks flushed, %d wrong" % (n, bad))
sys.exit(1 if bad or n == 0 else 0)
PY
[ $fail -eq 0 ] && echo "PASS: the flushed bytes survived the responder's SIGKILL"
exit $fail
