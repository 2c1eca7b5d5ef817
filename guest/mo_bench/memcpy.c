// SPDX-License-Identifier: GPL-2.0
/*
 * memcpy: user-space memcpy() bandwidth, by one thread or --threads, the
 * ceiling a migration's copy can reach.
 */
#include "common.h"

/* The node of the page at @p, or -1. */
static int node_of(void *p)
{
	int status = -1;

	if (move_pages(0, 1, &p, NULL, &status, 0) < 0 || status < 0)
		return -1;
	return status;
}

static void prefer_node(void *p, size_t len, int node)
{
	unsigned long mask[NODE_MASK_LONGS] = { 0 };

	if (!node_has_memory(node))
		return;
	node_mask_set(mask, node);
	mbind(p, len, MPOL_PREFERRED, mask, MAX_NODES, 0);
}

/* One thread's share of a memcpy: its own CPU, started together. */
struct memcpy_part {
	pthread_t tid;
	pthread_barrier_t *go;
	uint8_t *dst, *src;
	size_t len;
	int cpu;
	long long start_ns, end_ns;
};

static void *memcpy_part_fn(void *arg)
{
	struct memcpy_part *p = arg;

	run_on_cpu(p->cpu, "memcpy");
	pthread_barrier_wait(p->go);
	p->start_ns = now_ns();
	memcpy(p->dst, p->src, p->len);
	p->end_ns = now_ns();
	return NULL;
}

/*
 * memcpy() of @len bytes by opt.threads threads, each a contiguous share on
 * its own CPU (thread i on the i-th CPU this task may run on): the time
 * from the first one's start to the last one's end.
 */
static long long memcpy_threads(uint8_t *dst, const uint8_t *src, size_t len)
{
	int n = opt.threads, cpus[64], ncpu = allowed_cpus(cpus, 64), i;
	struct memcpy_part part[64];
	pthread_barrier_t go;
	size_t share = (len / n) & ~(size_t)4095, off = 0;
	long long start = 0, end = 0;

	if (!share || !ncpu)
		fatal(EXIT_USAGE, "memcpy: %zu bytes cannot be shared by %d threads", len, n);
	if (pthread_barrier_init(&go, NULL, n))
		fatal(EXIT_USAGE, "memcpy: pthread_barrier_init failed");
	for (i = 0; i < n; i++) {
		part[i] = (struct memcpy_part){ .go = &go, .dst = dst + off,
			.src = (uint8_t *)src + off, .cpu = cpus[i % ncpu],
			.len = i == n - 1 ? len - off : share };
		off += share;
		if (pthread_create(&part[i].tid, NULL, memcpy_part_fn, &part[i]))
			fatal(EXIT_USAGE, "memcpy: pthread_create failed");
	}
	for (i = 0; i < n; i++) {
		pthread_join(part[i].tid, NULL);
		if (!i || part[i].start_ns < start)
			start = part[i].start_ns;
		if (part[i].end_ns > end)
			end = part[i].end_ns;
	}
	pthread_barrier_destroy(&go);
	return end - start;
}

void run_memcpy(void)
{
	size_t len = opt.size_mb * MIB;
	uint8_t *src = map_aligned(len), *dst = map_aligned(len);
	int rep;

	if (!src || !dst)
		fatal(EXIT_USAGE, "memcpy: cannot map 2 x %ld MiB: %s", opt.size_mb,
		      strerror(errno));
	pin_self();
	/* source on --from, destination on --to, where those nodes exist */
	prefer_node(src, len, opt.from);
	prefer_node(dst, len, opt.to);
	fill(src, 0, len, 42);
	memset(dst, 0, len);
	for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++) {
		struct json j;
		long long t0, ns;
		size_t bad;

		/* Stale data from the last rep would pass: clear it all. */
		memset(dst, 0, len);
		if (opt.threads > 1) {
			ns = memcpy_threads(dst, src, len);
		} else {
			t0 = now_ns();
			memcpy(dst, src, len);
			ns = now_ns() - t0;
		}
		bad = verify(dst, 0, len, 42, "memcpy");
		j_begin(&j, 0, len, rep);
		j_int(&j, "threads", opt.threads);
		j_num(&j, "seconds", ns / 1e9);
		j_num(&j, "gbps", ns > 0 ? len / (ns / 1e9) / 1e9 : NAN);
		j_int(&j, "src_node", node_of(src));
		j_int(&j, "dst_node", node_of(dst));
		j_end_verified(&j, bad);
	}
	munmap(src, len);
	munmap(dst, len);
}
