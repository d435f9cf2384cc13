#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# fi-pair.sh DROCE-RUN [--expect REGEX]... [--ready-port PORT]
#            [--daemons DROCED] [--env K=V]... [--server-stays]
#            -- SERVER ARGS... -- CLIENT ARGS...
#
# Runs an unmodified libfabric program pair (fi_pingpong, test/eco's
# fi_bw, an MPI rank) over droce between two processes joined by a
# net_memif link of their own, the server at 10.9.0.1 and the client at
# 10.9.0.2 (@SRV@ in either command), in process or (--daemons) attached
# to two droced joined by the link.
#
# libfabric's verbs provider takes its devices' addresses from the
# kernel's interfaces (getifaddrs, then rdma_bind_addr on each): a droce
# port is not a kernel interface, so each side runs in a network
# namespace of its own whose veth carries the same address as its droce
# port (doc/ecosystem.md). The veth pair joins the two namespaces: the
# programs' own TCP side channels (fi_pingpong's control port) go over
# it, the RDMA traffic over droce's memif link. --ready-port: the client
# starts once the server listens on that TCP port in its namespace
# (otherwise once its output says "listening"). --server-stays: the
# server serves until stopped (qperf), so it is stopped once the client
# is done. Passes when both exit 0
# and the client's output matches every --expect. Everything started is
# torn down, namespaces included, also on failure.
set -uo pipefail
. "$(dirname "$0")/../common/pair-lib.sh"
. "$(dirname "$0")/../common/daemon-lib.sh"
run=$1; shift
expects=()
ready_port=""
droced=""
envs=()
server_stays=0
while [ $# -gt 0 ]; do
	case "$1" in
	--expect) expects+=("$2"); shift 2 ;;
	--ready-port) ready_port=$2; shift 2 ;;
	--daemons) droced=$2; shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	--server-stays) server_stays=1; shift ;;
	--) shift; break ;;
	*) echo "fi-pair: bad argument $1" >&2; exit 2 ;;
	esac
done
srv_cmd=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do srv_cmd+=("$1"); shift; done
[ $# -gt 0 ] && shift
cli_cmd=("$@")
[ ${#srv_cmd[@]} -gt 0 ] && [ ${#cli_cmd[@]} -gt 0 ] || {
	echo "fi-pair: need -- SERVER... -- CLIENT..." >&2; exit 2; }
command -v "${srv_cmd[0]}" >/dev/null || { echo "${srv_cmd[0]} missing: skip"; exit 77; }
command -v ip >/dev/null || { echo "ip missing: skip"; exit 77; }

work=$(mktemp -d /tmp/droce-fi.XXXXXX)
tag=$(basename "$work" | tr -dc 'a-zA-Z0-9')
nsa=dfa$tag
nsb=dfb$tag
pids=()
dpid_a=
dpid_b=
cleanup() {
	kill_all "${pids[@]}" $dpid_a $dpid_b
	ip netns del "$nsa" 2>/dev/null
	ip netns del "$nsb" 2>/dev/null
	rm -rf "/var/run/dpdk/dfs$tag" "/var/run/dpdk/dfc$tag" "$work"
}
trap cleanup EXIT

ip netns add "$nsa" 2>/dev/null || { echo "cannot create a network namespace: skip"; exit 77; }
ip netns add "$nsb" || exit 1
ip -n "$nsa" link add v0 type veth peer name v0 netns "$nsb" || {
	echo "cannot create a veth pair: skip"; exit 77; }
for ns in "$nsa" "$nsb"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set v0 up
done
ip -n "$nsa" addr add 10.9.0.1/24 dev v0
ip -n "$nsb" addr add 10.9.0.2/24 dev v0

sock="$work/memif.sock"
srv_env=(DROCE_MTU=1500 DROCE_IPV4=10.9.0.1
	"DROCE_DEVARGS=net_memif0,role=server,socket=$sock,socket-abstract=no"
	"DROCE_EAL=--file-prefix dfs$tag")
cli_env=(DROCE_MTU=1500 DROCE_IPV4=10.9.0.2
	"DROCE_DEVARGS=net_memif0,role=client,socket=$sock,socket-abstract=no"
	"DROCE_EAL=--file-prefix dfc$tag")
if [ -n "$droced" ]; then
	daemons_start "$droced" "$work"
	srv_env=("DROCE_DAEMON=$work/a.sock")
	cli_env=("DROCE_DAEMON=$work/b.sock")
fi
subst() {
	local a
	for a in "$@"; do printf '%s\n' "${a//@SRV@/10.9.0.1}"; done
}
mapfile -t srv_cmd < <(subst "${srv_cmd[@]}")
mapfile -t cli_cmd < <(subst "${cli_cmd[@]}")

echo "server: ${srv_cmd[*]}"
ip netns exec "$nsa" timeout -k 5 "${FI_TIMEOUT:-240}" env "${envs[@]}" \
	"$run" "${srv_env[@]}" stdbuf -oL "${srv_cmd[@]}" > "$work/server.log" 2>&1 &
srv=$!
pids+=($srv)
for _ in $(seq 1 600); do
	if [ -n "$ready_port" ]; then
		ip netns exec "$nsa" ss -ltn 2>/dev/null | grep -q "[:.]$ready_port " && break
	else
		grep -q "listening" "$work/server.log" && break
	fi
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.1
done
echo "client: ${cli_cmd[*]}"
ip netns exec "$nsb" timeout -k 5 "${FI_TIMEOUT:-240}" env "${envs[@]}" \
	"$run" "${cli_env[@]}" "${cli_cmd[@]}" > "$work/client.log" 2>&1 &
cli=$!
pids+=($cli)
wait "$cli"; crc=$?
if [ "$server_stays" = 1 ]; then
	kill -TERM "$srv" 2>/dev/null
	wait "$srv"
	src=0
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
fi
expect_all "$work/client.log" client "${expects[@]}" || fail=1
exit $fail
