#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# verbs56-headers.sh DIR: Debian 13's libibverbs-dev (rdma-core 56, which
# has ibv_wr_flush; Debian 12's 44 does not) unpacked under DIR, fetched
# with apt-get download through a private apt configuration (the host's
# sources are not touched; DROCE_TRIXIE_MIRROR picks another mirror).
# Prints the include directory. Several callers at once share one fetch.
set -euo pipefail
dir=$1
mkdir -p "$dir"
exec 9> "$dir/.lock"
flock 9
inc="$dir/root/usr/include"
if [ ! -f "$inc/infiniband/verbs.h" ] ||
		! grep -q ibv_wr_flush "$inc/infiniband/verbs.h"; then
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
		apt-get "${opts[@]}" -q download libibverbs-dev >/dev/null 2>&1 ) ||
		{ echo "verbs56-headers: cannot download trixie's libibverbs-dev" >&2; exit 1; }
	rm -rf "$dir/root"
	dpkg -x "$dir"/deb/libibverbs-dev_*.deb "$dir/root"
	grep -q ibv_wr_flush "$inc/infiniband/verbs.h" ||
		{ echo "verbs56-headers: no ibv_wr_flush in $inc" >&2; exit 1; }
fi
echo "$inc"
