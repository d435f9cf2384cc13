#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# examples/embed_write, server and client: the server's droce progresses in
# its background thread while its application waits. Modes:
#   thread  over net_memif (default)
#   lcores  over net_memif, on an lcore each application hands droce
#           (DROCE_PROGRESS_LCORES, droce_port_run via rte_eal_remote_launch)
#   tap     over two net_tap ports joined by a kernel bridge
#   tap-csum  the same with the IPv4 header checksum offloaded to net_tap
#           (EMBED_IP_CSUM): the client must say it offloaded its frames,
#           and the server's droce drops frames with a bad sum
#   squat   over net_memif, the client first, while SQUATTER (argument 3,
#           test/dataplane/memif_squat) holds the server's socket with a
#           port it never starts: the client is refused, and must connect
#           again once the real server has started
set -uo pipefail
exe=$1
mode=${2:-thread}
squatter=${3:-}
srv_l="-l 0"; cli_l="-l 1"
dir=$(mktemp -d /tmp/droce-embed.XXXXXX)
tag=$(printf '%s' "$$$RANDOM" | md5sum | cut -c1-6)
srv_dev="net_memif0,role=server,socket=$dir/s.sock"
cli_dev="net_memif0,role=client,socket=$dir/s.sock"
br="" pid="" jpid=""
case $mode in
tap-csum)
	export EMBED_IP_CSUM=1
	mode=tap ;;
esac
case $mode in
lcores)
	export EMBED_LCORES=1
	srv_l="-l 0,1 --main-lcore 0"; cli_l="-l 0,1 --main-lcore 1" ;;
tap)
	command -v ip >/dev/null || { echo "no iproute2: skip"; exit 77; }
	br="drbr$tag"
	ip link add "$br" type bridge 2>/dev/null ||
		{ echo "cannot create a bridge: skip"; exit 77; }
	ip link set "$br" up
	srv_dev="net_tap0,iface=dts$tag"
	cli_dev="net_tap0,iface=dtc$tag" ;;
esac
cleanup() {
	[ -n "$pid" ] && kill $pid 2>/dev/null
	[ -n "$jpid" ] && kill $jpid 2>/dev/null
	[ -n "$br" ] && ip link del "$br" 2>/dev/null
	[ -n "${cpid:-}" ] && kill $cpid 2>/dev/null
	rm -rf "$dir" /var/run/dpdk/ews$tag /var/run/dpdk/ewc$tag /var/run/dpdk/ewq$tag
}
trap cleanup EXIT
if [ "$mode" = tap ]; then
	# the PMD creates the tap devices: put each on the bridge once it is
	# there. net_tap gives the kernel side droce's own MAC, and a bridge
	# keeps frames for a port's own address for the host: the kernel
	# side gets another one. Kept so for the whole run, not set once:
	# with a one-time change, ~1 run in 30 failed with the server's frames
	# never reaching the client (the server got and ACKed every retry),
	# as when the bridge holds the client's address as its own: net_tap
	# sets the kernel side's MAC itself at probe, after the device
	# appears, and may undo ours.
	( while :; do
		n=0
		for t in dts$tag dtc$tag; do
			n=$((n + 1))
			[ -e /sys/class/net/$t ] || continue
			want="02:00:5e:00:00:0$n"
			[ "$(cat /sys/class/net/$t/address 2>/dev/null)" = "$want" ] ||
				ip link set "$t" address "$want" 2>/dev/null
			[ -e /sys/class/net/$t/master ] ||
				ip link set "$t" master "$br" 2>/dev/null
		done
		sleep 0.02
	done ) &
	jpid=$!
fi
if [ "$mode" = squat ]; then
	# the squatter's port is the server's: same socket, never started
	"$squatter" --file-prefix ewq$tag -l 0 --no-pci --log-level=4 \
		--vdev "$srv_dev" -- 3 > "$dir/squat.out" 2>&1 &
	pid=$!
	# (net_memif's socket is abstract by default: no file to wait for)
	for _ in $(seq 1 200); do
		grep -q holding "$dir/squat.out" && break
		sleep 0.05
	done
	grep -q holding "$dir/squat.out" ||
		{ cat "$dir/squat.out"; echo "FAIL: no squatter"; exit 1; }
	# log level 7 (INFO): droce says when it connects again
	"$exe" client "$dir" 10.197.0.2 "$cli_dev" \
		-- --file-prefix ewc$tag $cli_l --no-pci --log-level=7 \
		> "$dir/cli.out" 2>&1 &
	cpid=$!
	wait $pid
	pid=""
	cat "$dir/squat.out"
	"$exe" server "$dir" 10.197.0.1 "$srv_dev" \
		-- --file-prefix ews$tag $srv_l --no-pci --log-level=4 > "$dir/srv.out" &
	pid=$!
	wait $cpid
	rc=$?
	wait $pid
	src=$?
	pid=""
	cat "$dir/cli.out" "$dir/srv.out"
	[ $rc -eq 0 ] && [ $src -eq 0 ] || exit 1
	# the client really was refused first, and connected again
	grep -q "connecting again" "$dir/cli.out" ||
		{ echo "FAIL: the client never had to connect again"; exit 1; }
	echo "ok: the refused client connected again"
	exit 0
fi
"$exe" server "$dir" 10.197.0.1 "$srv_dev" \
	-- --file-prefix ews$tag $srv_l --no-pci --log-level=4 > "$dir/srv.out" &
pid=$!
sleep 0.3
"$exe" client "$dir" 10.197.0.2 "$cli_dev" \
	-- --file-prefix ewc$tag $cli_l --no-pci --log-level=4 | tee "$dir/cli.out"
rc=${PIPESTATUS[0]}
wait $pid
src=$?
pid=""
cat "$dir/srv.out"
[ $rc -eq 0 ] && [ $src -eq 0 ] || exit 1
if [ -n "${EMBED_IP_CSUM:-}" ]; then
	# every WRITE and the SEND left with its sum filled in by the PMD
	n=$(sed -n 's/^client: \([0-9]*\) frames sent with the IPv4 checksum offloaded/\1/p' "$dir/cli.out")
	[ "${n:-0}" -ge 1001 ] ||
		{ echo "FAIL: the client offloaded ${n:-no} IPv4 checksums"; exit 1; }
	echo "ok: $n frames left with the IPv4 checksum offloaded, and arrived"
fi
exit 0
