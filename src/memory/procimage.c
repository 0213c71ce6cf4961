/*
 * Process images: a live process's mappings from /proc/PID/maps and its
 * memory through process_vm_readv, one call per read.  Where that call is
 * refused (a kernel without it, seccomp) /proc/PID/mem serves instead:
 * the same permission, a file descriptor's worth more setup.
 */
#include "procimage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util.h"

#define PM_PAGE 4096u
/* Addresses per gather: the kernel takes up to IOV_MAX (1024) iovecs. */
#define GATHER_MAX 512

void procimage_init(struct procimage *img, const char *name,
		    size_t (*read)(struct procimage *, uint64_t, void *,
				   size_t))
{
	memset(img, 0, sizeof(*img));
	img->name = xstrdup(name);
	maps_init(&img->maps);
	strtab_init(&img->strings, &img->arena);
	img->read = read;
	img->mem_fd = img->pagemap_fd = -1;
}

void procimage_close(struct procimage *img)
{
	if (img->close)
		img->close(img);
	maps_free(&img->maps);
	free(img->threads);
	strtab_free(&img->strings);
	arena_free(&img->arena);
	free(img->name);
	memset(img, 0, sizeof(*img));
	img->mem_fd = img->pagemap_fd = -1;
}

void procimage_add_thread(struct procimage *img, pid_t tid, uint64_t sp,
			  const uint64_t *regs, size_t nregs)
{
	struct image_thread *t;

	t = PUSH_ZEROED(img->threads, img->nthreads, img->threads_alloc);
	t->tid = tid;
	t->sp = sp;
	if (nregs > IMAGE_NREGS)
		nregs = IMAGE_NREGS;
	memcpy(t->regs, regs, nregs * sizeof(*regs));
}

size_t procimage_read(struct procimage *img, uint64_t addr, void *buf,
		      size_t len)
{
	size_t n = len ? img->read(img, addr, buf, len) : 0;

	img->nreads++;
	img->nbytes += n;
	return n;
}

bool procimage_read_all(struct procimage *img, uint64_t addr, void *buf,
			size_t len)
{
	return procimage_read(img, addr, buf, len) == len;
}

void procimage_gather(struct procimage *img, const uint64_t *addrs, size_t n,
		      size_t len, uint8_t *out, bool *ok)
{
	if (img->gather) {
		img->gather(img, addrs, n, len, out, ok);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ok[i] = procimage_read_all(img, addrs[i], out + i * len, len);
}

/* Through /proc/PID/mem: what pread gives until the first failure. */
static size_t read_mem_file(struct procimage *img, uint64_t addr, void *buf,
			    size_t len)
{
	if (img->mem_fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mem", (int)img->pid);
		img->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (img->mem_fd < 0)
			return 0;
	}
	return pread_full(img->mem_fd, buf, len, addr);
}

/*
 * process_vm_readv stops at the first page it cannot read and says how
 * far it got; a refusal of the call itself (not of the address) sends
 * this and every later read to /proc/PID/mem.
 */
static size_t read_live(struct procimage *img, uint64_t addr, void *buf,
			size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (img->mem_fd >= 0)
		return read_mem_file(img, addr, buf, len);
	do
		n = process_vm_readv(img->pid, &local, 1, &remote, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return (size_t)n;
	if (errno == ENOSYS || errno == EPERM)
		return read_mem_file(img, addr, buf, len);
	return 0;
}

/*
 * Which of ADDRS lie in pages present in memory, from /proc/PID/pagemap
 * (bit 63 of each page's entry, read GATHER_MAX pages at a time), into
 * OK; all of them when pagemap cannot be opened.
 */
static void present_pages(struct procimage *img, const uint64_t *addrs,
			  size_t n, bool *ok)
{
	uint64_t entries[GATHER_MAX], first = 0;
	size_t have = 0;
	char path[64];

	if (img->pagemap_fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)img->pid);
		img->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t page = addrs[i] / PM_PAGE;

		if (img->pagemap_fd < 0) {
			ok[i] = true;
			continue;
		}
		if (page < first || page - first >= have) {
			ssize_t r = pread(img->pagemap_fd, entries,
					  sizeof(entries), (off_t)(page * 8));

			first = page;
			have = r > 0 ? (size_t)r / 8 : 0;
		}
		ok[i] = page - first < have && entries[page - first] >> 63;
	}
}

/*
 * Present pages only, then one process_vm_readv for them all: it stops at
 * the first address it cannot read, so on from the one after it.
 */
static void gather_live(struct procimage *img, const uint64_t *addrs,
			size_t n, size_t len, uint8_t *out, bool *ok)
{
	struct iovec local[GATHER_MAX], remote[GATHER_MAX];
	size_t idx[GATHER_MAX];

	for (size_t done = 0; done < n;) {
		size_t batch = n - done < GATHER_MAX ? n - done : GATHER_MAX;
		size_t m = 0, got = 0;
		ssize_t r;

		present_pages(img, addrs + done, batch, ok + done);
		for (size_t i = done; i < done + batch; i++) {
			if (!ok[i])
				continue;
			local[m].iov_base = out + i * len;
			local[m].iov_len = remote[m].iov_len = len;
			remote[m].iov_base = (void *)(uintptr_t)addrs[i];
			idx[m++] = i;
		}
		done += batch;
		for (size_t k = 0; k < m; k += got + 1) {
			r = process_vm_readv(img->pid, local + k, m - k,
					     remote + k, m - k, 0);
			if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
				for (; k < m; k++)
					ok[idx[k]] = procimage_read_all(
						img, addrs[idx[k]],
						out + idx[k] * len, len);
				break;
			}
			img->nreads++;
			got = r > 0 ? (size_t)r / len : 0;
			img->nbytes += got * len;
			if (k + got < m)
				ok[idx[k + got]] = false;
		}
	}
}

static void close_live(struct procimage *img)
{
	if (img->mem_fd >= 0)
		close(img->mem_fd);
	if (img->pagemap_fd >= 0)
		close(img->pagemap_fd);
	img->mem_fd = img->pagemap_fd = -1;
}

int procimage_open_pid(struct procimage *img, pid_t pid)
{
	char name[64], path[64];

	snprintf(name, sizeof(name), "process %d", (int)pid);
	procimage_init(img, name, read_live);
	img->pid = pid;
	img->close = close_live;
	img->gather = gather_live;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (access(path, F_OK) < 0) {
		procimage_close(img);
		return error("no process %d", (int)pid);
	}
	if (maps_load(&img->maps, path, &img->strings) < 0) {
		procimage_close(img);
		return -1;
	}
	return 0;
}
