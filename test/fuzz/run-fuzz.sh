#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run-fuzz.sh FUZZER SECONDS [PCAP... | SEEDER] : seed a corpus with the
# frames of the captures, or with what the program SEEDER writes into the
# seeds directory it is given; run libFuzzer for a bounded time; any
# crash, leak or timeout (an input over FUZZ_UNIT_TIMEOUT seconds, 10 by
# default) fails the test.
set -euo pipefail
fuzzer=$1 secs=$2; shift 2
work=$(mktemp -d /tmp/droce-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/seeds"
if [ $# -eq 1 ] && [ -x "$1" ] && [ "${1%.pcap}" = "$1" ]; then
	"$1" "$work/seeds"
elif [ $# -gt 0 ]; then
	python3 "$(dirname "$0")/../tools/pcap-frames.py" "$work/seeds" "$@"
fi
echo "seeded $(ls "$work/seeds" | wc -l) frames; fuzzing for ${secs}s"
cd "$work"
"$fuzzer" -max_total_time="$secs" -timeout="${FUZZ_UNIT_TIMEOUT:-10}" \
	-rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$work/" \
	"$work/corpus" "$work/seeds" 2>&1 | tail -25
rc=${PIPESTATUS[0]}
if ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* >/dev/null 2>&1; then
	echo "fuzzer found a failing input:"; ls "$work"
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
		[ -f "$f" ] && xxd "$f" | head -20
	done
	exit 1
fi
exit "$rc"
