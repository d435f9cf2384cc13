#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpi-ranks.sh DROCE-RUN DROCED NRANKS [RUNS]: Debian's unmodified Open
# MPI (openmpi-bin, pml ucx) runs an NRANKS-rank job (mpi_ranks.py,
# mpi4py) RUNS times in a row (1 unless given), every rank attached to
# the same droced: one daemon on a net_memif port with no peer (10.9.0.1),
# so every message between ranks, a rank's to itself among them, takes
# droce's loopback in that daemon. UCX is restricted to droce's verbs
# transports on droce0:1, no shared-memory or TCP transport left to fall
# back on (Open MPI's byte transfer layers: 'self' only; its coll sm and
# han, which map shared memory of their own, off).
#
# MPI_RANKS_TLS: the UCX_TLS values the runs take in turn (default
# 'rc_verbs,ud_verbs:aux ud_verbs': run 1 the first, run 2 the second,
# ...); MPI_RANKS_TIMEOUT: seconds a run may take (default 120 + 30 per
# rank: 16 ranks share 2 CPUs); DAEMON_POLL as in daemon-lib.sh.
#
# A run passes when mpirun exits 0 within its time and every rank printed
# 'rank R: ok' (it checked every byte it received: each pair of ranks'
# messages of 1 byte to 64 KB and 3 MB, an alltoall, an alltoallv, an
# allreduce and a bcast), and droced's telemetry shows the job's frames
# looped back (none sent to the port) and, after it, no session and no
# QP left. Each run prints its wall time; the first that fails ends the
# test, with its output and the daemon's log; droced must be alive to
# the end and stop cleanly.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
. "$here/../common/daemon-lib.sh"
[ $# -ge 3 ] || { echo "usage: $0 DROCE-RUN DROCED NRANKS [RUNS]" >&2; exit 2; }
run=$1 droced=$2 nranks=$3 runs=${4:-1}
case "$nranks$runs" in
*[!0-9]*) echo "NRANKS and RUNS are numbers" >&2; exit 2 ;;
esac
[ "$nranks" -ge 1 ] && [ "$runs" -ge 1 ] ||
	{ echo "NRANKS and RUNS are at least 1" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "no mpirun (openmpi-bin): skip"; exit 77; }
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null ||
	{ echo "no mpi4py (python3-mpi4py): skip"; exit 77; }
[ -d /dev/infiniband ] || mkdir -p /dev/infiniband 2>/dev/null ||
	{ echo "no /dev/infiniband and cannot make it: skip"; exit 77; }
read -r -a tls_list <<< "${MPI_RANKS_TLS:-rc_verbs,ud_verbs:aux ud_verbs}"
limit=${MPI_RANKS_TIMEOUT:-$((120 + 30 * nranks))}

work=$(mktemp -d /tmp/droce-ranks.XXXXXX)
tag=$(basename "$work" | tr -dc 'a-zA-Z0-9')
sock=$work/d.sock
tele_sock=/var/run/dpdk/dmr$tag/dpdk_telemetry.v2
dpid= mpid=

