/*
 * The hooks' entry points in the recorder's test build for
 * ThreadSanitizer (make SANITIZE=thread), the one file of it that is not
 * instrumented.  Instrumented code crashes where the runtime has not yet
 * set up the thread it runs in: before the runtime starts (ld.so's first
 * calls of malloc, the runtime's own), and in a new thread before the
 * runtime has started it (it allocates there itself).  So a thread's
 * calls go to the runtime's own entry points until the thread is one the
 * runtime runs: the main thread once the recorder's constructor has run
 * (after the runtime's: the library needs it), another once its start
 * routine is called; and from then on to the recorder's hooks
 * (rec_hooks.c, under names of their own), which hand the blocks to the
 * runtime in turn.
 *
 * The tracer that stops the threads for a dump (rec_stop.c) is no thread
 * the runtime knows, but it shares the dump thread's thread-local
 * storage, so its reads and writes are the dump thread's, which waits
 * for it meanwhile; it calls none of the runtime's interceptors (they
 * may wait for a lock a stopped thread holds).  A child of fork() is not
 * checked: the runtime checks nothing after a fork() in a process of
 * threads.
 */
#ifdef REC_TSAN
#include "rec.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* glibc's obsolete entry points, which <malloc.h> would declare. */
void *memalign(size_t align, size_t n);
void *pvalloc(size_t n);
size_t malloc_usable_size(void *p);
void *valloc(size_t n);
void *reallocarray(void *p, size_t n, size_t m);
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);

atomic_bool rec_tsan_ready;
__thread bool rec_tsan_thread_ready;

/*
 * The hooks are the recorder's once the runtime runs this thread; the
 * runtime's own calls (its report symbolizer's mmap(), say) go straight
 * to its entry points: they are not the program's (rec_from_runtime).
 */
#define ready() (rec_tsan_thread_ready &&                                   \
		 atomic_load_explicit(&rec_tsan_ready, memory_order_acquire) && \
		 !rec_from_runtime((uintptr_t)__builtin_return_address(0)))

/* The hooks handed on as they are (rec.h). */
#define FORWARD(ret, name, params, args)                                     \
	EXPORT ret name params                                               \
	{                                                                    \
		return ready() ? rec_tsan_##name args                        \
			       : __interceptor_##name args;                  \
	}
REC_TSAN_HOOKS(FORWARD)

EXPORT void free(void *p)
{
	if (ready())
		rec_tsan_free(p);
	else
		__interceptor_free(p);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		    off_t off) __attribute__((alias("mmap")));

EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *naddr = NULL;
	long r;

	if (flags & MREMAP_FIXED) {
		va_list ap;

		va_start(ap, flags);
		naddr = va_arg(ap, void *);
		va_end(ap);
	}
	if (ready())
		return rec_tsan_mremap(old, oldlen, newlen, flags, naddr);
	r = syscall(SYS_mremap, old, oldlen, newlen, flags, naddr);
	return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

/* The new thread's start routine: the runtime has set the thread up. */
static void *started(void *p)
{
	struct start s = *(struct start *)p;

	__interceptor_free(p);
	/* (Until the thread ends: the blocks it frees then are the hooks'.) */
	rec_tsan_thread_ready = true;
	return s.fn(s.arg);
}

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg)
{
	struct start *s = __interceptor_malloc(sizeof(*s));
	int rc;

	if (!s)
		return EAGAIN;
	s->fn = fn;
	s->arg = arg;
	rc = ready() ? rec_tsan_pthread_create(thread, attr, started, s)
		     : __interceptor_pthread_create(thread, attr, started, s);
	if (rc)
		__interceptor_free(s);
	return rc;
}
#endif
