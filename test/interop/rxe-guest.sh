# SPDX-License-Identifier: BSD-3-Clause
# rxe-guest.sh - a sourceable bash library: long-lived Linux Soft-RoCE
# (rdma_rxe) guests under qemu, each on a tap device of its own, driven from
# a test script on the host (../../../shared/rxe-peer builds and boots them).
#
#	. "$(dirname "$0")/rxe-guest.sh"
#	rxe_guest_available || exit 77          # prints "SKIP: why" when not
#	rxe_guest_pick_net                      # optional: a free tap + subnet
#	rxe_guest_start g1 "$RXE_NET_TAP" "$RXE_NET_HOST_IP" "$RXE_NET_GUEST_IP"
#	rxe_guest_exec g1 'ibv_devinfo -d rxe0'          # prints, returns rc
#	rxe_guest_bg g1 'ibv_rc_pingpong -d rxe0 -g 1' "$work/srv.log"
#	...                                              # the host side
#	rxe_guest_wait_bg g1 "$work/srv.log" 60          # rc; log in the file
#	rxe_guest_stop g1                                # or leave it to the trap
#
# Functions (every one returns non-zero on failure, none exits the caller):
#   rxe_guest_available
#	0 when guests can run: qemu-system-x86_64 runs, /dev/net/tun, root,
#	python3, the shared rxe-peer scripts, and the image under
#	$RXE_PEER_DIR (default /var/tmp/rxe-peer), which it builds when missing
#	(one builder at a time: flock on $RXE_PEER_DIR/.build.lock, the lock
#	rxe-pair.sh takes too). Otherwise prints "SKIP: <reason>", returns 1.
#   rxe_guest_pick_net [PREFIX]
#	Picks a free tag 1..250 and sets RXE_NET_TAG, RXE_NET_TAP (PREFIX, default
#	"rxg", plus the tag), RXE_NET_HOST_IP=10.79.TAG.1/24,
#	RXE_NET_GUEST_IP=10.79.TAG.2/24 and RXE_NET_SPARE_IP=10.79.TAG.3 (for
#	droce). Its locks (the tap's, the subnet's) are held until
#	rxe_guest_stop (or rxe_guest_stop_all, if no guest is started on it).
#   rxe_guest_start NAME TAP HOST_IP[/LEN] GUEST_IP[/LEN]
#	Creates TAP with HOST_IP, boots a guest on it (eth0 = GUEST_IP, rxe0 up
#	on it, RoCEv2 IPv4 GID index 1) and waits until its shell answers
#	(RXE_GUEST_BOOT_TIMEOUT, default 180 s). The first start installs EXIT,
#	INT, TERM and HUP traps (chained to the caller's) that stop every guest;
#	a watchdog in the guest's process group also stops it and deletes the
#	tap when the calling shell dies without running its traps (SIGKILL) or
#	after RXE_GUEST_MAX_S (default 1800) seconds. Each TAP is locked
#	(flock), so concurrent tests must use distinct taps and subnets.
#	Sets RXE_GUEST_BOOT_MS (creation of the tap to the first answer).
#	Afterwards: rxe_guest_mac NAME, rxe_guest_ip NAME, rxe_guest_dir NAME
#	(qemu.log there holds the guest's console up to the first command).
#   rxe_guest_exec NAME 'CMD' [TIMEOUT=60]
#	Runs CMD with /bin/sh in the guest (cwd /tmp, in a subshell: "exit N"
#	is CMD's status), prints its output (stdout and stderr merged, no
#	stdin) and returns its exit status; 124 on timeout (then CMD gets a
#	^C), 125 when the guest is not running. Calls on one guest are
#	serialised; different guests run in parallel. About 0.6 s each. CMD
#	must be complete shell syntax: an unclosed quote waits for the timeout.
#   rxe_guest_bg NAME 'CMD' LOGFILE
#	Starts CMD in the background in the guest, detached from its console,
#	and returns once it has started (about a second: one exec round trip).
#	LOGFILE (on the host) names the job.
#   rxe_guest_bg_log NAME LOGFILE
#	Copies the job's output so far into LOGFILE, e.g. to poll for a line.
#   rxe_guest_wait_bg NAME LOGFILE [TIMEOUT=60]
#	Waits for the job, writes all its output into LOGFILE and returns its
#	exit status (124 if it still runs after TIMEOUT s; it is left running).
#   rxe_guest_stop NAME
#	Stops qemu (SIGTERM, then SIGKILL to its process group), deletes the
#	tap, releases the lock and removes the guest's directory (kept, with
#	qemu.log, when RXE_GUEST_KEEP=1). Stopping a guest that is not running
#	is not an error.
#   rxe_guest_stop_all
#	What the traps run.
#
# Knobs: RXE_PEER_SRC (the rxe-peer scripts, default ../shared/rxe-peer
# beside the repository), RXE_PEER_DIR, RXE_GUEST_BOOT_TIMEOUT,
# RXE_GUEST_MAX_S, RXE_GUEST_MEM (MiB, default 512), RXE_GUEST_MTU (1500),
# RXE_GUEST_KEEP, RXE_GUEST_VERBOSE=1 (log each step to stderr).
# A trap the caller sets after the first rxe_guest_start replaces the
# library's: have it call rxe_guest_stop_all (the watchdog still stops the
# guests within a second of the shell's exit).
# Needs bash 4.3+. Call rxe_guest_start, _pick_net, _bg, _wait_bg and _stop
# from the test's main shell, not from $(...) or a pipeline: they keep their
# state in shell variables; rxe_guest_exec works anywhere.

