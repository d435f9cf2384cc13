#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# chaos.sh DROCE-RUN DROCED CHAOS-APP SECONDS [APPS]
#
# A chaos soak of two droced joined by a link: APPS applications (4 by
# default) keep attaching and moving data, every byte checked: half of
# them chaos_app (a session on each daemon, WRITE/SEND/READ rounds, objects
# made and let go between rounds), half unmodified ibv_rc_pingpong -c
# pairs through the drop-in (server on A, client on B). For SECONDS a
# killer sends SIGKILL to one of them at a random moment every 0.2 to
# 1.5 s (a pingpong pair: both ends), and the ones that finish or die are
# replaced. Then the survivors finish. Passes when:
#  - both daemons lived to the end and stop cleanly;
#  - every application not killed exited 0 (its data intact);
#  - afterwards both daemons' telemetry shows no application and no QP
#    but QP1, and their resident memory is back to what it was after a
#    warm-up (within CHAOS_RSS_SLACK_KB, 32 MB: malloc keeps some).
# Prints the figures: applications started, killed, finished, bytes
# verified, each daemon's resident memory before and after.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/pair-lib.sh"
. "$here/../common/daemon-lib.sh"
run=$1 droced=$2 app=$3 secs=$4 napps=${5:-4}
slack=${CHAOS_RSS_SLACK_KB:-32768}
# how long each one runs at most: rounds of chaos_app, pingpong iterations
rounds=${CHAOS_ROUNDS:-1000} iters=${CHAOS_ITERS:-20000}
command -v ibv_rc_pingpong >/dev/null || { echo "no ibv_rc_pingpong: skip"; exit 77; }

work=$(mktemp -d /tmp/droced-chaos.XXXXXX)
dpid_a= dpid_b=
declare -A kind peer killed
# Each program runs under timeout(1), which makes itself a process group
# leader: SIGKILL must go to that group, or only the timeout dies and
# the program goes on, orphaned, until it ends on its own.
kill_group() {
	kill -9 -- -"$1" 2>/dev/null || kill -9 "$1" 2>/dev/null
}
cleanup() {
	local pid
	for pid in "${!kind[@]}"; do kill_group "$pid"; done
	kill_all $dpid_a $dpid_b
	rm -rf "$work"
}
trap cleanup EXIT
RANDOM=${CHAOS_SEED:-$$}
echo "seed $RANDOM"
daemons_start "$droced" "$work"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

groups=()
started=0 nkilled=0 finished=0 failed=0 bytes=0 seq=0
start_chaos_app() {
	local log="$work/app$seq.log"
	timeout -k 5 300 "$app" "$work/a.sock" "$work/b.sock" \
		$((10 + RANDOM % rounds)) $RANDOM > "$log" 2>&1 &
	kind[$!]=app
	echo "$log" > "$work/log.$!"
	seq=$((seq + 1)) started=$((started + 1))
}
start_pingpong() {
	local p s c n=$((100 + RANDOM % iters)) sz=$((1 + RANDOM % 16384))
	p=$(free_port)
	timeout -k 5 300 "$run" "DROCE_DAEMON=$work/a.sock" ibv_rc_pingpong -c -g 1 \
		-n $n -s $sz -p "$p" > "$work/pp$seq.s.log" 2>&1 &
	s=$!
	for _ in $(seq 1 100); do
		ss -ltn 2>/dev/null | grep -q "[:.]$p " && break
		kill -0 $s 2>/dev/null || break
		sleep 0.05
	done
	timeout -k 5 300 "$run" "DROCE_DAEMON=$work/b.sock" ibv_rc_pingpong -c -g 1 \
		-n $n -s $sz -p "$p" 127.0.0.1 > "$work/pp$seq.c.log" 2>&1 &
	c=$!
	kind[$s]=pp kind[$c]=pp peer[$s]=$c peer[$c]=$s
	echo "$work/pp$seq.s.log" > "$work/log.$s"
	echo "$work/pp$seq.c.log" > "$work/log.$c"
	seq=$((seq + 1)) started=$((started + 1))
}
# a program that ended on its own: it must have exited 0
reap() {
	local pid rc log
	for pid in "${!kind[@]}"; do
		kill -0 "$pid" 2>/dev/null && continue
		wait "$pid"; rc=$?
		log=$(cat "$work/log.$pid")
		if [ -n "${killed[$pid]:-}" ]; then
			:
		elif [ $rc -ne 0 ]; then
			echo "FAIL: ${kind[$pid]} $pid exited $rc"; cat "$log"
			failed=$((failed + 1))
		else
			[ "${kind[$pid]}" = app ] && finished=$((finished + 1)) &&
				bytes=$((bytes + $(awk '/^verified/ {print $2}' "$log")))
			[ "${kind[$pid]}" = pp ] && [ "${peer[$pid]}" -gt "$pid" ] &&
				finished=$((finished + 1)) &&
				bytes=$((bytes + $(awk '/bytes in/ {print $1}' "$log")))
		fi
		unset "kind[$pid]" "peer[$pid]" "killed[$pid]"
	done
}
running() {
	local n=0 pid
	for pid in "${!kind[@]}"; do
		[ "${kind[$pid]}" = "$1" ] && n=$((n + 1))
	done
	[ "$1" = pp ] && n=$((n / 2))
	echo $n
}