# ranks_left: pids of the processes attached to this test's daemon (their
# environment names its socket), whatever became of mpirun
ranks_left() {
	local e
	for e in /proc/[0-9]*/environ; do
		grep -qsaF "DROCE_DAEMON=$sock" "$e" 2>/dev/null &&
			basename "$(dirname "$e")"
	done
}
# tele: what droced's telemetry says after a run, as 'KEY=VALUE...': the
# port's loopback and NIC transmit counters, the sessions attached now
# and the QPs on the port but QP1 (the daemon's own)
tele() {
	/usr/bin/python3 - "$tele_sock" <<'PY'
import json, socket, sys
def query(cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    json.loads(s.recv(1 << 14))
    s.send(cmd.encode())
    r = json.loads(s.recv(1 << 20))
    s.close()
    return r[cmd.split(",")[0]]
p = query("/droce/port/stats,0")
d = query("/droced/stats")
qps = [q for q in query("/droce/qps,0") if q != 1]
print("lb=%d lbdrop=%d nictx=%d apps=%d qps=%d" % (p["loopback"],
      p["loopback_drops"], p["nic_tx_pkts"], d["apps"], len(qps)))
PY
}
# stop_job: mpirun's process group (timeout made it one), then any rank
# still attached
stop_job() {
	if [ -n "$mpid" ]; then
		kill -TERM -- -"$mpid" 2>/dev/null
		sleep 0.5
		kill -KILL -- -"$mpid" 2>/dev/null
		wait "$mpid" 2>/dev/null
		mpid=
	fi
	# shellcheck disable=SC2046
	kill_all $(ranks_left)
}
cleanup() {
	stop_job
	kill_all $dpid
	rm -rf "$work" /var/run/dpdk/dmr$tag
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# outside droce-run: its EAL loads Debian's PMDs (mlx5 links the
# system's libibverbs)
env -u LD_LIBRARY_PATH "$droced" \
	"DROCE_DEVARGS=net_memif0,role=server,socket=$work/memif.sock,socket-abstract=no" \
	DROCE_IPV4=10.9.0.1 "DROCE_DAEMON=$sock" "DROCE_EAL=--file-prefix dmr$tag" \
	DROCE_POLL=${DAEMON_POLL:-idle} > "$work/droced.log" 2>&1 &
dpid=$!
for _ in $(seq 300); do
	[ -S "$sock" ] && break
	kill -0 $dpid 2>/dev/null || break
	sleep 0.1
done
if [ ! -S "$sock" ]; then
	echo "FAIL: droced did not start"; cat "$work/droced.log"; exit 1
fi

export UCX_NET_DEVICES=droce0:1 UCX_WARN_UNUSED_ENV_VARS=n
# pml ucx or nothing; no byte transfer layer but 'self' (ob1's, unused),
# so neither shared memory nor TCP can carry the job
mca=(--mca pml ucx --mca btl self --mca mtl ^ofi,psm2 --mca coll ^sm,han
	--mca mca_base_component_show_load_errors 0)
py=(/usr/bin/python3 "$here/mpi_ranks.py")

fail=0 passed=0 total_s=0 i=0
lb0=0 nictx0=0 lbdrop0=0
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	export UCX_TLS=${tls_list[$(((i - 1) % ${#tls_list[@]}))]}
	log=$work/run$i.log
	t0=$(date +%s.%N)
	# droce-run's drop-in, not the build's libraries meson puts on the
	# path; timeout leads a process group of its own: mpirun's
	timeout -k 10 "$limit" env -u LD_LIBRARY_PATH mpirun --allow-run-as-root \
		--oversubscribe --bind-to none "${mca[@]}" \
		-x UCX_TLS -x UCX_NET_DEVICES -x UCX_WARN_UNUSED_ENV_VARS \
		-np "$nranks" "$run" "DROCE_DAEMON=$sock" "${py[@]}" \
		> "$log" 2>&1 &
	mpid=$!
	wait $mpid; rc=$?
	mpid=
	t1=$(date +%s.%N)
	wall=$(echo "$t1 - $t0" | bc)
	total_s=$(echo "$total_s + $wall" | bc)
	bad=
	[ $rc -eq 0 ] || bad="mpirun exited $rc"
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && bad="timed out after ${limit} s"
	nok=0
	for ((r = 0; r < nranks; r++)); do
		if grep -q "^rank $r: ok$" "$log"; then
			nok=$((nok + 1))
		fi
	done
	[ $nok -eq "$nranks" ] || bad="${bad:+$bad; }$nok of $nranks ranks said ok"
	kill -0 $dpid 2>/dev/null || bad="${bad:+$bad; }droced died"
	# a rank left behind would still hold its session
	left=$(ranks_left | wc -l)
	if [ "$left" -gt 0 ]; then
		bad="${bad:+$bad; }$left rank(s) left behind"
		stop_job
	fi
	# the job's traffic went through droced's loopback, none of it to
	# the port, and every rank's session and QPs are gone (the daemon
	# notices a session's end a moment later)
	for _ in $(seq 50); do
		t=$(tele 2>/dev/null) || t=
		case "$t" in *" apps=0 qps=0") break ;; esac
		sleep 0.2
	done
	lb=0 nictx=0 apps='?' qps='?' lbdrop=0
	for kv in $t; do declare "$kv"; done
	[ -n "$t" ] || bad="${bad:+$bad; }no telemetry"
	dlb=$((lb - lb0))
	# each ordered pair of ranks moves 3.3 MB each way: 800 frames at
	# 4 KB
	[ $dlb -gt $((nranks * (nranks - 1) * 700)) ] ||
		bad="${bad:+$bad; }$dlb frames looped back: too few for the job"
	[ $((nictx - nictx0)) -lt 100 ] ||
		bad="${bad:+$bad; }$((nictx - nictx0)) frames to the port"
	[ "$apps" = 0 ] || bad="${bad:+$bad; }$apps session(s) still attached"
	[ "$qps" = 0 ] || bad="${bad:+$bad; }$qps QP(s) left on the port"
	printf 'run %d/%d: %d ranks, UCX_TLS=%s: %.1f s, %d frames looped back (%d dropped): %s\n' \
		$i "$runs" "$nranks" "$UCX_TLS" "$wall" $dlb $((lbdrop - lbdrop0)) "${bad:-ok}"
	lb0=$lb nictx0=$nictx lbdrop0=$lbdrop
	if [ -n "$bad" ]; then
		echo "----- mpirun (run $i, exit $rc)"; cat "$log"
		fail=1
		break
	fi
	passed=$((passed + 1))
done

kill -TERM $dpid 2>/dev/null
wait $dpid; drc=$?
dpid=
if [ $fail -ne 0 ] || [ $drc -ne 0 ]; then
	echo "----- droced (exit $drc)"; cat "$work/droced.log"
fi
[ $drc -eq 0 ] || { echo "FAIL: droced exited $drc"; fail=1; }
avg=$(echo "scale=1; $total_s / $i" | bc)
echo "summary: $passed of $runs runs of $nranks ranks passed" \
	"($i ran, ${total_s%.*} s in all, $avg s a run)"
if [ $fail -eq 0 ]; then
	echo "PASS: $runs runs of $nranks MPI ranks on one droced"
else
	echo "FAIL: run $i of $runs"
fi
exit $fail
