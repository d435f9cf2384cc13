# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the scripts that run programs attached to droced
# (test/daemon/daemon-pair.sh, test/verbs/verbs-pair.sh --daemons): two
# daemons joined by a net_memif link of their own, A at 10.9.0.1 and B at
# 10.9.0.2, polling idle unless DAEMON_POLL says busy (a test machine has
# few CPUs). Their sockets are $work/a.sock and $work/b.sock.

# daemons_start DROCED WORK [DROCE_KEY=VALUE...]: sets dpid_a, dpid_b,
# and tele_a, tele_b: their telemetry sockets. DAEMON_A_KEYS and
# DAEMON_B_KEYS: more keys for one of them (space between them)
daemons_start() {
	local droced=$1 w=$2 memif="$2/memif.sock" i tag a_keys b_keys
	shift 2
	read -r -a a_keys <<< "${DAEMON_A_KEYS:-}"
	read -r -a b_keys <<< "${DAEMON_B_KEYS:-}"
	tag=$(basename "$w" | tr -dc 'a-zA-Z0-9')
	tele_a=/var/run/dpdk/dda$tag/dpdk_telemetry.v2
	tele_b=/var/run/dpdk/ddb$tag/dpdk_telemetry.v2
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
	# droced's shared EAL loads every PMD, mlx5's among them, which link
	# libibverbs: the system's, not the drop-in a test's environment
	# (meson test) puts first
	env -u LD_LIBRARY_PATH "$droced" "DROCE_DEVARGS=net_memif0,role=server,socket=$memif,socket-abstract=no" \
		DROCE_IPV4=10.9.0.1 "DROCE_DAEMON=$w/a.sock" "DROCE_EAL=--file-prefix dda$tag" \
		DROCE_POLL=${DAEMON_POLL:-idle} "$@" "${a_keys[@]}" > "$w/droced-a.log" 2>&1 &
	dpid_a=$!
	echo $dpid_a > "$w/a.pid"
	for i in $(seq 100); do [ -S "$memif" ] && break; sleep 0.1; done
	env -u LD_LIBRARY_PATH "$droced" "DROCE_DEVARGS=net_memif0,role=client,socket=$memif,socket-abstract=no" \
		DROCE_IPV4=10.9.0.2 "DROCE_DAEMON=$w/b.sock" "DROCE_EAL=--file-prefix ddb$tag" \
		DROCE_POLL=${DAEMON_POLL:-idle} "$@" "${b_keys[@]}" > "$w/droced-b.log" 2>&1 &
	dpid_b=$!
	echo $dpid_b > "$w/b.pid"
	for i in $(seq 300); do
		[ -S "$w/a.sock" ] && [ -S "$w/b.sock" ] && break
		sleep 0.1
	done
}

# daemons_stop WORK [a-died]: 0 when both (B only, with a-died) were
# alive to the end and stopped cleanly on SIGTERM (an ASan or UBSan report
# would have ended them); prints their logs
daemons_stop() {
	local w=$1 a_died=${2:-} fail=0 p ra rb check="$dpid_a $dpid_b"
	[ -n "$a_died" ] && check=$dpid_b
	for p in $check; do
		if ! kill -0 "$p" 2>/dev/null; then
			echo "FAIL: droced (pid $p) died during the test"; fail=1
		fi
	done
	kill -TERM $dpid_a $dpid_b 2>/dev/null
	wait $dpid_a; ra=$?
	wait $dpid_b; rb=$?
	rm -rf "$(dirname "$tele_a")" "$(dirname "$tele_b")"
	echo "----- droced A (exit $ra)"; cat "$w/droced-a.log"
	echo "----- droced B (exit $rb)"; cat "$w/droced-b.log"
	if [ -z "$a_died" ]; then
		[ $ra -eq 0 ] || { echo "FAIL: droced A exited $ra"; fail=1; }
	fi
	[ $rb -eq 0 ] || { echo "FAIL: droced B exited $rb"; fail=1; }
	return $fail
}
