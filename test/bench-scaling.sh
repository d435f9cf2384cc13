#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-scaling.sh PERF [CORES...]: droce over net_memif with N worker
# lcores per side (N queues, 2 QPs per queue; each worker owns its queues
# and their QPs), beside the raw rate of the same N queues in the same run.
# Figures, never pass/fail. Needs 2*max(N) CPUs: the server's workers run
# on CPUs 0..N-1, the client's on the next N. PERF may be droce-perf or
# droce-perf-static (which needs no DPDK on the machine).
set -uo pipefail
perf=$1; shift
cores_list=${*:-1 2 4 8}
top=$(cd "$(dirname "$0")/.." && pwd)
ncpu=$(nproc)
iters_per_core=${SCALE_ITERS:-1000000}
out=$(mktemp -d /tmp/droce-scale.XXXXXX)
trap 'rm -rf "$out"' EXIT

# hugepages if they can be had, else --no-huge with room for N queues
if [ "$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)" -lt 1024 ]; then
	echo 2048 > /proc/sys/vm/nr_hugepages 2>/dev/null
fi
mkdir -p /dev/hugepages
grep -q hugetlbfs /proc/mounts || mount -t hugetlbfs none /dev/hugepages 2>/dev/null
extra=""
if [ "$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)" -lt 512 ] ||
		! grep -q hugetlbfs /proc/mounts; then
	echo "no hugepages: --no-huge -m 4096"
	extra="--no-huge -m 4096"
fi
echo "machine: $ncpu CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

for n in $cores_list; do
	if [ $((2 * n)) -gt "$ncpu" ]; then
		echo "skip $n cores: $ncpu CPUs"; continue
	fi
	export PAIR_SRV_LCORES="0-$((n - 1))"
	export PAIR_CLI_LCORES="$n-$((2 * n - 1))"
	[ "$n" = 1 ] && PAIR_SRV_LCORES=0 PAIR_CLI_LCORES=1
	# 64 B and 4 KB: SCALE_ITERS per core; 64 KB: a fiftieth of that
	for part in small large; do
		if [ $part = small ]; then
			sizes=64,4096 iters=$((iters_per_core * n))
			ops=write,send,read,fetch_add
		else
			sizes=65536 iters=$((iters_per_core * n / 50))
			ops=write,send,read
		fi
		PAIR_EAL_EXTRA="$extra" "$top/test/dataplane/perf-pair.sh" "$perf" memif -- \
			--cores "$n" --queues "$n" --qps $((2 * n)) \
			--op $ops --size $sizes \
			--iters "$iters" --verify --json > "$out/$n.$part.json" 2>&1
		echo "== $n core(s) per side, $sizes: exit $?"
		grep -v '^{\|^  {\|^\]}' "$out/$n.$part.json" | head -20
	done
done

python3 - "$out" $cores_list <<'EOF'
import json, os, sys
d = sys.argv[1]
rows, base = [], {}
for n in sys.argv[2:]:
    res = []
    for part in ("small", "large"):
        try:
            txt = open(os.path.join(d, "%s.%s.json" % (n, part))).read()
            j = json.loads(txt[txt.index("{\"qps\""):txt.rindex("]}") + 2])
            res += j["results"]
        except (OSError, ValueError):
            pass
    res.sort(key=lambda r: (["write", "send", "read", "fetch_add"].index(r["op"])
                            if r["op"] in ("write", "send", "read", "fetch_add")
                            else 9, r["size"]))
    for r in res:
        key = (r["op"], r["size"])
        if int(n) == 1:
            base[key] = r["msgs_per_s"]
        rows.append((int(n), r))
print("| cores/side | op | bytes | msgs/s | Gbit/s | raw frames/s | raw Gbit/s "
      "| ratio | x 1 core | verified |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for n, r in rows:
    b = base.get((r["op"], r["size"]))
    sc = "%.2f" % (r["msgs_per_s"] / b) if b else ""
    print("| %d | %s | %d | %s | %.2f | %s | %.2f | %.1f%% | %s | %s |" % (
        n, r["op"].upper(), r["size"], format(int(r["msgs_per_s"]), ","),
        r["gbps"], format(int(r["raw_frames_per_s"]), ","), r["raw_gbps"],
        100 * r["ratio"], sc, "yes" if r["verified"] else "NO"))
EOF
