#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# conf-errors.sh DROCE_RUN CONF_OPEN DROCED: configuration mistakes are
# refused, each with one line naming the key and its value (droce_conf.h,
# droce_conf_check): the verbs device does not open (EINVAL), droced exits
# 2 before it opens a port; a device DPDK refuses is named by its key
# (ENODEV at the first PD); a correct configuration still opens.
set -uo pipefail
run=$1 open=$2 droced=$3
w=$(mktemp -d /tmp/droce-conf.XXXXXX)
tag=$(basename "$w" | tr -dc 'a-zA-Z0-9')
d=
cleanup() {
	[ -n "$d" ] && kill -KILL "$d" 2>/dev/null && wait "$d" 2>/dev/null
	rm -rf "$w" "/var/run/dpdk/cf$tag"
}
trap cleanup EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# refused KEY=VALUE... -- LINE-REGEX: conf_open fails with EINVAL and
# stderr has exactly one droce line, the one matching LINE-REGEX
refused() {
	local args=() want rc
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	want=$2
	timeout -k 5 30 "$run" "${args[@]}" "$open" > "$w/out" 2> "$w/err"
	rc=$?
	if [ $rc -ne 1 ] || ! grep -q 'errno 22 ' "$w/out"; then
		bad "${args[*]}: exit $rc, want the open to fail with EINVAL"
		cat "$w/out" "$w/err"
		return
	fi
	if [ "$(grep -c '^droce' "$w/err")" -ne 1 ] ||
			! grep -qE "$want" "$w/err"; then
		bad "${args[*]}: want one line /$want/ on stderr, got:"
		cat "$w/err"
		return
	fi
	ok "${args[*]}: $(cat "$w/err")"
}

base=(DROCE_DEVARGS=net_ring0 DROCE_IPV4=10.9.9.1)
refused "${base[@]}" DROCE_IPV4=300.1.1.1 -- \
	'^droce: DROCE_IPV4=300\.1\.1\.1: want an IPv4 address'
refused "${base[@]}" DROCE_MTU=abc -- '^droce: DROCE_MTU=abc: want a number'
refused "${base[@]}" DROCE_MTU=100000 -- '^droce: DROCE_MTU=100000: want a number'
refused "${base[@]}" DROCE_QUEUES=0 -- '^droce: DROCE_QUEUES=0: want a number from 1'
refused "${base[@]}" DROCE_RTO_MIN_US=0 -- '^droce: DROCE_RTO_MIN_US=0: want a number from 1'
refused "${base[@]}" DROCE_RTO_MIN_US=1ms -- '^droce: DROCE_RTO_MIN_US=1ms: want a number'
refused "${base[@]}" DROCE_ECN=2 -- '^droce: DROCE_ECN=2: want 0 or 1'
refused "${base[@]}" DROCE_NP_CNP_DSCP=64 -- '^droce: DROCE_NP_CNP_DSCP=64: want a number from 1'
refused "${base[@]}" DROCE_NP_MIN_TIME_BETWEEN_CNPS=4us -- '^droce: DROCE_NP_MIN_TIME_BETWEEN_CNPS=4us: want a number'
refused "${base[@]}" DROCE_SELECTIVE_REPEAT=yes -- \
	'^droce: DROCE_SELECTIVE_REPEAT=yes: want 0 or 1 or cm'
refused "${base[@]}" DROCE_CC=dctcp -- '^droce: DROCE_CC=dctcp: want dcqcn or delay or none'
refused "${base[@]}" DROCE_RP_MIN_DEC_FAC=0 -- '^droce: DROCE_RP_MIN_DEC_FAC=0: want a number from 1'
refused "${base[@]}" DROCE_RP_AI_RATE=5M -- '^droce: DROCE_RP_AI_RATE=5M: want a number'
refused "${base[@]}" DROCE_CC_LINE_RATE=0 -- '^droce: DROCE_CC_LINE_RATE=0: want a number from 1'
refused "${base[@]}" DROCE_TYPO=1 -- '^droce: DROCE_TYPO=1: unknown key \(environment\)'
refused "${base[@]}" DROCE_IPV4S=10.9.9.2 -- \
	'^droce: DROCE_IPV4S=10\.9\.9\.2: unknown key \(environment\); did you mean DROCE_IPV4\?'
