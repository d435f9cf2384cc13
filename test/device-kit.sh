#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# device-kit.sh [BUILD] [KIT]: everything the benchmarks need on a machine
# that has neither Debian's DPDK nor its RDMA programs (the 16-CPU machine
# some tasks are lent, where nothing can be installed), in one folder:
#
#   KIT/build/app/      droce-perf and droced with DPDK linked in (the
#                       -static builds, under the names the scripts use),
#                       droce-run finding the drop-in inside KIT
#   KIT/build/drivers/  the drop-in libibverbs.so.1, librdmacm.so.1 and
#                       the inert libmlx5/libefa perftest links
#   KIT/bin/            perftest, qperf, ibv_rc_pingpong, ucx_perftest,
#                       ip and ss (network namespaces, ports)
#   KIT/lib/            every library those need but glibc's own, and
#                       KIT/lib/ucx/ UCX's transport modules
#   KIT/env.sh          PATH, LD_LIBRARY_PATH and UCX_MODULE_DIR for them
#
# Then the check that matters before spending a lent machine's minutes:
# every ELF file in KIT resolves each library it needs inside KIT or to
# glibc (which the other machine has, as new or newer), with the
# drop-in's libibverbs and librdmacm, never the system's. Exit 1 and the
# misses named otherwise. test/device-run.sh runs the benchmarks there;
# doc/perf.md, "On a lent machine", says how.
#
# device-kit.sh --check KIT: that check alone, on a kit made before.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
check_only=0
if [ "${1:-}" = --check ]; then
	check_only=1
	kit=$(cd "${2:?usage: device-kit.sh --check KIT}" && pwd) || exit 2
else
	build=$(cd "${1:-$top/build}" && pwd) || exit 2
	kit=${2:-$top/.devkit}
fi

progs_required=(ib_write_bw ib_write_lat ib_send_bw ib_send_lat ib_read_bw
	ib_read_lat ib_atomic_bw ibv_rc_pingpong ip ss)
progs_optional=(qperf ucx_perftest)
# glibc's own: the other machine's are used (same ABI, newer)
glibc_re='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libmvec\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libnss_)'
# the drop-in's: never the system's copies
dropin_re='^(libibverbs\.so|librdmacm\.so|libmlx5\.so|libefa\.so)'

