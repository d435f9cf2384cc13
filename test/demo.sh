#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job of ./droce.sh demo. Until the data path exists: decode and
# verify every RoCEv2 frame of the real rxe captures with lib/wire.
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
exec "$build/app/droce-pcap" --verify "$top"/test/data/*.pcap
