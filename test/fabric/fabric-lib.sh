# SPDX-License-Identifier: BSD-3-Clause
# Sourced by test/fabric/incast.sh and test/bench-incast.sh: a
# droce-switch with 2N net_memif ports and an N:1 incast through it.
#
# Ports 0..N-1: one droce-perf client (a sender) each. Ports N..2N-1: one
# droce-perf server each, given to the switch as one --shared-link: the
# virtual functions of one host's NIC port, so every sender's frames meet
# in one egress queue, the receiving host's link. (droce-perf serves one
# client a process, and a net_memif client port is one process's; a
# shared link is how N of them stand behind one port of the switch.)
#
# fab_start SWITCH N SWITCH-ARGS...  the switch (its log: $fab_work/switch.log)
# fab_incast PERF N CLIENT-ARGS...   the incast; 0 when every side exited 0
# fab_stop                           SIGTERM to the switch; its exit status
# fab_cleanup                        everything, failed or not (trap it)
# FAB_KEEP=1 keeps the logs; FAB_EAL_EXTRA: more EAL options for all
# (--log-level=pmd.net.memif:debug, say)
# CLIENT-ARGS go to the receivers too (droce-perf's --cc none, say).
# FAB_IPV6=1: the hosts also get IPv6 addresses (fd00:198:1::/64 the
# senders, fd00:198:2::/64 the receivers), and their QPs use them.

fab_work=$(mktemp -d /tmp/droce-fabric.XXXXXX)
fab_tag=$(printf '%s' "$$_$RANDOM" | md5sum | cut -c1-6)
fab_sw_pid=""
fab_pids=()
fab_eal="--no-pci --log-level=lib.eal:4 --log-level=pmd:4 ${FAB_EAL_EXTRA:-}"

fab_cleanup() {
	local p
	for p in "${fab_pids[@]}" $fab_sw_pid; do
		kill "$p" 2>/dev/null
	done
	sleep 0.2
	for p in "${fab_pids[@]}" $fab_sw_pid; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# FAB_KEEP=1: the logs and sockets stay, for a look after a failure
	[ "${FAB_KEEP:-0}" = 1 ] && echo "kept $fab_work" ||
		rm -rf "$fab_work"
	rm -rf /var/run/dpdk/fb*"$fab_tag"
	# a side that did not run its EAL cleanup leaves its pages behind
	rm -f /dev/hugepages/fb*"$fab_tag"map_*
}

fab_start() {
	local sw=$1 n=$2 i vdevs=()
	shift 2
	for ((i = 0; i < 2 * n; i++)); do
		vdevs+=(--vdev "net_memif$i,role=server,socket=$fab_work/p$i.sock")
	done
	# no hugepages: the switch's pool is small, and the hosts need them.
	# nice -20: a switch is hardware, it drains its queues on time; with
	# nine processes on two CPUs a fair share left it waiting for the
	# CPU for milliseconds, its link far below the rate set. It naps
	# when idle, so the hosts keep the CPUs it does not use. (Not root:
	# nice says so and runs it as it is.)
	# memif's connects and disconnects in the switch's log (info): a
	# host whose link went down mid-run shows there
	nice -n -20 "$sw" $fab_eal --log-level=pmd.net.memif:info \
		--no-huge -m 256 -l 0 --file-prefix "fbsw$fab_tag" \
		"${vdevs[@]}" -- "$@" > "$fab_work/switch.log" 2>&1 &
	fab_sw_pid=$!
	for ((i = 0; i < 300; i++)); do
		grep -q "forwarding" "$fab_work/switch.log" && return 0
		kill -0 "$fab_sw_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "droce-switch did not start:"; cat "$fab_work/switch.log"
	return 1
}

fab_stop() {
	local rc
	kill -TERM "$fab_sw_pid" 2>/dev/null
	wait "$fab_sw_pid"
	rc=$?
	fab_sw_pid=""
	return $rc
}

fab_incast() {
	local perf=$1 n=$2 i base rc=0 srv=() cli=() lc s6=() c6=()
	shift 2
	base=$((20000 + RANDOM % 20000))
	for ((i = 0; i < n; i++)); do
		# servers and clients alternate between the two CPUs
		lc=$(((i + 1) % 2))
		[ "${FAB_IPV6:-0}" = 1 ] && s6=(--ip6 "fd00:198:2::$((i + 1))")
		"$perf" --server "${s6[@]}" \
			--vdev "net_memif0,role=client,socket=$fab_work/p$((n + i)).sock" \
			--ip "10.198.2.$((i + 1))" --port $((base + i)) \
			--eal "--file-prefix fbs$i$fab_tag -l $lc $fab_eal" "$@" \
			> "$fab_work/server$i.log" 2>&1 &
		srv+=($!)
		fab_pids+=($!)
	done
	sleep 0.5
	for ((i = 0; i < n; i++)); do
		lc=$((i % 2))
		[ "${FAB_IPV6:-0}" = 1 ] && c6=(--ip6 "fd00:198:1::$((i + 1))")
		"$perf" --client "${c6[@]}" \
			--vdev "net_memif0,role=client,socket=$fab_work/p$i.sock" \
			--ip "10.198.1.$((i + 1))" --peer-ip "10.198.2.$((i + 1))" \
			--port $((base + i)) \
			--eal "--file-prefix fbc$i$fab_tag -l $lc $fab_eal" "$@" \
			> "$fab_work/client$i.log" 2>&1 &
		cli+=($!)
		fab_pids+=($!)
	done
	for ((i = 0; i < n; i++)); do
		if ! wait "${cli[$i]}"; then
			echo "sender $i failed:"
			grep -v -e '^EAL' -e '^TELEMETRY' "$fab_work/client$i.log" |
				tail -15
			rc=1
		fi
	done
	for ((i = 0; i < n; i++)); do
		if ! wait "${srv[$i]}"; then
			echo "receiver $i failed:"
			grep -v -e '^EAL' -e '^TELEMETRY' "$fab_work/server$i.log" |
				tail -15
			rc=1
		fi
	done
	fab_pids=()
	return $rc
}

# fab_sum REGEX FIELD FILES...: the sum of the number after FIELD on
# the lines matching REGEX
fab_sum() {
	local re=$1 f=$2
	shift 2
	grep -h -E -- "$re" "$@" 2>/dev/null |
		awk -v f="$f" '{ for (i = 1; i < NF; i++) if ($i == f) s += $(i + 1) }
			END { print s + 0 }'
}
