#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# examples/embed_write, server and client over net_memif: the server's
# droce progresses in its background thread while its application waits.
set -uo pipefail
exe=$1
dir=$(mktemp -d /tmp/droce-embed.XXXXXX)
tag=$(printf '%s' "$$$RANDOM" | md5sum | cut -c1-6)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir" /var/run/dpdk/ews$tag /var/run/dpdk/ewc$tag' EXIT
"$exe" server "$dir" 10.197.0.1 "net_memif0,role=server,socket=$dir/s.sock" \
	-- --file-prefix ews$tag -l 0 --no-pci --log-level=4 &
pid=$!
sleep 0.3
"$exe" client "$dir" 10.197.0.2 "net_memif0,role=client,socket=$dir/s.sock" \
	-- --file-prefix ewc$tag -l 1 --no-pci --log-level=4
rc=$?
wait $pid
src=$?
pid=""
[ $rc -eq 0 ] && [ $src -eq 0 ]
