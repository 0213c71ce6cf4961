/*
 * A process image: a process's memory seen from outside, as its mappings
 * and a function that reads bytes at an address.  A live process provides
 * one today (process_vm_readv, else /proc/PID/mem); an ELF core file can
 * provide the same later, so that what walks memory (the glibc heap
 * walker) never asks which it was given.
 */
#ifndef DMPROF_PROCIMAGE_H
#define DMPROF_PROCIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arena.h"
#include "maps.h"
#include "strtab.h"

/* x86-64's struct user_regs_struct holds 27 words. */
#define IMAGE_NREGS 27

struct image_thread {
	pid_t tid;
	uint64_t sp;
	uint64_t regs[IMAGE_NREGS];
};

struct procimage {
	/* "process 1234", a core's path: the subject of messages. */
	char *name;
	/* The mappings, sorted; their names are interned in STRINGS. */
	struct maps maps;
	struct strtab strings;
	struct arena arena;
	/*
	 * Read up to LEN bytes at ADDR into BUF: how many could be read
	 * from ADDR on, 0 when none (unmapped, not in the core, the
	 * process gone).  Never fails otherwise.
	 */
	size_t (*read)(struct procimage *img, uint64_t addr, void *buf,
		       size_t len);
	/*
	 * Optional: LEN bytes (at most a page) at each of the N addresses
	 * ADDRS into OUT, LEN bytes each, OK[I] saying which could be read.
	 * A provider that can tell leaves alone pages that hold nothing (a
	 * live process's pages never touched, or swapped out) rather than
	 * have the read make them.  Without it, one read each.
	 */
	void (*gather)(struct procimage *img, const uint64_t *addrs, size_t n,
		       size_t len, uint8_t *out, bool *ok);
	/* Release what the provider keeps (called by procimage_close). */
	void (*close)(struct procimage *img);
	/*
	 * The threads at the instant, where known (a held process, a
	 * core's NT_PRSTATUS notes): each one's stack pointer and general
	 * registers (x86-64's struct user_regs_struct as words).
	 */
	struct image_thread *threads;
	size_t nthreads, threads_alloc;
	/* What reads cost: calls to READ and the bytes they gave. */
	uint64_t nreads, nbytes;
	/* A live process: its pid, /proc/PID/mem once needed and
	 * /proc/PID/pagemap once opened (-1 before). */
	pid_t pid;
	int mem_fd, pagemap_fd;
};

/*
 * Start IMG with no mappings, named NAME, reading with READ: for a
 * provider (a core reader, a test's buffer), which then adds the
 * mappings (maps_add, then maps_sort).
 */
void procimage_init(struct procimage *img, const char *name,
		    size_t (*read)(struct procimage *, uint64_t, void *,
				   size_t));

/*
 * The image of live process PID: its maps now (stop it first for a
 * consistent picture: see procstop.h).  -1 after saying why not (no such
 * process, /proc/PID/maps unreadable).
 */
int procimage_open_pid(struct procimage *img, pid_t pid);

void procimage_close(struct procimage *img);

/* Add thread TID with stack pointer SP and NREGS registers REGS (at most
 * IMAGE_NREGS are kept). */
void procimage_add_thread(struct procimage *img, pid_t tid, uint64_t sp,
			  const uint64_t *regs, size_t nregs);

/* Up to LEN bytes at ADDR (counted in nreads, nbytes): how many. */
size_t procimage_read(struct procimage *img, uint64_t addr, void *buf,
		      size_t len);
/* IMG's gather, or one read per address. */
void procimage_gather(struct procimage *img, const uint64_t *addrs, size_t n,
		      size_t len, uint8_t *out, bool *ok);
/* Exactly LEN bytes at ADDR, or false. */
bool procimage_read_all(struct procimage *img, uint64_t addr, void *buf,
			size_t len);

#endif
