#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rpma-native.sh DROCE-RUN RPMA_PAIR CASE [cm-pair.sh options...]: the
# case of test/eco/rpma_pair.c (built against Debian 12's librpma 1.2
# headers) run with Debian 13's librpma 1.3 instead
# (test/tools/trixie-librpma.sh), which posts FLUSH and ATOMIC WRITE
# natively where the device advertises them (device_cap_flags_ex) and
# the QP has the builder: cm-pair.sh's --expect options say which the
# client's completions must show.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=$1 pair=$2 case=$3
shift 3
lib=$("$here/../tools/trixie-librpma.sh" "${DROCE_TRIXIE_RPMA_DIR:-/var/tmp/droce-trixie-rpma}") ||
	{ echo "FAIL: no librpma 1.3 from Debian 13"; exit 1; }
echo "librpma 1.3: $lib"
# droce-run puts its own libraries first, then these
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/../rdmacm/cm-pair.sh" "$run" --expect "ok: $case \\(client\\)" "$@" \
	-- "$pair" server @SRV@ "$case" -- "$pair" client @SRV@ "$case"
