#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-instructions.sh [TP-BENCH] [IN-FLIGHT...]: instructions per message
# through lib/transport alone (droce-tp-bench: both ends on one core),
# counted by valgrind's callgrind. Unlike time, an instruction count does
# not move with a shared machine's noise, so an A/B of two builds can be
# read from one run of each. Per message: the benchmark loop's inclusive
# count (post, both ends' progress and receive, completions) over the WRs
# posted. Figures, never pass/fail. Needs valgrind (apt-get install
# valgrind).
set -uo pipefail
tpb=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/app/droce-tp-bench}
shift || true
flights=${*:-64 1}
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
command -v callgrind_annotate >/dev/null || { echo "needs callgrind_annotate" >&2; exit 2; }
[ -x "$tpb" ] || { echo "no $tpb" >&2; exit 2; }
out=$(mktemp -d /tmp/droce-instr.XXXXXX)
trap 'rm -rf "$out"' EXIT

printf '%-10s %6s %10s %16s\n' op bytes "in flight" "instructions/msg"
for flight in $flights; do
	for c in "WRITE 64" "SEND 64" "READ 64" "FETCH_ADD 8" "WRITE 4096" "SEND 4096" "WRITE 65536" "UD_SEND 64"; do
		set -- $c
		valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
			"$tpb" 0.2 "$1" "$2" "$flight" > "$out/log" 2>&1 || {
			echo "$1 $2: droce-tp-bench failed" >&2; tail -3 "$out/log" >&2
			continue
		}
		callgrind_annotate --inclusive=yes --tree=calling "$out/cg" \
			> "$out/ann" 2>/dev/null
		# the loop's inclusive count over the WRs it posted (the
		# bench prints them: with LTO no call marks one)
		msgs=$(awk '$1 == "posted" { print $2 + 0 }' "$out/log")
		awk -v op="$1" -v sz="$2" -v fl="$flight" -v msgs="${msgs:-0}" '
			/\*  .*droce-tp-bench\/main.c:run/ { gsub(",", "", $1); tot = $1 }
			END {
				if (msgs > 0)
					printf "%-10s %6s %10s %16.0f\n", op, sz, fl, tot / msgs
				else
					printf "%-10s %6s %10s %16s\n", op, sz, fl, "?"
			}' "$out/ann"
	done
done