_RXE_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RXE_PEER_SRC=${RXE_PEER_SRC:-$(cd "$_RXE_LIB_DIR/../.." && pwd)/../shared/rxe-peer}
RXE_PEER_DIR=${RXE_PEER_DIR:-/var/tmp/rxe-peer}
export RXE_PEER_DIR

declare -gA _RXE_PGID=() _RXE_PID=() _RXE_TAP=() _RXE_DIR=() _RXE_MAC=() \
	_RXE_GIP=() _RXE_BG=() _RXE_TAPLOCK=() _RXE_NETLOCK=() _RXE_OWNER=()
_RXE_AVAILABLE=
_RXE_TRAPPED=
_RXE_BGSEQ=0

_rxe_log() {
	if [ "${RXE_GUEST_VERBOSE:-0}" = 1 ]; then
		echo "[rxe-guest] $*" >&2
	fi
	return 0
}

_rxe_err() {
	echo "rxe-guest: $*" >&2
	return 1
}

_rxe_python() {
	if [ -x /usr/bin/python3 ]; then
		echo /usr/bin/python3
	else
		command -v python3
	fi
}

# _rxe_squote STRING: STRING as one single-quoted word for /bin/sh
_rxe_squote() {
	local s=${1//\'/\'\\\'\'}
	printf "'%s'" "$s"
}

_rxe_img_ok() {
	local f
	for f in vmlinuz rxe-base.cpio.gz busybox KVER; do
		[ -s "$RXE_PEER_DIR/img/$f" ] || return 1
	done
	return 0
}

rxe_guest_available() {
	local why="" peer="$RXE_PEER_SRC/run-rxe-peer.sh"
	if [ "$_RXE_AVAILABLE" = 1 ]; then
		return 0
	fi
	if [ ! -x "$peer" ] || [ ! -f "$RXE_PEER_SRC/tools/guest-exec.py" ]; then
		why="no rxe peer scripts at $RXE_PEER_SRC"
	elif ! command -v qemu-system-x86_64 > /dev/null 2>&1; then
		why="qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
	elif ! qemu-system-x86_64 -accel help 2> /dev/null | grep -qx tcg; then
		why="qemu-system-x86_64 does not run or has no TCG"
	elif [ "$(id -u)" -ne 0 ]; then
		why="not root (tap devices need CAP_NET_ADMIN)"
	elif [ ! -c /dev/net/tun ]; then
		why="no /dev/net/tun"
	elif [ -z "$(_rxe_python)" ]; then
		why="python3 missing"
	elif ! command -v flock > /dev/null 2>&1 || ! command -v setsid > /dev/null 2>&1; then
		why="flock/setsid missing (util-linux)"
	elif ! mkdir -p "$RXE_PEER_DIR" 2> /dev/null; then
		why="cannot create $RXE_PEER_DIR"
	fi
	if [ -z "$why" ] && ! _rxe_img_ok; then
		# one builder; the others wait for it and then find the image
		if ! (
			flock -w 900 9 || exit 1
			if ! _rxe_img_ok; then
				echo "rxe-guest: building the guest image in $RXE_PEER_DIR" >&2
				"$peer" build > "$RXE_PEER_DIR/build.log" 2>&1 < /dev/null || {
					tail -20 "$RXE_PEER_DIR/build.log" >&2
					exit 1
				}
			fi
		) 9> "$RXE_PEER_DIR/.build.lock"; then
			why="the rxe guest image cannot be built (see $RXE_PEER_DIR/build.log)"
		elif ! _rxe_img_ok; then
			why="the rxe guest image is incomplete in $RXE_PEER_DIR/img"
		fi
	fi
	if [ -n "$why" ]; then
		echo "SKIP: $why"
		return 1
	fi
	_RXE_AVAILABLE=1
	return 0
}

# _rxe_lock_tap TAP: hold an exclusive lock naming TAP (non-blocking)
_rxe_lock_tap() {
	local tap=$1 fd
	if [ -n "${_RXE_TAPLOCK[$tap]:-}" ]; then
		return 0
	fi
	mkdir -p "$RXE_PEER_DIR/locks" || return 1
	exec {fd}> "$RXE_PEER_DIR/locks/$tap.lock" || return 1
	if ! flock -n "$fd"; then
		exec {fd}>&-
		return 1
	fi
	_RXE_TAPLOCK[$tap]=$fd
	return 0
}

_rxe_unlock_tap() {
	local tap=$1 fd=${_RXE_TAPLOCK[$1]:-}
	if [ -n "$fd" ]; then
		exec {fd}>&-
		unset "_RXE_TAPLOCK[$tap]"
	fi
	return 0
}

rxe_guest_pick_net() {
	local prefix=${1:-rxg} start tag i
	start=$(( (BASHPID + RANDOM) % 250 ))
	# shellcheck disable=SC2034 # set for the caller
	for i in $(seq 0 249); do
		tag=$(( (start + i) % 250 + 1 ))
		ip link show "$prefix$tag" > /dev/null 2>&1 && continue
		ip -4 -o addr show 2> /dev/null | grep -q " 10\.79\.$tag\." && continue
		# the subnet's lock, then the tap's (another prefix, same subnet)
		_rxe_lock_tap "net-10.79.$tag" || continue
		if ! _rxe_lock_tap "$prefix$tag"; then
			_rxe_unlock_tap "net-10.79.$tag"
			continue
		fi
		# re-check under the locks: someone may have just finished
		if ip link show "$prefix$tag" > /dev/null 2>&1 ||
			ip -4 -o addr show 2> /dev/null | grep -q " 10\.79\.$tag\."; then
			_rxe_unlock_tap "$prefix$tag"
			_rxe_unlock_tap "net-10.79.$tag"
			continue
		fi
		_RXE_NETLOCK[$prefix$tag]=net-10.79.$tag
		RXE_NET_TAG=$tag
		RXE_NET_TAP=$prefix$tag
		RXE_NET_HOST_IP=10.79.$tag.1/24
		RXE_NET_GUEST_IP=10.79.$tag.2/24
		RXE_NET_SPARE_IP=10.79.$tag.3
		return 0
	done
	_rxe_err "no free tap/subnet"
}

# _rxe_chain_trap SIG CODE: run CODE, then whatever the caller had on SIG
_rxe_chain_trap() {
	local sig=$1 code=$2 old
	old=$(trap -p "$sig")
	# in a subshell, trap -p shows the parent's traps, which are not ours
	# to run
	if [ -n "$old" ] && [ "$BASHPID" = $$ ]; then
		# trap -p prints: trap -- 'CMD' SIG
		eval "set -- $old"
		code="$code; $3"
	elif [ "$sig" != EXIT ]; then
		case $sig in
		INT) code="$code; exit 130" ;;
		HUP) code="$code; exit 129" ;;
		*) code="$code; exit 143" ;;
		esac
	fi
	# shellcheck disable=SC2064
	trap "$code" "$sig"
}

