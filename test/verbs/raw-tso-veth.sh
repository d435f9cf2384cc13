#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# raw-tso-veth.sh DROCE-RUN RAW_TSO_TCP CHECK_PY: 64 KB of TCP with TSO from a
# RAW_PACKET QP into the Linux kernel's TCP stack. A veth pair between two
# network namespaces of the test's own: droce on one end (net_af_packet,
# framecnt=4096), on the other a Python server listening on a TCP socket,
# which must receive every byte; raw_tso_tcp plays the client (SYN, the
# SYN-ACK from its QP, then one ibv_wr_send_tso). tshark captures the
# kernel's end: CHECK_PY checks every segment droce sent (lengths, IDs,
# sequence numbers, flags, both checksums, no tcp.analysis complaint).
# Everything is torn down on any exit.
set -uo pipefail
run=$1 prog=$2 check=$3
[ "$(id -u)" -eq 0 ] || { echo "needs root: skip"; exit 77; }
command -v ip >/dev/null || { echo "no iproute2: skip"; exit 77; }
command -v tshark >/dev/null || { echo "no tshark: skip"; exit 77; }
tag=$$
nsd="drTd$tag"		# droce's end
nsk="drTk$tag"		# the kernel's
vd="td$tag" vk="tk$tag"
work=$(mktemp -d /tmp/droce-tso.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	ip netns del "$nsd" 2>/dev/null
	ip netns del "$nsk" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$nsd" || { echo "cannot create netns: skip"; exit 77; }
ip netns add "$nsk" || exit 1
ip -n "$nsd" link add "$vd" type veth peer name "$vk" netns "$nsk" || exit 1
ip netns exec "$nsd" sysctl -q -w "net.ipv6.conf.$vd.disable_ipv6=1"
ip netns exec "$nsk" sysctl -q -w "net.ipv6.conf.$vk.disable_ipv6=1"
ip -n "$nsd" link set "$vd" up
# room to take the 64 KB in one go as the window opens
ip netns exec "$nsk" sysctl -q -w net.ipv4.tcp_rmem="4096 1048576 6291456"
ip -n "$nsk" addr add 10.77.0.2/24 dev "$vk"
ip -n "$nsk" link set "$vk" up
ip -n "$nsk" link set lo up
kmac=$(ip netns exec "$nsk" cat "/sys/class/net/$vk/address")
dip=10.77.0.1
dmac=02:00:0a:4d:00:01		# droce's default: 02:00 + its IPv4 address
port=5201

# the kernel's side: every byte, in order, then the FIN
cat > "$work/server.py" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.2", int(sys.argv[1])))
s.listen(1)
s.settimeout(60)
print("listening", flush=True)
c, peer = s.accept()
c.settimeout(30)
data = bytearray()
while True:
    d = c.recv(1 << 20)
    if not d:
        break
    data += d
want = bytes((i * 131 + (i >> 8)) & 0xff for i in range(65536))
print("server: %d bytes from %s, then EOF" % (len(data), peer[0]))
if bytes(data) != want:
    bad = next((i for i in range(min(len(data), len(want)))
        if data[i] != want[i]), min(len(data), len(want)))
    print("server: FAIL: bytes differ from offset %d" % bad)
    sys.exit(1)
print("server: every byte right")
c.close()
EOF
ip netns exec "$nsk" tshark -i "$vk" -w "$work/cap.pcapng" -q \
	> "$work/tshark.log" 2>&1 &
pids+=($!)
ip netns exec "$nsk" python3 "$work/server.py" "$port" > "$work/server.log" 2>&1 &
srv=$!
pids+=($srv)
for _ in $(seq 1 100); do
	grep -q listening "$work/server.log" 2>/dev/null &&
		grep -q "Capturing on" "$work/tshark.log" 2>/dev/null && break
	sleep 0.1
done

timeout -k 5 60 ip netns exec "$nsd" "$run" \
	"DROCE_DEVARGS=net_af_packet0,iface=$vd,framecnt=4096" \
	"DROCE_IPV4=$dip" DROCE_MTU=1500 \
	"$prog" "$dip" "$dmac" 10.77.0.2 "$kmac" "$port" > "$work/client.log" 2>&1
crc=$?
wait "$srv"; src=$?
sleep 1
kill -INT "${pids[0]}" 2>/dev/null; wait "${pids[0]}" 2>/dev/null
echo "----- client (exit $crc)"; cat "$work/client.log"
echo "----- server (exit $src)"; cat "$work/server.log"
fail=0
[ $crc -eq 0 ] || { echo "FAIL: client exited $crc"; fail=1; }
[ $src -eq 0 ] || { echo "FAIL: server exited $src"; fail=1; }
grep -q "every byte right" "$work/server.log" || { echo "FAIL: the kernel's socket did not get the 64 KB"; fail=1; }
python3 "$check" "$work/cap.pcapng" "$dip" 65536 || fail=1
[ $fail -eq 0 ] && echo "PASS: 64 KB with TSO into the kernel's TCP socket"
exit $fail
