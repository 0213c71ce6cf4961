# Sourced by tests/real/run.sh after heap.sh (uses its heapknown and
# hk_start, hk_stop, hk_check, hk_count): dmprof heap on ELF core files
# that gdb's gcore and the kernel write.  The checks:
#   - heapknown's core: every block it holds found in use with its size,
#     and the walk reconciles with the mallinfo2() heapknown wrote exactly
#     as the live walk does (hk_check); the same for the kernel's core
#     of a heapknown killed by SIGSEGV, where the kernel writes one here;
#   - the text summary names the core, the process and its 9 threads;
#   - the core cut at half its size: read as far as it goes, what is
#     missing said, no crash;
#   - files that are not cores: a clear error naming them.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
cd "$tmp/heap" || exit 1

# dmprof heap --json --blocks on CORE, checked against heapknown's KNOWN.
core_walk() { # WHAT CORE KNOWN
	"$bin" heap --json --blocks $2 >core.json 2>core.err &&
		ok || bad "core: $1: dmprof heap failed: $(cat core.err)"
	hk_check $3 core.json >checks.out 2>&1 || echo "bad the checker failed" >>checks.out
	sed "s/^bad /bad core: $1: /" checks.out >core-checks.out
	hk_count core-checks.out
}

if ! command -v gcore >/dev/null 2>&1; then
	echo "real: SKIP core: gdb's gcore is not installed (make check installs it)"
elif hk_start incore ./heapknown incore; then
	core=hk.core.$hk_pid
	gcore -o hk.core $hk_pid >gcore.out 2>&1 && [ -s $core ] &&
		ok || bad "core: gcore failed: $(tail -3 gcore.out)"
	pid=$hk_pid
	hk_stop
	core_walk "gcore's core" $core incore
	"$bin" heap $core >core.txt 2>core.err &&
		grep -q "^core $core: process $pid, 9 threads (the walk .* ms" core.txt &&
		ok || bad "core: the text summary: $(head -1 core.txt) $(cat core.err)"

	size=$(stat -c %s $core)
	head -c $((size / 2)) $core >cut.core
	rm -f $core
	timeout 60 "$bin" heap cut.core >cut.out 2>cut.err
	rc=$?
	{ [ $rc = 0 ] || [ $rc = 1 ]; } &&
		grep -q "^dmprof: warning: cut.core is cut short at $((size / 2)) bytes: [0-9]* segments absent and [01] cut, [0-9]* bytes of memory missing$" cut.err &&
		ok || bad "core: cut at half: status $rc: $(head -3 cut.err)"
	rm -f cut.core
fi

# The core the kernel writes of PROGRAM (started as hk_start starts it,
# with "ulimit -c unlimited", then killed by SIGSEGV), where core_pattern
# names a file here, as "core" does (a pipe to systemd-coredump is
# skipped): its path in kcore, or kcore empty after saying why (WHAT
# names the test).
kernel_core() { # WHAT OUT PROGRAM [ARGS...]
	kwhat=$1 kout=$2
	shift 2
	kcore=
	if [ "$(cat /proc/sys/kernel/core_pattern)" != core ]; then
		echo "real: SKIP $kwhat: core_pattern is not 'core': no kernel core here"
		return
	fi
	hk_start $kout sh -c 'ulimit -c unlimited && exec "$@"' sh "$@" || return
	rm -f core core.$hk_pid
	kill -SEGV $hk_pid
	wait $hk_pid 2>/dev/null
	kcore=$(ls core core.$hk_pid 2>/dev/null | head -1)
	[ -n "$kcore" ] ||
		echo "real: SKIP $kwhat: the kernel wrote no core (ulimit -c? a container?)"
}

# The kernel's core of heapknown: the same walk.
kernel_core core kcore ./heapknown kcore
if [ -n "$kcore" ]; then
	core_walk "the kernel's core" $kcore kcore
	rm -f $kcore
fi

# A command line of any bytes (issue 38: "core:6: expected 'Key: value'
# in META, found 'import time'"): a python3 -c whose program spans lines
# (a tab, a backslash in them) and whose last argument is no UTF-8 and
# ends in a space.  A live snapshot of it, the kernel's core of it
# crashed (its command line whole from the core's stack: NT_PRPSINFO
# keeps 80 bytes) and the snapshot of that core each give it back, byte
# for byte, in top --json (the NULs between arguments as spaces), and a
# snapshot file holds it escaped on one line.
cl_prog='import sys, time
print("ready", flush=True)
if 1:
	time.sleep(600)  # a tab; a \ backslash'
cl_arg=$(printf '\377\tend ')
# Is COMMAND_LINE of top --json of DUMP the process's?
cl_check() { # WHAT DUMP
	"$bin" top --json "$2" >cl.json 2>cl.err &&
		python3 -c 'import json, sys
got = json.load(open("cl.json"))["command_line"].encode("utf-8", "surrogateescape")
want = open("cl.want", "rb").read().rstrip(b"\0").replace(b"\0", b" ")
assert got == want, (got, want)' 2>cl.out &&
		ok || bad "core: command line: $1: $(cat cl.err cl.out | tail -2)"
}
if [ "$(cat /proc/sys/kernel/core_pattern)" != core ]; then
	echo "real: SKIP command line of a kernel's core: core_pattern is not 'core': no kernel core here"
elif hk_start clpy sh -c 'ulimit -c unlimited && exec "$@"' sh \
	/usr/bin/python3 -c "$cl_prog" "$cl_arg"; then
	cat /proc/$hk_pid/cmdline >cl.want
	rm -rf clsnap clksnap && mkdir clsnap clksnap
	"$bin" snapshot -o clsnap/ $hk_pid >/dev/null 2>cl.err &&
		ok || bad "core: command line: snapshot failed: $(cat cl.err)"
	rm -f core core.$hk_pid
	kill -SEGV $hk_pid
	wait $hk_pid 2>/dev/null
	kcore=$(ls core core.$hk_pid 2>/dev/null | head -1)
	cl_check "the live snapshot" "$(ls clsnap/*.snap | head -1)"
	if [ -n "$kcore" ]; then
		cl_check "the kernel's core" $kcore
		"$bin" snapshot -o clksnap/ $kcore >/dev/null 2>cl.err &&
			ok || bad "core: command line: snapshot of the core failed: $(cat cl.err)"
		cl_check "the snapshot of the kernel's core" "$(ls clksnap/*.snap | head -1)"
		[ "$(grep -c '^CommandLine: .*import sys, time\\n.*\\n\\ttime.sleep(600)  # a tab; a \\\\ backslash \\xff\\tend\\x20$' clksnap/*.snap)" = 1 ] &&
			ok || bad "core: command line: not on one line, escaped: $(grep -a -A2 '^CommandLine' clksnap/*.snap | head -3)"
		rm -f $kcore
	else
		echo "real: SKIP command line of a kernel's core: the kernel wrote no core (ulimit -c? a container?)"
	fi
fi

"$bin" heap heapknown >notcore.out 2>notcore.err
[ $? = 1 ] && [ ! -s notcore.out ] &&
	grep -q "^dmprof: heapknown: not a core file (ELF type 3, a shared library or a PIE)$" notcore.err &&
	ok || bad "core: an executable: $(cat notcore.err)"
"$bin" heap "$src/heapknown.c" >notcore.out 2>notcore.err
[ $? = 1 ] && grep -q "^dmprof: $src/heapknown.c: not an ELF file$" notcore.err &&
	ok || bad "core: a C file: $(cat notcore.err)"
cd "$tmp" || exit 1
