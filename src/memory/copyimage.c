/*
 * A copy of a held process's memory (copyimage.h).  Each mapping copied
 * gets a private anonymous mapping of its own, as long as it is: its
 * committed pages are read into it with process_vm_readv, many runs of
 * pages a call, while the process is held.  Its other pages were never
 * written (or are the shared zero page): an anonymous mapping's read as
 * the zeros an untouched page of the copy holds, costing no memory; a
 * file's from the file itself (reading them from the process would page
 * them in there).  So an address of the process is an offset into the
 * copy, and the copy costs what the process's committed pages do.
 */
#include "copyimage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "search.h"
#include "util.h"

/* iovecs a process_vm_readv call takes (the kernel's UIO_MAXIOV). */
#define RUNS 1024

bool copyimage_wants(const struct vma *v)
{
	return v->perms[3] == 'p' && !vma_executable(v) && v->perms[0] == 'r';
}

uint64_t copyimage_size(const struct procimage *live,
			const struct page_counts *pages)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < live->maps.n; i++) {
		const struct page_counts *pc = &pages[i];

		if (copyimage_wants(&live->maps.v[i]) && pc->before)
			sum += (uint64_t)pc->before[(pc->end - pc->start) /
						    pc->page] *
			       pc->page;
	}
	return sum;
}

/* The copied mapping holding ADDR, or NULL. */
static const struct copy_vma *copied_at(const struct copyimage *c,
					uint64_t addr)
{
	size_t i = PARTITION_POINT(c->n, k, c->v[k].end <= addr);

	return i < c->n && c->v[i].start <= addr ? &c->v[i] : NULL;
}

/* N bytes at ADDR of V that were never written: zeros, or the file's
 * (false where the file cannot be read). */
static bool unwritten(struct copy_vma *v, uint64_t addr, void *out, size_t n)
{
	uint64_t at = v->offset + (addr - v->start);
	size_t got = 0;

	if (!v->path) {
		memset(out, 0, n);
		return true;
	}
	if (v->fd < 0 && (v->fd = open(v->path, O_RDONLY | O_CLOEXEC)) < 0)
		v->fd = -2;
	while (v->fd >= 0 && got < n) {
		ssize_t r = pread(v->fd, (char *)out + got, n - got,
				  (off_t)(at + got));

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	/* (Past the file's end, a mapping reads zeros.) */
	memset((char *)out + got, 0, n - got);
	return v->fd >= 0;
}

static bool page_copied(const struct copy_vma *v, uint64_t addr)
{
	uint64_t k = (addr - v->start) / v->page;

	return v->copied && (v->copied[k / 64] >> (k % 64) & 1);
}

/* Bytes at ADDR: the copy's where it has them, else the process's. */
static size_t copy_read(struct procimage *img, uint64_t addr, void *buf,
			size_t len)
{
	struct copyimage *c = (struct copyimage *)img;
	size_t done = 0;

	while (done < len) {
		uint64_t a = addr + done;
		struct copy_vma *v = (struct copy_vma *)copied_at(c, a);
		uint64_t page_end;
		size_t n;

		if (!v)
			return done + procimage_read(c->live, a,
						     (char *)buf + done,
						     len - done);
		page_end = (a / v->page + 1) * v->page;
		n = page_end - a < len - done ? (size_t)(page_end - a)
					      : len - done;
		if (page_copied(v, a))
			memcpy((char *)buf + done, v->buf + (a - v->start), n);
		else if (!unwritten(v, a, (char *)buf + done, n))
			return done + procimage_read(c->live, a,
						     (char *)buf + done,
						     len - done);
		done += n;
	}
	return done;
}

static void drop_spares(struct copyimage *c)
{
	for (size_t i = 0; i < c->nspare; i++)
		if (c->spare[i].buf)
			munmap(c->spare[i].buf,
			       c->spare[i].end - c->spare[i].start);
	free(c->spare);
	c->spare = NULL;
	c->nspare = 0;
}

static void copy_close(struct procimage *img)
{
	struct copyimage *c = (struct copyimage *)img;

	drop_spares(c);
	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].buf)
			munmap(c->v[i].buf, c->v[i].end - c->v[i].start);
		free(c->v[i].copied);
		if (c->v[i].fd >= 0)
			close(c->v[i].fd);
	}
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

/*
 * N runs of pages LOCAL[k] <- REMOTE[k], read from LIVE: with one call
 * for them all where process_vm_readv is allowed, on from the run after
 * one it cannot read (left as zeros), else through /proc/PID/mem.
 * -1 when not a byte could be read (the process gone).
 */
static int read_runs(struct copyimage *c, struct procimage *live,
		     struct iovec *local, struct iovec *remote, size_t n)
{
	size_t any = 0;

	for (size_t k = 0; k < n;) {
		ssize_t r = process_vm_readv(live->pid, local + k, n - k,
					     remote + k, n - k, 0);
		size_t got = r > 0 ? (size_t)r : 0;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
			for (; k < n; k++)
				any += procimage_read(live,
						      (uint64_t)(uintptr_t)
							      remote[k].iov_base,
						      local[k].iov_base,
						      local[k].iov_len);
			break;
		}
		live->nreads++;
		any += got;
		c->bytes += got;
		/* Whole runs read; the one it stopped in is skipped. */
		while (k < n && got >= local[k].iov_len)
			got -= local[k++].iov_len;
		if (k < n)
			k++;
	}
	if (any || !n)
		return 0;
	return error("%s: its memory could not be read (it exited?)",
		     live->name);
}

