/*
 * node in the recorded process: what dmprof's hook for it (dmprof-node.js,
 * which dmprof record puts in NODE_OPTIONS as --require) tells the
 * recorder, and the dump before teardown it asks for.
 *
 * node tears its isolate down inside main(), so the C rule's dump (main
 * returned) comes after the heap of JavaScript objects and the Buffers'
 * memory are gone.  node is linked statically (V8, libuv), with no entry
 * of its own for the recorder to hook at the isolate's disposal; its
 * JavaScript can tell, though: the hook's process.on('exit') listener
 * runs when the event loop has ended (or process.exit() was called),
 * before node disposes of the isolate.  It calls fs.accessSync() on a
 * path that cannot exist (under /dev/null, which is no directory);
 * libuv's access() is libc's, which the recorder's comes before: the
 * dump is taken there, in node's main thread, synchronously, from
 * ordinary code (no signal handler, no lock of the recorder held), as
 * when main() returns.  Without the recorder the call fails (ENOTDIR),
 * which the hook ignores.
 *
 *   /dev/null/dmprof-recorder/runtime node VERSION   at the hook's load
 *   /dev/null/dmprof-recorder/before-teardown        at the exit event
 */
#include "rec.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define CALL "/dev/null/dmprof-recorder/"

static int (*libc_access)(const char *path, int mode);
static bool is_node;
static char version[64];
static char binary[4096];

/* The file that holds node's code (whose symbol F is): the executable
 * (node as NodeSource builds it), or libnode.so (Debian's). */
static void find_binary(void *f)
{
	Dl_info info;
	ssize_t n;

	if (dladdr(f, &info) && info.dli_fname && info.dli_fname[0] == '/' &&
	    strlen(info.dli_fname) < sizeof(binary)) {
		strcpy(binary, info.dli_fname);
		return;
	}
	n = readlink("/proc/self/exe", binary, sizeof(binary) - 1);
	binary[n > 0 ? n : 0] = 0;
}

/*
 * Found while the program has one thread, as rec_exit.c's exit: libc's
 * access, and whether this is node (by an entry point of its N-API,
 * which every node exports for native addons).
 */
__attribute__((constructor)) static void node_init(void)
{
	void *f;

	rec_busy++; /* (dlsym may allocate) */
	if (!libc_access)
		libc_access = (int (*)(const char *, int))dlsym(RTLD_NEXT,
								"access");
	f = dlsym(RTLD_DEFAULT, "napi_module_register");
	if (f) {
		is_node = true;
		find_binary(f);
	}
	rec_busy--;
}

/* "node v20.20.2", as the hook says it: which node runs the program. */
static void runtime(const char *what)
{
	size_t n;

	if (strncmp(what, "node ", 5))
		return;
	what += 5;
	n = strlen(what);
	if (!n || n >= sizeof(version) || strcspn(what, " /") != n)
		return;
	memcpy(version, what, n);
	version[n] = 0;
}

EXPORT int access(const char *path, int mode)
{
	/* (A path glibc would fault on, EFAULT, is glibc's to answer.) */
	if (__builtin_expect((uintptr_t)path >= 4096 && path[0] == '/' &&
				     path[1] == 'd' &&
				     !strncmp(path, CALL, sizeof(CALL) - 1),
			     0)) {
		const char *what = path + sizeof(CALL) - 1;

		/* (A worker thread's exit is not the program's.) */
		if (!strcmp(what, "before-teardown") &&
		    syscall(SYS_gettid) == getpid())
			rec_dump_before_teardown("node exiting");
		else if (!strncmp(what, "runtime ", 8))
			runtime(what + 8);
		return 0;
	}
	if (!libc_access)
		node_init();
	return libc_access ? libc_access(path, mode) : -1;
}

const char *rec_node_version(void)
{
	/* (Before the hook has run, or without it: node all the same.) */
	return version[0] ? version : is_node ? "unknown" : NULL;
}

const char *rec_node_binary(void)
{
	return is_node && binary[0] ? binary : NULL;
}
