#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# examples/embed_write, server and client over net_memif: the server's
# droce progresses in its background thread while its application waits;
# with "lcores", on an lcore each application hands droce
# (DROCE_PROGRESS_LCORES, droce_port_run launched with rte_eal_remote_launch).
set -uo pipefail
exe=$1
mode=${2:-thread}
srv_l="-l 0"; cli_l="-l 1"
if [ "$mode" = lcores ]; then
	export EMBED_LCORES=1
	srv_l="-l 0,1 --main-lcore 0"; cli_l="-l 0,1 --main-lcore 1"
fi
dir=$(mktemp -d /tmp/droce-embed.XXXXXX)
tag=$(printf '%s' "$$$RANDOM" | md5sum | cut -c1-6)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir" /var/run/dpdk/ews$tag /var/run/dpdk/ewc$tag' EXIT
"$exe" server "$dir" 10.197.0.1 "net_memif0,role=server,socket=$dir/s.sock" \
	-- --file-prefix ews$tag $srv_l --no-pci --log-level=4 &
pid=$!
sleep 0.3
"$exe" client "$dir" 10.197.0.2 "net_memif0,role=client,socket=$dir/s.sock" \
	-- --file-prefix ewc$tag $cli_l --no-pci --log-level=4
rc=$?
wait $pid
src=$?
pid=""
[ $rc -eq 0 ] && [ $src -eq 0 ]