static void *map_for(uint64_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void copyimage_prepare(struct copyimage *c, const struct procimage *live,
		       const struct page_counts *pages)
{
	size_t alloc = 0;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < live->maps.n; i++) {
		const struct vma *v = &live->maps.v[i];
		const struct page_counts *pc = &pages[i];
		struct copy_vma *sv;
		uint64_t np;

		if (!copyimage_wants(v) || !pc->before ||
		    !pc->before[(pc->end - pc->start) / pc->page])
			continue;
		GROW(c->spare, c->nspare + 1, alloc);
		sv = &c->spare[c->nspare];
		memset(sv, 0, sizeof(*sv));
		sv->start = v->start;
		sv->end = v->end;
		if (!(sv->buf = map_for(v->end - v->start)))
			continue;
		c->nspare++;
		/* Its committed pages in memory now: written to. */
		np = (pc->end - pc->start) / pc->page;
		for (uint64_t k = 0; k < np; k++)
			if (pc->before[k + 1] != pc->before[k])
				((volatile uint8_t *)sv->buf)[k * pc->page] = 0;
	}
}

/* A mapping for [START, END): a spare one made ready, or a new one. */
static uint8_t *buffer_for(struct copyimage *c, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < c->nspare; i++) {
		if (c->spare[i].start == start && c->spare[i].end == end &&
		    c->spare[i].buf) {
			uint8_t *buf = c->spare[i].buf;

			c->spare[i].buf = NULL;
			return buf;
		}
	}
	return map_for(end - start);
}

int copyimage_take(struct copyimage *c, struct procimage *live,
		   const struct page_counts *pages)
{
	struct iovec local[RUNS], remote[RUNS];
	size_t nrun = 0, alloc = 0;
	int rc = 0;
	struct copy_vma *spare = c->spare;
	size_t nspare = c->nspare;

	memset(c, 0, sizeof(*c));
	c->spare = spare;
	c->nspare = nspare;
	procimage_init(&c->img, live->name, copy_read);
	c->img.close = copy_close;
	c->img.pid = live->pid;
	c->live = live;
	for (size_t i = 0; i < live->maps.n; i++) {
		struct vma v = live->maps.v[i];

		v.name = strtab_intern_str(&c->img.strings, v.name);
		maps_add(&c->img.maps, &v);
	}
	maps_sort(&c->img.maps, live->name);
	for (size_t i = 0; i < live->nthreads; i++)
		procimage_add_thread(&c->img, live->threads[i].tid,
				     live->threads[i].sp, live->threads[i].regs,
				     IMAGE_NREGS);
	for (size_t i = 0; i < live->maps.n && rc == 0; i++) {
		const struct vma *v = &live->maps.v[i];
		const struct page_counts *pc = &pages[i];
		struct copy_vma *cv;
		uint64_t np;

		if (!copyimage_wants(v) || !pc->before)
			continue;
		cv = PUSH_ZEROED(c->v, c->n, alloc);
		cv->start = v->start;
		cv->end = v->end;
		cv->page = pc->page;
		cv->fd = -1;
		/* (A deleted file's bytes are the process's to give.) */
		if (v->name[0] == '/' && !strstr(v->name, " (deleted)")) {
			cv->path = strtab_intern_str(&c->img.strings, v->name);
			cv->offset = v->offset;
		}
		if (!pc->before[(pc->end - pc->start) / pc->page])
			continue; /* (nothing committed) */
		np = (pc->end - pc->start) / pc->page;
		cv->copied = xcalloc((np + 63) / 64, sizeof(uint64_t));
		cv->buf = buffer_for(c, v->start, v->end);
		if (!cv->buf) {
			rc = error("cannot map %llu bytes to copy %s's "
				   "0x%llx-0x%llx: %s",
				   (unsigned long long)(v->end - v->start),
				   live->name, (unsigned long long)v->start,
				   (unsigned long long)v->end, strerror(errno));
			break;
		}
		/* Its runs of committed pages. */
		for (uint64_t k = 0; k < np;) {
			uint64_t e;

			if (pc->before[k + 1] == pc->before[k]) {
				k++;
				continue;
			}
			for (e = k + 1; e < np && pc->before[e + 1] != pc->before[e];
			     e++)
				;
			for (uint64_t j = k; j < e; j++)
				cv->copied[j / 64] |= 1ULL << (j % 64);
			local[nrun].iov_base = cv->buf + k * pc->page;
			remote[nrun].iov_base =
				(void *)(uintptr_t)(pc->start + k * pc->page);
			local[nrun].iov_len = remote[nrun].iov_len =
				(size_t)((e - k) * pc->page);
			if (++nrun == RUNS) {
				rc = read_runs(c, live, local, remote, nrun);
				nrun = 0;
			}
			k = e;
		}
	}
	if (rc == 0 && nrun)
		rc = read_runs(c, live, local, remote, nrun);
	/* (Spares the copy took none of: mappings changed meanwhile.) */
	drop_spares(c);
	if (rc < 0)
		procimage_close(&c->img);
	return rc;
}

void copyimage_close(struct copyimage *c)
{
	if (c->img.name)
		procimage_close(&c->img);
	else
		drop_spares(c); /* (prepared, never taken) */
}
