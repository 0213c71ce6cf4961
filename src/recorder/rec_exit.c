/*
 * The program's end, for the dump before teardown: main() returning and
 * exit() called, both before the atexit handlers and the static
 * destructors free what the program held, which the at-exit dump
 * ("Exiting", from rec_stop) comes after.  main() is found through
 * glibc's __libc_start_main, which the program's _start calls: the
 * recorder's comes first (it is preloaded) and hands glibc a main of its
 * own that calls the program's, then dumps.  _exit(), _Exit() and
 * quick_exit() end the process without a teardown: no dump on them.
 */
#include "rec.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
			void (*)(void), void *);

/* glibc's, which no header declares. */
int __libc_start_main(main_fn program, int argc, char **argv,
		      void (*init)(void), void (*fini)(void),
		      void (*rtld_fini)(void), void *stack_end);

static main_fn program_main;
static void (*libc_exit)(int);

/* The next definition of NAME after the recorder's: glibc's. */
static void *next(const char *name)
{
	void *f;

	rec_busy++; /* (dlsym may allocate) */
	f = dlsym(RTLD_NEXT, name);
	rec_busy--;
	return f;
}

/*
 * Found now, while the program has one thread: exit() may be called
 * where dlsym() could wait for a lock, from a thread that a fork() left
 * alone in a child, say.
 */
__attribute__((constructor)) static void exit_init(void)
{
	libc_exit = (void (*)(int))next("exit");
}

/*
 * The program's main, then the dump.  (Its frame, under main in every
 * stack of the main thread, is the recorder's, which stacks leave out.)
 */
static int main_then_dump(int argc, char **argv, char **envp)
{
	int rc = program_main(argc, argv, envp);

	rec_dump_before_teardown("main returned");
	return rc;
}

EXPORT int __libc_start_main(main_fn program, int argc, char **argv,
			     void (*init)(void), void (*fini)(void),
			     void (*rtld_fini)(void), void *stack_end)
{
	start_fn real = (start_fn)next("__libc_start_main");

	if (!real) {
		rec_say("no __libc_start_main in the C library; cannot start "
			"the program", NULL);
		_exit(127);
	}
	/* (The library's constructor has run: rec_cfg is known.) */
	if (!rec_cfg.active)
		return real(program, argc, argv, init, fini, rtld_fini,
			    stack_end);
	program_main = program;
	return real(main_then_dump, argc, argv, init, fini, rtld_fini,
		    stack_end);
}

EXPORT void exit(int status)
{
	void (*real)(int) = libc_exit ? libc_exit : (void (*)(int))next("exit");

	rec_dump_before_teardown("exit called");
	if (real)
		real(status);
	/* (Never: glibc has an exit.) */
	_exit(status);
}
