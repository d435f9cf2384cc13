#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# droce's one entry point. Quick start (Debian 12, as root):
#   ./droce.sh demo    set up, build, run the main job
#   ./droce.sh test    set up, build, run every test; ends with "N passed, N failed"
# Other subcommands: setup, build, bench.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$top"
BUILD=${DROCE_BUILD:-build}
BUILD_ASAN=${DROCE_BUILD_ASAN:-build-asan}
# how long each libFuzzer target runs in `test` (thousands of inputs for
# the responder, ~10^5 for the parser); more for a deeper run
FUZZ_SECONDS=${DROCE_FUZZ_SECONDS:-20}

PACKAGES=(dpdk-dev libdpdk-dev meson ninja-build pkg-config libnuma-dev
	libpcap-dev libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils
	perftest netcat-openbsd socat iperf3 ucx-utils openmpi-bin python3-mpi4py librpma-dev libfabric-bin libfabric-dev tshark python3-scapy clang libclang-rt-14-dev nftables
	iproute2 python3 gcc libbsd-dev
	qemu-system-x86 cpio xz-utils gzip procps)

log() { printf '==> %s\n' "$*" >&2; }

setup_packages() {
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "droce.sh: need root to install ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture: answer no.
	echo 'wireshark-common wireshark-common/install-setuid boolean false' |
		debconf-set-selections 2>/dev/null || true
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# Reserve 2 MB hugepages and mount hugetlbfs. When that cannot be done,
# say so and make every DPDK process of droce run with --no-huge.
setup_hugepages() {
	local want=${DROCE_HUGEPAGES:-1024} have
	have=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
	if [ "$have" -lt "$want" ]; then
		echo "$want" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
		have=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
	fi
	if ! grep -q ' /dev/hugepages hugetlbfs' /proc/mounts; then
		mkdir -p /dev/hugepages 2>/dev/null || true
		mount -t hugetlbfs none /dev/hugepages 2>/dev/null || true
	fi
	if [ "$have" -ge 256 ] && grep -q ' /dev/hugepages hugetlbfs' /proc/mounts; then
		unset DROCE_NO_HUGE
	else
		log "hugepages unavailable ($have reserved): falling back to --no-huge"
		export DROCE_NO_HUGE=1
	fi
}

# UCX takes an IB device only when /dev/infiniband/DEV_NAME is a
# character device; droce's leads to /dev/null (doc/verbs.md, "UCX")
setup_devdir() {
	mkdir -p /dev/infiniband 2>/dev/null ||
		log "cannot make /dev/infiniband: UCX will not see droce"
}

setup() {
	setup_packages
	setup_hugepages
	setup_devdir
}

configure() {
	local dir=$1; shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
}

build() {
	configure "$BUILD"
	ninja -C "$BUILD"
}

build_asan() {
	# One configuration with AddressSanitizer and UBSan, built with clang so
	# that it also carries the libFuzzer targets.
	CC=clang configure "$BUILD_ASAN" -Db_sanitize=address,undefined \
		-Db_lundef=false -Dfuzz=true -Dexamples=false
	# a build directory keeps the value it was set up with; setting it
	# unchanged would still regenerate the build files
	local have
	have=$(meson introspect --buildoptions "$BUILD_ASAN" | python3 -c \
		'import json,sys; print(*[o["value"] for o in json.load(sys.stdin) if o["name"] == "fuzz_seconds"])')
	[ "$have" = "$FUZZ_SECONDS" ] ||
		meson configure "$BUILD_ASAN" -Dfuzz_seconds="$FUZZ_SECONDS" >/dev/null
	ninja -C "$BUILD_ASAN"
}

# Count meson's results from its JSON log: "N passed, N failed[, N skipped]".
count_results() {
	python3 - "$@" <<'PY'
import json, sys
passed = failed = skipped = 0
for log in sys.argv[1:]:
    try:
        lines = open(log).read().splitlines()
    except OSError:
        continue
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        s = r.get("result")
        if s in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif s == "SKIP":
            skipped += 1
        else:
            failed += 1
out = f"{passed} passed, {failed} failed"
if skipped:
    out += f", {skipped} skipped"
print(out)
sys.exit(1 if failed else 0)
PY
}

run_tests() {
	local rc=0
	rm -f "$BUILD/meson-logs/testlog.json" "$BUILD_ASAN/meson-logs/testlog.json"
	log "tests (gcc build)"
	meson test -C "$BUILD" --no-rebuild --print-errorlogs \
		--no-suite long "$@" || rc=1
	log "tests (clang, ASan+UBSan, fuzz)"
	# any UBSan report fails the test, as an ASan one does
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C "$BUILD_ASAN" --no-rebuild --print-errorlogs \
		--suite fast --suite fuzz --suite asan || rc=1
	count_results "$BUILD/meson-logs/testlog.json" \
		"$BUILD_ASAN/meson-logs/testlog.json" || rc=1
	return $rc
}

demo() {
	"$top/test/demo.sh" "$BUILD"
}

# the build's output only when it fails: the demo's is what a newcomer
# reads
quiet_build() {
	local out
	out=$(mktemp)
	log "building droce in $BUILD"
	if ! build > "$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		exit 1
	fi
	rm -f "$out"
}

cmd=${1:-help}
[ $# -gt 0 ] && shift
case "$cmd" in
setup)	setup ;;
build)	setup; build ;;
demo)	setup; quiet_build; demo ;;
test)	setup; build; build_asan; run_tests "$@" ;;
bench)	PACKAGES+=(valgrind)	# instruction counts (test/bench-phases.sh)
	setup; build; "$top/test/bench.sh" "$BUILD" "$@" ;;
*)
	echo "usage: $0 {demo|test|build|setup|bench}" >&2
	exit 2 ;;
esac
