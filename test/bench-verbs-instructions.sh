#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-verbs-instructions.sh [DROCE-RUN] [N1 N2]: instructions per
# 64-byte message of unmodified perftest over the drop-in (ib_write_bw,
# ib_send_bw, ib_read_bw, ib_atomic_bw; two processes over net_memif,
# test/verbs/verbs-pair.sh), the client under callgrind and the server
# native, in the client's main thread (droce's progress thread spins or
# naps as the scheduler has it): droce's part (the drop-in with the
# transport and DPDK), the difference between a run of N2 messages and
# one of N1, so that start-up and connection set-up cancel out. perftest's
# own part is not shown: its clock calibration at start and the empty
# polls it makes while it waits move it by more than its per-message
# work from run to run (a difference of two runs came out negative).
# Beside it droce-perf's client per message for the same op and
# perftest's defaults (128 WRs in flight, one signaled in 100;
# bench-perf-instructions.sh's way). Figures, never pass/fail. Needs
# valgrind and perftest.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
run=${1:-$top/build/app/droce-run}
n1=${2:-20000} n2=${3:-100000}
perf=$top/build/app/droce-perf
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
command -v ib_write_bw >/dev/null || { echo "no perftest: skipped"; exit 0; }
[ -x "$run" ] && [ -x "$perf" ] || { echo "build first" >&2; exit 2; }
out=$(mktemp -d /tmp/droce-vinstr.XXXXXX)
trap 'rm -rf "$out"' EXIT

# the client (given the server's address last) under callgrind, without
# hugepages (valgrind cannot give EAL its address space for them)
mkdir "$out/bin"
for p in ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw; do
	real=$(command -v "$p")
	cat > "$out/bin/$p" <<-EOF
	#!/bin/sh
	for a; do last=\$a; done
	[ "\$last" = 127.0.0.1 ] || exec "$real" "\$@"
	exec env DROCE_NO_HUGE=1 valgrind --tool=callgrind \\
		--separate-threads=yes --callgrind-out-file="$out/cg" \\
		"$real" "\$@"
	EOF
	chmod +x "$out/bin/$p"
done

# droce FILE: droce's exclusive instructions in the run
droce() {
	callgrind_annotate --inclusive=no --threshold=100 --auto=no "$1" \
		2>/dev/null |
		awk '/\]$/ { n = $1; gsub(",", "", n); o = $0
			sub(/.*\[/, "", o); sub(/\].*/, "", o)
			if (o ~ /libibverbs|librdmacm|librte_|droce/) d += n }
			END { printf "%.0f\n", d }'
}

# verbs PROG SIZE N: droce's instructions for N messages. perftest's
# report may fail its clock's calibration under valgrind (exit 1 after
# the run): the counts are what is wanted, so its output is not asked
# for and its exit is not looked at.
verbs() {
	rm -f "$out/cg"*
	PATH=$out/bin:$PATH VP_TIMEOUT=900 \
		"$top/test/verbs/verbs-pair.sh" "$run" -- "$1" -x 1 -s "$2" \
		-n "$3" > "$out/log" 2>&1
	[ -e "$out/cg-01" ] || { echo 0; return; }
	droce "$out/cg-01"
}

# perf OP SIZE N: droce-perf's client_job, inclusive, as perftest posts
perf_client() {
	rm -f "$out/cg"*
	PAIR_CLI_WRAP="valgrind --tool=callgrind --callgrind-out-file=$out/cg" \
		"$top/test/dataplane/perf-pair.sh" "$perf" memif -- --op "$1" \
		--size "$2" --iters "$3" --depth 128 --cq-mod 100 --no-raw \
		> "$out/log" 2>&1
	callgrind_annotate --inclusive=yes "$out/cg" 2>/dev/null |
		awk '$0 ~ "droce-perf/[^ :]*:client_job( |$)" {
			gsub(",", "", $1); print $1; exit }'
}

printf '%-22s %14s %14s\n' "client, per message" "droce (drop-in)" droce-perf
for c in "ib_write_bw 64 write" "ib_send_bw 64 send" "ib_read_bw 64 read" \
		"ib_atomic_bw 8 fetch_add"; do
	set -- $c
	d1=$(verbs "$1" "$2" "$n1")
	d2=$(verbs "$1" "$2" "$n2")
	q=$(perf_client "$3" "$2" "$n2")
	awk -v t="$1 $2 B" -v n=$((n2 - n1)) -v d1="$d1" -v d2="$d2" \
		-v q="${q:-0}" -v qn="$n2" \
		'BEGIN { if (d1 <= 0 || d2 <= d1) { printf "%-22s %14s\n", t, "failed"; exit }
		printf "%-22s %14.0f %14.0f\n", t, (d2 - d1) / n, q / qn }'
done
