#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# trixie-librpma.sh DIR: Debian 13's librpma0 (librpma 1.3, built against
# rdma-core 56: it posts IBTA 1.5's FLUSH and ATOMIC WRITE natively where
# the device has them; Debian 12's 1.2, built against rdma-core 44, has
# neither path) unpacked under DIR, fetched with apt-get download through
# a private apt configuration (the host's sources are not touched;
# DROCE_TRIXIE_MIRROR picks another mirror). It needs nothing newer than
# Debian 12's glibc. Prints the library directory. Several callers at
# once share one fetch.
set -euo pipefail
dir=$1
mkdir -p "$dir"
exec 9> "$dir/.lock"
flock 9
lib="$dir/root/usr/lib/x86_64-linux-gnu"
if [ ! -e "$lib/librpma.so.0" ]; then
	aptd="$dir/apt"
	mkdir -p "$aptd/state/lists/partial" "$aptd/cache/archives/partial" \
		"$dir/deb"
	: >> "$aptd/state/status"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${DROCE_TRIXIE_MIRROR:-http://deb.debian.org/debian} trixie main" \
		> "$aptd/sources.list"
	opts=(-o "Dir::Etc::sourcelist=$aptd/sources.list"
		-o Dir::Etc::sourceparts=/dev/null
		-o Dir::Etc::preferences=/dev/null
		-o Dir::Etc::preferencesparts=/dev/null
		-o "Dir::State=$aptd/state" -o "Dir::State::status=$aptd/state/status"
		-o "Dir::Cache=$aptd/cache")
	apt-get "${opts[@]}" -q update >/dev/null 2>&1 || true
	( cd "$dir/deb" && rm -f ./*.deb &&
		apt-get "${opts[@]}" -q download librpma0 >/dev/null 2>&1 ) ||
		{ echo "trixie-librpma: cannot download trixie's librpma0" >&2; exit 1; }
	rm -rf "$dir/root"
	dpkg -x "$dir"/deb/librpma0_*.deb "$dir/root"
	[ -e "$lib/librpma.so.0" ] ||
		{ echo "trixie-librpma: no librpma.so.0 in $lib" >&2; exit 1; }
fi
echo "$lib"
