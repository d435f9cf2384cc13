#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-verbs-instructions.sh [DROCE-RUN] [N1 N2]: instructions per
# 64-byte message of unmodified perftest over the drop-in (ib_write_bw,
# ib_send_bw, ib_read_bw, ib_atomic_bw; two processes over net_memif,
# test/verbs/verbs-pair.sh), the client under callgrind and the server
# native, in the client's main thread (droce's progress thread spins or
# naps as the scheduler has it), split into droce's part (the drop-in
# with the transport and DPDK), perftest's own and the rest (libc,
# ld.so): the difference between a run of N2 messages and one of N1, so
# that start-up and connection set-up cancel out. Beside it droce-perf's
# client per message for the same op and perftest's defaults (128 WRs in
# flight, one signaled in 100; bench-perf-instructions.sh's way): what
# the verbs layer and perftest add to the transport. Figures, never
# pass/fail. Needs valgrind and perftest.
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

# split FILE: droce, perftest and other exclusive instructions of the run
split() {
	callgrind_annotate --inclusive=no --threshold=100 --auto=no "$1" \
		2>/dev/null |
		awk '/\]$/ { n = $1; gsub(",", "", n); o = $0
			sub(/.*\[/, "", o); sub(/\].*/, "", o)
			if (o ~ /\/ib_[a-z_]+$/) p += n
			else if (o ~ /libibverbs|librdmacm|librte_|droce/) d += n
			else r += n }
			END { printf "%.0f %.0f %.0f\n", d, p, r }'
}

# verbs PROG SIZE N: droce perftest other, for N messages. perftest's
# report may fail its clock's calibration under valgrind (exit 1 after
# the run): the counts are what is wanted, so its output is not asked
# for and its exit is not looked at.
verbs() {
	rm -f "$out/cg"*
	PATH=$out/bin:$PATH VP_TIMEOUT=900 \
		"$top/test/verbs/verbs-pair.sh" "$run" -- "$1" -x 1 -s "$2" \
		-n "$3" > "$out/log" 2>&1
	[ -e "$out/cg-01" ] || { echo "0 0 0"; return; }
	split "$out/cg-01"
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

printf '%-22s %8s %8s %8s %8s %12s\n' "client, per message" droce perftest \
	other total droce-perf
for c in "ib_write_bw 64 write" "ib_send_bw 64 send" "ib_read_bw 64 read" \
		"ib_atomic_bw 8 fetch_add"; do
	set -- $c
	read -r d1 p1 r1 <<< "$(verbs "$1" "$2" "$n1")"
	read -r d2 p2 r2 <<< "$(verbs "$1" "$2" "$n2")"
	q=$(perf_client "$3" "$2" "$n2")
	awk -v t="$1 $2 B" -v n=$((n2 - n1)) -v d=$((d2 - d1)) \
		-v p=$((p2 - p1)) -v r=$((r2 - r1)) -v q="${q:-0}" -v qn="$n2" \
		'BEGIN { if (d <= 0) { printf "%-22s %8s\n", t, "failed"; exit }
		printf "%-22s %8.0f %8.0f %8.0f %8.0f %12.0f\n", t,
			d / n, p / n, r / n, (d + p + r) / n, q / qn }'
done
