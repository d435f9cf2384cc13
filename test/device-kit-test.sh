#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# device-kit-test.sh BUILD: the kit for a lent machine (device-kit.sh)
# is whole, and runs: every ELF file in it finds its libraries inside it
# or in glibc, the drop-in's verbs and not the system's; with one library
# taken out the check names what misses it; and device-run.sh's probe,
# from the kit with no library path of the caller's, runs droce-perf
# (a verified 64-byte WRITE pair over net_memif) and droced.
set -uo pipefail
build=$(cd "${1:?usage: device-kit-test.sh BUILD}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
for p in ib_write_bw ibv_rc_pingpong ip ss ldd; do
	command -v "$p" >/dev/null || { echo "no $p: skip"; exit 77; }
done
kit=$(mktemp -d /tmp/droce-kit.XXXXXX)
trap 'rm -rf "$kit"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$top/test/device-kit.sh" "$build" "$kit/k" > "$kit/make.log" 2>&1
rc=$?
cat "$kit/make.log"
[ $rc = 0 ] && ok "kit made, closed over its libraries" ||
	bad "device-kit.sh exited $rc"
grep -q "every library inside it" "$kit/make.log" || bad "no closure line"
for f in build/app/droce-perf build/app/droced build/app/droce-run \
		build/drivers/ibverbs/libibverbs.so.1 bin/ib_write_bw env.sh; do
	[ -e "$kit/k/$f" ] || bad "kit lacks $f"
done
[ -e "$kit/k/lib/libibverbs.so.1" ] && bad "the system's libibverbs is in the kit"

# the probe, run as on the other machine: the kit's environment only
env -u LD_LIBRARY_PATH PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	"$top/test/device-run.sh" "$kit/k" "$kit/out" probe > "$kit/run.log" 2>&1
cat "$kit/run.log" "$kit/out/probe.log" 2>/dev/null
grep -q "droce-perf runs: yes" "$kit/out/probe.log" && ok "droce-perf runs" ||
	bad "droce-perf from the kit"
grep -q "droced runs: yes" "$kit/out/probe.log" && ok "droced runs" ||
	bad "droced from the kit"
grep -Eq '^ *write +64 .* verified$' "$kit/out/probe.log" &&
	ok "a verified WRITE pair from the kit" || bad "no verified WRITE pair"
grep -Eq '^probe +rc +0 ' "$kit/out/summary.txt" && ok "summary line" ||
	bad "summary.txt"

# a library taken out: the check says which, and who needs it
rm -f "$kit/k/lib/libnuma.so.1"
"$top/test/device-kit.sh" --check "$kit/k" > "$kit/check.log" 2>&1
rc=$?
[ $rc = 1 ] && ok "check fails without libnuma" || bad "check exited $rc without libnuma"
grep -q "OUTSIDE build/app/droce-perf-static: libnuma.so.1" "$kit/check.log" &&
	ok "the miss named" || { cat "$kit/check.log"; bad "the miss not named"; }

[ $fail = 0 ] && echo "PASS: device kit" || echo "FAIL: device kit"
exit $fail