refused "${base[@]}" DROCE_IPV6=fd00::zz -- '^droce: DROCE_IPV6=fd00::zz: want an IPv6'
refused "${base[@]}" DROCE_MAC=02:00:0a:00:01 -- '^droce: DROCE_MAC=02:00:0a:00:01: want a unicast MAC'
refused "${base[@]}" DROCE_NEIGH=10.9.9.2=02:00:0a:09:09:02,10.9.9.3 -- \
	'^droce: DROCE_NEIGH=10\.9\.9\.2=02:00:0a:09:09:02,10\.9\.9\.3: want IP=MAC'
refused "${base[@]}" DROCE_NEIGH=10.9.9.999=02:00:0a:09:09:02 -- \
	'^droce: DROCE_NEIGH=10\.9\.9\.999=.*: want IP=MAC'
refused "${base[@]}" DROCE_FAULT=20000,10000 -- '^droce: DROCE_FAULT=20000,10000: want drop,dup,reorder,corrupt'
refused "${base[@]}" DROCE_FAULT_TX=2000000,0,0,0 -- '^droce: DROCE_FAULT_TX=2000000,0,0,0: want drop'
refused "${base[@]}" DROCE_ZERO_COPY=on -- '^droce: DROCE_ZERO_COPY=on: want auto, off or a number'
refused "${base[@]}" DROCE_NO_HUGE=yes -- '^droce: DROCE_NO_HUGE=yes: want 0 or 1'
refused "${base[@]}" DROCE_RXE_FLUSH_ICRC=2 -- '^droce: DROCE_RXE_FLUSH_ICRC=2: want 0 or 1'
refused "${base[@]}" DROCE_POLL=sometimes -- '^droce: DROCE_POLL=sometimes: want busy or idle'
# attached: refused before the daemon is asked (none listens there)
refused DROCE_DAEMON="$w/none.sock" DROCE_MTU=abc -- '^droce: DROCE_MTU=abc: want a number'

# DROCE_CONF: a line that is not KEY=VALUE, an unknown key, a bad value,
# a file that is not there
printf '# droce\n\nDROCE_DEVARGS=net_ring0\nDROCE_IPV4 10.9.9.1\n' > "$w/syntax.conf"
refused -c "$w/syntax.conf" -- \
	"^droce: DROCE_CONF $w/syntax.conf line 4: want KEY=VALUE.*\"DROCE_IPV4 10\.9\.9\.1\""
printf 'DROCE_DEVARGS=net_ring0\nDROCE_IPV4=10.9.9.1\nDROCE_TYPO=1\n' > "$w/unknown.conf"
refused -c "$w/unknown.conf" -- \
	"^droce: DROCE_TYPO=1: unknown key \(DROCE_CONF $w/unknown.conf line 3\)"
printf 'DROCE_DEVARGS=net_ring0\nDROCE_MTU=abc\n' > "$w/value.conf"
refused -c "$w/value.conf" -- \
	"^droce: DROCE_MTU=abc \(DROCE_CONF $w/value.conf line 2\): want a number"
refused -c "$w/missing.conf" -- "^droce: DROCE_CONF=$w/missing.conf: No such file"

# correct: the device opens, droced's keys in a shared file included
printf '# shared with droced\nDROCE_DEVARGS=net_ring0\n  DROCE_IPV4=10.9.9.1  \nDROCE_POLL=idle\nDROCE_APP_MAX_QP=8192\nDROCE_FAULT=\n' > "$w/good.conf"
for args in "${base[*]}" "-c $w/good.conf" \
		"${base[*]} DROCE_MTU=9000 DROCE_QUEUES=2 DROCE_NEIGH=10.9.9.2=02:00:0a:09:09:02,fd00::2=02:00:0a:09:09:03 DROCE_FAULT=20000,10000,20000,0,100 DROCE_ZERO_COPY=off DROCE_MAC=02:11:22:33:44:55 DROCE_SELECTIVE_REPEAT=cm"; do
	# shellcheck disable=SC2086
	if timeout -k 5 30 "$run" $args "$open" > "$w/out" 2> "$w/err" &&
			grep -q 'opened droce0' "$w/out" && ! [ -s "$w/err" ]; then
		ok "$args: opens"
	else
		bad "$args: does not open"; cat "$w/out" "$w/err"
	fi
