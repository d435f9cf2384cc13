#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Frames from droce's builder for every opcode decode in tshark with the
# right opcode and no warnings, and their ICRC verifies independently.
set -euo pipefail
gen=$1 checker=$2
work=$(mktemp -d /tmp/droce-opcodes.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$gen" "$work/ops.pcap" "$work/ops.txt"
/usr/bin/python3 "$checker" "$work/ops.pcap" "$work/ops.txt"
