#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ucx-pair.sh DROCE-RUN TLS TEST [ARGS...]: Debian's unmodified
# ucx_perftest between two droce processes (verbs-pair.sh: net_memif, the
# server at 10.9.0.1), UCX restricted to UCX_TLS=TLS on droce's device, so
# that nothing but droce carries the test; passes when both exit 0 and the
# client prints its final figures. UCX takes an IB device only when
# /dev/infiniband/DEV_NAME is a character device it may open (droce's
# dev_name leads to /dev/null: doc/verbs.md, "UCX"): /dev/infiniband must
# exist, and is made here where it does not (droce.sh setup makes it too).
set -uo pipefail
run=$1 tls=$2 test=$3; shift 3
command -v ucx_perftest >/dev/null || { echo "no ucx_perftest (ucx-utils): skip"; exit 77; }
[ -d /dev/infiniband ] || mkdir -p /dev/infiniband 2>/dev/null ||
	{ echo "no /dev/infiniband and cannot make it: skip"; exit 77; }
export UCX_TLS=$tls UCX_NET_DEVICES=droce0:1 UCX_WARN_UNUSED_ENV_VARS=n
# droce-run's drop-in, not the build's libraries meson puts on the path
exec env -u LD_LIBRARY_PATH "$(dirname "$0")/verbs-pair.sh" "$run" \
	--expect '^Final: +[0-9]+ ' -- ucx_perftest -t "$test" "$@"
