#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# device-run.sh KIT OUT [PART...]: the benchmarks that want a CPU per busy
# thread, run from a kit (test/device-kit.sh) on a machine that has many:
# the lent 16-CPU machine, where nothing is installed. Each PART's output
# goes to OUT/PART.log, a line per part to OUT/summary.txt. Figures, never
# pass/fail. Parts, in this order by default:
#   probe    the machine: CPUs, hugepages, network namespaces, the kit
#   scaling  droce-perf, 1, 2, 4 and 8 worker cores per side, beside raw
#            (bench-scaling.sh; its 1-core rows are issue 38's per-core
#            ratios, each side on a CPU of its own)
#   daemon   droced: two daemons and their applications (busy polling
#            on 8 CPUs or more), then one droced and two attached
#            ib_write_bw on other CPUs (bench-daemon.sh)
#   events   programs waiting on completion channels against polling
#            (bench-events.sh)
#   ucx      ucx_perftest beside droce-perf (bench-ucx.sh)
# DEVICE_PART_SECS: the most each part may take (240). A part that needs
# what the machine lacks (netns for qperf) says so in its log.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kit=$(cd "${1:?usage: device-run.sh KIT OUT [PART...]}" && pwd) || exit 2
out=${2:?usage: device-run.sh KIT OUT [PART...]}
shift 2
parts=${*:-probe scaling daemon events ucx}
secs=${DEVICE_PART_SECS:-240}
mkdir -p "$out" || exit 2
# shellcheck disable=SC1091
. "$kit/env.sh"
build=$kit/build

setup() {
	[ "$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)" -ge 1024 ] ||
		echo 2048 > /proc/sys/vm/nr_hugepages 2>/dev/null
	mkdir -p /dev/hugepages /dev/infiniband 2>/dev/null
	grep -q ' /dev/hugepages hugetlbfs' /proc/mounts ||
		mount -t hugetlbfs none /dev/hugepages 2>/dev/null
	# the scripts' port finder calls /usr/bin/python3 by name
	[ -x /usr/bin/python3 ] || ln -s "$(command -v python3)" /usr/bin/python3
}

probe() {
	echo "machine: $(nproc) CPUs,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	echo "kernel: $(uname -r); memory: $(awk '/MemTotal/ { print $2 / 1048576 " GiB" }' /proc/meminfo)"
	echo "hugepages: $(cat /proc/sys/vm/nr_hugepages) of 2 MB, hugetlbfs: $(grep -c hugetlbfs /proc/mounts)"
	if ip netns add droce-probe 2>/dev/null; then
		echo "network namespaces: yes"; ip netns del droce-probe
	else
		echo "network namespaces: no (qperf's rows will be missing)"
	fi
	for c in python3 taskset timeout awk ss ip ucx_perftest qperf; do
		printf '%s: %s\n' "$c" "$(command -v "$c" || echo MISSING)"
	done
	cat "$kit/MANIFEST"
	"$build/app/droce-perf" --help > /dev/null 2>&1
	echo "droce-perf runs: $([ $? -le 2 ] && echo yes || echo NO)"
	"$build/app/droced" --keys=verbs > /dev/null 2>&1
	echo "droced runs: $([ $? = 0 ] && echo yes || echo NO)"
	"$top/test/dataplane/perf-pair.sh" "$build/app/droce-perf" memif -- \
		--op write --size 64 --iters 100000 --verify 2>&1 | grep -E '^ *(op|write) '
}

part() {
	case $1 in
	probe) probe ;;
	scaling) SCALE_ITERS=${SCALE_ITERS:-1000000} \
		"$top/test/bench-scaling.sh" "$build/app/droce-perf" 1 2 4 8 ;;
	# busy daemons where each busy thread can have a CPU (the per-core
	# targets' configuration), idle ones where they would take the
	# applications' CPUs
	daemon) [ "$(nproc)" -ge 8 ] && export DAEMON_POLL=${DAEMON_POLL:-busy}
		DAEMON_BENCH_QPS=${DAEMON_BENCH_QPS:-2000} \
			"$top/test/bench-daemon.sh" "$build" ;;
	events) "$top/test/bench-events.sh" "$build" ;;
	ucx) "$top/test/bench-ucx.sh" "$build" ;;
	*) echo "unknown part $1"; return 2 ;;
	esac
}

# one part, in a process timeout can stop with everything under it
if [ -n "${DEVICE_RUN_PART:-}" ]; then
	part "$DEVICE_RUN_PART"
	exit
fi
setup
for p in $parts; do
	start=$(date +%s)
	DEVICE_RUN_PART=$p timeout -k 10 "$secs" "$0" "$kit" "$out" \
		> "$out/$p.log" 2>&1
	rc=$?
	printf '%-8s rc %3s  %4s s\n' "$p" "$rc" "$(( $(date +%s) - start ))" |
		tee -a "$out/summary.txt"
done
