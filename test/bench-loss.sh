#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-loss.sh [BUILD] [ITERS]: what random loss costs over net_memif,
# between two droce-perf processes (test/dataplane/perf-pair.sh): one RC
# QP, 128 64 KB messages in flight, WRITE, SEND and READ, at each loss
# rate each way (droce's fault injection on receive, both sides) beside
# the lossless run and the raw rate of the same PMD in the same run.
# Prints, per run: goodput, its share of lossless, frames sent per frame
# needed (WRITE and SEND: the client's; READ: the server's responses),
# retransmissions, timeouts and sequence NAKs. BENCH_SR=1: the same with
# selective repeat. The same in virtual time at 25 and 100 Gbit/s:
# droce-loss-bench (doc/perf-loss.md).
set -uo pipefail
build=${1:-build}
iters=${2:-2000}
top=$(cd "$(dirname "$0")/.." && pwd)
pair="$top/test/dataplane/perf-pair.sh"
perf="$build/app/droce-perf"
losses=${BENCH_LOSSES:-"0 61 244 977 3906 10000 50000"}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

printf '%-5s %8s %9s %7s %6s %7s %6s %7s %s\n' op loss Gbit/s of-0 ampl \
	retx tmo seqNAK raw-Gbit/s
for op in ${BENCH_OPS:-write send read}; do
	base=
	for ppm in $losses; do
		args=(--op "$op" --size 65536 --depth 128 --outs 16
			--iters "$iters" --verify)
		# BENCH_SR=1: selective repeat on both sides
		[ "${BENCH_SR:-0}" = 1 ] && args+=(--sr)
		# the raw rate once, with the lossless run
		[ "$ppm" = 0 ] || args+=(--no-raw --fault "$ppm,0,0,0")
		# (droce-perf fails a run in which one side's receive, with few
		# frames, had none dropped; its figures still stand)
		timeout 900 "$pair" "$perf" memif -- "${args[@]}" > "$out" 2>&1
		gbps=$(awk -v op="$op" '$1 == op && NF >= 5 {print $5; exit}' "$out")
		if [ -z "$gbps" ] || ! grep -qE ' (ok|verified)$' "$out"; then
			echo "$op at $ppm ppm: failed"; tail -5 "$out"
			continue
		fi
		raw=-
		[ "$ppm" = 0 ] && raw=$(awk -v op="$op" \
			'$1 == op && NF >= 8 {print $7; exit}' "$out")
		[ "$ppm" = 0 ] && base=$gbps
		read -r ctx stx retx tmo nak <<< "$(awk '/ transport:/ {
			print $4, $7, $9, $11, $14 }' "$out")"
		needed=$((iters * 64))
		if [ "$ppm" = 0 ]; then
			ampl=1.00 retx=0 tmo=0 nak=0
		elif [ "$op" = read ]; then
			ampl=$(awk -v s="$stx" -v n="$needed" 'BEGIN {printf "%.2f", s / n}')
		else
			ampl=$(awk -v s="$ctx" -v n="$needed" 'BEGIN {printf "%.2f", s / n}')
		fi
		share=$(awk -v g="$gbps" -v b="${base:-0}" \
			'BEGIN {printf "%.1f%%", (b > 0 ? 100 * g / b : 0)}')
		case $ppm in
		0) loss=0 ;; 61) loss=1/16384 ;; 244) loss=1/4096 ;;
		977) loss=1/1024 ;; 3906) loss=1/256 ;;
		*) loss="$ppm ppm" ;;
		esac
		[ "$ppm" -ge 10000 ] && loss="$((ppm / 10000))%"
		printf '%-5s %8s %9s %7s %6s %7s %6s %7s %s\n' "$op" "$loss" \
			"$gbps" "$share" "$ampl" "$retx" "$tmo" "$nak" \
			"$raw"
	done
done
