#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-ucx-instructions.sh [DROCE-RUN] [N1 N2]: instructions per message
# of Debian's ucx_perftest over droce (rc_verbs with ud_verbs for the
# wire-up only, as bench-ucx.sh, and tag_bw over ud_verbs alone; two processes over
# net_memif, test/verbs/ucx-pair.sh), the client under callgrind and the
# server native, split into droce's part (the drop-in with the transport
# and DPDK), UCX's own (libucp, libuct, libucs, ucx_perftest) and the
# rest (libc, ld.so), in the main thread (droce's progress thread and
# UCX's async one spin or nap as the scheduler has it): the difference
# between a run of N2 messages and one of N1, so that start-up and
# connection set-up cancel out. Beside
# it droce-perf's client per message for the same pattern
# (bench-perf-instructions.sh's way): what UCX's own work costs bounds
# what share of droce-perf's rate UCX can reach. tag_lat counts a round
# trip (the client sends and receives one message each); tag_bw 64 B a
# message sent. Figures, never pass/fail. Needs valgrind.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
run=${1:-$top/build/app/droce-run}
n1=${2:-20000} n2=${3:-100000}
perf=$top/build/app/droce-perf
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
command -v ucx_perftest >/dev/null || { echo "no ucx_perftest: skipped"; exit 0; }
[ -x "$run" ] && [ -x "$perf" ] || { echo "build first" >&2; exit 2; }
out=$(mktemp -d /tmp/droce-uinstr.XXXXXX)
trap 'rm -rf "$out"' EXIT

# the client (given the server's address last) under callgrind; UCX's
# hugepage pools fail under valgrind, and without them it falls back to
# implicit on-demand paging: registered as natively instead
real=$(command -v ucx_perftest)
mkdir "$out/bin"
cat > "$out/bin/ucx_perftest" <<EOF
#!/bin/sh
for a; do last=\$a; done
[ "\$last" = 127.0.0.1 ] || exec "$real" "\$@"
exec valgrind --tool=callgrind --separate-threads=yes \\
	--callgrind-out-file="$out/cg" "$real" "\$@"
EOF
chmod +x "$out/bin/ucx_perftest"

# split FILE: droce, UCX and other exclusive instructions of the run
split() {
	callgrind_annotate --inclusive=no --threshold=100 --auto=no "$1" \
		2>/dev/null |
		awk '/\]$/ { n = $1; gsub(",", "", n); o = $0
			sub(/.*\[/, "", o); sub(/\].*/, "", o)
			if (o ~ /libuc[pts]|ucx_perftest|ucx\//) u += n
			else if (o ~ /libibverbs|librte_|droce/) d += n
			else r += n }
			END { printf "%.0f %.0f %.0f\n", d, u, r }'
}

# ucx TLS TEST SIZE N: droce UCX other, for N messages
ucx() {
	rm -f "$out/cg"*
	PATH=$out/bin:$PATH DROCE_NO_HUGE=1 VP_TIMEOUT=900 \
		UCX_IB_REG_METHODS=rcache,direct \
		"$top/test/verbs/ucx-pair.sh" "$run" "$1" "$2" \
		-s "$3" \
		-n "$4" > "$out/log" 2>&1 || { echo "0 0 0"; return; }
	split "$out/cg-01"
}

# perf OP SIZE N [ARGS]: droce-perf's client_job, inclusive
perf_client() {
	local op=$1 size=$2 n=$3; shift 3
	rm -f "$out/cg"*
	PAIR_CLI_WRAP="valgrind --tool=callgrind --callgrind-out-file=$out/cg" \
		"$top/test/dataplane/perf-pair.sh" "$perf" memif -- --op "$op" \
		--size "$size" --iters "$n" --no-raw "$@" > "$out/log" 2>&1
	callgrind_annotate --inclusive=yes "$out/cg" 2>/dev/null |
		awk '$0 ~ "droce-perf/[^ :]*:client_job( |$)" {
			gsub(",", "", $1); print $1; exit }'
}

printf '%-26s %8s %8s %8s %8s %12s\n' "client, per message" droce UCX other \
	total droce-perf
# UD moves each message as a UD SEND (UCX's own acknowledgements back)
for c in "rc_verbs,ud_verbs:aux tag_lat 8 send 8 --lat" \
		"rc_verbs,ud_verbs:aux tag_bw 64 send 64" \
		"ud_verbs tag_bw 64 send 64"; do
	set -- $c
	tls=$1 t=$2 s=$3 pop=$4 psz=$5; shift 5
	read -r d1 u1 r1 <<< "$(ucx "$tls" "$t" "$s" "$n1")"
	read -r d2 u2 r2 <<< "$(ucx "$tls" "$t" "$s" "$n2")"
	p=$(perf_client "$pop" "$psz" "$n2" "$@")
	[ "$tls" = ud_verbs ] && t="$t (UD)"
	awk -v t="$t $s B" -v n=$((n2 - n1)) -v d=$((d2 - d1)) \
		-v u=$((u2 - u1)) -v r=$((r2 - r1)) -v p="${p:-0}" -v pn="$n2" \
		'BEGIN { printf "%-26s %8.0f %8.0f %8.0f %8.0f %12.0f\n", t,
			d / n, u / n, r / n, (d + u + r) / n, p / pn }'
done
