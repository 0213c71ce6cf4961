/*
 * A program that knows its own glibc heap, for dmprof heap to be checked
 * against (tests/real/heap.sh).  The main thread and 8 others (so that
 * there are 9 arenas) each allocate a known set, 16 B to 1 MiB (some
 * mmapped), and free some of it so that chunks land in each free list:
 *   - 7 blocks of 40 bytes fill their tcache bin, 5 more go to a fastbin;
 *   - a fragmented stretch (blocks of 300 and 1200 bytes, every 1200 one
 *     freed, which no neighbour can merge), sorted into the bins by a
 *     larger request, then 3 more freed that stay in the unsorted bin.
 * Then it writes OUT: a line "block ADDRESS USABLE" per live block it
 * allocated, then "mallinfo2 arena N ordblks N ..." (every field of
 * glibc's own count), prints "ready" and waits for a signal.  Nothing
 * allocates after mallinfo2(): the file is written with write(2).
 *
 * Usage: heapknown OUT [MODE [N]]
 *   (no MODE)  as above
 *   corrupt    then overwrites the size field of a free chunk of the main
 *              arena's fragmented stretch with 0; "corrupt CHUNK" in OUT
 *   traced     a child of it traces it (ptrace), as a debugger would
 *   big N      the main thread also allocates N blocks of 16 to 184
 *              bytes (10 M: about 1 GB), freeing one in 16; OUT then holds
 *              mallinfo2 only
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <unistd.h>

#define THREADS 8
#define MAX_LIVE 1024
#define STRETCH 64

struct known {
	void *live[MAX_LIVE];
	size_t nlive;
	void *corruptible; /* a free chunk's user pointer in a bin */
};

static struct known known[THREADS + 1];
static pthread_barrier_t done;

static void *keep(struct known *k, size_t size)
{
	void *p = malloc(size);

	if (!p)
		abort();
	memset(p, 0xab, size < 64 ? size : 64);
	if (k->nlive == MAX_LIVE)
		abort();
	k->live[k->nlive++] = p;
	return p;
}

static void drop(struct known *k, void *p)
{
	for (size_t i = 0; i < k->nlive; i++)
		if (k->live[i] == p) {
			k->live[i] = k->live[--k->nlive];
			free(p);
			return;
		}
	abort();
}

/* The known set of one thread (or of main). */
static void allocate(struct known *k)
{
	static const size_t sizes[] = {
		16, 24, 40, 64, 100, 128, 200, 500, 1000, 2000, 5000, 20000,
		100000, 200000, 1 << 20,
	};
	void *small[12], *stretch[STRETCH];

	for (int round = 0; round < 4; round++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
			keep(k, sizes[i] + (size_t)round * 8);
	for (int i = 0; i < 12; i++)
		small[i] = keep(k, 40);
	keep(k, 40); /* (a guard, so that nothing meets top) */
	/* The fragmented stretch: 1200-byte holes between 300-byte blocks
	 * (past the tcache's largest, 1032), sorted into the bins by a
	 * request none of them fits, then three more left unsorted. */
	for (int i = 0; i < STRETCH; i++)
		stretch[i] = keep(k, i % 2 ? 1200 + 16 * (size_t)(i % 5) : 300);
	keep(k, 300);
	for (int i = 1; i < STRETCH - 6; i += 2)
		drop(k, stretch[i]);
	keep(k, 4000);
	for (int i = STRETCH - 5; i < STRETCH; i += 2)
		drop(k, stretch[i]);
	/* 7 into the tcache bin of 48-byte chunks, 5 into a fastbin (after
	 * the large request, which would have merged them away). */
	for (int i = 0; i < 12; i++)
		drop(k, small[i]);
	k->corruptible = stretch[STRETCH / 2 + 1];
}

static void *thread_main(void *arg)
{
	allocate(arg);
	pthread_barrier_wait(&done);
	for (;;)
		pause();
	return NULL;
}

/* N blocks of 16 to 184 bytes, one in 16 freed: a big heap. */
static void allocate_big(long n)
{
	void *prev = NULL;

	for (long i = 0; i < n; i++) {
		void *p = malloc(16 + (size_t)(i * 7 % 169));

		if (!p)
			abort();
		if (i % 16 == 15)
			free(prev);
		prev = p;
	}
}

/* write(2) all of BUF: stdio would allocate. */
static void put(int fd, const char *buf)
{
	size_t len = strlen(buf), off = 0;

	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n <= 0)
			abort();
		off += (size_t)n;
	}
}

static void write_blocks(int fd)
{
	char line[128];

	for (int t = 0; t <= THREADS; t++)
		for (size_t i = 0; i < known[t].nlive; i++) {
			snprintf(line, sizeof(line), "block %p %zu\n",
				 known[t].live[i],
				 malloc_usable_size(known[t].live[i]));
			put(fd, line);
		}
}

static void write_mallinfo(int fd)
{
	struct mallinfo2 m = mallinfo2();
	char line[512];

	snprintf(line, sizeof(line),
		 "mallinfo2 arena %zu ordblks %zu smblks %zu hblks %zu "
		 "hblkhd %zu usmblks %zu fsmblks %zu uordblks %zu fordblks %zu "
		 "keepcost %zu\n",
		 m.arena, m.ordblks, m.smblks, m.hblks, m.hblkhd, m.usmblks,
		 m.fsmblks, m.uordblks, m.fordblks, m.keepcost);
	put(fd, line);
}

/* A child that traces this process, as a debugger would. */
static void get_traced(void)
{
	pid_t parent = getpid();

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
	if (fork() == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (ptrace(PTRACE_SEIZE, parent, NULL, NULL) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	for (int i = 0; i < 1000; i++) {
		char line[256];
		FILE *fp = fopen("/proc/self/status", "r");
		int traced = 0;

		while (fp && fgets(line, sizeof(line), fp))
			if (!strncmp(line, "TracerPid:", 10))
				traced = atoi(line + 10) != 0;
		if (fp)
			fclose(fp);
		if (traced)
			return;
		usleep(10000);
	}
	abort();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	pthread_t tid[THREADS];
	char line[64];
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: heapknown OUT [corrupt|traced|big N]\n");
		return 2;
	}
	if (!strcmp(mode, "traced"))
		get_traced();
	pthread_barrier_init(&done, NULL, THREADS + 1);
	for (int t = 0; t < THREADS; t++)
		if (pthread_create(&tid[t], NULL, thread_main, &known[t + 1]))
			abort();
	allocate(&known[0]);
	if (!strcmp(mode, "big"))
		allocate_big(argc > 3 ? atol(argv[3]) : 10000000);
	pthread_barrier_wait(&done);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	if (strcmp(mode, "big"))
		write_blocks(fd);
	write_mallinfo(fd);
	if (!strcmp(mode, "corrupt")) {
		char *chunk = (char *)known[0].corruptible - 16;

		memset(chunk + 8, 0, 8);
		snprintf(line, sizeof(line), "corrupt %p\n", (void *)chunk);
		put(fd, line);
	}
	close(fd);
	put(1, "ready\n");
	for (;;)
		pause();
}