done
if timeout -k 5 30 "$run" "${base[@]}" ibv_devinfo > "$w/out" 2>&1 &&
		grep -qE '^hca_id:[[:space:]]+droce0' "$w/out"; then
	ok "ibv_devinfo lists droce0"
else
	bad "ibv_devinfo"; cat "$w/out"
fi

# a device DPDK refuses: named by its key when the port starts (first PD)
# (in process, EAL --in-memory: no files); EAL arguments it refuses name
# DROCE_EAL too
port_refused() {	# ERRNO LINE-REGEX KEY=VALUE...
	local errno=$1 want=$2 rc
	shift 2
	timeout -k 5 60 "$run" "$@" "$open" pd > "$w/out" 2> "$w/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q "alloc_pd: errno $errno " "$w/out" &&
			grep -qE "$want" "$w/err"; then
		ok "$*: $(grep -E "$want" "$w/err")"
	else
		bad "$*: exit $rc"; cat "$w/out" "$w/err"
	fi
}
port_refused 19 '^droce: DROCE_DEVARGS=net_bogus0: cannot open droce0' \
	DROCE_DEVARGS=net_bogus0 DROCE_IPV4=10.9.9.1
port_refused 22 '^droce: DROCE_DEVARGS=net_ring0 DROCE_EAL=--bogus: cannot open droce0' \
	DROCE_DEVARGS=net_ring0 DROCE_EAL=--bogus DROCE_IPV4=10.9.9.1

# droced: its keys and the port's, refused before a port opens (exit 2)
daemon_refused() {	# KEY=VALUE LINE-REGEX
	local rc
	env -u LD_LIBRARY_PATH "$droced" DROCE_DEVARGS=net_ring0 \
		DROCE_IPV4=10.9.9.1 "DROCE_DAEMON=$w/d.sock" \
		"DROCE_EAL=--file-prefix cf$tag" "$1" > "$w/err" 2>&1 &
	d=$!
	for _ in $(seq 100); do kill -0 $d 2>/dev/null || break; sleep 0.1; done
	if kill -0 $d 2>/dev/null; then
		bad "droced $1: still running"; kill -KILL $d
	fi
	wait $d; rc=$?
	d=
	if [ $rc -eq 2 ] && grep -qE "$2" "$w/err" && ! [ -e "$w/d.sock" ]; then
		ok "droced $1: exit 2, $(cat "$w/err")"
	else
		bad "droced $1: exit $rc"; cat "$w/err"
	fi
}
daemon_refused DROCE_POLL=sometimes '^droce: DROCE_POLL=sometimes: want busy or idle'
daemon_refused DROCE_TYPO=1 '^droce: DROCE_TYPO=1: unknown key'
daemon_refused DROCE_APP_MAX_QP=0 '^droce: DROCE_APP_MAX_QP=0: want a number from 1 to 65536'
daemon_refused DROCE_IPV4=300.1.1.1 '^droce: DROCE_IPV4=300\.1\.1\.1: want an IPv4'
# a second port's keys: checked as the key itself, named with the port's
# number; past the last port a key is unknown
daemon_refused DROCE_MTU_1=abc '^droce: DROCE_MTU_1=abc: want a number'
daemon_refused DROCE_IPV4_2=10.9.9 '^droce: DROCE_IPV4_2=10\.9\.9: want an IPv4'
daemon_refused DROCE_DEVARGS_4=net_ring4 '^droce: DROCE_DEVARGS_4=net_ring4: unknown key'
daemon_refused DROCE_POLL_1=busy '^droce: DROCE_POLL_1=busy: unknown key'
exit $fail
