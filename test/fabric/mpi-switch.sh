#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpi-switch.sh SWITCH DROCE-RUN MPI-RANKS-PY [TLS]: Debian's unmodified
# Open MPI (openmpi-bin, pml ucx) runs a 4-rank job (mpi_ranks.py: every
# pair of ranks both ways, alltoall, alltoallv, allreduce, bcast, every
# byte checked) across four droce hosts, each its own process on its own
# port of droce-switch, the switch's ports drained at 2 Gbit/s with ECN
# marking (so DCQCN's notification and reaction points run under the
# job). UCX is restricted to droce's device (UCX_TLS=TLS, rc_verbs by
# default, ud_verbs to wire it up): no shared memory or TCP to fall
# back on. Passes when mpirun exits 0, every rank reports ok and the
# switch carried the job's frames; prints what the switch did.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sw=$1 run=$2 ranks_py=$3 tls=${4:-rc_verbs,ud_verbs:aux}
command -v mpirun >/dev/null || { echo "no mpirun (openmpi-bin): skip"; exit 77; }
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null ||
	{ echo "no mpi4py (python3-mpi4py): skip"; exit 77; }
[ -d /dev/infiniband ] || mkdir -p /dev/infiniband 2>/dev/null ||
	{ echo "no /dev/infiniband and cannot make it: skip"; exit 77; }
. "$here/fabric-lib.sh"
# droce-run puts droce's drop-in on the ranks' path; the switch (a DPDK
# primary loading its PMDs) and mpirun need the system's libraries
unset LD_LIBRARY_PATH
mpid=
cleanup() {
	[ -n "$mpid" ] && kill -- -"$mpid" 2>/dev/null
	fab_cleanup
}
trap cleanup EXIT

# four ports (fab_start makes 2N), each drained at 2 Gbit/s, ECN from
# 20 KB to 80 KB: the ranks' messages queue and get marked
fab_start "$sw" 2 --rate-mbps 2000 --kmin-kb 20 --kmax-kb 80 --pmax 0.2 ||
	exit 1
rank=()
for i in 0 1 2 3; do
	rank+=(-np 1 "$run"
		"DROCE_DEVARGS=net_memif0,role=client,socket=$fab_work/p$i.sock"
		"DROCE_IPV4=10.198.3.$((i + 1))"
		"DROCE_EAL=--file-prefix fbm$i$fab_tag"
		/usr/bin/python3 "$ranks_py" :)
done
unset 'rank[${#rank[@]}-1]'	# the last ':'
export UCX_TLS=$tls UCX_NET_DEVICES=droce0:1 UCX_WARN_UNUSED_ENV_VARS=n
mca=(--mca pml ucx --mca btl self --mca mtl ^ofi,psm2
	--mca mca_base_component_show_load_errors 0)
echo "mpirun -np 4 over droce-switch (UCX_TLS=$tls)"
setsid timeout -k 10 400 env -u LD_LIBRARY_PATH mpirun --allow-run-as-root \
	--oversubscribe --bind-to none "${mca[@]}" \
	-x UCX_TLS -x UCX_NET_DEVICES -x UCX_WARN_UNUSED_ENV_VARS \
	"${rank[@]}" > "$fab_work/mpi.log" 2>&1 &
mpid=$!
wait $mpid; rc=$?
mpid=
fab_stop; src=$?
echo "----- mpirun (exit $rc)"
grep -v -e '^EAL' -e '^TELEMETRY' "$fab_work/mpi.log"
echo "----- droce-switch (exit $src)"
grep -v -e '^EAL' -e '^TELEMETRY' "$fab_work/switch.log" | tail -20
fail=0
[ $rc -eq 0 ] || { echo "FAIL: mpirun exited $rc"; fail=1; }
# the job went through the switch, not around it
grep -qE "^port 0: rx_frames [1-9]" "$fab_work/switch.log" ||
	{ echo "FAIL: the switch carried none of rank 0's frames"; fail=1; }
for r in 0 1 2 3; do
	grep -q "^rank $r: ok$" "$fab_work/mpi.log" ||
		{ echo "FAIL: rank $r did not report ok"; fail=1; }
done
[ $fail -eq 0 ] && echo "PASS: a 4-rank Open MPI job across droce-switch"
exit $fail
