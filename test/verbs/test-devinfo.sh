#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Unmodified Debian ibv_devices and ibv_devinfo -v on droce's
# libibverbs.so.1 (through droce-run): the droce device, its GUID, vendor,
# port state, MTU and the RoCEv2 GID table laid out like rxe's.
set -uo pipefail
run=$1
fail=0
for b in ibv_devices ibv_devinfo; do
	command -v $b >/dev/null || { echo "$b missing (ibverbs-utils): skip"; exit 77; }
done
expect() {	# expect OUTPUT-FILE REGEX WHAT
	if grep -qE "$2" "$1"; then
		echo "ok: $3"
	else
		echo "FAIL: $3 (no /$2/)"; fail=1
	fi
}
out=$(mktemp); trap 'rm -f "$out"' EXIT

env DROCE_IPV4=10.1.2.3 DROCE_MAC=02:11:22:33:44:55 "$run" ldd "$(command -v ibv_devinfo)" > "$out"
expect "$out" "libibverbs.so.1 => .*/drivers/ibverbs/libibverbs.so.1" \
	"ibv_devinfo loads droce's libibverbs.so.1"

env DROCE_IPV4=10.1.2.3 DROCE_MAC=02:11:22:33:44:55 "$run" ibv_devices > "$out" 2>&1 ||
	{ echo "FAIL: ibv_devices exit $?"; fail=1; }
cat "$out"
expect "$out" "droce0[[:space:]]+001122fffe334455" "ibv_devices: droce0, EUI-64 GUID"

env DROCE_IPV4=10.1.2.3 DROCE_MAC=02:11:22:33:44:55 "$run" ibv_devinfo -v > "$out" 2>&1 ||
	{ echo "FAIL: ibv_devinfo exit $?"; fail=1; }
expect "$out" "^hca_id:[[:space:]]+droce0" "hca_id droce0"
expect "$out" "node_guid:[[:space:]]+0011:22ff:fe33:4455" "node GUID"
if grep -qE "vendor_id:[[:space:]]+0x02c9" "$out"; then
	echo "FAIL: Mellanox's vendor id"; fail=1
else
	echo "ok: not Mellanox's vendor id"
fi
expect "$out" "state:[[:space:]]+PORT_ACTIVE" "port ACTIVE"
expect "$out" "link_layer:[[:space:]]+Ethernet" "link layer Ethernet"
expect "$out" "active_mtu:[[:space:]]+1024 \(3\)" "active_mtu 1024 for a 1500 port"
expect "$out" "GID\[  0\]:[[:space:]]+fe80::11:22ff:fe33:4455, RoCE v2" "GID 0 link-local"
expect "$out" "GID\[  1\]:[[:space:]]+::ffff:10.1.2.3, RoCE v2" "GID 1 IPv4-mapped"
expect "$out" "max_qp_rd_atom:[[:space:]]+128" "limits droce enforces (128 READs/atomics, as rxe)"

env DROCE_MTU=9000 DROCE_IPV4=10.1.2.3 "$run" ibv_devinfo > "$out" 2>&1
expect "$out" "active_mtu:[[:space:]]+4096 \(5\)" "active_mtu 4096 for a 9000 port"

# every symbol these binaries import exists with its version node
lib=$("$run" sh -c 'echo $LD_LIBRARY_PATH' | cut -d: -f1)/libibverbs.so.1
for b in ibv_devinfo ibv_devices ibv_rc_pingpong ibv_ud_pingpong \
		ibv_srq_pingpong ib_write_bw ib_read_lat ib_atomic_bw \
		/usr/lib/x86_64-linux-gnu/librdmacm.so.1; do
	[ -e "$b" ] || command -v "$b" >/dev/null || continue
	f=$b; [ -e "$f" ] || f=$(command -v "$b")
	objdump -T "$f" | awk '/\*UND\*/ && /IBVERBS/ {print $(NF-1), $NF}' |
	while read -r ver sym; do
		ver=${ver#(}; ver=${ver%)}
		if objdump -T "$lib" | awk 'NF >= 2 && !/\*UND\*/ {print $(NF-1), $NF}' |
				grep -qx "$ver $sym"; then :; else
			echo "FAIL: $b imports $sym@$ver, droce's library lacks it"
			exit 1
		fi
	done || fail=1
done
[ $fail = 0 ] && echo "ok: imported symbols and versions all present"

# rdma-core 44's whole public list (the system library's default versions)
sys=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
if [ -e "$sys" ]; then
	missing=$(comm -23 \
		<(objdump -T "$sys" | awk '!/\*UND\*/ && / DF / && $(NF-1) ~ /^IBVERBS_1/ {print $(NF-1), $NF}' | sort -u) \
		<(objdump -T "$lib" | awk '!/\*UND\*/ && / DF / {print $(NF-1), $NF}' | sort -u))
	if [ -n "$missing" ]; then
		echo "FAIL: rdma-core public symbols missing: $missing"; fail=1
	else
		echo "ok: every public symbol of rdma-core 44 exists with its version"
	fi
fi
exit $fail