_rxe_install_traps() {
	# once per shell (a subshell starts without its parent's traps)
	[ "$_RXE_TRAPPED" = "$BASHPID" ] && return 0
	_RXE_TRAPPED=$BASHPID
	_rxe_chain_trap EXIT rxe_guest_stop_all
	_rxe_chain_trap INT rxe_guest_stop_all
	_rxe_chain_trap TERM rxe_guest_stop_all
	_rxe_chain_trap HUP rxe_guest_stop_all
}

# The guest's process group: the run-rxe-peer.sh script, qemu (no timeout(1):
# it would move qemu to a group of its own) and this watchdog, which stops
# the group when the test's shell is gone or the guest outlived its limit.
# shellcheck disable=SC2016
_RXE_WRAPPER='
# drop inherited descriptors: the locks and pipes of the caller
for f in /proc/$$/fd/*; do
	case ${f##*/} in 0 | 1 | 2) ;; *) eval "exec ${f##*/}>&-" 2> /dev/null ;; esac
done
echo $$ > "$1/pgid"
parent=$2 tap=$3 max=$4
dir=$1
shift 4
"$@" &
child=$!
n=0
while kill -0 "$child" 2> /dev/null; do
	if ! kill -0 "$parent" 2> /dev/null || [ "$n" -ge "$max" ]; then
		echo "rxe-guest watchdog: stopping (test shell gone or ${max}s up)"
		ip link del "$tap" 2> /dev/null
		trap "" TERM
		kill -TERM 0
		sleep 2
		[ "$n" -ge "$max" ] || rm -rf "$dir"
		kill -KILL 0
	fi
	sleep 1
	n=$((n + 1))
