# Symbols of a stripped binary from a debuginfod server (sourced by
# run.sh: uses bin, tmp, tcmalloc, libgcc, ok and bad).  A real debuginfod
# (Debian's package) serves, on 127.0.0.1, the debug file of a program
# the test builds and strips; the program is profiled by tcmalloc.  The
# checks:
#   - without DEBUGINFOD_URLS, its frames stay addresses and the server
#     hears nothing (dmprof touches no network);
#   - with it, the frames are named, and -v says where the debug file
#     came from;
#   - a second run takes it from libdebuginfod's cache: the server hears
#     nothing more.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
if ! command -v debuginfod >/dev/null 2>&1; then
	echo "real: note: debuginfod is not installed (make check installs it); its checks are left out"
	return 0 2>/dev/null || exit 0
fi
mkdir -p dbgd/srv
cat >dbgd/p.c <<'C'
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) void *debuginfod_named_site(size_t n)
{
	void *p = malloc(n);

	memset(p, 1, n);
	return p;
}
int main(void)
{
	for (int i = 0; i < 100; i++)
		debuginfod_named_site(100000);
	return 0;
}
C
gcc -g -O1 -Wl,--build-id dbgd/p.c -o dbgd/p &&
	objcopy --only-keep-debug dbgd/p dbgd/srv/p.debug &&
	strip --strip-all dbgd/p || bad "debuginfod: the test program does not build"
env LD_PRELOAD="$libgcc $tcmalloc" TCMALLOC_STACKTRACE_METHOD=libgcc \
	HEAPPROFILE="$tmp/dbgd/prof" ./dbgd/p >/dev/null 2>&1
port=$((20000 + $$ % 20000))
debuginfod -F -p $port -d "$tmp/dbgd/db.sqlite" "$tmp/dbgd/srv" \
	>dbgd/server.log 2>&1 &
server=$!
gets() { grep -c 'GET /buildid/' dbgd/server.log; }
# (Until it has scanned the file: a few seconds at most.)
url=http://127.0.0.1:$port
named() { # OUT: a run with the server; 0 when the frame is named
	env DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$tmp/dbgd/cache" \
		"$bin" stacktrace -v dbgd/prof.0001.heap >"$1" 2>&1
	grep -q ' debuginfod_named_site ' "$1"
}
i=0
until named dbgd/with.out || [ $i -ge 50 ]; do
	sleep 0.2
	rm -rf "$tmp/dbgd/cache" "$XDG_CACHE_HOME/dmprof"
	i=$((i + 1))
done
if grep -q ' debuginfod_named_site ' dbgd/with.out; then
	ok
	grep -q "p: symbols from .symtab of .*, found from debuginfod ($url/buildid/" dbgd/with.out &&
		ok || bad "debuginfod: -v does not say where the symbols came from: $(grep 'dbgd/p:' dbgd/with.out)"
	before=$(gets)
	"$bin" stacktrace --no-symbol-cache dbgd/prof.0001.heap >dbgd/without.out 2>&1
	! grep -q ' debuginfod_named_site ' dbgd/without.out && [ "$(gets)" = "$before" ] &&
		ok || bad "debuginfod: without DEBUGINFOD_URLS, the server was asked or the frame named"
	env DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$tmp/dbgd/cache" \
		"$bin" stacktrace --no-symbol-cache dbgd/prof.0001.heap >dbgd/again.out 2>&1
	grep -q ' debuginfod_named_site ' dbgd/again.out && [ "$(gets)" = "$before" ] &&
		ok || bad "debuginfod: the second run did not use libdebuginfod's cache"
else
	bad "debuginfod: the stripped program's frame is not named: $(tail -3 dbgd/with.out; tail -3 dbgd/server.log)"
fi
kill $server 2>/dev/null
wait $server 2>/dev/null
# libdebuginfod is loaded only when DEBUGINFOD_URLS asks for it: dmprof
# is not linked with it, and a library of that name that lacks its
# functions is said to, once, and the frame stays unnamed.
! ldd "$bin" | grep -q libdebuginfod && ok ||
	bad "debuginfod: dmprof is linked with libdebuginfod"
mkdir -p dbgd/fake
echo 'int not_debuginfod;' >dbgd/fake.c
gcc -shared -fPIC -o dbgd/fake/libdebuginfod.so.1 dbgd/fake.c
env LD_LIBRARY_PATH="$tmp/dbgd/fake" DEBUGINFOD_URLS="$url" \
	"$bin" stacktrace --no-symbol-cache dbgd/prof.0001.heap >dbgd/fake.out 2>&1
[ "$(grep -c 'DEBUGINFOD_URLS is set, but libdebuginfod.so.1 has no debuginfod_begin: no debug file is fetched' dbgd/fake.out)" = 1 ] &&
	! grep -q ' debuginfod_named_site ' dbgd/fake.out && ok ||
	bad "debuginfod: a libdebuginfod without its functions: $(head -3 dbgd/fake.out)"
