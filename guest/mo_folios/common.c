// SPDX-License-Identifier: GPL-2.0
/*
 * What every kind uses: failures and the checks of the pattern, placement
 * on a node, the measured move of a whole buffer and what it must show.
 */
#include "common.h"

#include <stdarg.h>

unsigned long nr_fail;
size_t bad_bytes;
static int corrupt_lines;
volatile sig_atomic_t stop;

void die(const char *what)
{
	fprintf(stderr, "mo_folios: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* The kind cannot be made here: a setup error, not a failed check. */
void unsupported(const char *what, int err)
{
	fprintf(stderr, "mo_folios: %s: %s\n", what, strerror(err));
	exit(2);
}

void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	flockfile(stdout);
	fputs("fail: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	funlockfile(stdout);
	va_end(ap);
	__atomic_add_fetch(&nr_fail, 1, __ATOMIC_RELAXED);
}

/* Number of bad bytes; reports the first (a bounded number of times). */
size_t check(const void *p, size_t base, size_t len, uint64_t seed,
	     const char *fmt, ...)
{
	struct mo_bad first = { 0 };
	size_t bad = mo_pattern_verify(p, base, len, seed, &first);
	char when[160];
	va_list ap;

	if (!bad)
		return 0;
	__atomic_add_fetch(&bad_bytes, bad, __ATOMIC_RELAXED);
	if (__atomic_fetch_add(&corrupt_lines, 1, __ATOMIC_RELAXED) < MAX_CORRUPT_LINES) {
		va_start(ap, fmt);
		vsnprintf(when, sizeof(when), fmt, ap);
		va_end(ap);
		printf("corrupt: %s: byte %zu is %#x, want %#x\n", when, first.off,
		       first.got, first.want);
	}
	return bad;
}

/* Memory that was dropped must read as zeros, never as its old contents. */
size_t check_zero(const uint8_t *p, size_t base, size_t len, const char *when)
{
	size_t i, bad = 0, first = 0;

	for (i = 0; i < len; i++)
		if (p[i] && !bad++)
			first = i;
	if (!bad)
		return 0;
	__atomic_add_fetch(&bad_bytes, bad, __ATOMIC_RELAXED);
	if (__atomic_fetch_add(&corrupt_lines, 1, __ATOMIC_RELAXED) < MAX_CORRUPT_LINES)
		printf("corrupt: %s: byte %zu is %#x, want 0\n", when, base + first,
		       p[first]);
	return bad;
}

void read_line(const char *file, char *buf, size_t size)
{
	FILE *f = fopen(file, "r");

	if (!f)
		die(file);
	if (!fgets(buf, size, f))
		die(file);
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

void sleep_ms(double ms)
{
	struct timespec t = { (time_t)(ms / 1000), (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };

	nanosleep(&t, NULL);
}

/* Allocations of this thread (faults, swap-in, page cache) go to @node; -1: default. */
void prefer(int node)
{
	unsigned long mask = 1UL << (node < 0 ? 0 : node);

	if (node < 0 ? set_mempolicy(MPOL_DEFAULT, NULL, 0) :
		       set_mempolicy(MPOL_PREFERRED, &mask, sizeof(mask) * 8))
		die("set_mempolicy");
}

/* 4K folios: each kind here is about a folio's state, not its size. */
uint8_t *anon_buf(size_t len)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	if (madvise(p, len, MADV_NOHUGEPAGE) && errno != EINVAL)
		die("madvise(MADV_NOHUGEPAGE)");
	return p;
}

/* A private anon buffer on --from holding generation 1, checked. */
uint8_t *filled_buf(void)
{
	uint8_t *p;

	prefer(from_node);
	p = anon_buf(buf_len);
	mo_pattern_fill(p, 0, buf_len, 1);
	prefer(-1);
	check(p, 0, buf_len, 1, "after the fill");
	return p;
}

uint64_t *pagemap_of(const void *p, size_t len)
{
	uint64_t *pm = read_pagemap(p, len);

	if (!pm)
		die("/proc/self/pagemap");
	return pm;
}

void frames_hidden(void)
{
	fprintf(stderr, "mo_folios: /proc/self/pagemap hides frame numbers (needs CAP_SYS_ADMIN)\n");
	exit(2);
}

/* Pages of [@p, @p + @len) mapped to a frame with any of the kpageflags @mask. */
size_t count_kpf(const void *p, size_t len, uint64_t mask)
{
	size_t n = len / page_size, i, cnt = 0;
	uint64_t *pm = pagemap_of(p, len), fl;
	struct kpf_cache c = { .n = 0 };

	c.fd = open("/proc/kpageflags", O_RDONLY);
	if (c.fd < 0)
		die("/proc/kpageflags");
	for (i = 0; i < n; i++) {
		if (!PM_PRESENT(pm[i]))
			continue;
		if (!PM_PFN(pm[i]))
			frames_hidden();
		if (kpf_get(&c, PM_PFN(pm[i]), &fl))
			die("/proc/kpageflags");
		cnt += !!(fl & mask);
	}
	close(c.fd);
	free(pm);
	return cnt;
}

void **page_ptrs(uint8_t *p, size_t n)
{
	void **pages = malloc(n * sizeof(*pages));
	size_t i;

	if (!pages)
		die("malloc");
	for (i = 0; i < n; i++)
		pages[i] = p + i * page_size;
	return pages;
}

/* Nodes of the @n pages at @p into @where (negative: an error); returns those on @node. */
size_t query(uint8_t *p, size_t n, int node, int *where)
{
	void **pages = page_ptrs(p, n);
	size_t i, on = 0;

	if (move_pages(0, n, pages, NULL, where, 0) < 0)
		die("move_pages(query)");
	for (i = 0; i < n; i++)
		on += where[i] == node;
	free(pages);
	return on;
}

/*
 * One move_pages() of the @n pages at @p to @node with @flags, again (up to
 * @max_calls calls) while the query shows pages elsewhere: move_pages()
 * gives up on a folio busy for a moment (a writer's reference, writeback).
 * Returns the pages on @node, their nodes in @where, the calls in @calls.
 */
size_t move_range(uint8_t *p, size_t n, int node, int flags, int *where,
		  int *calls, int max_calls)
{
	void **pages = page_ptrs(p, n);
	int *nodev = malloc(n * sizeof(*nodev));
	int *status = malloc(n * sizeof(*status));
	size_t i, on;

	if (!nodev || !status)
		die("malloc");
	for (i = 0; i < n; i++)
		nodev[i] = node;
	for (*calls = 1;; ++*calls) {
		if (move_pages(0, n, pages, nodev, status, flags) < 0)
			die("move_pages");
		on = query(p, n, node, where);
		if (on == n || *calls >= max_calls)
			break;
		sleep_ms(10);
	}
	free(pages);
	free(nodev);
	free(status);
	return on;
}

/* Fault-time placement can miss; the measured move must start from --from. */
void place(uint8_t *p, size_t len, int flags)
{
	size_t n = len / page_size, on;
	int *where = malloc(n * sizeof(*where)), calls;

	if (!where)
		die("malloc");
	on = move_range(p, n, from_node, flags, where, &calls, MAX_MOVE_CALLS);
	printf("placed=%zu\n", on);
	if (on != n)
		printf("note: only %zu of %zu pages placed on node %d\n", on, n, from_node);
	free(where);
}


/*
 * The measured move of [@p, @p + @len) to @node: prints moved@sfx= (pages on
 * @node after it), new_frames@sfx= (pages whose frame changed) and
 * move_calls@sfx=. Every page must end on @node, and a page now on another
 * node cannot have kept its frame.
 */
struct moved measured_move(uint8_t *p, size_t len, int node, int flags,
			   const char *sfx)
{
	size_t n = len / page_size, i, kept = 0;
	int *before = malloc(n * sizeof(*before)), *after = malloc(n * sizeof(*after));
	uint64_t *pm0, *pm1;
	struct moved m = { 0 };
	int calls;

	if (!before || !after)
		die("malloc");
	/* Frames first, nodes second: a page moved by someone else in between cannot look kept. */
	pm0 = pagemap_of(p, len);
	query(p, n, node, before);
	m.on = move_range(p, n, node, flags, after, &calls, MAX_MOVE_CALLS);
	pm1 = pagemap_of(p, len);
	for (i = 0; i < n; i++) {
		if (!PM_PRESENT(pm0[i]) || !PM_PRESENT(pm1[i]))
			continue;
		if (!PM_PFN(pm0[i]) || !PM_PFN(pm1[i]))
			frames_hidden();
		if (PM_PFN(pm0[i]) != PM_PFN(pm1[i]))
			m.new_frames++;
		else if (before[i] >= 0 && after[i] >= 0 && before[i] != after[i])
			kept++;
	}
	printf("moved%s=%zu\nnew_frames%s=%zu\nmove_calls%s=%d\n", sfx, m.on, sfx,
	       m.new_frames, sfx, calls);
	if (m.on != n)
		fail("%zu of %zu pages not on node %d after the move%s", n - m.on, n,
		     node, sfx);
	if (kept)
		fail("%zu pages on another node after the move%s kept their frame",
		     kept, sfx);
	free(before);
	free(after);
	free(pm0);
	free(pm1);
	return m;
}

