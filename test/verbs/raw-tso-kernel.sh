#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# raw-tso-kernel.sh DROCE-RUN RAW_TSO_TCP CHECK_PY [veth|tap]: 64 KB of TCP
# with TSO from a RAW_PACKET QP into the Linux kernel's TCP stack, where a
# Python server listening on a TCP socket must receive every byte;
# raw_tso_tcp plays the client (SYN, the SYN-ACK from its QP, then one
# ibv_wr_send_tso). tshark captures the kernel's end: CHECK_PY checks
# every segment droce sent (lengths, IDs, sequence numbers, flags, both
# checksums, no tcp.analysis complaint).
#  veth: a veth pair between two network namespaces of the test's own,
#  droce on net_af_packet (no TSO: droce cuts the segments itself), the
#  server in the other namespace.
#  tap: droce on net_tap in a namespace of the test's own, the server in
#  the same namespace on the tap's kernel end. net_tap has TSO: droce
#  hands it frames of up to 64 segments (an MSS of 1400 keeps them within
#  its limit), and its nic_tx_tso counter, read on DPDK telemetry before
#  the client exits, must show it did.
# Everything is torn down on any exit.
set -uo pipefail
run=$1 prog=$2 check=$3 mode=${4:-veth}
[ "$(id -u)" -eq 0 ] || { echo "needs root: skip"; exit 77; }
command -v ip >/dev/null || { echo "no iproute2: skip"; exit 77; }
command -v tshark >/dev/null || { echo "no tshark: skip"; exit 77; }
tag=$$
nsd="drTd$tag"		# droce's end
nsk="drTk$tag"		# the kernel's (veth; tap: the same as droce's)
vd="td$tag" vk="tk$tag"
work=$(mktemp -d /tmp/droce-tso.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	ip netns del "$nsd" 2>/dev/null
	ip netns del "$nsk" 2>/dev/null
	rm -rf "$work" "/var/run/dpdk/dtso$tag"
}
trap cleanup EXIT
ip netns add "$nsd" || { echo "cannot create netns: skip"; exit 77; }
dip=10.77.0.1
dmac=02:00:0a:4d:00:01		# droce's default: 02:00 + its IPv4 address
kmac=02:00:0a:4d:00:02		# the kernel's end
port=5201
mss=()
if [ "$mode" = tap ]; then
	[ -c /dev/net/tun ] || { echo "no /dev/net/tun: skip"; exit 77; }
	nsk=$nsd
	vk=$vd			# the tap's kernel end, which net_tap makes
	devargs="net_tap0,iface=$vd"
	mss=(1400)
else
	ip netns add "$nsk" || exit 1
	ip -n "$nsd" link add "$vd" type veth peer name "$vk" netns "$nsk" ||
		exit 1
	ip netns exec "$nsd" sysctl -q -w "net.ipv6.conf.$vd.disable_ipv6=1"
	ip -n "$nsd" link set "$vd" up
	devargs="net_af_packet0,iface=$vd,framecnt=4096"
fi
ip -n "$nsk" link set lo up
# room to take the 64 KB in one go as the window opens
ip netns exec "$nsk" sysctl -q -w net.ipv4.tcp_rmem="4096 1048576 6291456"
# the kernel's end: its MAC and address, once it exists
kernel_end() {
	ip netns exec "$nsk" sysctl -q -w "net.ipv6.conf.$vk.disable_ipv6=1"
	ip -n "$nsk" link set "$vk" address "$kmac" &&
	ip -n "$nsk" addr add 10.77.0.2/24 dev "$vk" &&
	ip -n "$nsk" link set "$vk" up
}

# the kernel's side: every byte, in order, then the FIN
cat > "$work/server.py" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(1)
s.settimeout(90)
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
PY
ip netns exec "$nsk" python3 "$work/server.py" "$port" \
	> "$work/server.log" 2>&1 &
srv=$!
pids+=($srv)

# the client makes $work/ready once its port and QP are set up, sends
# its SYN once $work/go exists, and exits once $work/hold does
RAW_TSO_READY=$work/ready RAW_TSO_GO=$work/go RAW_TSO_HOLD=$work/hold \
	timeout -k 5 120 \
	ip netns exec "$nsd" "$run" "DROCE_DEVARGS=$devargs" \
	"DROCE_IPV4=$dip" DROCE_MTU=1500 "DROCE_EAL=--file-prefix dtso$tag" \
	"$prog" "$dip" "$dmac" 10.77.0.2 "$kmac" "$port" "${mss[@]}" \
	> "$work/client.log" 2>&1 &
