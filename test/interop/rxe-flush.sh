#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rxe-flush.sh DROCE-RUN DROCE-PCAP ROLE [rxe-pair options] [-- ARGS...]
#
# IBTA 1.5 FLUSH between droce and kernel 6.12's rxe (Debian 13 guest):
# test/verbs/flush_pair.c, built now against Debian 13's libibverbs-dev
# (test/tools/verbs56-headers.sh), run on both sides by rxe-pair.sh (the
# guest's copy over virtio-9p, against its own rdma-core 56). Global
# visibility on anonymous memory (rxe takes persistence only over pmem).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=$1 pcap=$2 role=$3; shift 3
opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
work=$(mktemp -d /var/tmp/droce-rxeflush.XXXXXX)
trap 'rm -rf "$work"' EXIT
inc=$("$here/../tools/verbs56-headers.sh" "${DROCE_VERBS56_DIR:-/var/tmp/droce-verbs56}") ||
	{ echo "FAIL: no rdma-core 56 headers to build flush_pair with"; exit 1; }
cc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$inc" -I"$here/../common" \
	-o "$work/flush_pair" \
	"$here/../verbs/flush_pair.c" -libverbs ||
	{ echo "FAIL: flush_pair does not build against $inc"; exit 1; }
RXE_SUITE=trixie "$here/rxe-pair.sh" "$run" "$pcap" "$role" "${opts[@]}" \
	-- "$work/flush_pair" "$@"
