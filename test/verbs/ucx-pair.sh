#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ucx-pair.sh DROCE-RUN TLS TEST [ARGS...]: Debian's unmodified
# ucx_perftest between two droce processes (verbs-pair.sh: net_memif, the
# server at 10.9.0.1), UCX restricted to UCX_TLS=TLS on droce's device, so
# that nothing but droce carries the test; passes when both exit 0 and the
# client prints its final figures. TLS uct:NAME runs a UCT-level test on
# transport NAME alone (-d droce0:1 -x NAME); TLS loop:NAME runs it in one
# process that talks to itself (-l) through droce's loopback. With
# DAEMONS=DROCED in the environment, the processes attach to two droced
# (verbs-pair.sh --daemons). UCX takes an IB device only when
# /dev/infiniband/DEV_NAME is a character device it may open (droce's
# dev_name leads to /dev/null: doc/verbs.md, "UCX"): /dev/infiniband must
# exist, and is made here where it does not (droce.sh setup makes it too).
set -uo pipefail
run=$1 tls=$2 test=$3; shift 3
command -v ucx_perftest >/dev/null || { echo "no ucx_perftest (ucx-utils): skip"; exit 77; }
[ -d /dev/infiniband ] || mkdir -p /dev/infiniband 2>/dev/null ||
	{ echo "no /dev/infiniband and cannot make it: skip"; exit 77; }
export UCX_NET_DEVICES=droce0:1 UCX_WARN_UNUSED_ENV_VARS=n
uct=()
case "$tls" in
uct:*|loop:*) uct=(-d droce0:1 -x "${tls#*:}") ;;
*) export UCX_TLS=$tls ;;
esac
if [ "${tls%%:*}" = loop ]; then
	w=$(mktemp -d /tmp/droce-ucxl.XXXXXX)
	tag=$(basename "$w" | tr -dc 'a-zA-Z0-9')
	trap 'rm -rf "$w" /var/run/dpdk/ul$tag' EXIT
	# a link with no peer: every frame this process sends is its own
	timeout -k 5 120 env -u LD_LIBRARY_PATH "$run" \
		"DROCE_DEVARGS=net_memif0,role=server,socket=$w/memif.sock" \
		DROCE_IPV4=10.9.0.1 "DROCE_EAL=--file-prefix ul$tag" \
		ucx_perftest -l "${uct[@]}" -t "$test" "$@" > "$w/log" 2>&1
	rc=$?
	cat "$w/log"
	[ $rc -eq 0 ] || { echo "FAIL: ucx_perftest -l exited $rc"; exit 1; }
	grep -Eq '^Final: +[0-9]+ ' "$w/log" || { echo "FAIL: no final figures"; exit 1; }
	echo "PASS: ucx_perftest -l ${uct[*]} -t $test"
	exit 0
fi
daemons=()
[ -n "${DAEMONS:-}" ] && daemons=(--daemons "$DAEMONS")
# droce-run's drop-in, not the build's libraries meson puts on the path
exec env -u LD_LIBRARY_PATH "$(dirname "$0")/verbs-pair.sh" "$run" \
	--expect '^Final: +[0-9]+ ' "${daemons[@]}" -- \
	ucx_perftest "${uct[@]}" -t "$test" "$@"
