#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# UCX (ucx_perftest, Debian's ucx-utils) over droce's libibverbs.so.1, two
# processes on net_memif, beside droce-perf's own figures and the raw
# net_memif rate droce-perf measures in the same run (same PMD, same
# sizes). Figures, never pass/fail.
set -uo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
ucx="$top/test/verbs/ucx-pair.sh"
run="$build/app/droce-run"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
command -v ucx_perftest >/dev/null || { echo "no ucx_perftest: skipped"; exit 0; }
export VP_TIMEOUT=${VP_TIMEOUT:-120}

echo "droce-perf (embedded) and the raw PMD, this run:"
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write --size 8 --lat --iters 20000 2>&1 | grep -E '^ (op|write) '
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write --size 64,65536 --iters 100000 2>&1 | grep -E '^ write '
# UCT's zero-copy bandwidth tests keep one operation in flight unless -O
# says more: the same depth, for put_bw's default row
echo "droce-perf 64 KB WRITE, one in flight (--depth 1):"
"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
	--op write --size 65536 --depth 1 --iters 30000 2>&1 | grep -E '^ write '

echo
printf '%-40s %8s %12s %12s %12s\n' "ucx_perftest (UCX_TLS)" bytes "lat us p50" "MB/s" "msg/s"
one() {	# one LABEL TLS TEST SIZE ARGS...
	local label=$1 tls=$2 test=$3 size=$4; shift 4
	"$ucx" "$run" "$tls" "$test" -s "$size" "$@" > "$tmp" 2>&1 ||
		{ echo "$label: failed"; return; }
	# Final: iters p50 lat-avg lat-overall bw-avg bw-overall rate-avg rate-overall
	awk -v l="$label" -v s="$size" '$1 == "Final:" {
		printf "%-40s %8s %12.3f %12.1f %12.0f\n", l, s, $3, $7, $9; exit }' "$tmp"
}
for t in "rc_verbs,ud_verbs:aux" ud_verbs; do
	one "tag_lat ($t)" "$t" tag_lat 8 -n 20000
	one "tag_bw ($t)" "$t" tag_bw 64 -n 200000
	one "tag_bw ($t)" "$t" tag_bw 65536 -n 5000
	one "ucp_put_bw ($t)" "$t" ucp_put_bw 65536 -n 5000
done
one "put_lat (UCT rc_verbs)" uct:rc_verbs put_lat 8 -n 20000
one "am_bw (UCT rc_verbs, bcopy)" uct:rc_verbs am_bw 64 -D bcopy -n 200000
one "put_bw (UCT rc_verbs, zcopy)" uct:rc_verbs put_bw 65536 -D zcopy -n 5000
one "put_bw (UCT rc_verbs, zcopy, -O 16)" uct:rc_verbs put_bw 65536 -D zcopy -O 16 -n 20000
# the same attached to two droced (idle polling: two daemons and two
# busy ucx_perftest processes share the CPUs)
export DAEMONS="$build/app/droced"
one "tag_lat (rc, attached)" "rc_verbs,ud_verbs:aux" tag_lat 8 -n 2000
one "tag_bw (rc, attached)" "rc_verbs,ud_verbs:aux" tag_bw 64 -n 200000
one "tag_bw (rc, attached)" "rc_verbs,ud_verbs:aux" tag_bw 65536 -n 5000
