#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpi-pair.sh DROCE-RUN TLS [--daemons DROCED]: Debian's unmodified Open
# MPI (openmpi-bin, pml ucx) runs a 2-rank job (mpi_check.py, mpi4py)
# whose ranks talk over droce alone: UCX restricted to UCX_TLS=TLS on
# droce's device, no shared-memory or TCP transport left to fall back on,
# so a rank's messages to itself take droce's loopback. The ranks are two
# droce processes joined by a net_memif link of their own (10.9.0.1 and
# 10.9.0.2), or with --daemons attached to two droced joined by it.
# Passes when mpirun exits 0 and both ranks report their checks held.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
. "$here/../common/daemon-lib.sh"
run=$1 tls=$2; shift 2
droced=
[ "${1:-}" = --daemons ] && droced=$2
command -v mpirun >/dev/null || { echo "no mpirun (openmpi-bin): skip"; exit 77; }
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null ||
	{ echo "no mpi4py (python3-mpi4py): skip"; exit 77; }
[ -d /dev/infiniband ] || mkdir -p /dev/infiniband 2>/dev/null ||
	{ echo "no /dev/infiniband and cannot make it: skip"; exit 77; }

work=$(mktemp -d /tmp/droce-mpi.XXXXXX)
tag=$(basename "$work" | tr -dc 'a-zA-Z0-9')
mpid= dpid_a= dpid_b=
cleanup() {
	kill_all $mpid $dpid_a $dpid_b
	rm -rf "$work" /var/run/dpdk/mpa$tag /var/run/dpdk/mpb$tag
}
trap cleanup EXIT

if [ -n "$droced" ]; then
	daemons_start "$droced" "$work"
	rank0=("DROCE_DAEMON=$work/a.sock")
	rank1=("DROCE_DAEMON=$work/b.sock")
else
	memif="$work/memif.sock"
	rank0=("DROCE_DEVARGS=net_memif0,role=server,socket=$memif"
		DROCE_IPV4=10.9.0.1 "DROCE_EAL=--file-prefix mpa$tag")
	rank1=("DROCE_DEVARGS=net_memif0,role=client,socket=$memif"
		DROCE_IPV4=10.9.0.2 "DROCE_EAL=--file-prefix mpb$tag")
fi
export UCX_TLS=$tls UCX_NET_DEVICES=droce0:1 UCX_WARN_UNUSED_ENV_VARS=n
# pml ucx or nothing; no byte transfer layer but 'self' (ob1's, unused),
# so neither shared memory nor TCP can carry the job
mca=(--mca pml ucx --mca btl self --mca mtl ^ofi,psm2
	--mca mca_base_component_show_load_errors 0)
py=(/usr/bin/python3 "$here/mpi_check.py")
echo "mpirun ${mca[*]} (UCX_TLS=$tls${droced:+, attached to droced})"
# droce-run's drop-in, not the build's libraries meson puts on the path
timeout -k 5 180 env -u LD_LIBRARY_PATH mpirun --allow-run-as-root \
	--oversubscribe --bind-to none "${mca[@]}" \
	-x UCX_TLS -x UCX_NET_DEVICES -x UCX_WARN_UNUSED_ENV_VARS \
	-np 1 "$run" "${rank0[@]}" "${py[@]}" : \
	-np 1 "$run" "${rank1[@]}" "${py[@]}" > "$work/mpi.log" 2>&1 &
mpid=$!
wait $mpid; rc=$?
mpid=
echo "----- mpirun (exit $rc)"; cat "$work/mpi.log"
fail=0
if [ -n "$droced" ]; then
	daemons_stop "$work" || fail=1
fi
[ $rc -eq 0 ] || { echo "FAIL: mpirun exited $rc"; fail=1; }
for r in 0 1; do
	grep -q "^rank $r: ping-pong and allreduce ok" "$work/mpi.log" ||
		{ echo "FAIL: rank $r did not report ok"; fail=1; }
done
[ $fail -eq 0 ] && echo "PASS: Open MPI over droce ($tls)"
exit $fail