# warm-up: one of each, to its end, then the baseline
start_chaos_app
start_pingpong
for pid in "${!kind[@]}"; do wait "$pid"; done
reap
sleep 1
rss_a0=$(rss_kb $dpid_a) rss_b0=$(rss_kb $dpid_b)
echo "baseline after warm-up: droced A ${rss_a0} kB, B ${rss_b0} kB"

end=$((SECONDS + secs))
next_kill=$((SECONDS + 1))
while [ $SECONDS -lt $end ]; do
	reap
	while [ "$(running app)" -lt $(( (napps + 1) / 2 )) ]; do start_chaos_app; done
	while [ "$(running pp)" -lt $(( napps / 2 )) ]; do start_pingpong; done
	sleep 0.$((2 + RANDOM % 8))
	[ $SECONDS -lt $next_kill ] && continue
	reap	# not one that ended during the sleep: it is not killed
	[ ${#kind[@]} -gt 0 ] || continue
	pids=("${!kind[@]}")
	victim=${pids[$((RANDOM % ${#pids[@]}))]}
	if kill_group "$victim"; then
		killed[$victim]=1 groups+=("$victim")
		nkilled=$((nkilled + 1))
		if [ -n "${peer[$victim]:-}" ]; then
			kill_group "${peer[$victim]}"
			groups+=("${peer[$victim]}")
			killed[${peer[$victim]}]=1
		fi
	fi
	next_kill=$((SECONDS + RANDOM % 2))
done
# the survivors finish
for pid in "${!kind[@]}"; do wait "$pid" 2>/dev/null; done
sleep 0.5
reap
fail=$failed
# what was killed is gone: nothing of its process group lives on
# (a moment for those still exiting on a loaded machine)
left=
for _ in $(seq 1 50); do
	[ ${#groups[@]} -gt 0 ] && left=$(pgrep -g "$(IFS=,; echo "${groups[*]}")") || { left=; break; }
	sleep 0.2
done
if [ -n "$left" ]; then
	echo "FAIL: killed programs still running:"; ps -o pid,pgid,stat,etime,args -p "${left//$'\n'/,}"
	fail=$((fail + 1))
fi
for p in $dpid_a $dpid_b; do
	kill -0 "$p" 2>/dev/null || { echo "FAIL: droced $p died"; fail=$((fail + 1)); }
done
/usr/bin/python3 "$here/telemetry-check.py" "$tele_a" "$tele_b" || fail=$((fail + 1))
sleep 1
rss_a1=$(rss_kb $dpid_a) rss_b1=$(rss_kb $dpid_b)
echo "chaos: ${secs}s, $started applications started, $nkilled killed," \
	"$finished finished, $failed failed; $bytes bytes verified"
echo "droced resident memory: A ${rss_a0} -> ${rss_a1} kB, B ${rss_b0} -> ${rss_b1} kB"
for d in "a $rss_a0 $rss_a1" "b $rss_b0 $rss_b1"; do
	set -- $d
	[ $(( $3 - $2 )) -le "$slack" ] ||
		{ echo "FAIL: droced $1 kept $(( $3 - $2 )) kB (slack $slack)"; fail=$((fail + 1)); }
done
[ "$nkilled" -gt 0 ] || { echo "FAIL: nothing was killed"; fail=$((fail + 1)); }
daemons_stop "$work" || fail=$((fail + 1))
[ $fail -eq 0 ] && echo "PASS: chaos soak"
exit $((fail > 0))