done
wait "$child"
'

rxe_guest_start() {
	if [ $# -ne 4 ]; then
		_rxe_err "usage: rxe_guest_start NAME TAP HOST_IP GUEST_IP"
		return 2
	fi
	local name=$1 tap=$2 hip=$3 gip=$4 dir mac b c d t0 pg me
	case $name in
	'' | *[!A-Za-z0-9_-]*) _rxe_err "bad guest name '$name'"; return 2 ;;
	esac
	if [ ${#tap} -gt 15 ]; then
		_rxe_err "tap name '$tap' longer than 15"
		return 2
	fi
	if [ -n "${_RXE_PGID[$name]:-}" ]; then
		_rxe_err "guest $name already running"
		return 1
	fi
	rxe_guest_available >&2 || return 1
	case $hip in */*) ;; *) hip=$hip/24 ;; esac
	case $gip in */*) ;; *) gip=$gip/24 ;; esac
	IFS=. read -r _ b c d <<< "${gip%/*}"
	mac=$(printf '52:54:00:%02x:%02x:%02x' "$b" "$c" "$d") || {
		_rxe_err "bad guest address $gip"
		return 2
	}
	if ! _rxe_lock_tap "$tap"; then
		_rxe_err "tap $tap is in use by another test"
		return 1
	fi
	if ip link show "$tap" > /dev/null 2>&1; then
		_rxe_unlock_tap "$tap"
		_rxe_err "tap $tap already exists (left over? ip link del $tap)"
		return 1
	fi
	_rxe_install_traps
	dir=$(mktemp -d "/tmp/rxe-guest.$name.XXXXXX") || { _rxe_unlock_tap "$tap"; return 1; }
	mkdir -p "$dir/tmp"
	_RXE_DIR[$name]=$dir
	_RXE_OWNER[$name]=$BASHPID
	_RXE_TAP[$name]=$tap
	_RXE_MAC[$name]=$mac
	_RXE_GIP[$name]=${gip%/*}
	if ! ip tuntap add dev "$tap" mode tap 2> "$dir/tap.err" ||
		! ip addr add "$hip" dev "$tap" 2>> "$dir/tap.err" ||
		! ip link set "$tap" up 2>> "$dir/tap.err"; then
		cat "$dir/tap.err" >&2
		_rxe_err "cannot set up tap $tap with $hip"
		rxe_guest_stop "$name"
		return 1
	fi
	_rxe_log "$name: tap $tap $hip, guest $gip $mac, dir $dir"
	t0=$(date +%s%N)
	me=$BASHPID	# (in the "&" command below it would be the child's)
	setsid bash -c "$_RXE_WRAPPER" rxe-guest-wd "$dir" "$me" "$tap" \
		"${RXE_GUEST_MAX_S:-1800}" \
		env CONSOLE="sock:$dir/console.sock" TAP="$tap" HOST_IP="" \
		GUEST_IP="$gip" GUEST_MAC="$mac" GUEST_NAME="$name" \
		GUEST_MTU="${RXE_GUEST_MTU:-1500}" MEM="${RXE_GUEST_MEM:-512}" \
		TMPD="$dir/tmp" RUN_TIMEOUT="" KEEP_TAP=1 \
		"$RXE_PEER_SRC/run-rxe-peer.sh" run \
		< /dev/null > "$dir/qemu.log" 2>&1 &
	_RXE_PID[$name]=$!
	for _ in $(seq 1 50); do
		[ -s "$dir/pgid" ] && break
		sleep 0.1
	done
	pg=$(cat "$dir/pgid" 2> /dev/null || true)
	if [ -z "$pg" ]; then
		_rxe_err "guest $name: the launcher did not start"
		rxe_guest_stop "$name"
		return 1
	fi
	_RXE_PGID[$name]=$pg
	if ! rxe_guest_exec "$name" true "${RXE_GUEST_BOOT_TIMEOUT:-180}" > "$dir/boot.out" 2>&1; then
		cat "$dir/boot.out" >&2
		_rxe_err "guest $name did not come up; its console:"
		tail -30 "$dir/qemu.log" >&2
		rxe_guest_stop "$name"
		return 1
	fi
	RXE_GUEST_BOOT_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
	_rxe_log "$name: up in ${RXE_GUEST_BOOT_MS} ms"
	return 0
}

_rxe_alive() {
	local pg=${_RXE_PGID[$1]:-}
	[ -n "$pg" ] && kill -0 -- "-$pg" 2> /dev/null
}

rxe_guest_mac() { echo "${_RXE_MAC[$1]:-}"; }
rxe_guest_ip() { echo "${_RXE_GIP[$1]:-}"; }
rxe_guest_dir() { echo "${_RXE_DIR[$1]:-}"; }

rxe_guest_exec() {
	if [ $# -lt 2 ]; then
		_rxe_err "usage: rxe_guest_exec NAME CMD [TIMEOUT]"
		return 2
	fi
	local name=$1 cmd=$2 tmo=${3:-60} dir=${_RXE_DIR[$1]:-} rc=0 fd py out
	if [ -z "$dir" ] || ! _rxe_alive "$name"; then
		_rxe_err "guest $name is not running"
		return 125
	fi
	py=$(_rxe_python)
	exec {fd}> "$dir/exec.lock"
	flock "$fd"
	# CMD in a subshell: "exit N" and cd stay in it; the newline ends a
	# trailing comment in CMD; stdin is not the console. The status comes
	# back in a marker of our own, terminated: guest-exec.py takes the
	# digits after __END__ as soon as the first arrives, so under load a
	# status of 124 can read as 1 (its own status is then always that of
	# the echo, 0).
	"$py" "$RXE_PEER_SRC/tools/guest-exec.py" "$dir/console.sock" \
		"( $cmd
) < /dev/null; echo \"__RXE\"\"RC__\$?__\"" "$tmo" > "$dir/exec.out" || rc=$?
	out=
	IFS= read -r -d '' out < "$dir/exec.out" || true
	if [ "$rc" -eq 0 ] && [[ $out =~ ^(.*)__RXERC__([0-9]+)__$'\n'?$ ]]; then
		printf '%s' "${BASH_REMATCH[1]}"
		rc=${BASH_REMATCH[2]}
	else
		printf '%s' "$out"
		[ "$rc" -ne 0 ] || rc=1
	fi
	if [ "$rc" -eq 124 ] && [[ ! $out =~ __RXERC__ ]]; then
		# interrupt the command still running in the guest's shell
		"$py" - "$dir/console.sock" <<- 'EOF' || true
			import socket, sys
			s = socket.socket(socket.AF_UNIX)
			s.connect(sys.argv[1])
			s.sendall(b"\x03")
			s.close()
		EOF
	fi
	exec {fd}>&-
	return "$rc"
}

rxe_guest_bg() {
	if [ $# -ne 3 ]; then
		_rxe_err "usage: rxe_guest_bg NAME CMD LOGFILE"
		return 2
	fi
	local name=$1 cmd=$2 log=$3 id f g q rc=0
	_RXE_BGSEQ=$((_RXE_BGSEQ + 1))
	id=$_RXE_BGSEQ
	f=/tmp/rxe-bg.$id
	: > "$log" || return 1
	# CMD is run like rxe-peer's /etc/rxe-cmd.sh (/etc/profile first, "exit"
	# ends it); the outer sh records its status once it is done
	g='printf "%s\n" @CMD@ > @F@.sh; setsid sh -c "sh -c \". /etc/profile; . @F@.sh\" < /dev/null > @F@.log 2>&1; echo \$? > @F@.rc.t; mv @F@.rc.t @F@.rc" < /dev/null > /dev/null 2>&1 &'
	q=$(_rxe_squote "$cmd")
	g=${g//@F@/"$f"}
	g=${g//@CMD@/"$q"}
	rxe_guest_exec "$name" "$g" 30 > "$log.start" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		cat "$log.start" >&2
		rm -f "$log.start"
		_rxe_err "guest $name: cannot start the background job"
		return "$rc"
	fi
	rm -f "$log.start"
	_RXE_BG[$name:$log]=$id
	return 0
}

rxe_guest_bg_log() {
	local name=$1 log=$2 id=${_RXE_BG[$1:$2]:-}
	if [ -z "$id" ]; then
		_rxe_err "no background job $log in guest $name"
		return 2
	fi
	rxe_guest_exec "$name" "cat /tmp/rxe-bg.$id.log" 30 > "$log"
}

rxe_guest_wait_bg() {
	local name=$1 log=$2 tmo=${3:-60} id=${_RXE_BG[$1:$2]:-} rc=0 f
	if [ -z "$id" ]; then
		_rxe_err "no background job $log in guest $name"
		return 2
	fi
	f=/tmp/rxe-bg.$id
	rxe_guest_exec "$name" "i=0; while [ ! -f $f.rc ] && [ \$i -lt $((tmo * 10)) ]; do \
sleep 0.1; i=\$((i + 1)); done; cat $f.log; [ -f $f.rc ] || exit 124; exit \$(cat $f.rc)" \
		"$((tmo + 30))" > "$log" || rc=$?
	if [ "$rc" -ne 124 ]; then
		unset "_RXE_BG[$name:$log]"
	fi
	return "$rc"
}

rxe_guest_stop() {
	local name=$1 pg=${_RXE_PGID[$1]:-} pid=${_RXE_PID[$1]:-} \
		tap=${_RXE_TAP[$1]:-} dir=${_RXE_DIR[$1]:-} i k
	if [ -n "$pg" ] && kill -0 -- "-$pg" 2> /dev/null; then
		kill -TERM -- "-$pg" 2> /dev/null || true
		for i in $(seq 1 50); do
			kill -0 -- "-$pg" 2> /dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$pg" 2> /dev/null || true
	fi
	if [ -n "$pid" ]; then
		wait "$pid" 2> /dev/null || true
	fi
	if [ -n "$tap" ]; then
		ip link del "$tap" 2> /dev/null || true
		_rxe_unlock_tap "$tap"
		if [ -n "${_RXE_NETLOCK[$tap]:-}" ]; then
			_rxe_unlock_tap "${_RXE_NETLOCK[$tap]}"
			unset "_RXE_NETLOCK[$tap]"
		fi
	fi
	if [ -n "$dir" ] && [ "${RXE_GUEST_KEEP:-0}" != 1 ]; then
		rm -rf "$dir"
	elif [ -n "$dir" ]; then
		echo "rxe-guest: $name kept in $dir" >&2
	fi
	for k in "${!_RXE_BG[@]}"; do
		case $k in "$name":*) unset "_RXE_BG[$k]" ;; esac
	done
	unset "_RXE_PGID[$name]" "_RXE_PID[$name]" "_RXE_TAP[$name]" \
		"_RXE_DIR[$name]" "_RXE_MAC[$name]" "_RXE_GIP[$name]" \
		"_RXE_OWNER[$name]"
	return 0
}

rxe_guest_stop_all() {
	local n
	for n in "${!_RXE_DIR[@]}"; do
		# not the guests of a parent shell (from a subshell's trap)
		[ "${_RXE_OWNER[$n]:-}" = "$BASHPID" ] || continue
		rxe_guest_stop "$n" || true
	done
	# taps locked by rxe_guest_pick_net but never started
	for n in "${!_RXE_TAPLOCK[@]}"; do
		_rxe_unlock_tap "$n"
	done
	return 0
}
