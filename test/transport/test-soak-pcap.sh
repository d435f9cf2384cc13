#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A sample of the frames the lossy soak sends decodes in tshark without
# warnings and carries ICRCs that verify independently.
set -euo pipefail
soak=$1 checker=$2
work=$(mktemp -d /tmp/droce-soakpcap.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$soak" 1500 99 "$work/sample.pcap" | tail -3
/usr/bin/python3 "$checker" "$work/sample.pcap"
