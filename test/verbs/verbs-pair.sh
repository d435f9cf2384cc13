#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# verbs-pair.sh DROCE-RUN [--expect REGEX]... [--expect-server REGEX]...
#     [--server-extra "ARGS"] [--client-extra "ARGS"] [--no-listen]
#     [--daemons DROCED] -- PROGRAM ARGS...
#
# Runs an unmodified verbs program (ibv_*_pingpong, perftest) twice through
# droce-run: a server and a client, two processes joined by a net_memif
# link of their own (the default link), the client given the server's
# address last. Passes when both exit 0 and the client's output matches
# every --expect. Everything started is torn down, also on failure.
# With --daemons, the two processes attach to two droced joined by the
# link instead (test/common/daemon-lib.sh), which take the DROCE_* keys of
# the environment (zero copy, queues, faults) and must stay alive and stop
# cleanly; the daemons' output counts as the client's for --expect (the
# fault report is theirs). VP_ONE_DAEMON=1 attaches both to daemon A.
# --no-listen: the program has no TCP side channel (perftest's
# raw_ethernet tests): the client starts once the server has printed its
# results header, which perftest does after creating its QP and flow
# rules, and 3 s more, for moving its QP to RTS and posting its receives
# (a raw frame that finds none is lost, and perftest's latency tests wait
# for its answer forever);
# --expect-server checks the server's output too.
set -uo pipefail
. "$(dirname "$0")/../common/pair-lib.sh"
. "$(dirname "$0")/../common/daemon-lib.sh"
run=$1; shift
expects=()
srv_expects=()
server_extra=""
client_extra=""
no_listen=""
droced=""
while [ $# -gt 0 ]; do
	case "$1" in
	--expect) expects+=("$2"); shift 2 ;;
	--expect-server) srv_expects+=("$2"); shift 2 ;;
	--server-extra) server_extra=$2; shift 2 ;;
	--client-extra) client_extra=$2; shift 2 ;;
	--no-listen) no_listen=1; shift ;;
	--daemons) droced=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "verbs-pair: bad argument $1" >&2; exit 2 ;;
	esac
done
prog=$1; shift
command -v "$prog" >/dev/null || { echo "$prog missing: skip"; exit 77; }

work=$(mktemp -d /tmp/droce-vp.XXXXXX)
pids=()
dpid_a=
dpid_b=
# ibv_xsrq_pingpong and perftest -c XRC open their XRC domains on files
# of fixed names under /tmp, left behind
xrc_files=
case " $prog $* " in
*" XRC "*|*xsrq*) xrc_files="/tmp/xrc_domain /tmp/xrc_domain_client /tmp/xrc_domain_server" ;;
esac
cleanup() {
	kill_all "${pids[@]}" $dpid_a $dpid_b
	rm -rf "$work"
	[ -n "$xrc_files" ] && rm -f $xrc_files
}
trap cleanup EXIT

# a free TCP port for the program's own side channel (per attempt)
port=0
sock="$work/memif.sock"
common=(DROCE_MTU=1500)
srv_env=("${common[@]}" "DROCE_DEVARGS=net_memif0,role=server,socket=$sock"
	DROCE_IPV4=10.9.0.1)
cli_env=("${common[@]}" "DROCE_DEVARGS=net_memif0,role=client,socket=$sock"
	DROCE_IPV4=10.9.0.2)
if [ -n "$droced" ]; then
	keys=()
	for k in DROCE_ZERO_COPY DROCE_QUEUES DROCE_FAULT DROCE_FAULT_TX \
			DROCE_SELECTIVE_REPEAT DROCE_SR_WINDOW; do
		[ -n "${!k:-}" ] && keys+=("$k=${!k}")
		unset $k
	done
	daemons_start "$droced" "$work" "${keys[@]}"
	srv_env=("DROCE_DAEMON=$work/a.sock")
	cli_env=("DROCE_DAEMON=$work/b.sock")
	# both on daemon A: the client reaches the server through A's
	# loopback (B stays idle)
	[ -n "${VP_ONE_DAEMON:-}" ] && cli_env=("DROCE_DAEMON=$work/a.sock")
fi

run_pair() {
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	[ -n "$droced" ] || rm -f "$sock"
	echo "server: $prog -p $port $* $server_extra"
	# without a side channel the server's header is the sign that it is
	# ready: line-buffered, or it would reach the log only at exit
	local buf=()
	[ -n "$no_listen" ] && buf=(stdbuf -oL)
	timeout -k 5 "${VP_TIMEOUT:-240}" "$run" "${srv_env[@]}" "${buf[@]}" "$prog" -p "$port" "$@" $server_extra \
		> "$work/server.log" 2>&1 &
	pids+=($!)
	srv=$!

	# the client may only connect once the server listens
	for _ in $(seq 1 600); do
		if [ -n "$no_listen" ]; then
			grep -q '^ *#bytes' "$work/server.log" 2>/dev/null &&
				{ sleep 3; break; }
		elif ss -ltn 2>/dev/null | grep -q "[:.]$port "; then
			break
		fi
		if ! kill -0 "$srv" 2>/dev/null; then break; fi
		sleep 0.1
	done

	echo "client: $prog -p $port $* $client_extra 127.0.0.1"
	timeout -k 5 "${VP_TIMEOUT:-240}" "$run" "${cli_env[@]}" "$prog" -p "$port" "$@" $client_extra 127.0.0.1 \
		> "$work/client.log" 2>&1 &
	pids+=($!)
	cli=$!

	wait "$cli"; crc=$?
	wait "$srv"; src=$?
}
run_pair "$@"
# perftest's report calibrates the TSC against gettimeofday and exits 1
# ("Correlation coefficient r^2 < 0.9", "Can't produce a report") when the
# fit is poor, after a transfer that went right: a busy 2-core machine gives
# that about once in a few hundred runs. Such a run says nothing of droce:
# it is shown and run once more.
if [ $((src | crc)) -ne 0 ] &&
		grep -q "Can't produce a report" "$work/server.log" "$work/client.log"; then
	echo "----- perftest could not calibrate its clock; first run's output:"
	cat "$work/server.log" "$work/client.log"
	echo "----- running once more"
	run_pair "$@"
fi
echo "----- server (exit $src)"; cat "$work/server.log"
echo "----- client (exit $crc)"; cat "$work/client.log"
fail=0
if [ -n "$droced" ]; then
	daemons_stop "$work" || fail=1
	cat "$work/droced-a.log" "$work/droced-b.log" >> "$work/client.log"
fi
[ "$src" -eq 0 ] || { echo "FAIL: server exited $src"; fail=1; }
[ "$crc" -eq 0 ] || { echo "FAIL: client exited $crc"; fail=1; }
expect_all "$work/client.log" client "${expects[@]}" || fail=1
expect_all "$work/server.log" server "${srv_expects[@]}" || fail=1
[ $fail -eq 0 ] && echo "PASS: $prog $*"
exit $fail
