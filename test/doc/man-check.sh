#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# man-check.sh BUILD SRC: the programs' help and man pages (issue 24, "the
# first five minutes"), and what `meson install` puts where.
# - droce-run, droced, droce-perf and droce-switch answer --help on
#   stdout, exit 0, and each help names every key the program's key set
#   holds;
# - droce-perf(1) and droce-switch(1) name every option their --help lists;
# - each page renders with groff without a warning;
# - an install into a scratch DESTDIR has the programs, the drop-in
#   libraries in libdir/droce (not over the system's rdma-core), the man
#   pages, and an installed droce-run pointing at those libraries.
set -uo pipefail
build=$1 src=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
work=$(mktemp -d /tmp/droce-man.XXXXXX)
trap 'rm -rf "$work"' EXIT

droced=$build/app/droced
env -u LD_LIBRARY_PATH "$droced" --keys=all > "$work/keys" || bad "droced --keys=all"
grep -q '^  DROCE_DEVARGS=' "$work/keys" || bad "droced --keys=all lists no DROCE_DEVARGS"
for p in "$build/app/droce-run" "$droced" "$build/app/droce-perf" \
		"$build/app/droce-switch"; do
	name=$(basename "$p")
	env -u LD_LIBRARY_PATH "$p" --help > "$work/$name.help" 2> "$work/$name.err"
	rc=$?
	[ $rc -eq 0 ] || bad "$name --help exited $rc"
	grep -q '^usage: ' "$work/$name.help" || bad "$name --help: no usage line on stdout"
	[ -s "$work/$name.err" ] && bad "$name --help wrote to stderr: $(head -2 "$work/$name.err")"
done
# each program's help names its keys: droce-run the drop-in's, droced its own
for pair in droce-run:verbs droced:daemon; do
	name=${pair%%:*} set=${pair##*:}
	env -u LD_LIBRARY_PATH "$droced" --keys="$set" | sed -n 's/^  \(DROCE_[A-Z0-9_]*\)=.*/\1/p' |
	while read -r k; do
		grep -q "^  $k=" "$work/$name.help" || echo "$k"
	done > "$work/missing"
	[ -s "$work/missing" ] && bad "$name --help lacks $(tr '\n' ' ' < "$work/missing")"
	# and the generated page the same
	sed 's/\\-/-/g' "$build/doc/man/$name.1" > "$work/$name.page"
	env -u LD_LIBRARY_PATH "$droced" --keys="$set" | sed -n 's/^  \(DROCE_[A-Z0-9_]*\)=.*/\1/p' |
	while read -r k; do
		grep -q "^\.B $k=" "$work/$name.page" || echo "$k"
	done > "$work/missing"
	[ -s "$work/missing" ] && bad "$name.1 lacks $(tr '\n' ' ' < "$work/missing")"
done
# droce-perf(1), written by hand, names every option of its help
sed 's/\\-/-/g' "$src/doc/man/droce-perf.1" > "$work/perf.page"
grep -o -- '--[a-z0-9-]*' "$work/droce-perf.help" | sort -u | while read -r o; do
	grep -q -- "$o\b" "$work/perf.page" || echo "$o"
done > "$work/missing"
[ -s "$work/missing" ] && bad "droce-perf.1 lacks $(tr '\n' ' ' < "$work/missing")"
sed 's/\\-/-/g' "$src/doc/man/droce-switch.1" > "$work/switch.page"
grep -o -- '--[a-z0-9-]*' "$work/droce-switch.help" | sort -u | while read -r o; do
	grep -q -- "$o\b" "$work/switch.page" || echo "$o"
done > "$work/missing"
[ -s "$work/missing" ] && bad "droce-switch.1 lacks $(tr '\n' ' ' < "$work/missing")"

if command -v groff >/dev/null; then
	for page in "$build/doc/man/droce-run.1" "$build/doc/man/droced.1" \
			"$src/doc/man/droce-perf.1" "$src/doc/man/droce-switch.1"; do
		groff -man -ww -z -Tutf8 "$page" 2> "$work/groff.err"
		[ -s "$work/groff.err" ] && bad "$(basename "$page"): $(head -3 "$work/groff.err")"
	done
else
	echo "no groff: pages not rendered"
fi

dest=$work/dest
meson install -C "$build" --no-rebuild --quiet --destdir "$dest" > "$work/install.log" 2>&1 ||
	{ bad "meson install"; cat "$work/install.log"; }
prefix=$(meson introspect "$build" --buildoptions |
	python3 -c 'import json,sys; o={x["name"]: x["value"] for x in json.load(sys.stdin)}; print(o["prefix"], o["libdir"], o["bindir"], o["mandir"])')
read -r pfx libdir bindir mandir <<< "$prefix"
case "$libdir" in /*) ;; *) libdir=$pfx/$libdir ;; esac
case "$bindir" in /*) ;; *) bindir=$pfx/$bindir ;; esac
case "$mandir" in /*) ;; *) mandir=$pfx/$mandir ;; esac
for f in "$bindir/droced" "$bindir/droce-run" "$bindir/droce-perf" \
		"$bindir/droce-switch" "$mandir/man1/droce-switch.1" \
		"$libdir/droce/libibverbs.so.1" "$libdir/droce/librdmacm.so.1" \
		"$libdir/droce/libmlx5.so.1" "$libdir/droce/libefa.so.1" \
		"$mandir/man1/droce-run.1" "$mandir/man1/droced.1" "$mandir/man1/droce-perf.1"; do
	[ -e "$dest$f" ] || bad "not installed: $f"
done
[ -e "$dest$libdir/libibverbs.so.1" ] && bad "installed over the system's $libdir/libibverbs.so.1"
[ -x "$dest$bindir/droce-run" ] || bad "the installed droce-run is not executable"
grep -q "LD_LIBRARY_PATH=\"$libdir/droce" "$dest$bindir/droce-run" 2>/dev/null ||
	bad "the installed droce-run does not point at $libdir/droce"
[ $fail -eq 0 ] && echo "PASS: help, man pages and the install layout"
exit $fail
