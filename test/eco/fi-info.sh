#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# fi-info.sh DROCE-RUN: Debian's fi_info (libfabric 1.17) on droce lists
# droce0 in the verbs provider (MSG endpoints) and in verbs;ofi_rxm (RDM
# endpoints). libfabric loads droce's libibverbs.so.1 and librdmacm.so.1
# and the inert libefa.so.1 (its efa provider imports EFA_1.2); its verbs
# provider finds a device's address among the kernel's interfaces, so
# fi_info runs in a network namespace of its own whose veth carries the
# droce port's address (doc/ecosystem.md). Everything is torn down.
set -uo pipefail
run=$1
command -v fi_info >/dev/null || { echo "fi_info missing (libfabric-bin): skip"; exit 77; }
work=$(mktemp -d /tmp/droce-fii.XXXXXX)
tag=$(basename "$work" | tr -dc 'a-zA-Z0-9')
ns=dfi$tag
cleanup() {
	ip netns del "$ns" 2>/dev/null
	rm -rf "/var/run/dpdk/dfi$tag" "$work"
}
trap cleanup EXIT
ip netns add "$ns" 2>/dev/null || { echo "cannot create a network namespace: skip"; exit 77; }
ip -n "$ns" link add v0 type veth peer name v1 || { echo "cannot create a veth pair: skip"; exit 77; }
ip -n "$ns" link set v0 up
ip -n "$ns" link set v1 up
ip -n "$ns" addr add 10.9.0.1/24 dev v0
fail=0
one() {	# one PROVIDER EP-TYPE
	local out="$work/out" rc
	ip netns exec "$ns" timeout -k 5 120 "$run" DROCE_IPV4=10.9.0.1 \
		DROCE_DEVARGS=net_ring0 "DROCE_EAL=--file-prefix dfi$tag" \
		fi_info -p "$1" > "$out" 2>&1
	rc=$?
	cat "$out"
	# a provider line, then its domain droce0, then its type
	if [ $rc -eq 0 ] && awk -v p="$1" -v t="$2" '
		/^provider:/ { ok = ($2 == p); d = 0; next }
		ok && /domain: droce0$/ { d = 1; next }
		ok && d && $0 ~ "type: " t "$" { found = 1 }
		END { exit !found }' "$out"; then
		echo "ok: fi_info -p '$1' lists droce0 with $2"
	else
		echo "FAIL: fi_info -p '$1' (exit $rc) lists no droce0 with $2"
		fail=1
	fi
}
one verbs FI_EP_MSG
one "verbs;ofi_rxm" FI_EP_RDM
exit $fail
