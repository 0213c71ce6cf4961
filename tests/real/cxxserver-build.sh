#!/bin/sh
# The C++ server of the owners test (src/cxxserver.cc and its plugin
# src/cxxplugin.cc), built with g++ -g -O2 and run under Debian's tcmalloc
# heap profiler and under dmprof record.  Sourced by a test that set src,
# bin, tcmalloc and libgcc (as run.sh does), in its scratch directory:
#   cxxserver_build                   ./cxxserver and ./libcxxplugin.so
#   cxxserver_tcmalloc DIR [VAR=VAL]  HEAPPROFILE=DIR/prof, a dump a second
#                                     at most (gperftools 2.10 counts the
#                                     interval in whole seconds, so not one
#                                     a round), VAR=VAL added to the env
#   cxxserver_record DIR [OPTION]     dmprof record -o DIR/ [OPTION]
# A run leaves the program's hand count in DIR/handcount, its output in
# DIR/stdout and DIR/stderr, and sets
#   cxx_final  the first dump written after the hand count: the end of
#              main, every counted block still held (empty when there is
#              none; it is cxx_exit when the profiler wrote only that one)
#   cxx_exit   the last dump, at exit, after static destructors freed all
# The server writes its hand count after the last round, then idles
# (CXXSERVER_IDLE_MS) and prints a line: under tcmalloc the idle is over a
# second, so the stdout buffer's malloc dumps; under dmprof record -i 0.05
# the default 80 ms idle holds an interval dump.
#
# Run by hand: tests/real/cxxserver-build.sh DMPROF [DIR] builds in DIR (by
# default a new temporary directory), runs the server under tcmalloc, under
# dmprof record and under dmprof record -i 0.05, and says what it wrote.

# The server finds its plugin by name, next to itself ($ORIGIN is the
# loader's, not the shell's).
cxxserver_build() {
	# shellcheck disable=SC2016
	g++ -g -O2 -fPIC -shared "$src/cxxplugin.cc" -o libcxxplugin.so &&
		g++ -g -O2 -pthread "$src/cxxserver.cc" -o cxxserver -ldl \
			-Wl,-rpath,'$ORIGIN'
}

cxxserver_dumps() { # DIR: sets cxx_final and cxx_exit
	cxx_final=$(find "$1" -name '*.heap' -newer "$1/handcount" | sort | head -1)
	cxx_exit=$(ls "$1"/*.heap 2>/dev/null | sort | tail -1)
}

cxxserver_tcmalloc() { # DIR [VAR=VALUE...]
	cxx_dir=$1
	shift
	mkdir -p "$cxx_dir" && rm -f "$cxx_dir/handcount" || return 1
	env LD_PRELOAD="$libgcc $tcmalloc" TCMALLOC_STACKTRACE_METHOD=libgcc \
		HEAPPROFILE="$cxx_dir/prof" HEAP_PROFILE_TIME_INTERVAL=1 \
		HEAP_PROFILE_ALLOCATION_INTERVAL=1099511627776 \
		HEAP_PROFILE_INUSE_INTERVAL=1099511627776 \
		CXXSERVER_IDLE_MS=1050 "$@" ./cxxserver "$cxx_dir/handcount" \
		>"$cxx_dir/stdout" 2>"$cxx_dir/stderr" || return 1
	cxxserver_dumps "$cxx_dir"
}

cxxserver_record() { # DIR [OPTION...]
	cxx_dir=$1
	shift
	mkdir -p "$cxx_dir" && rm -f "$cxx_dir/handcount" || return 1
	"$bin" record -o "$cxx_dir/" "$@" -- ./cxxserver "$cxx_dir/handcount" \
		>"$cxx_dir/stdout" 2>"$cxx_dir/stderr" || return 1
	cxxserver_dumps "$cxx_dir"
}

case $0 in
*cxxserver-build.sh)
	if [ $# -lt 1 ]; then
		echo "usage: $0 DMPROF [DIR]" >&2
		exit 2
	fi
	bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
	src=$(cd "$(dirname "$0")/src" && pwd)
	tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
	libgcc=/lib/x86_64-linux-gnu/libgcc_s.so.1
	cxx_top=${2:-$(mktemp -d "${TMPDIR:-/tmp}/cxxserver.XXXXXX")}
	mkdir -p "$cxx_top" && cd "$cxx_top" || exit 1
	cxxserver_build || exit 1
	for cxx_run in tc rec reci; do
		case $cxx_run in
		tc) cxxserver_tcmalloc tc ;;
		rec) cxxserver_record rec ;;
		reci) cxxserver_record reci -i 0.05 ;;
		esac || { echo "$cxx_run: the run failed, see $cxx_top/$cxx_run/stderr"; continue; }
		echo "$cxx_top/$cxx_run: $(ls $cxx_run/*.heap | wc -l) dumps;" \
			"final: ${cxx_final:-none}; at exit: $cxx_exit"
	done
	echo "hand count ($cxx_top/tc/handcount):"
	cat tc/handcount
	;;
esac