# the ELF files in the kit, and what each needs as the loader finds it
# there ("name path", "-" for none)
elfs() {
	find "$kit/bin" "$kit/build" "$kit/lib" -type f | while read -r f; do
		head -c 4 "$f" | grep -q ELF && echo "$f"
	done
}
resolve() {	# FILE: "name path" per needed library, as the loader finds it
	env -i PATH="$PATH" LD_LIBRARY_PATH="$kit/build/drivers/ibverbs:$kit/build/drivers/rdmacm:$kit/build/drivers/inert:$kit/lib:$kit/lib/ucx" \
		ldd "$1" 2>/dev/null |
		awk '$2 == "=>" { print $1, ($3 == "not" ? "-" : $3) }'
}
if [ $check_only = 0 ]; then
	for f in app/droce-perf-static app/droced-static drivers/ibverbs/libibverbs.so.1 \
			drivers/rdmacm/librdmacm.so.1 drivers/inert/libmlx5.so.1 \
			drivers/inert/libefa.so.1; do
		[ -e "$build/$f" ] || { echo "no $build/$f: build first" >&2; exit 2; }
	done
	rm -rf "$kit"
	mkdir -p "$kit/bin" "$kit/lib/ucx" "$kit/build/app" "$kit/build/drivers/ibverbs" \
		"$kit/build/drivers/rdmacm" "$kit/build/drivers/inert" || exit 2
	kit=$(cd "$kit" && pwd)

	# the binaries, under the names the scripts call them by
	cp "$build/app/droce-perf-static" "$kit/build/app/droce-perf-static"
	cp "$build/app/droced-static" "$kit/build/app/droced-static"
	for d in ibverbs/libibverbs.so.1 rdmacm/librdmacm.so.1 inert/libmlx5.so.1 \
			inert/libefa.so.1; do
		cp -L "$build/drivers/$d" "$kit/build/drivers/$d"
	done
	# a program and the kit's libraries, whatever the caller's environment
	# (bench-daemon.sh starts droced with LD_LIBRARY_PATH unset)
	wrap() {	# NAME TARGET
		cat > "$kit/build/app/$1" <<-EOF
	#!/bin/sh
	kit=\$(CDPATH= cd -- "\$(dirname -- "\$0")/../.." && pwd)
	LD_LIBRARY_PATH="\$kit/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$kit/build/app/$2" "\$@"
	EOF
		chmod +x "$kit/build/app/$1"
	}
	wrap droce-perf droce-perf-static
	wrap droced droced-static
	# droce-run from its template, its paths found at run time
	{
		echo '#!/bin/sh'
		echo 'kit=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)'
		sed -e '1d' \
			-e 's|@LIBDIR@|$kit/build/drivers/ibverbs:$kit/build/drivers/rdmacm:$kit/build/drivers/inert:$kit/lib|' \
			-e 's|@DROCED@|$kit/build/app/droced|g' \
			"$top/app/droce-run/droce-run.in"
	} > "$kit/build/app/droce-run"
	chmod +x "$kit/build/app/droce-run"

	missing=()
	for p in "${progs_required[@]}" "${progs_optional[@]}"; do
		path=$(command -v "$p") || { missing+=("$p"); continue; }
		cp -L "$path" "$kit/bin/$p"
	done
	for p in "${missing[@]}"; do
		case " ${progs_required[*]} " in
		*" $p "*) echo "no $p here: apt-get install perftest ibverbs-utils iproute2" >&2
			exit 2 ;;
		*) echo "no $p here: the kit goes without it" ;;
		esac
	done
	ucxmods=$(ucx_info -c 2>/dev/null | awk -F= '$1 == "UCX_MODULE_DIR" { print $2 }')
	if [ -n "$ucxmods" ] && [ -d "$ucxmods" ]; then
		for m in "$ucxmods"/*.so.0; do cp -L "$m" "$kit/lib/ucx/"; done
	fi

	for pass in 1 2 3; do
		added=0
		while read -r f; do
			while read -r name path; do
				[[ $name =~ $glibc_re || $name =~ $dropin_re ]] && continue
				[ -e "$kit/lib/$name" ] || [ -e "$kit/lib/ucx/$name" ] && continue
				[ "$path" = - ] && continue	# reported below
				cp -L "$path" "$kit/lib/$name" && added=1
			done < <(resolve "$f")
		done < <(elfs)
		[ $added = 0 ] && break
	done

	cat > "$kit/env.sh" <<-'EOF'
	# . KIT/env.sh: the kit's programs and libraries first
	kit=$(CDPATH= cd -- "$(dirname -- "${BASH_SOURCE[0]:-$0}")" && pwd)
	export PATH="$kit/bin:$PATH"
	export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export UCX_MODULE_DIR="$kit/lib/ucx"
	EOF
	{
		echo "droce kit, $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$top" rev-parse --short HEAD 2>/dev/null)"
		for f in "$kit"/bin/*; do
			n=$(basename "$f") pkg=
			for c in "$(command -v "$n")" "/bin/$n" "/sbin/$n"; do
				pkg=$(dpkg -S "$c" 2>/dev/null) && break
			done
			echo "bin/$n: ${pkg%%:*} $(dpkg-query -W -f '${Version}' "${pkg%%:*}" 2>/dev/null)"
		done
	} > "$kit/MANIFEST"
fi

# the check: inside the kit or glibc, the drop-in's verbs, nothing else
bad=0
while read -r f; do
	while read -r name path; do
		rel=${f#"$kit"/}
		if [ "$path" = - ]; then
			echo "MISSING $rel: $name not found" >&2; bad=1
		elif [[ $name =~ $glibc_re ]]; then
			:
		elif [[ $path != "$kit"/* ]]; then
			echo "OUTSIDE $rel: $name from $path" >&2; bad=1
		elif [[ $name =~ $dropin_re && $path != "$kit/build/drivers/"* ]]; then
			echo "NOT THE DROP-IN $rel: $name from $path" >&2; bad=1
		fi
	done < <(resolve "$f")
done < <(elfs)
n=$(elfs | wc -l)
size=$(du -sm "$kit" | cut -f1)
echo "kit $kit: $n ELF files, ${size} MB, $( [ $bad = 0 ] && echo "every library inside it or glibc's" || echo "MISSES above")"
exit $bad
