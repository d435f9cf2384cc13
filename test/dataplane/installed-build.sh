#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# installed-build.sh BUILD SOURCE EMBED-PAIR: the embedding API as a user
# gets it. Installs the build into a scratch directory (meson install
# --destdir), builds examples/embed_write out of tree with nothing but
# `pkg-config --cflags --libs droce` (the installed droce.pc, its prefix
# moved to where it was installed), and runs that binary as a server and
# client pair (embed-pair.sh). Fails if the .pc names a library or header
# that was not installed.
set -uo pipefail
build=$1; src=$2; pair=$3
dest=$(mktemp -d /tmp/droce-inst.XXXXXX)
trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet ||
	{ echo "FAIL: meson install"; exit 1; }
pc=$(find "$dest" -name droce.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: no droce.pc installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
mkdir "$dest/pc"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" > "$dest/pc/droce.pc"
echo "installed: $(cd "$dest" && find . -name 'libdroce*' -o -name '*.h' | sort | tr '\n' ' ')"
export PKG_CONFIG_PATH="$dest/pc"
flags=$(pkg-config --cflags --libs droce) ||
	{ echo "FAIL: pkg-config droce"; exit 1; }
cc -O2 -Wall -Wextra -Werror -o "$dest/embed_write" \
	"$src/examples/embed_write/main.c" $flags ||
	{ echo "FAIL: embed_write does not build from the installed droce"; exit 1; }
echo "ok: embed_write built from the installed droce alone"
"$pair" "$dest/embed_write"
