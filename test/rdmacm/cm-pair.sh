#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# cm-pair.sh DROCE-RUN [--expect REGEX]... [--fault SPEC] [--ipv6]
#            [--server-ready REGEX] [--daemons DROCED]
#            [--key K=V]... [--server-key K=V]... [--client-key K=V]...
#            -- SERVER ARGS... -- CLIENT ARGS...
#
# Runs an unmodified rdma_cm program pair (rping, rdma_server/client,
# udaddy, ucmatose, cmtime, perftest -R) through droce-run: two processes
# joined by a net_memif link of their own, the server at 10.9.0.1 (or
# fd00:9::1 with --ipv6), the client at 10.9.0.2. @SRV@ in either command
# becomes the server's address; --server-stays: the server serves until
# stopped, so it is stopped once the client is done. --server-ready: the
# client starts once the server's output (line-buffered) matches REGEX
# (mckey's receiver must have joined before the sender sends), not a
# second after its port is up. --fault gives both sides droce's fault
# injection (DROCE_FAULT, drop,dup,reorder,corrupt in ppm): CM MADs are
# lost too, and the client must print the driver's fault report. Passes
# when both exit 0 and the client's output matches every --expect.
# Everything started is torn down, also on failure. With --daemons, both
# attach to two droced joined by the link instead (server to A at
# 10.9.0.1, client to B; test/common/daemon-lib.sh), whose QP1 carries the
# CM; the faults are the daemons' then, and so is the report. --key gives
# both sides (or both daemons) a configuration key, --server-key and
# --client-key one side (daemon A, daemon B). @TELE@ becomes each side's
# DPDK telemetry socket (its daemon's, attached).
set -uo pipefail
. "$(dirname "$0")/../common/pair-lib.sh"
. "$(dirname "$0")/../common/daemon-lib.sh"
run=$1; shift
expects=()
fault=""
v6=0
server_stays=0
server_ready=""
droced=""
srv_keys=()
cli_keys=()
while [ $# -gt 0 ]; do
	case "$1" in
	--expect) expects+=("$2"); shift 2 ;;
	--key) srv_keys+=("$2"); cli_keys+=("$2"); shift 2 ;;
	--server-key) srv_keys+=("$2"); shift 2 ;;
	--client-key) cli_keys+=("$2"); shift 2 ;;
	--fault) fault=$2; shift 2 ;;
	--ipv6) v6=1; shift ;;
	--server-stays) server_stays=1; shift ;;
	--server-ready) server_ready=$2; shift 2 ;;
	--daemons) droced=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "cm-pair: bad argument $1" >&2; exit 2 ;;
	esac
