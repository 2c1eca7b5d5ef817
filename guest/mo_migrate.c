// SPDX-License-Identifier: GPL-2.0
/*
 * mo_migrate: move a buffer between NUMA nodes with move_pages(2), check
 * every byte, and report what the kernel's migration counters did.
 *
 *   mo_migrate [options]            one move of a fresh buffer, then report
 *   mo_migrate --storm SECONDS ...  threads keep moving it around all nodes
 *
 * Used by the engine test suites of the migrate-offload lab; runs unchanged
 * on any NUMA machine (as root, for the mTHP sysfs files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 8

static size_t page_size;
static size_t buf_len = 16 << 20;
static size_t folio_kb = 4;
static int from_node;
static int to_node = 1;
static int nr_threads = 2;
static double storm_secs;
static bool shmem;
static int nodes[MAX_NODES];
static int nr_nodes;

static const char *const stat_names[] = {
	"pgmigrate_success", "pgmigrate_fail", "pgmigrate_batch_copied",
	"pgmigrate_batch_fallback", "pgmigrate_batch_wasted",
};
#define NR_STATS (sizeof(stat_names) / sizeof(stat_names[0]))

static void die(const char *what)
{
	fprintf(stderr, "mo_migrate: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void usage(int code)
{
	printf("usage: mo_migrate [options]\n"
	       "  -s, --size MB        buffer size (default 16)\n"
	       "  -f, --folio KB       folio size: 4 or an mTHP size (default 4);\n"
	       "                       sets hugepages-<KB>kB/enabled=always, others never\n"
	       "      --shmem          a shared anonymous (shmem) buffer instead of private anon\n"
	       "      --from NODE      node the buffer starts on (default 0)\n"
	       "      --to NODE        node to move it to (default 1)\n"
	       "      --storm SECONDS  keep moving it around all memory nodes with\n"
	       "                       --threads threads, checking it after every move,\n"
	       "                       for SECONDS or until SIGTERM\n"
	       "  -t, --threads N      storm threads (default 2)\n"
	       "Prints key=value lines; exit 0 if every byte survived, 1 if not,\n"
	       "2 on a setup error.\n");
	exit(code);
}

static void read_stats(long long *v)
{
	char name[128];
	long long val;
	FILE *f = fopen("/proc/vmstat", "r");
	size_t i;

	if (!f)
		die("/proc/vmstat");
	for (i = 0; i < NR_STATS; i++)
		v[i] = 0;
	while (fscanf(f, "%127s %lld", name, &val) == 2)
		for (i = 0; i < NR_STATS; i++)
			if (!strcmp(name, stat_names[i]))
				v[i] = val;
	fclose(f);
}

static int write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (fputs(val, f) < 0)
		ret = -errno;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* Only @kb-sized anonymous folios (none if 4); shmem THP if @kb is PMD. */
static void set_folio_size(size_t kb)
{
	static const size_t sizes[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
	char path[256];
	size_t i;
	bool found = kb == 4;

	write_file("/sys/kernel/mm/transparent_hugepage/enabled", "madvise");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/transparent_hugepage/hugepages-%zukB/enabled",
			 sizes[i]);
		if (!write_file(path, sizes[i] == kb ? "always" : "never") &&
		    sizes[i] == kb)
			found = true;
	}
	write_file("/sys/kernel/mm/transparent_hugepage/shmem_enabled",
		   kb == 2048 ? "always" : "never");
	if (!found) {
		fprintf(stderr, "mo_migrate: no %zukB folio size here\n", kb);
		exit(2);
	}
}

/* The byte at @off of the buffer in generation @gen. */
static inline uint8_t pattern(size_t off, unsigned int gen)
{
	uint64_t x = (off >> 3) * 0x9e3779b97f4a7c15ULL + gen * 0xff51afd7ed558ccdULL;

	return (uint8_t)(x >> (8 * (off & 7)));
}

/* Fill @len bytes at @buf, which is at offset @base of the buffer. */
static void fill(uint8_t *buf, size_t base, size_t len, unsigned int gen)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(base + i, gen);
}

/* Number of bad bytes; reports the first. */
static size_t check(const uint8_t *buf, size_t base, size_t len,
		    unsigned int gen, const char *when)
{
	size_t i, bad = 0;

	for (i = 0; i < len; i++) {
		if (buf[i] == pattern(base + i, gen))
			continue;
		if (!bad++)
			printf("corrupt: %s: byte %zu is %#x, want %#x\n", when,
			       base + i, buf[i], pattern(base + i, gen));
	}
	return bad;
}

/* Move @n pages at @addr to @node; returns pages now on @node. */
static size_t move(uint8_t *addr, size_t len, int node, size_t *busy)
{
	size_t n = len / page_size, i, on = 0;
	void **pages = malloc(n * sizeof(*pages));
	int *nodev = malloc(n * sizeof(*nodev));
	int *status = malloc(n * sizeof(*status));

	if (!pages || !nodev || !status)
		die("malloc");
	for (i = 0; i < n; i++) {
		pages[i] = addr + i * page_size;
		nodev[i] = node;
		status[i] = INT32_MIN;
	}
	if (move_pages(0, n, pages, nodev, status, MPOL_MF_MOVE) < 0)
		die("move_pages");
	if (move_pages(0, n, pages, NULL, status, 0) < 0)
		die("move_pages(query)");
	for (i = 0; i < n; i++)
		on += status[i] == node;
	if (busy)
		*busy = n - on;
	free(pages);
	free(nodev);
	free(status);
	return on;
}

