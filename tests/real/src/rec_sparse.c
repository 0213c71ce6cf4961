/*
 * A terabyte reserved, a few pages of it used: as a sanitizer's shadow, a
 * runtime's heap reservation or V8's cage.  Three pages written and one
 * read (the zero page) in every gigabyte, then a dump asked for with
 * SIGUSR2.  Reading pagemap entry by entry, a dump of it reads 2 GB.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	size_t len = (size_t)1 << 40, step = (size_t)1 << 30;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	volatile char sink = 0;

	if (p == MAP_FAILED) {
		perror("sparse: mmap");
		return 1;
	}
	for (size_t off = 0; off < len; off += step) {
		memset(p + off, 1, 3 * 4096);
		sink += p[off + 8 * 4096];
	}
	raise(SIGUSR2);
	usleep(300 * 1000);
	puts("sparse: ok");
	return sink;
}