done
srv_cmd=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do srv_cmd+=("$1"); shift; done
[ $# -gt 0 ] && shift
cli_cmd=("$@")
[ ${#srv_cmd[@]} -gt 0 ] && [ ${#cli_cmd[@]} -gt 0 ] || {
	echo "cm-pair: need -- SERVER... -- CLIENT..." >&2; exit 2; }
command -v "${srv_cmd[0]}" >/dev/null || { echo "${srv_cmd[0]} missing: skip"; exit 77; }
command -v "${cli_cmd[0]}" >/dev/null || { echo "${cli_cmd[0]} missing: skip"; exit 77; }

work=$(mktemp -d /tmp/droce-cm.XXXXXX)
pids=()
dpid_a=
dpid_b=
tele_s=
tele_c=
cleanup() {
	kill_all "${pids[@]}" $dpid_a $dpid_b
	[ -n "$tele_s" ] && rm -rf "$(dirname "$tele_s")"
	[ -n "$tele_c" ] && rm -rf "$(dirname "$tele_c")"
	rm -rf "$work"
}
trap cleanup EXIT

sock="$work/memif.sock"
if [ $v6 -eq 1 ]; then
	srv_ip=fd00:9::1
	common=(DROCE_MTU=1500 DROCE_IPV4=0.0.0.0)
	srv_env=("${common[@]}" DROCE_IPV6=fd00:9::1 DROCE_MAC=02:00:0a:09:00:01)
	cli_env=("${common[@]}" DROCE_IPV6=fd00:9::2 DROCE_MAC=02:00:0a:09:00:02)
else
	srv_ip=10.9.0.1
	srv_env=(DROCE_MTU=1500 DROCE_IPV4=10.9.0.1)
	cli_env=(DROCE_MTU=1500 DROCE_IPV4=10.9.0.2)
fi
# a socket in the file system (not memif's abstract default): its
# appearance says the server's port is up
srv_env+=("DROCE_DEVARGS=net_memif0,role=server,socket=$sock,socket-abstract=no")
cli_env+=("DROCE_DEVARGS=net_memif0,role=client,socket=$sock,socket-abstract=no")
if [ -n "$fault" ]; then
	srv_env+=("DROCE_FAULT=$fault")
	cli_env+=("DROCE_FAULT=$fault")
fi
# the server's telemetry socket tells when it listens (/droce/cm)
tag=$(basename "$work" | tr -dc 'a-zA-Z0-9')
srv_env+=("DROCE_EAL=--file-prefix dcm$tag")
tele_s=/var/run/dpdk/dcm$tag/dpdk_telemetry.v2
# and the client's, for programs that read their own counters (@TELE@)
cli_env+=("DROCE_EAL=--file-prefix dcc$tag")
tele_c=/var/run/dpdk/dcc$tag/dpdk_telemetry.v2
srv_env+=("${srv_keys[@]}")
cli_env+=("${cli_keys[@]}")
if [ -n "$droced" ]; then
	keys=()
	[ -n "$fault" ] && keys+=("DROCE_FAULT=$fault")
	DAEMON_A_KEYS="${srv_keys[*]}" DAEMON_B_KEYS="${cli_keys[*]}" \
		daemons_start "$droced" "$work" "${keys[@]}"
	srv_env=("DROCE_DAEMON=$work/a.sock")
	cli_env=("DROCE_DAEMON=$work/b.sock")
	sock="$work/a.sock"	# there already: the server needs a moment
fi
# listeners SOCKET COMMAND KEY: how many IDs listen, by a telemetry
# counter (daemon A's applications', or the in-process server's)
listeners() {
	/usr/bin/python3 - "$@" <<'PY' 2>/dev/null || echo 0
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(12288)
s.send(sys.argv[2].encode())
print(json.loads(s.recv(65536))[sys.argv[2]].get(sys.argv[3], 0))
PY
}
# subst TELEMETRY ARGS...: @SRV@ and @TELE@, one argument a line
subst() {
	local t=$1 a; shift
	for a in "$@"; do a=${a//@TELE@/$t}; printf '%s\n' "${a//@SRV@/$srv_ip}"; done
}
if [ -n "$droced" ]; then
	mapfile -t srv_cmd < <(subst "$tele_a" "${srv_cmd[@]}")
	mapfile -t cli_cmd < <(subst "$tele_b" "${cli_cmd[@]}")
else
	mapfile -t srv_cmd < <(subst "$tele_s" "${srv_cmd[@]}")
	mapfile -t cli_cmd < <(subst "$tele_c" "${cli_cmd[@]}")
fi
[ -n "$server_ready" ] && srv_cmd=(stdbuf -oL "${srv_cmd[@]}")

echo "server: ${srv_cmd[*]}"
timeout -k 5 "${CM_TIMEOUT:-240}" "$run" "${srv_env[@]}" "${srv_cmd[@]}" \
	> "$work/server.log" 2>&1 &
srv=$!
pids+=($srv)
# the server listens once its port is up: the memif socket appears then
for _ in $(seq 1 300); do
	[ -S "$sock" ] && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.1
done
if [ -n "$server_ready" ]; then
	for _ in $(seq 1 600); do
		grep -Eq "$server_ready" "$work/server.log" && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
else
	# a REQ nobody listens for is answered with a REJ, as a kernel's CM
	# answers it (perftest then even retries into freed memory): the
	# client starts once the server listens
	if [ -n "$droced" ]; then
		lcmd=("$tele_a" /droced/stats cm_listeners)
	else
		lcmd=("$tele_s" /droce/cm listeners)
	fi
	for _ in $(seq 1 600); do
		[ "$(listeners "${lcmd[@]}")" -gt 0 ] 2>/dev/null && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
fi
echo "client: ${cli_cmd[*]}"
timeout -k 5 "${CM_TIMEOUT:-240}" "$run" "${cli_env[@]}" "${cli_cmd[@]}" \
	> "$work/client.log" 2>&1 &
cli=$!
pids+=($cli)
wait "$cli"; crc=$?
if [ $server_stays -eq 1 ]; then
	# a server that serves until stopped (cmtime): alive is its success
	if kill -0 "$srv" 2>/dev/null; then src=0; else wait "$srv"; src=$?; [ $src -eq 0 ] || src=1; fi
	kill "$srv" 2>/dev/null
else
	wait "$srv"; src=$?
fi
echo "----- server (exit $src)"; cat "$work/server.log"
echo "----- client (exit $crc)"; cat "$work/client.log"
fail=0
[ "$src" -eq 0 ] || { echo "FAIL: server exited $src"; fail=1; }
[ "$crc" -eq 0 ] || { echo "FAIL: client exited $crc"; fail=1; }
if [ -n "$droced" ]; then
	daemons_stop "$work" || fail=1
	cat "$work/droced-b.log" >> "$work/client.log"
fi
if [ -n "$fault" ]; then
	expects+=("fault injection: receive dropped [1-9]")
fi
expect_all "$work/client.log" client "${expects[@]}" || fail=1
exit $fail
