/*
 * ELF core files (x86-64, written by the kernel or by gdb's gcore) as a
 * process image: the mappings from the NT_FILE note and the PT_LOAD
 * segments, the memory the segments hold, and each thread's registers
 * from its NT_PRSTATUS note, for what walks or scans memory afterwards.
 */
#ifndef DMPROF_COREIMAGE_H
#define DMPROF_COREIMAGE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "hashmap.h"
#include "procimage.h"
#include "util.h"

/* One thread, from its NT_PRSTATUS note. */
struct core_thread {
	pid_t pid;
	int cursig;                   /* the signal it stopped on, or 0 */
	struct user_regs_struct regs; /* rip, rsp, rbp, fs_base, ... */
};

/* One PT_LOAD segment: memory at VADDR (first: see count_from), MEMSZ
 * bytes of it. */
struct core_segment {
	uint64_t vaddr, memsz;
	uint64_t offset;  /* where its bytes start in the core */
	uint64_t filesz;  /* what the header says the core holds */
	uint64_t avail;   /* what the core really holds (<= filesz) */
	uint32_t flags;   /* p_flags: PF_R, PF_W, PF_X */
};

/* A file the core names, once however many mappings it has. */
struct core_path {
	const char *path;
	int fd;           /* for the bytes the core left out: -2 not
			     opened yet, -1 not to be read */
	const struct core_file *head; /* its mapping at offset 0, if any */
};

/* A file mapping from NT_FILE: OFFSET in bytes. */
struct core_file {
	uint64_t start, end, offset;
	const char *path;
	struct core_path *file;
};

/* Some segments and their bytes. */
struct core_lack {
	size_t count;
	uint64_t bytes;
};

struct coreimage {
	/* First, so that the image's callbacks find the core around it. */
	struct procimage img;
	char *path;
	int fd;
	uint64_t size;  /* of the core file */
	/* Sorted by vaddr, overlaps dropped. */
	struct core_segment *segs;
	size_t nsegs;
	struct core_thread *threads;
	size_t nthreads;
	/* NT_FILE's mappings, sorted by start: file-backed bytes the core
	 * left out (code, read-only data) are read from these files, when
	 * each still starts as the core says it did. */
	struct core_file *files;
	size_t nfiles;
	struct hashmap paths;   /* path (interned) -> struct core_path */
	/* Where those files are here (NULL: as named). */
	char *(*host_path)(const void *ctx, const char *path);
	const void *host_ctx;
	pid_t pid;          /* NT_PRPSINFO's, or the first thread's */
	char command[17];   /* NT_PRPSINFO's pr_fname, "" if absent */
	char args[81];      /* its pr_psargs: the command line's first 80
			       bytes, "" if absent */
	/* From NT_AUXV, 0 when absent: AT_ENTRY, AT_SYSINFO_EHDR,
	 * AT_EXECFN, and its first words (where it lies on the main
	 * thread's stack, the command line's pointers lie below it). */
	uint64_t entry, vdso, execfn;
	uint64_t auxv_head[16];
	size_t auxv_words;
	/*
	 * Bytes not in the core by the writer's choice (p_filesz below
	 * p_memsz: code read from files, coredump_filter, guard pages),
	 * and those missing because the core is cut short (RLIMIT_CORE,
	 * a full disk): segments wholly past the end, and the one cut.
	 */
	struct core_lack not_dumped, absent, cut;
	/* The notes were cut short, or malformed: how many were skipped. */
	size_t bad_notes;
};

/*
 * Open the core at PATH into CORE: 0, or -1 after saying why not ("FILE:
 * not an ELF file", not a core, not x86-64, headers cut short).  What a
 * cut core lacks is counted in CORE, not an error; malformed parts are
 * warnings naming FILE: offset.  CORE->img is what readers are given;
 * reads outside the segments' bytes give nothing.
 */
int coreimage_open(struct coreimage *core, const char *path);
/* The same, the files the core names found where HOST_PATH says (a new
 * string; NULL: as named) with CTX. */
int coreimage_open_at(struct coreimage *core, const char *path,
		      char *(*host_path)(const void *ctx, const char *path),
		      const void *ctx);
void coreimage_close(struct coreimage *core);

/*
 * The command line of CORE's process whole, read from its main thread's
 * stack as /proc/PID/cmdline is (NT_PRPSINFO keeps 80 bytes of it): its
 * arguments, the NULs between them as spaces (empty ones at the end
 * dropped); a new string, or NULL when the stack does not hold it (no
 * NT_AUXV, the stack left out or garbled).
 */
char *coreimage_command_line(struct coreimage *core);

/* The bytes of [START, END) the core holds (its committed bytes, as far
 * as a core can tell). */
uint64_t coreimage_held(const struct coreimage *core, uint64_t start,
			uint64_t end);

/*
 * What a cut core lacks, as a fault (the core, at the byte it is cut
 * at: "FILE is cut short at N bytes: ..."), for a warning: true, or
 * false when it lacks nothing (F untouched).
 */
bool coreimage_missing(const struct coreimage *core, struct fault *f);

#endif
