#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The XRC frames of transport_xrc's WRITE, WRITE with immediate, READ and
# atomics (requests with the XRCETH, ACKs, READ responses, atomic ACKs)
# decode in tshark without warnings and carry ICRCs that verify
# independently.
set -euo pipefail
xrc=$1 checker=$2
work=$(mktemp -d /tmp/droce-xrcpcap.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$xrc" "$work/xrc.pcap" | tail -1
/usr/bin/python3 "$checker" "$work/xrc.pcap"
