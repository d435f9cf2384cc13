#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-perf-instructions.sh [DROCE-PERF] [ITERS]: instructions per
# message of droce-perf over net_memif, one side under callgrind and the
# other native (perf-pair.sh), PMD included: the client's job (posting,
# the transport, memif's transmit and receive, completions) and the
# server's polls (receive, the transport, ACKs and responses: under
# callgrind it is the slower side, so its polls find full bursts), per
# message, for 64-byte WRITE, SEND, READ and 8-byte FETCH_ADD. Unlike
# rates on a shared machine, these do not move from run to run;
# doc/perf.md sets them beside the raw sender's cost per frame. Figures,
# never pass/fail. Needs valgrind.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
perf=${1:-$top/build/app/droce-perf}
iters=${2:-100000}
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
[ -x "$perf" ] || { echo "no $perf" >&2; exit 2; }
out=$(mktemp -d /tmp/droce-pinstr.XXXXXX)
trap 'rm -rf "$out"' EXIT

# count FILE FUNCTION: the function's inclusive instructions. Its first
# line, the largest: callgrind names a function by the source file of
# its first block (an inline helper's header, maybe) and lists the parts
# from each file below it.
count() {
	callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
		awk -v f="$2" '$0 ~ "droce-perf/[^ :]*:" f "( |$)" {
			gsub(",", "", $1); print $1; exit }'
}

printf '%-10s %6s %18s %18s\n' op bytes "client/msg" "server/msg"
for c in "write 64" "send 64" "read 64" "fetch_add 8"; do
	set -- $c
	cg="valgrind --tool=callgrind --callgrind-out-file=$out/cg"
	rm -f "$out"/cg*
	PAIR_CLI_WRAP=$cg "$top/test/dataplane/perf-pair.sh" "$perf" memif -- \
		--op "$1" --size "$2" --iters "$iters" --no-raw > "$out/log" 2>&1
	cli=$(count "$out/cg" client_job)
	rm -f "$out"/cg*
	PAIR_SRV_WRAP=$cg "$top/test/dataplane/perf-pair.sh" "$perf" memif -- \
		--op "$1" --size "$2" --iters "$iters" --no-raw > "$out/log" 2>&1
	srv=$(count "$out/cg" server_poll)
	awk -v op="$1" -v sz="$2" -v c="${cli:-0}" -v s="${srv:-0}" -v n="$iters" \
		'BEGIN { printf "%-10s %6s %18.0f %18.0f\n", op, sz, c / n, s / n }'
done
