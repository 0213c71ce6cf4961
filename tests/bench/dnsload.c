/*
 * The bench's DNS client, for a server on 127.0.0.1 (tests/bench/run.sh's
 * daemon case): A queries for hN.bench.test, N below NAMES, over UDP,
 * WINDOW of them outstanding at once.
 *
 *   dnsload PORT NAMES fill          every name once, in order (fills the
 *                                    server's caches), then exits
 *   dnsload PORT NAMES SECONDS       random names for SECONDS (at most
 *                                    10,000,000 queries), then prints
 *                                    "queries N lost L max_ms M p99_ms P
 *                                    worst_at T": the slowest answer, the
 *                                    99th percentile, and when the
 *                                    slowest was sent (CLOCK_REALTIME)
 *
 * A query unanswered after a second is lost and sent again (as another);
 * the run ends after SECONDS whatever happens, so its load is bounded in
 * time and count.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { WINDOW = 8, MAX_QUERIES = 10000000 };

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A query for hNAME.bench.test of id ID into BUF: its length. */
static size_t query(uint8_t *buf, uint16_t id, unsigned long name)
{
	char label[32];
	size_t n = 0, len;

	buf[n++] = (uint8_t)(id >> 8);
	buf[n++] = (uint8_t)id;
	buf[n++] = 0x01; /* RD */
	buf[n++] = 0;
	memcpy(buf + n, "\0\1\0\0\0\0\0\0", 8); /* QDCOUNT 1 */
	n += 8;
	len = (size_t)snprintf(label, sizeof(label), "h%lu", name);
	buf[n++] = (uint8_t)len;
	memcpy(buf + n, label, len);
	n += len;
	memcpy(buf + n, "\5bench\4test\0\0\1\0\1", 16); /* A, IN */
	return n + 16;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct { double sent, wall; int busy; uint16_t id; } slot[WINDOW] = { 0 };
	uint16_t seq = 0;
	unsigned long names, next = 0, done = 0, lost = 0;
	double end, worst = 0, worst_at = 0, *lat;
	bool fill;
	uint8_t buf[512];
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: dnsload PORT NAMES fill|SECONDS\n");
		return 2;
	}
	to.sin_port = htons((uint16_t)atoi(argv[1]));
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	names = strtoul(argv[2], NULL, 10);
	fill = !strcmp(argv[3], "fill");
	end = now(CLOCK_MONOTONIC) + (fill ? 600 : atof(argv[3]));
	lat = malloc(MAX_QUERIES * sizeof(*lat));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (!names || !lat || fd < 0 ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		perror("dnsload");
		return 1;
	}
	srandom(1);
	for (;;) {
		double t = now(CLOCK_MONOTONIC);
		struct pollfd p = { fd, POLLIN, 0 };
		int more = t < end && done + WINDOW < MAX_QUERIES &&
			   (!fill || next < names);
		int busy = 0;

		for (int i = 0; i < WINDOW; i++) {
			if (slot[i].busy && t - slot[i].sent > 1.0) {
				slot[i].busy = 0; /* lost: sent again below */
				lost++;
			}
			if (!slot[i].busy && more) {
				unsigned long name = fill ? next++
					: (unsigned long)random() % names;
				size_t n;

				/* (The slot in the id's low bits, a count above:
				 * a late answer to a lost one is not this one's.) */
				slot[i].id = (uint16_t)(++seq << 3 | i);
				n = query(buf, slot[i].id, name);

				slot[i].sent = now(CLOCK_MONOTONIC);
				slot[i].wall = now(CLOCK_REALTIME);
				slot[i].busy = send(fd, buf, n, 0) == (ssize_t)n;
			}
			busy += slot[i].busy;
		}
		if (!busy && !more)
			break;
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
		if (got < 2)
			continue;
		uint16_t id = (uint16_t)(buf[0] << 8 | buf[1]);
		int k = id & (WINDOW - 1);
		if (slot[k].busy && slot[k].id == id) {
			double l = now(CLOCK_MONOTONIC) - slot[k].sent;

			slot[k].busy = 0;
			lat[done++] = l;
			if (l > worst) {
				worst = l;
				worst_at = slot[k].wall;
			}
		}
	}
	if (!fill) {
		qsort(lat, done, sizeof(*lat), cmp_double);
		printf("queries %lu lost %lu max_ms %.3f p99_ms %.3f worst_at "
		       "%.6f\n",
		       done, lost, worst * 1e3,
		       done ? lat[done * 99 / 100] * 1e3 : 0, worst_at);
	} else {
		printf("queries %lu lost %lu\n", done, lost);
	}
	free(lat);
	close(fd);
	return 0;
}
