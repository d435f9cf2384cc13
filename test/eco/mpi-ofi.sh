#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpi-ofi.sh DROCE-RUN [--daemons DROCED]: Debian's unmodified Open MPI
# (openmpi-bin) runs a 2-rank job (test/verbs/mpi_check.py, mpi4py) over
# libfabric: pml cm, mtl ofi, provider verbs;ofi_rxm on droce, no byte
# transfer layer but 'self', so the ranks' messages (a rank's to itself
# too) go through droce alone. The ranks are two droce processes joined
# by a net_memif link of their own (10.9.0.1 and 10.9.0.2), or with
# --daemons attached to two droced joined by it. libfabric's verbs
# provider finds a device's address among the kernel's interfaces, so
# mpirun runs in a network namespace of its own whose veth pair carries
# both addresses (doc/ecosystem.md). Passes when mpirun exits 0 and both
# ranks report their checks held. Everything is torn down, also on
# failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
. "$here/../common/daemon-lib.sh"
run=$1; shift
droced=
[ "${1:-}" = --daemons ] && droced=$2
command -v mpirun >/dev/null || { echo "no mpirun (openmpi-bin): skip"; exit 77; }
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null ||
	{ echo "no mpi4py (python3-mpi4py): skip"; exit 77; }
components=$(env -u LD_LIBRARY_PATH ompi_info 2>/dev/null)
grep -q 'MCA mtl: ofi' <<< "$components" ||
	{ echo "Open MPI has no ofi MTL: skip"; exit 77; }

work=$(mktemp -d /tmp/droce-mpo.XXXXXX)
tag=$(basename "$work" | tr -dc 'a-zA-Z0-9')
ns=dmo$tag
mpid= dpid_a= dpid_b=
cleanup() {
	kill_all $mpid $dpid_a $dpid_b
	ip netns del "$ns" 2>/dev/null
	rm -rf "$work" /var/run/dpdk/moa$tag /var/run/dpdk/mob$tag
}
trap cleanup EXIT
ip netns add "$ns" 2>/dev/null || { echo "cannot create a network namespace: skip"; exit 77; }
ip -n "$ns" link add v0 type veth peer name v1 || { echo "cannot create a veth pair: skip"; exit 77; }
for l in lo v0 v1; do ip -n "$ns" link set "$l" up; done
ip -n "$ns" addr add 10.9.0.1/24 dev v0
ip -n "$ns" addr add 10.9.0.2/24 dev v1

if [ -n "$droced" ]; then
	daemons_start "$droced" "$work"
	rank0=("DROCE_DAEMON=$work/a.sock")
	rank1=("DROCE_DAEMON=$work/b.sock")
else
	memif="$work/memif.sock"
	rank0=("DROCE_DEVARGS=net_memif0,role=server,socket=$memif"
		DROCE_IPV4=10.9.0.1 "DROCE_EAL=--file-prefix moa$tag")
	rank1=("DROCE_DEVARGS=net_memif0,role=client,socket=$memif"
		DROCE_IPV4=10.9.0.2 "DROCE_EAL=--file-prefix mob$tag")
fi
mca=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "verbs;ofi_rxm"
	--mca btl self --mca mca_base_component_show_load_errors 0)
py=(/usr/bin/python3 "$here/../verbs/mpi_check.py")
echo "mpirun ${mca[*]}${droced:+ (attached to droced)}"
# droce-run's drop-in, not the build's libraries meson puts on the path
timeout -k 5 180 ip netns exec "$ns" env -u LD_LIBRARY_PATH mpirun \
	--allow-run-as-root --oversubscribe --bind-to none "${mca[@]}" \
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
[ $fail -eq 0 ] && echo "PASS: Open MPI over libfabric's verbs;ofi_rxm on droce"
exit $fail