cli=$!
pids+=($cli)
# the kernel's end and the capture once droce is done with the port: on
# tap, the PMD sets up the interface dumpcap captures on (a link going
# down under a live capture ends it)
for _ in $(seq 1 900); do
	[ -e "$work/ready" ] && break
	kill -0 "$cli" 2>/dev/null || break
	sleep 0.1
done
kernel_end || echo "FAIL: cannot set up the kernel's end $vk"
# dumpcap itself, with room to spare: tshark's parent does nothing here
# but start it, and the burst of 46 segments arrives at once
ip netns exec "$nsk" dumpcap -i "$vk" -w "$work/cap.pcapng" -q -B 16 \
	> "$work/tshark.log" 2>&1 &
cap=$!
pids+=($cap)
# the capture is live once its file holds the section and interface
# blocks (tshark says "Capturing on" a moment before that)
live=no
for _ in $(seq 1 300); do
	grep -q listening "$work/server.log" 2>/dev/null &&
		grep -q "Capturing on" "$work/tshark.log" 2>/dev/null &&
		[ "$(stat -c %s "$work/cap.pcapng" 2>/dev/null || echo 0)" -ge 100 ] &&
		{ live=yes; break; }
	sleep 0.1
done
touch "$work/go"
for _ in $(seq 1 900); do
	grep -q "peer acknowledged" "$work/client.log" && break
	kill -0 "$cli" 2>/dev/null || break
	sleep 0.1
done
# droce's counters before the client leaves: TSO frames the PMD cut,
# and those dropped
tso=$(/usr/bin/python3 - "/var/run/dpdk/dtso$tag/dpdk_telemetry.v2" \
	<<'PY' 2>/dev/null
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(12288)
s.send(b"/droce/port/stats,0")
st = json.loads(s.recv(65536))["/droce/port/stats"]
print(st["nic_tx_tso"], st["nic_tx_tso_drops"])
PY
)
# the segments are in dumpcap's ring until it reads and writes them; on
# tap, the interface and with it the capture end when the client exits,
# and what dumpcap has not read by then is lost (a loaded machine can
# keep it off the CPU that long): the client stays until the file holds
# them
end=$((SECONDS + 60))
while [ $SECONDS -lt $end ]; do
	python3 "$check" "$work/cap.pcapng" "$dip" 65536 >/dev/null 2>&1 &&
		break
	sleep 0.2
done
touch "$work/hold"
wait "$cli"; crc=$?
wait "$srv"; src=$?
kill -INT "$cap" 2>/dev/null; wait "$cap" 2>/dev/null
echo "----- client (exit $crc)"; cat "$work/client.log"
echo "----- server (exit $src)"; cat "$work/server.log"
echo "----- dumpcap (live before the SYN: $live)"; cat "$work/tshark.log"
echo "----- frames captured: $(tshark -r "$work/cap.pcapng" 2>/dev/null | wc -l)"
echo "----- droce's nic_tx_tso, nic_tx_tso_drops: ${tso:-unread}"
fail=0
[ $crc -eq 0 ] || { echo "FAIL: client exited $crc"; fail=1; }
[ $src -eq 0 ] || { echo "FAIL: server exited $src"; fail=1; }
grep -q "every byte right" "$work/server.log" ||
	{ echo "FAIL: the kernel's socket did not get the 64 KB"; fail=1; }
read -r n drops <<< "${tso:-x x}"
if [ "$mode" = tap ]; then
	# 65536 bytes in segments of 1400: a frame of 46 for net_tap,
	# then one segment droce cuts itself
	[ "$n" != x ] && [ "$n" -ge 1 ] && [ "$drops" -eq 0 ] ||
		{ echo "FAIL: net_tap did not cut droce's TSO frames"; fail=1; }
else
	[ "$n" = 0 ] ||
		{ echo "FAIL: nic_tx_tso on net_af_packet, which has no TSO"; fail=1; }
fi
python3 "$check" "$work/cap.pcapng" "$dip" 65536 || fail=1
[ $fail -eq 0 ] && echo "PASS: 64 KB with TSO ($mode) into the kernel's TCP socket"
exit $fail
