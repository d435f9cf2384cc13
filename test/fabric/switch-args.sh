#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# switch-args.sh DROCE-SWITCH: droce-switch refuses a malformed option
# with a message that names it, and stops before forwarding (its EAL on
# two net_null ports, no hugepages; nothing is started that outlives it);
# with good options it runs, answers telemetry, and stops on time.
set -uo pipefail
sw=$1
fails=0
prefix="fbargs$$"
out_file=$(mktemp /tmp/droce-switch-args.XXXXXX)
trap 'rm -rf /var/run/dpdk/$prefix "$out_file"' EXIT

# expect_refused "what the message must say" ARGS...
expect_refused() {
	local want=$1 out rc
	shift
	out=$(timeout 60 "$sw" --no-pci --no-huge -m 64 -l 0 \
		--file-prefix "$prefix" --log-level=lib.eal:4 \
		--vdev net_null0 --vdev net_null1 -- "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] || ! grep -q -- "$want" <<<"$out" ||
			grep -q "forwarding" <<<"$out"; then
		echo "FAIL: droce-switch $*: exit $rc, wanted a refusal saying '$want':"
		echo "$out" | tail -3
		fails=$((fails + 1))
	else
		echo "ok: droce-switch $*: $(grep -m1 -- "$want" <<<"$out")"
	fi
}

expect_refused "--pmax 1.5: want a number from 0 to 1" --pmax 1.5
expect_refused "--rate-mbps fast: want a number" --rate-mbps fast
expect_refused "--rate-mbps 2:100: no port 2 (2 ports)" --rate-mbps 2:100
expect_refused "--buffer-kb 0: want a number from 1" --buffer-kb 0
expect_refused "--burst-kb 4: want a number from 10" --burst-kb 4
expect_refused "--ecn 2: want" --ecn 2
expect_refused "port 1: --kmin-kb 50 not below --kmax-kb 20" \
	--kmin-kb 1:50 --kmax-kb 1:20
expect_refused "--shared-link 0: want two ports or more" --shared-link 0
expect_refused "--shared-link 0,0: want distinct ports" --shared-link 0,0
expect_refused "--interval-us 1: want a number from 10" --interval-us 1
expect_refused "unexpected argument extra" extra
# getopt_long would take it for --rate-mbps
expect_refused "unknown option --rate" --rate 100
expect_refused "unknown option --bogus" --bogus
# ... and the same switch with good options runs, answers telemetry
# while it does, and stops at its --duration with its report
"$sw" --no-pci --no-huge -m 64 -l 0 --file-prefix "$prefix" \
	--log-level=lib.eal:4 --vdev net_null0 --vdev net_null1 -- \
	--rate-mbps 1:100 --kmin-kb 5 --kmax-kb 20 --pmax 0.01 \
	--shared-link 0,1 --duration 4 > "$out_file" 2>&1 &
sw_pid=$!
tel=$(/usr/bin/python3 - "/var/run/dpdk/$prefix/dpdk_telemetry.v2" <<'PY'
import json, os, socket, sys, time
path = sys.argv[1]
for _ in range(100):
    if os.path.exists(path):
        break
    time.sleep(0.05)
def query(cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    json.loads(s.recv(16384))
    s.send(cmd.encode())
    r = json.loads(s.recv(65536))
    s.close()
    return r
# the socket is there from EAL's start, the commands once the ports are
for _ in range(100):
    if query("/droce_switch/ports")["/droce_switch/ports"] is not None:
        break
    time.sleep(0.05)
print(json.dumps(query("/droce_switch/ports")))
print(json.dumps(query("/droce_switch/queue,1")))
print(json.dumps(query("/droce_switch/port,1")))
PY
)
echo "$tel"
wait "$sw_pid"
rc=$?
if [ $rc -eq 0 ] && grep -q "^queue 0: ports 0,1 rate_mbps 0 " "$out_file"; then
	echo "ok: good options accepted, one queue for the shared link"
else
	echo "FAIL: good options (exit $rc):"; tail -5 "$out_file"
	fails=$((fails + 1))
fi
# the shared link's queue is port 0's, with port 0's settings
if grep -q '"/droce_switch/ports": \[0, 1\]' <<<"$tel" &&
		grep -q '"/droce_switch/queue": {"port": 0, "rate_mbps": 0,' <<<"$tel" &&
		grep -q '"kmin_bytes": 5120, "kmax_bytes": 20480' <<<"$tel" &&
		grep -q '"/droce_switch/port": {"rx_frames": [0-9]*,.*"queue": 0}' <<<"$tel"; then
	echo "ok: telemetry answers for ports and queues"
else
	echo "FAIL: telemetry"
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