static void find_nodes(void)
{
	char path[128];
	int n;

	for (n = 0; n < MAX_NODES; n++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", n);
		if (!access(path, R_OK))
			nodes[nr_nodes++] = n;
	}
	if (nr_nodes < 2) {
		fprintf(stderr, "mo_migrate: needs 2 or more memory nodes, found %d\n",
			nr_nodes);
		exit(2);
	}
}

static uint8_t *alloc_buf(void)
{
	int flags = shmem ? MAP_SHARED | MAP_ANONYMOUS : MAP_PRIVATE | MAP_ANONYMOUS;
	uint8_t *buf = mmap(NULL, buf_len, PROT_READ | PROT_WRITE, flags, -1, 0);

	if (buf == MAP_FAILED)
		die("mmap");
	if (folio_kb > 4 && madvise(buf, buf_len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	return buf;
}

struct storm {
	uint8_t *buf;
	size_t off, len;
	int id;
	unsigned long moves;
	size_t bad;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Each thread owns a slice: moves it around all nodes, rewrites, checks. */
static void *storm_fn(void *arg)
{
	struct storm *s = arg;
	unsigned int gen = 0;
	int k = s->id;

	while (!stop && !s->bad) {
		int node = nodes[k++ % nr_nodes];
		char when[64];

		move(s->buf + s->off, s->len, node, NULL);
		snprintf(when, sizeof(when), "thread %d, move %lu to node %d",
			 s->id, s->moves, node);
		s->bad += check(s->buf + s->off, s->off, s->len, gen, when);
		gen++;
		fill(s->buf + s->off, s->off, s->len, gen);
		s->moves++;
	}
	return NULL;
}

static int run_storm(void)
{
	struct storm st[16];
	pthread_t tid[16];
	struct timespec ts = { (time_t)storm_secs,
			       (long)((storm_secs - (time_t)storm_secs) * 1e9) };
	size_t slice, bad = 0;
	unsigned long moves = 0;
	uint8_t *buf = alloc_buf();
	int i;

	if (nr_threads < 1 || nr_threads > 16)
		usage(2);
	slice = buf_len / nr_threads / page_size * page_size;
	for (i = 0; i < nr_threads; i++) {
		st[i] = (struct storm){ buf, i * slice, slice, i, 0, 0 };
		fill(buf + st[i].off, st[i].off, slice, 0);
	}
	/* SIGTERM/SIGINT end the storm early, with the usual report. */
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	for (i = 0; i < nr_threads; i++)
		if (pthread_create(&tid[i], NULL, storm_fn, &st[i]))
			die("pthread_create");
	while (!stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
	stop = 1;
	for (i = 0; i < nr_threads; i++) {
		pthread_join(tid[i], NULL);
		moves += st[i].moves;
		bad += st[i].bad;
	}
	printf("storm_moves=%lu\nbad_bytes=%zu\n", moves, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "folio", required_argument, NULL, 'f' },
		{ "shmem", no_argument, NULL, 'S' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "storm", required_argument, NULL, 'x' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	long long before[NR_STATS], after[NR_STATS];
	size_t i, on, busy, bad;
	struct timespec t0, t1;
	uint8_t *buf;
	int c;

	page_size = sysconf(_SC_PAGESIZE);
	while ((c = getopt_long(argc, argv, "s:f:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': buf_len = strtoul(optarg, NULL, 0) << 20; break;
		case 'f': folio_kb = strtoul(optarg, NULL, 0); break;
		case 'S': shmem = true; break;
		case 'F': from_node = atoi(optarg); break;
		case 'T': to_node = atoi(optarg); break;
		case 'x': storm_secs = strtod(optarg, NULL); break;
		case 't': nr_threads = atoi(optarg); break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (!buf_len || folio_kb < 4)
		usage(2);
	find_nodes();
	set_folio_size(folio_kb);
	if (storm_secs > 0)
		return run_storm();

	buf = alloc_buf();
	fill(buf, 0, buf_len, 0);
	on = move(buf, buf_len, from_node, NULL);
	if (on != buf_len / page_size)
		printf("note: only %zu of %zu pages placed on node %d\n", on,
		       buf_len / page_size, from_node);

	read_stats(before);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	on = move(buf, buf_len, to_node, &busy);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	read_stats(after);
	bad = check(buf, 0, buf_len, 0, "after the move");

	printf("pages=%zu\nmoved=%zu\nnot_moved=%zu\nbad_bytes=%zu\n",
	       buf_len / page_size, on, busy, bad);
	printf("seconds=%.6f\n", t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (i = 0; i < NR_STATS; i++)
		printf("%s=%lld\n", stat_names[i], after[i] - before[i]);
	return bad ? 1 : 0;
}
