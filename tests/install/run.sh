#!/bin/sh
# Installing: in a copy of the tree, a default build, then
#   make install PREFIX=P      the installed dmprof records a program and
#                              reads its dumps (run from /, so nothing of
#                              the tree or the current directory helps);
#   mv P Q                     and still does, from where it was moved;
#   make uninstall PREFIX=P    leaves no file behind;
# the same with LIBDIR and DATADIR elsewhere (found by the paths built
# in), and staged with DESTDIR under the default PREFIX; then the Debian
# package, make deb, extracted and run where it was extracted (deb.sh).
# Usage: tests/install/run.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
for need in make cc sort; do
	if ! command -v $need >/dev/null 2>&1; then
		echo "install: SKIP: $need is not installed"
		exit 0
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
export XDG_CACHE_HOME="$tmp/cache" LC_ALL=C
unset DMPROF_POLICY_PATH DMPROF_RECORDER

mkdir "$tmp/src"
(cd "$top" && cp -R Makefile LICENSE src include policies man "$tmp/src/")
cd "$tmp/src" || exit 1
make -s -j2 >build.log 2>&1 || { bad "a default build failed: $(tail -3 build.log)"; }
printf 'b\na\n' >"$tmp/in.txt"

# The installed binary records, and reads what it recorded, from /.
use() { # LABEL BIN
	label=$1 bin=$2
	rm -rf "$tmp/rec"
	(cd / && "$bin" record -o "$tmp/rec/" -i 0 -- sort "$tmp/in.txt") \
		>"$tmp/rec.out" 2>"$tmp/rec.err"
	if [ $? = 0 ] && [ "$(cat "$tmp/rec.out")" = "$(printf 'a\nb')" ] &&
	   ls "$tmp"/rec/sort.*.0001.heap >/dev/null 2>&1; then ok; else
		bad "$label: record failed: $(head -3 "$tmp/rec.err")"
		return
	fi
	first=$(ls "$tmp"/rec/sort.*.0001.heap | head -1)
	dumps=$(ls "$tmp"/rec/sort.*.heap | wc -l)
	(cd / && "$bin" csv -p l0 "$first") >"$tmp/csv.out" 2>"$tmp/csv.err"
	# (A header, and a row per dump: before teardown and at exit.)
	if [ $? = 0 ] && [ "$(wc -l <"$tmp/csv.out")" = $((dumps + 1)) ] &&
	   head -1 "$tmp/csv.out" | grep -q '^second,mmap-profiler,'; then ok; else
		bad "$label: csv -p l0 failed: $(head -3 "$tmp/csv.err")"
	fi
	(cd / && "$bin" policy list) | grep -q '^linux .*(default)$' &&
		ok || bad "$label: policy list does not find the installed policies"
}

files() { # DIR: the files under it
	find "$1" -type f -o -type l 2>/dev/null | sort
}

# PREFIX, after the default build: paths rebuilt as tracked.
p=$tmp/prefix
make -s install PREFIX="$p" >inst.log 2>&1 || bad "make install PREFIX: $(tail -3 inst.log)"
for f in bin/dmprof lib/dmprof/libdmprof-recorder.so lib/dmprof/dmprof-node.js \
	share/dmprof/policies/index \
	share/dmprof/policies/linux.policy share/man/man1/dmprof.1 share/man/man5/dmprof-policy.5; do
	[ -f "$p/$f" ] && ok || bad "make install PREFIX: no $f"
done
use "PREFIX" "$p/bin/dmprof"
# Moved elsewhere: found from where the binary is.
mv "$p" "$tmp/moved"
use "moved PREFIX" "$tmp/moved/bin/dmprof"
mv "$tmp/moved" "$p"
make -s uninstall PREFIX="$p" >uninst.log 2>&1 || bad "make uninstall PREFIX: $(tail -3 uninst.log)"
left=$(files "$p")
[ -z "$left" ] && ok || bad "make uninstall PREFIX left: $left"

# LIBDIR and DATADIR away from PREFIX: only the configured paths, built
# into the binary, find them (the build tracks them: they changed).
e=$tmp/elsewhere
make -s install PREFIX="$tmp/p2" LIBDIR="$e/lib" DATADIR="$e/share" \
	>inst3.log 2>&1 || bad "make install LIBDIR DATADIR: $(tail -3 inst3.log)"
use "LIBDIR and DATADIR" "$tmp/p2/bin/dmprof"
make -s uninstall PREFIX="$tmp/p2" LIBDIR="$e/lib" DATADIR="$e/share" \
	>uninst3.log 2>&1 || bad "make uninstall LIBDIR DATADIR: $(tail -3 uninst3.log)"
left=$(files "$tmp/p2"; files "$e")
[ -z "$left" ] && ok || bad "make uninstall LIBDIR DATADIR left: $left"

# DESTDIR staging under the default PREFIX.
d=$tmp/stage
make -s install DESTDIR="$d" >inst2.log 2>&1 || bad "make install DESTDIR: $(tail -3 inst2.log)"
bin=$(files "$d" | grep '/bin/dmprof$')
if [ -n "$bin" ]; then use "DESTDIR" "$bin"; else bad "make install DESTDIR: no bin/dmprof"; fi
make -s uninstall DESTDIR="$d" >uninst2.log 2>&1 || bad "make uninstall DESTDIR: $(tail -3 uninst2.log)"
left=$(files "$d")
[ -z "$left" ] && ok || bad "make uninstall DESTDIR left: $left"

. "$top/tests/install/deb.sh"

echo "install: $pass passed, $fail failed"
[ $fail = 0 ]
