# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the scripts that run a program pair (verbs-pair.sh,
# cm-pair.sh, rxe-pair.sh): stopping what they started, and checking a
# side's output.

# kill_all PID...: TERM, a moment (none when all are gone: most have
# exited already), then KILL what is left
kill_all() {
	local p live i
	for p in "$@"; do kill "$p" 2>/dev/null; done
	for i in 1 2; do
		live=
		for p in "$@"; do kill -0 "$p" 2>/dev/null && live=1; done
		[ -z "$live" ] && return 0
		sleep 0.1
	done
	for p in "$@"; do kill -9 "$p" 2>/dev/null; done
}

# expect_all LOG WHO REGEX...: says ok or FAIL for each regex; 1 if any
# is missing from LOG
expect_all() {
	local log=$1 who=$2 e rc=0
	shift 2
	for e in "$@"; do
		if grep -qE -- "$e" "$log"; then
			echo "ok: $who output matches /$e/"
		else
			echo "FAIL: $who output lacks /$e/"; rc=1
		fi
	done
	return $rc
}

# free_port: a TCP port on loopback that nothing uses now, for a program's
# own side channel
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_listen PORT PID [TENTHS]: until something listens on TCP PORT (0),
# PID is gone or TENTHS tenths of a second passed (300: 30 s) (1)
wait_listen() {
	local port=$1 pid=$2 n=${3:-300} i
	for ((i = 0; i < n; i++)); do
		ss -ltn 2>/dev/null | grep -q "[:.]$port " && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
