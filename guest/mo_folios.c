// SPDX-License-Identifier: GPL-2.0
/*
 * mo_folios: migrate folios of one special kind with move_pages(2), check
 * every byte, and check that the folios are still of that kind afterwards.
 *
 *   mo_folios KIND [--size MB] [--from NODE] [--to NODE] [--path FILE]
 *             [--secs S]
 *
 * Every kind fills a buffer of --size with the pattern of
 * guest/lib/mo_pattern.h (seed: a generation number, 1 after the fill, per
 * page or per 64 KiB chunk; offsets in the buffer, so no two pages hold the
 * same bytes, except where ksm wants them to), places it on --from, moves
 * it to --to with one move_pages() of the whole range (repeated, up to 10
 * calls, while pages are left behind) and checks every byte, that every
 * page is on --to (a move_pages() query) and how many pages got a new frame
 * (/proc/self/pagemap). Then what the kind adds: see usage().
 *
 * Every move is made by a thread of this process (the suites filter trace
 * events by its comm), so it never execs and never renames a thread.
 * Output: "pid=" first, then key=value lines; the first bad byte of a check
 * as "corrupt: WHEN: byte OFF is X, want Y"; each failed check as
 * "fail: WHY". Exit 0 if every check passed, 1 if one failed, 2 on a setup
 * error (the kind cannot be made here: no swap, no KSM, no uffd-wp, ...).
 * Runs as root (pagemap frame numbers, /proc/kpageflags, KSM sysfs,
 * MPOL_MF_MOVE_ALL, MADV_HWPOISON).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <numaif.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/mo_pages.h"
#include "lib/mo_pattern.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_HWPOISON
#define MADV_HWPOISON 100
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* /proc/kpageflags bits (uapi kernel-page-flags.h; MLOCKED: linux/) */
#define KPF_SWAPCACHE 13
#define KPF_MLOCKED 33
/* /proc/self/pagemap bits */
#define PM_UFFD_WP(e) (((e) >> 57) & 1)
#define PM_SWAP(e) (((e) >> 62) & 1)

#define CHUNK (64 << 10)		/* what the race kinds' racer works on */
#define EXIT_REGION (4 << 20)		/* what each race-exit child fills */
#define MAX_CORRUPT_LINES 20
#define MAX_MOVE_CALLS 10
#define KSM "/sys/kernel/mm/ksm/"
/* ksm: 8 distinct page contents, each page a copy of one of them */
#define KSM_SEED(i) (1 + (i) % 8)
#define KSM_COW_SEED 1000
/* 8 contents, a KSM page shares at most max_page_sharing (256) mappings. */
#define KSM_MAX_FRAMES 16
#define NR_POISON 3

static size_t page_size, buf_len = 8 << 20, npages;
static int from_node, to_node = 1;
static const char *path;
static double secs = 3;
static const char *kind;
static unsigned long nr_fail;
static size_t bad_bytes;
static int corrupt_lines;
static volatile sig_atomic_t stop;

static void die(const char *what)
{
	fprintf(stderr, "mo_folios: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* The kind cannot be made here: a setup error, not a failed check. */
static void unsupported(const char *what, int err)
{
	fprintf(stderr, "mo_folios: %s: %s\n", what, strerror(err));
	exit(2);
}

static void usage(int code)
{
	printf("usage: mo_folios KIND [options]\n"
	       "Moves a buffer of one folio kind from --from to --to with move_pages(2),\n"
	       "checks every byte, that every page moved and got a new frame, and what\n"
	       "the kind adds:\n"
	       "  file           page cache of --path (a real filesystem), half written\n"
	       "                 by pwrite(), half through a MAP_SHARED mapping, moved to\n"
	       "                 --to and back while a pwrite() writer and a mapping\n"
	       "                 writer rewrite it; checked by pread() and the mapping\n"
	       "  swapcache      private anon paged out (MADV_PAGEOUT) and read back into\n"
	       "                 the swap cache; stays there (needs swap)\n"
	       "  ksm            8 contents over the buffer, merged by KSM (MPOL_MF_MOVE_ALL);\n"
	       "                 stay KSM pages, a write breaks one only (needs KSM)\n"
	       "  mlock          mlock()ed; stays mlocked\n"
	       "  uffd-wp        write-protected by userfaultfd; the protection survives:\n"
	       "                 each page's first write after the move faults once\n"
	       "  cow            shared with a forked child (MPOL_MF_MOVE_ALL); the child\n"
	       "                 sees the same bytes in the same new frames, then COWs\n"
	       "  race-munmap    for --secs, 2 movers move the buffer back and forth while\n"
	       "  race-mprotect  random 64 KiB chunks are unmapped and mapped again /\n"
	       "  race-dontneed  made read-only and writable / MADV_DONTNEED'd, and\n"
	       "                 refilled, a verifier checking the chunks meanwhile;\n"
	       "                 holes_met/absent_met: pages the movers met unmapped/absent;\n"
	       "                 a read-only chunk must fault on writes (ro_writable=0),\n"
	       "                 also one under a migration entry at mprotect (ro_inflight)\n"
	       "  race-exit      for --secs, 2 movers move the pages of short-lived\n"
	       "                 children (4 MiB each) while they check them and exit\n"
	       "  hwpoison       2 movers move the buffer back and forth while 3 of its\n"
	       "                 pages get MADV_HWPOISON: exactly those raise SIGBUS\n"
	       "                 (their frames are retired for good)\n"
	       "options:\n"
	       "      --size MB    buffer size (default 8)\n"
	       "      --from NODE  node the buffer starts on (default 0)\n"
	       "      --to NODE    node it moves to (default 1)\n"
	       "      --path FILE  the file of kind file (created or truncated, left there)\n"
	       "      --secs S     race kinds and hwpoison: how long (default 3)\n"
	       "Prints key=value lines (pid= first); exit 0 if every check passed,\n"
	       "1 if one failed (\"fail:\" lines), 2 on a setup error.\n");
	exit(code);
}

static void fail(const char *fmt, ...)
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
static size_t check(const void *p, size_t base, size_t len, uint64_t seed,
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
static size_t check_zero(const uint8_t *p, size_t base, size_t len, const char *when)
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

static void read_line(const char *file, char *buf, size_t size)
{
	FILE *f = fopen(file, "r");

	if (!f)
		die(file);
	if (!fgets(buf, size, f))
		die(file);
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void sleep_ms(double ms)
{
	struct timespec t = { (time_t)(ms / 1000), (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };

	nanosleep(&t, NULL);
}

/* Allocations of this thread (faults, swap-in, page cache) go to @node; -1: default. */
static void prefer(int node)
{
	unsigned long mask = 1UL << (node < 0 ? 0 : node);

	if (node < 0 ? set_mempolicy(MPOL_DEFAULT, NULL, 0) :
		       set_mempolicy(MPOL_PREFERRED, &mask, sizeof(mask) * 8))
		die("set_mempolicy");
}

/* 4K folios: each kind here is about a folio's state, not its size. */
static uint8_t *anon_buf(size_t len)
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
static uint8_t *filled_buf(void)
{
	uint8_t *p;

	prefer(from_node);
	p = anon_buf(buf_len);
	mo_pattern_fill(p, 0, buf_len, 1);
	prefer(-1);
	check(p, 0, buf_len, 1, "after the fill");
	return p;
}

static uint64_t *pagemap_of(const void *p, size_t len)
{
	uint64_t *pm = read_pagemap(p, len);

	if (!pm)
		die("/proc/self/pagemap");
	return pm;
}

static void frames_hidden(void)
{
	fprintf(stderr, "mo_folios: /proc/self/pagemap hides frame numbers (needs CAP_SYS_ADMIN)\n");
	exit(2);
}

/* Pages of [@p, @p + @len) mapped to a frame with any of the kpageflags @mask. */
static size_t count_kpf(const void *p, size_t len, uint64_t mask)
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

static void **page_ptrs(uint8_t *p, size_t n)
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
static size_t query(uint8_t *p, size_t n, int node, int *where)
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
static size_t move_range(uint8_t *p, size_t n, int node, int flags, int *where,
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
static void place(uint8_t *p, size_t len, int flags)
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

struct moved {
	size_t on, new_frames;
};

/*
 * The measured move of [@p, @p + @len) to @node: prints moved@sfx= (pages on
 * @node after it), new_frames@sfx= (pages whose frame changed) and
 * move_calls@sfx=. Every page must end on @node, and a page now on another
 * node cannot have kept its frame.
 */
static struct moved measured_move(uint8_t *p, size_t len, int node, int flags,
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

/*
 * file: the page cache of a file, mapped and written two ways while it
 * moves. Even pages belong to a pwrite() writer, odd ones to a writer
 * through the mapping, so that each large folio gets both; each writer
 * checks a page's last generation (by pread(), through the mapping) before
 * it writes the next one.
 */
static int file_fd;
static uint8_t *file_map;
static unsigned int *file_gens;

struct file_writer {
	int id;			/* 0: pwrite(), even pages; 1: the mapping, odd pages */
	unsigned long writes;
	pthread_t thread;
};

static uint8_t *page_buf(void)
{
	uint8_t *b = aligned_alloc(page_size, page_size);

	if (!b)
		die("aligned_alloc");
	return b;
}

static void pread_page(uint8_t *b, size_t off)
{
	if (pread(file_fd, b, page_size, off) != (ssize_t)page_size)
		die("pread");
}

static void pwrite_page(const uint8_t *b, size_t off)
{
	if (pwrite(file_fd, b, page_size, off) != (ssize_t)page_size)
		die("pwrite");
}

static void *file_writer_fn(void *arg)
{
	struct file_writer *w = arg;
	uint8_t *b = page_buf();
	size_t p, off;

	while (!stop) {
		for (p = w->id; p < npages && !stop; p += 2) {
			off = p * page_size;
			if (w->id == 0) {
				pread_page(b, off);
				if (check(b, off, page_size, file_gens[p],
					  "pwrite writer: page %zu, generation %u (pread)",
					  p, file_gens[p]))
					goto out;
				mo_pattern_fill(b, off, page_size, file_gens[p] + 1);
				pwrite_page(b, off);
			} else {
				if (check(file_map + off, off, page_size, file_gens[p],
					  "mapping writer: page %zu, generation %u", p,
					  file_gens[p]))
					goto out;
				mo_pattern_fill(file_map + off, off, page_size,
						file_gens[p] + 1);
			}
			file_gens[p]++;
			/* CPU time for the movers (all vCPUs share a host thread) */
			if (!(++w->writes % 32))
				sleep_ms(1);
		}
	}
out:
	free(b);
	return NULL;
}

static void check_file(const char *when)
{
	uint8_t *b = page_buf();
	size_t p, off;

	for (p = 0; p < npages; p++) {
		off = p * page_size;
		pread_page(b, off);
		check(b, off, page_size, file_gens[p], "%s: page %zu (pread)", when, p);
		check(file_map + off, off, page_size, file_gens[p], "%s: page %zu (mapping)",
		      when, p);
	}
	free(b);
}

static void kind_file(void)
{
	struct file_writer w[2] = { { .id = 0 }, { .id = 1 } };
	uint8_t *b = page_buf();
	size_t p, cached = 0;
	uint64_t *pm;
	int round, i;

	if (!path) {
		fprintf(stderr, "mo_folios: kind file needs --path FILE\n");
		exit(2);
	}
	file_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (file_fd < 0)
		die(path);
	if (ftruncate(file_fd, buf_len))
		die("ftruncate");
	file_map = mmap(NULL, buf_len, PROT_READ | PROT_WRITE, MAP_SHARED, file_fd, 0);
	if (file_map == MAP_FAILED)
		die("mmap(MAP_SHARED)");
	file_gens = calloc(npages, sizeof(*file_gens));
	if (!file_gens)
		die("calloc");

	prefer(from_node);
	for (p = 0; p < npages; p += 2) {
		mo_pattern_fill(b, p * page_size, page_size, 1);
		pwrite_page(b, p * page_size);
	}
	for (p = 1; p < npages; p += 2)
		mo_pattern_fill(file_map + p * page_size, p * page_size, page_size, 1);
	for (p = 0; p < npages; p++)
		file_gens[p] = 1;
	/* Written back, clean, and still cached: no POSIX_FADV_DONTNEED. */
	if (msync(file_map, buf_len, MS_SYNC))
		die("msync");
	prefer(-1);
	/* Reading every page through the mapping maps it: move_pages() moves only mapped pages. */
	check_file("after the fill");

	pm = pagemap_of(file_map, buf_len);
	for (p = 0; p < npages; p++)
		cached += PM_PRESENT(pm[p]);
	free(pm);
	printf("file_pages_cached=%zu\n", cached);
	if (cached != npages)
		fail("only %zu of %zu pages of the file mapped before the move", cached,
		     npages);
	place(file_map, buf_len, MPOL_MF_MOVE);

	/* To --to and back, each move while both writers run (and a little after). */
	for (round = 0; round < 2; round++) {
		stop = 0;
		for (i = 0; i < 2; i++)
			if (pthread_create(&w[i].thread, NULL, file_writer_fn, &w[i]))
				die("pthread_create");
		sleep_ms(20);
		measured_move(file_map, buf_len, round ? from_node : to_node,
			      MPOL_MF_MOVE, round ? "_back" : "");
		sleep_ms(50);
		stop = 1;
		for (i = 0; i < 2; i++)
			pthread_join(w[i].thread, NULL);
		check_file(round ? "after the move back" : "after the move");
	}
	printf("pwrite_writes=%lu\nmmap_writes=%lu\n", w[0].writes, w[1].writes);
	free(b);
}

/*
 * swapcache: anon folios that are in the swap cache while mapped. Paged
 * out, then MADV_WILLNEED reads them into the swap cache and read faults
 * map them from there (a synchronous device's swap-in would otherwise
 * bypass the swap cache), where they stay while swap is not half full
 * (vm_swap_full() frees the swap cache on swap-in).
 */
static void swap_space(void)
{
	long long size, used, total = 0, in_use = 0, need = buf_len >> 10;
	char line[512];
	int devices = 0;
	FILE *f = fopen("/proc/swaps", "r");

	if (!f)
		die("/proc/swaps");
	if (!fgets(line, sizeof(line), f))	/* the header */
		die("/proc/swaps");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %lld %lld", &size, &used) == 2) {
			devices++;
			total += size;
			in_use += used;
		}
	fclose(f);
	if (!devices)
		unsupported("no swap in /proc/swaps (swapon a device or file)", ENODEV);
	if ((total - in_use - need) * 2 < total) {
		fprintf(stderr, "mo_folios: swap too small: %lld KiB used of %lld, and %lld KiB more must leave it at most half full\n",
			in_use, total, need);
		exit(2);
	}
}

static void kind_swapcache(void)
{
	size_t swapped = 0, cached, after, p;
	uint8_t *buf;
	uint64_t *pm;

	swap_space();
	buf = filled_buf();
	/* Also drains every CPU's LRU batches, which MADV_PAGEOUT would skip. */
	place(buf, buf_len, MPOL_MF_MOVE);
	if (madvise(buf, buf_len, MADV_PAGEOUT))
		die("madvise(MADV_PAGEOUT)");
	pm = pagemap_of(buf, buf_len);
	for (p = 0; p < npages; p++)
		swapped += PM_SWAP(pm[p]) && !PM_PRESENT(pm[p]);
	free(pm);
	printf("swapped_out=%zu\n", swapped);
	if (swapped <= npages / 2)
		fail("MADV_PAGEOUT swapped out only %zu of %zu pages", swapped, npages);

	prefer(from_node);
	if (madvise(buf, buf_len, MADV_WILLNEED))
		die("madvise(MADV_WILLNEED)");
	check(buf, 0, buf_len, 1, "after the swap-in");
	prefer(-1);
	cached = count_kpf(buf, buf_len, 1ULL << KPF_SWAPCACHE);
	printf("swapcache_pages=%zu\n", cached);
	if (cached <= npages / 2)
		fail("only %zu of %zu pages in the swap cache before the move", cached,
		     npages);

	/* Swapped in on --from (the policy above): no placement move of the kind. */
	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE, "");
	check(buf, 0, buf_len, 1, "after the move");
	after = count_kpf(buf, buf_len, 1ULL << KPF_SWAPCACHE);
	printf("swapcache_after=%zu\n", after);
	if (after < cached)
		fail("%zu of %zu swap-cache pages left the swap cache in the move",
		     cached - after, cached);
}

/*
 * ksm: page i holds content KSM_SEED(i) at offset 0 of the pattern, so 8
 * contents are each duplicated npages/8 times and KSM merges them into 8
 * KSM folios, each mapped many times: MPOL_MF_MOVE_ALL moves them.
 */
static const char *const ksm_files[] = { "pages_to_scan", "sleep_millisecs", "run" };
static const char *const ksm_values[] = { "1000", "10", "1" };
#define NR_KSM_FILES (sizeof(ksm_files) / sizeof(ksm_files[0]))
static void check_ksm(uint8_t *buf, size_t cow_page, const char *when)
{
	size_t p;

	for (p = 0; p < npages; p++) {
		if (p == cow_page)
			check(buf + p * page_size, p * page_size, page_size, KSM_COW_SEED,
			      "%s: page %zu (written)", when, p);
		else
			check(buf + p * page_size, 0, page_size, KSM_SEED(p),
			      "%s: page %zu (content %zu)", when, p, (size_t)KSM_SEED(p));
	}
}

/* Frames of [@p, @p + @len) that at least one present page maps. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static size_t distinct_frames(const void *p, size_t len)
{
	size_t n = len / page_size, i, m = 0, d = 0;
	uint64_t *pm = pagemap_of(p, len);

	for (i = 0; i < n; i++)
		if (PM_PRESENT(pm[i])) {
			if (!PM_PFN(pm[i]))
				frames_hidden();
			pm[m++] = PM_PFN(pm[i]);
		}
	qsort(pm, m, sizeof(*pm), cmp_u64);
	for (i = 0; i < m; i++)
		d += !i || pm[i] != pm[i - 1];
	free(pm);
	return d;
}

/* /proc/self/ksm_merging_pages: this process's pages KSM merged. */
static size_t ksm_merging_pages(void)
{
	char line[64];

	read_line("/proc/self/ksm_merging_pages", line, sizeof(line));
	return strtoul(line, NULL, 10);
}

static void kind_ksm(void)
{
	size_t p, merged = 0, after, frames = 0, cow = npages / 2 + 3, i;
	uint64_t *pm0, *pm1;
	char file[128];
	double t0;
	uint8_t *buf;

	if (access(KSM "run", W_OK))
		unsupported(KSM "run", errno);
	prefer(from_node);
	buf = anon_buf(buf_len);
	for (p = 0; p < npages; p++)
		mo_pattern_fill(buf + p * page_size, 0, page_size, KSM_SEED(p));
	prefer(-1);
	check_ksm(buf, SIZE_MAX, "after the fill");
	place(buf, buf_len, MPOL_MF_MOVE);

	if (madvise(buf, buf_len, MADV_MERGEABLE)) {
		if (errno == EINVAL)
			unsupported("madvise(MADV_MERGEABLE)", errno);
		die("madvise(MADV_MERGEABLE)");
	}
	/* Put back at exit, also on SIGTERM (lib/mo_pages.h). */
	for (i = 0; i < NR_KSM_FILES; i++) {
		snprintf(file, sizeof(file), KSM "%s", ksm_files[i]);
		errno = -set_setting(file, ksm_values[i]);
		if (errno)
			die(file);
	}
	/*
	 * Merged means sharing frames: 6.12's /proc/kpageflags sets KPF_KSM
	 * on every anon page (it tests mapping & PAGE_MAPPING_KSM, whose
	 * ANON bit every anon folio has), so it cannot tell.
	 */
	t0 = now_s();
	do {
		sleep_ms(100);
		frames = distinct_frames(buf, buf_len);
	} while (frames > KSM_MAX_FRAMES && now_s() - t0 < 60);
	merged = ksm_merging_pages();
	printf("ksm_frames=%zu\nksm_merging_pages=%zu\nksm_wait_secs=%.1f\n", frames,
	       merged, now_s() - t0);
	if (frames > KSM_MAX_FRAMES || merged * 10 < npages * 9)
		fail("KSM merged %zu pages into %zu frames in 60 s (want %zu into <= %d)",
		     merged, frames, npages, KSM_MAX_FRAMES);

	/*
	 * ksmd stops (run=0 keeps the merged pages): a folio it holds a
	 * reference to while the batch forms takes the per-folio path, so
	 * the batch path's count would depend on its timing.
	 */
	errno = -set_setting(KSM "run", "0");
	if (errno)
		die(KSM "run");
	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE_ALL, "");
	check_ksm(buf, SIZE_MAX, "after the move");
	after = distinct_frames(buf, buf_len);
	printf("ksm_frames_after=%zu\nksm_merging_after=%zu\n", after, ksm_merging_pages());
	if (after != frames)
		fail("%zu KSM frames before the move, %zu after: the move split or merged them",
		     frames, after);

	/* A write gives the page a frame of its own; its sharers, checked, keep the KSM page. */
	pm0 = pagemap_of(buf + cow * page_size, page_size);
	mo_pattern_fill(buf + cow * page_size, cow * page_size, page_size, KSM_COW_SEED);
	pm1 = pagemap_of(buf + cow * page_size, page_size);
	check_ksm(buf, cow, "after a write to one page");
	printf("cow_new_frame=%d\n", PM_PFN(pm0[0]) != PM_PFN(pm1[0]));
	if (PM_PFN(pm0[0]) == PM_PFN(pm1[0]))
		fail("a write to page %zu went to the shared KSM frame %#llx", cow,
		     (unsigned long long)PM_PFN(pm0[0]));
	free(pm0);
	free(pm1);

	if (madvise(buf, buf_len, MADV_UNMERGEABLE))
		die("madvise(MADV_UNMERGEABLE)");
	check_ksm(buf, cow, "after unmerging");
	restore_settings();
}

/* VmLck of /proc/self/status, in pages. */
static size_t vmlck_pages(void)
{
	char line[256];
	size_t kb = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		die("/proc/self/status");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %zu kB", &kb) == 1) {
			found = true;
			break;
		}
	fclose(f);
	if (!found) {
		fprintf(stderr, "mo_folios: no VmLck in /proc/self/status\n");
		exit(2);
	}
	return kb * 1024 / page_size;
}

/*
 * mlock: mlocked folios (PG_mlocked, on the unevictable LRU), counted by
 * kpageflags bit 33 (VmLck, the locked range's size, is only reported).
 */
static void kind_mlock(void)
{
	uint8_t *buf = filled_buf();
	size_t locked, after;

	place(buf, buf_len, MPOL_MF_MOVE);
	if (mlock(buf, buf_len))
		die("mlock");
	locked = count_kpf(buf, buf_len, 1ULL << KPF_MLOCKED);
	printf("mlocked_pages=%zu\nvmlck_pages=%zu\n", locked, vmlck_pages());
	if (locked < npages)
		fail("only %zu of %zu pages PG_mlocked", locked, npages);

	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE, "");
	check(buf, 0, buf_len, 1, "after the move");
	/* PG_mlocked itself: migration copies PG_unevictable separately. */
	after = count_kpf(buf, buf_len, 1ULL << KPF_MLOCKED);
	printf("mlocked_after=%zu\n", after);
	if (after < locked)
		fail("%zu of %zu mlocked pages not mlocked after the move", locked - after,
		     locked);
}

/*
 * uffd-wp: the uffd-wp bit of each PTE must survive the migration entry.
 * After the move, the main thread writes every page; each first write must
 * raise one write-protect fault, which the handler thread resolves by
 * unprotecting that page. A lost bit is a silent write.
 */
static int uffd;
static uint8_t *uffd_buf;
static unsigned int *uffd_faults;	/* per page */
static unsigned long uffd_other;	/* events that are no WP fault on the buffer */

static void *uffd_handler_fn(void *arg)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffdio_writeprotect wp = { .mode = 0 };
	struct uffd_msg msg;
	uintptr_t addr;
	ssize_t r;
	size_t p;

	(void)arg;
	while (!stop) {
		r = poll(&pfd, 1, 100);
		if (r < 0 && errno != EINTR)
			die("poll(userfaultfd)");
		if (r <= 0)
			continue;
		r = read(uffd, &msg, sizeof(msg));
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r != sizeof(msg))
			die("read(userfaultfd)");
		addr = msg.arg.pagefault.address & ~(uintptr_t)(page_size - 1);
		p = (addr - (uintptr_t)uffd_buf) / page_size;
		if (msg.event != UFFD_EVENT_PAGEFAULT || addr < (uintptr_t)uffd_buf ||
		    p >= npages) {
			uffd_other++;
			continue;
		}
		if (!(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
			/* Nobody would resolve it: the writer would hang. */
			fail("a userfault on page %zu that is no write-protect fault", p);
			fflush(stdout);
			exit(1);
		}
		uffd_faults[p]++;
		wp.range.start = addr;
		wp.range.len = page_size;
		if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
			die("ioctl(UFFDIO_WRITEPROTECT, 0)");
	}
	return NULL;
}

static size_t count_uffd_wp(void)
{
	uint64_t *pm = pagemap_of(uffd_buf, buf_len);
	size_t p, n = 0;

	for (p = 0; p < npages; p++)
		n += PM_UFFD_WP(pm[p]);
	free(pm);
	return n;
}

static void kind_uffd_wp(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	size_t p, wp0, wp1, faults = 0, read_faults = 0, wrong = 0;
	pthread_t handler;

	uffd_buf = filled_buf();
	place(uffd_buf, buf_len, MPOL_MF_MOVE);
	uffd_faults = calloc(npages, sizeof(*uffd_faults));
	if (!uffd_faults)
		die("calloc");
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		unsupported("userfaultfd", errno);
	if (ioctl(uffd, UFFDIO_API, &api))
		unsupported("UFFDIO_API with UFFD_FEATURE_PAGEFAULT_FLAG_WP", errno);
	if (!(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP))
		unsupported("UFFD_FEATURE_PAGEFAULT_FLAG_WP", EOPNOTSUPP);
	reg.range.start = (uintptr_t)uffd_buf;
	reg.range.len = buf_len;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		unsupported("UFFDIO_REGISTER_MODE_WP on private anon", errno);
	if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT)))
		unsupported("UFFDIO_WRITEPROTECT on private anon", EOPNOTSUPP);
	wp.range = reg.range;
	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
		die("ioctl(UFFDIO_WRITEPROTECT)");
	wp0 = count_uffd_wp();
	printf("uffd_wp_pages=%zu\n", wp0);
	if (wp0 != npages)
		fail("only %zu of %zu pages write-protected before the move", wp0, npages);

	/* Running from here on: a read that faulted to it is counted, not hung. */
	stop = 0;
	if (pthread_create(&handler, NULL, uffd_handler_fn, NULL))
		die("pthread_create");
	measured_move(uffd_buf, buf_len, to_node, MPOL_MF_MOVE, "");
	wp1 = count_uffd_wp();
	printf("uffd_wp_after=%zu\n", wp1);
	if (wp1 < wp0)
		fail("%zu pages lost their uffd-wp bit in the move", wp0 - wp1);
	check(uffd_buf, 0, buf_len, 1, "after the move");
	for (p = 0; p < npages; p++)
		read_faults += __atomic_load_n(&uffd_faults[p], __ATOMIC_RELAXED);
	printf("wp_read_faults=%zu\n", read_faults);
	if (read_faults)
		fail("%zu write-protect faults while only reading", read_faults);

	for (p = 0; p < npages; p++)
		mo_pattern_fill(uffd_buf + p * page_size, p * page_size, page_size, 2);
	stop = 1;
	pthread_join(handler, NULL);
	for (p = 0; p < npages; p++) {
		faults += uffd_faults[p];
		if (uffd_faults[p] != 1 && wrong++ < MAX_CORRUPT_LINES)
			printf("note: page %zu raised %u write-protect faults\n", p,
			       uffd_faults[p]);
	}
	printf("wp_faults=%zu\nwp_faults_other=%lu\n", faults, uffd_other);
	if (faults != npages || wrong)
		fail("%zu pages raised no or more than one write-protect fault on their first write (%zu faults, %zu pages)",
		     wrong, faults, npages);
	if (uffd_other)
		fail("%lu unexpected userfaultfd events", uffd_other);
	check(uffd_buf, 0, buf_len, 2, "after the writes");
}

/*
 * cow: anon folios mapped by this process and a forked child. Plain
 * MPOL_MF_MOVE skips them (-EACCES); MPOL_MF_MOVE_ALL moves them, and the
 * child must see the same bytes in the same new frames, then get copies of
 * its own on writing, which must leave the parent's data alone.
 */
struct cow_result {
	size_t bad, same_frames;
};

static void kind_cow(void)
{
	size_t n = npages, p, moved_plain = 0;
	uint8_t *buf = filled_buf();
	int go[2], done[2], *before, *after, status, calls;
	struct cow_result res = { 0 };
	uint64_t *pfns, *pm;
	pid_t pid;
	ssize_t r;

	place(buf, buf_len, MPOL_MF_MOVE);
	pfns = mmap(NULL, n * sizeof(*pfns), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	before = malloc(n * sizeof(*before));
	after = malloc(n * sizeof(*after));
	if (pfns == MAP_FAILED || !before || !after)
		die("mmap/malloc");
	if (pipe(go) || pipe(done))
		die("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		char c;

		close(go[1]);
		close(done[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		res.bad = check(buf, 0, buf_len, 1, "child, after the move");
		pm = read_pagemap(buf, buf_len);
		for (p = 0; pm && p < n; p++)
			res.same_frames += PM_PRESENT(pm[p]) && PM_PFN(pm[p]) == pfns[p];
		if (write(done[1], &res, sizeof(res)) != sizeof(res))
			_exit(2);
		/* Copy on write: pages of its own, the parent's untouched. */
		mo_pattern_fill(buf, 0, buf_len, 2);
		res.bad += check(buf, 0, buf_len, 2, "child, after its writes");
		fflush(stdout);
		_exit(res.bad || res.same_frames != n ? 1 : 0);
	}
	close(go[0]);
	close(done[1]);

	/* Informational: plain MPOL_MF_MOVE leaves pages mapped twice alone. */
	query(buf, n, to_node, before);
	move_range(buf, n, to_node, MPOL_MF_MOVE, after, &calls, 1);
	for (p = 0; p < n; p++)
		moved_plain += before[p] != to_node && after[p] == to_node;
	printf("moved_shared_move=%zu\n", moved_plain);

	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE_ALL, "");
	check(buf, 0, buf_len, 1, "after the move");
	pm = pagemap_of(buf, buf_len);
	for (p = 0; p < n; p++) {
		if (PM_PRESENT(pm[p]) && !PM_PFN(pm[p]))
			frames_hidden();
		pfns[p] = PM_PRESENT(pm[p]) ? PM_PFN(pm[p]) : 0;
	}
	free(pm);
	if (write(go[1], "g", 1) != 1)
		die("write(pipe to the child)");
	r = read(done[0], &res, sizeof(res));
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (r != sizeof(res))
		fail("the child sent no result (exit status %#x)", status);
	printf("child_bad_bytes=%zu\nchild_same_frames=%zu\n", res.bad, res.same_frames);
	printf("cow_child_ok=%d\n", r == sizeof(res) && WIFEXITED(status) &&
	       !WEXITSTATUS(status));
	if (res.bad)
		fail("the child found %zu bad bytes", res.bad);
	if (res.same_frames != n)
		fail("only %zu of %zu of the child's pages in the parent's new frames",
		     res.same_frames, n);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the child failed (wait status %#x)", status);
	check(buf, 0, buf_len, 1, "parent, after the child's writes");
}

/*
 * Race kinds and hwpoison: mover threads move a range back and forth, the
 * main thread races them. Race kinds own the buffer per 64 KiB chunk: the
 * racer and the verifier take a chunk's lock, so the verifier only checks
 * chunks that are mapped and hold their chunk's generation.
 */
struct chunk {
	pthread_mutex_t lock;
	unsigned int gen;
};

struct mover {
	int id;
	unsigned long rounds, errors, gone;
	unsigned long holes, absent;	/* pages met unmapped (-EFAULT), not present (-ENOENT) */
	unsigned long placed;		/* race-exit: pages reported on to_node */
	pthread_t thread;
};

static uint8_t *race_buf;
static size_t race_len;
static struct chunk *chunks;
static size_t nr_chunks;
static bool race_exit;
static pid_t race_pid;			/* race-exit: whose pages; 0: none */
static unsigned long race_gone;		/* race-exit: calls that met an exited child */
static pthread_rwlock_t pid_lock;

/*
 * Per-page failures (-ENOENT, -EFAULT, -EBUSY) are the race; a failed call
 * is an error, except that a race-exit child may be gone (ESRCH) or be a
 * zombie without an mm (EINVAL).
 */
static void *mover_fn(void *arg)
{
	struct mover *m = arg;
	size_t n = race_len / page_size, i;
	void **pages = page_ptrs(race_buf, n);
	int *nodev = malloc(n * sizeof(*nodev)), *status = malloc(n * sizeof(*status));
	unsigned long k = m->id;
	pid_t pid = 0;
	long r;
	int node, e;

	if (!nodev || !status)
		die("malloc");
	while (!stop) {
		node = k++ & 1 ? from_node : to_node;
		for (i = 0; i < n; i++)
			nodev[i] = node;
		if (race_exit) {
			pthread_rwlock_rdlock(&pid_lock);
			pid = race_pid;
			if (!pid) {
				pthread_rwlock_unlock(&pid_lock);
				sleep_ms(1);
				continue;
			}
		}
		/* Entries after a failed page stay unwritten: count written ones only. */
		for (i = 0; i < n; i++)
			status[i] = INT_MIN;
		r = move_pages(pid, n, pages, nodev, status, MPOL_MF_MOVE);
		e = errno;
		if (race_exit)
			pthread_rwlock_unlock(&pid_lock);
		if (r >= 0) {
			__atomic_add_fetch(&m->rounds, 1, __ATOMIC_RELAXED);
			for (i = 0; i < n; i++) {
				m->holes += status[i] == -EFAULT;
				m->absent += status[i] == -ENOENT;
				m->placed += node == to_node && status[i] == to_node;
			}
		} else if (race_exit && (e == ESRCH || e == EINVAL)) {
			m->gone++;
			__atomic_add_fetch(&race_gone, 1, __ATOMIC_RELAXED);
		}
		else if (!m->errors++)
			printf("error: mover %d: move_pages to node %d: %s\n", m->id, node,
			       strerror(e));
		sleep_ms(1);
	}
	free(pages);
	free(nodev);
	free(status);
	return NULL;
}

static void start_movers(struct mover *m)
{
	int i;

	stop = 0;
	for (i = 0; i < 2; i++) {
		m[i] = (struct mover){ .id = i };
		if (pthread_create(&m[i].thread, NULL, mover_fn, &m[i]))
			die("pthread_create");
	}
}

/* Stops every thread; returns the rounds of the movers. */
static unsigned long stop_movers(struct mover *m)
{
	unsigned long rounds = 0, errors = 0, gone = 0, holes = 0, absent = 0, placed = 0;
	int i;

	stop = 1;
	for (i = 0; i < 2; i++) {
		pthread_join(m[i].thread, NULL);
		rounds += m[i].rounds;
		errors += m[i].errors;
		gone += m[i].gone;
		holes += m[i].holes;
		absent += m[i].absent;
		placed += m[i].placed;
	}
	/* What the movers met of the racer's work: a race that never raced shows 0. */
	printf("rounds=%lu\nmove_errors=%lu\nholes_met=%lu\nabsent_met=%lu\n", rounds, errors,
	       holes, absent);
	if (race_exit)
		printf("moves_child_gone=%lu\nchild_pages_placed=%lu\n", gone, placed);
	if (!rounds)
		fail("no move_pages() call completed");
	if (errors)
		fail("%lu move_pages() calls failed", errors);
	return rounds;
}

static size_t check_chunk(size_t c, const char *when)
{
	return check(race_buf + c * CHUNK, c * CHUNK, CHUNK, chunks[c].gen,
		     "%s: chunk %zu, generation %u", when, c, chunks[c].gen);
}

static void *verifier_fn(void *arg)
{
	unsigned long *verifies = arg;
	size_t c = 0;

	while (!stop) {
		pthread_mutex_lock(&chunks[c].lock);
		check_chunk(c, "verifier");
		pthread_mutex_unlock(&chunks[c].lock);
		c = (c + 1) % nr_chunks;
		if (!(++*verifies % 8))
			sleep_ms(1);
	}
	return NULL;
}

/*
 * race-mprotect: a write to a read-only chunk must fault (SIGSEGV) even
 * when the chunk migrated while read-only: the migration entry made while
 * it was writable must not come back as a writable PTE. The probe writes
 * back the byte it read, so a missed fault changes nothing but is counted.
 */
static sigjmp_buf segv_jmp;
static __thread volatile sig_atomic_t segv_armed;
static unsigned long ro_probes, ro_writable, ro_moved, ro_inflight;

static void on_sigsegv(int sig)
{
	if (!segv_armed) {
		signal(sig, SIG_DFL);	/* not a probe: fault again, and die of it */
		return;
	}
	segv_armed = 0;
	siglongjmp(segv_jmp, 1);
}

/* 1 if writing back the byte at @b faulted (SIGSEGV). */
static int write_faults(volatile uint8_t *b)
{
	if (sigsetjmp(segv_jmp, 1))
		return 1;
	segv_armed = 1;
	*b = *b;
	segv_armed = 0;
	return 0;
}

/* Pages of the read-only chunk @p a write did not fault on. */
static unsigned long probe_read_only(uint8_t *p)
{
	unsigned long writable = 0;
	size_t i;

	for (i = 0; i < CHUNK; i += page_size) {
		ro_probes++;
		writable += !write_faults(p + i);
	}
	return writable;
}

/* One racer operation on chunk @c (locked); the chunk then holds its next generation. */
static void race_op(size_t c)
{
	uint8_t *p = race_buf + c * CHUNK, *q;
	uint64_t *pm_pre, *pm0, *pm1;
	unsigned long w;
	size_t i;

	if (!strcmp(kind, "race-munmap")) {
		check_chunk(c, "before munmap");
		if (munmap(p, CHUNK))
			die("munmap");
		sleep_ms(0.5);		/* a hole for the movers to meet */
		/* NOREPLACE: never over something another thread mapped there meanwhile. */
		q = mmap(p, CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (q != p)
			die("mmap(MAP_FIXED_NOREPLACE) of an unmapped chunk");
		if (madvise(p, CHUNK, MADV_NOHUGEPAGE) && errno != EINVAL)
			die("madvise(MADV_NOHUGEPAGE)");
		check_zero(p, c * CHUNK, CHUNK, "a chunk mapped again");
	} else if (!strcmp(kind, "race-mprotect")) {
		/*
		 * A page under a migration entry just before mprotect() (not
		 * present, swap bit) and mapped again after the window: the
		 * entry was made writable and mprotect() had to make it
		 * read-only; the write probes below show if it did.
		 */
		pm_pre = pagemap_of(p, CHUNK);
		if (mprotect(p, CHUNK, PROT_READ))
			die("mprotect(PROT_READ)");
		pm0 = pagemap_of(p, CHUNK);
		check_chunk(c, "read-only");
		sleep_ms(2);		/* a read-only chunk for the movers to move */
		pm1 = pagemap_of(p, CHUNK);
		for (i = 0; i < CHUNK / page_size; i++)
			if (PM_PRESENT(pm0[i]) && PM_PRESENT(pm1[i]) &&
			    PM_PFN(pm0[i]) != PM_PFN(pm1[i]))
				break;
		ro_moved += i < CHUNK / page_size;
		for (i = 0; i < CHUNK / page_size; i++)
			if (!PM_PRESENT(pm_pre[i]) && PM_SWAP(pm_pre[i]) && PM_PRESENT(pm1[i]))
				break;
		ro_inflight += i < CHUNK / page_size;
		free(pm_pre);
		free(pm0);
		free(pm1);
		w = probe_read_only(p);
		if (w && (ro_writable += w) == w)
			printf("corrupt: chunk %zu: %lu pages writable while read-only\n", c, w);
		check_chunk(c, "read-only, after the write probes");
		if (mprotect(p, CHUNK, PROT_READ | PROT_WRITE))
			die("mprotect(PROT_READ | PROT_WRITE)");
	} else {
		check_chunk(c, "before MADV_DONTNEED");
		if (madvise(p, CHUNK, MADV_DONTNEED))
			die("madvise(MADV_DONTNEED)");
		sleep_ms(0.5);		/* absent pages for the movers to meet */
		check_zero(p, c * CHUNK, CHUNK, "a chunk after MADV_DONTNEED");
	}
	chunks[c].gen++;
	mo_pattern_fill(p, c * CHUNK, CHUNK, chunks[c].gen);
}

/*
 * race-exit: children fill EXIT_REGION (a mapping the parent never
 * touches, so their pages are their own), tell so, and exit after 0-20 ms,
 * checking it just before; the movers move the current child's pages from
 * its fork to its reaping (a zombie is reaped only after they let go of
 * its pid, so they never move a reused pid).
 */
static void race_children(double end, unsigned long *children, unsigned long *bad)
{
	unsigned int rnd = getpid() ^ (unsigned int)time(NULL);
	uint64_t seed = 1;
	unsigned long gone0;
	siginfo_t si;
	int ready[2], status, i;
	long delay_us;
	pid_t pid;
	char c;

	while (now_s() < end) {
		delay_us = rand_r(&rnd) % 20001;
		seed++;
		if (pipe(ready))
			die("pipe");
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			close(ready[0]);
			/* On from_node: a page later on to_node was moved there. */
			prefer(from_node);
			mo_pattern_fill(race_buf, 0, EXIT_REGION, seed);
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			sleep_ms(delay_us / 1000.0);
			_exit(mo_pattern_verify(race_buf, 0, EXIT_REGION, seed, NULL) ? 1 : 0);
		}
		close(ready[1]);
		pthread_rwlock_wrlock(&pid_lock);
		race_pid = pid;
		pthread_rwlock_unlock(&pid_lock);
		if (read(ready[0], &c, 1) != 1)
			printf("note: child %d died before it was ready\n", pid);
		close(ready[0]);
		if (waitid(P_PID, pid, &si, WEXITED | WNOWAIT))
			die("waitid");
		/*
		 * Reaped only once a mover met the exited child (up to 200 ms):
		 * the movers' calls then span every child's whole life.
		 */
		gone0 = __atomic_load_n(&race_gone, __ATOMIC_RELAXED);
		for (i = 0; i < 200 && __atomic_load_n(&race_gone, __ATOMIC_RELAXED) == gone0; i++)
			sleep_ms(1);
		pthread_rwlock_wrlock(&pid_lock);
		race_pid = 0;
		pthread_rwlock_unlock(&pid_lock);
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid");
		++*children;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			if (++*bad <= MAX_CORRUPT_LINES)
				printf("corrupt: child %d (generation %llu, exit after %ld us): wait status %#x\n",
				       pid, (unsigned long long)seed, delay_us, status);
		}
	}
}

static void kind_race(void)
{
	unsigned long ops = 0, verifies = 0, children = 0, bad_children = 0;
	unsigned int rnd = getpid() ^ (unsigned int)time(NULL);
	uint8_t *buf = filled_buf();
	pthread_rwlockattr_t attr;
	struct mover m[2];
	pthread_t verifier;
	double end;
	size_t c;

	place(buf, buf_len, MPOL_MF_MOVE);
	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE, "");
	check(buf, 0, buf_len, 1, "after the move");

	race_exit = !strcmp(kind, "race-exit");
	if (race_exit) {
		/* Movers hold it for whole calls: they must not starve the racer. */
		pthread_rwlockattr_init(&attr);
		pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&pid_lock, &attr);
		/* Children need not carry the buffer. */
		if (madvise(buf, buf_len, MADV_DONTFORK))
			die("madvise(MADV_DONTFORK)");
		race_buf = anon_buf(EXIT_REGION);
		race_len = EXIT_REGION;
		start_movers(m);
		end = now_s() + secs;
		race_children(end, &children, &bad_children);
		stop_movers(m);
		printf("racer_ops=%lu\nchildren=%lu\nbad_children=%lu\n", children, children,
		       bad_children);
		if (!children)
			fail("no child ran");
		if (bad_children)
			fail("%lu of %lu children found their pages bad", bad_children, children);
		check(buf, 0, buf_len, 1, "at the end");
		return;
	}

	race_buf = buf;
	race_len = buf_len;
	nr_chunks = buf_len / CHUNK;
	chunks = calloc(nr_chunks, sizeof(*chunks));
	if (!chunks)
		die("calloc");
	for (c = 0; c < nr_chunks; c++) {
		pthread_mutex_init(&chunks[c].lock, NULL);
		chunks[c].gen = 1;
	}
	if (signal(SIGSEGV, on_sigsegv) == SIG_ERR)
		die("signal(SIGSEGV)");
	start_movers(m);
	if (pthread_create(&verifier, NULL, verifier_fn, &verifies))
		die("pthread_create");
	end = now_s() + secs;
	while (now_s() < end) {
		c = rand_r(&rnd) % nr_chunks;
		pthread_mutex_lock(&chunks[c].lock);
		race_op(c);
		pthread_mutex_unlock(&chunks[c].lock);
		ops++;
		sleep_ms(1);
	}
	stop_movers(m);
	pthread_join(verifier, NULL);
	printf("racer_ops=%lu\nverifies=%lu\n", ops, verifies);
	if (!ops)
		fail("the racer did nothing");
	if (!strcmp(kind, "race-mprotect")) {
		printf("ro_probes=%lu\nro_writable=%lu\nro_moved=%lu\nro_inflight=%lu\n", ro_probes,
		       ro_writable, ro_moved, ro_inflight);
		if (ro_writable)
			fail("%lu writes to read-only pages did not fault", ro_writable);
	}
	for (c = 0; c < nr_chunks; c++)
		check_chunk(c, "at the end");
}

/*
 * hwpoison: SIGBUS of this thread (an injection's kill, a read of a
 * poisoned page) returns to the sigsetjmp() of the page; anywhere else it
 * is a failure.
 */
static sigjmp_buf bus_jmp;
static __thread volatile sig_atomic_t bus_armed;
static volatile int bus_code;

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	static const char msg[] = "fail: unexpected SIGBUS\n";

	(void)sig;
	(void)ctx;
	if (!bus_armed) {
		if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
			_exit(1);
		_exit(1);
	}
	bus_armed = 0;
	bus_code = si->si_code;
	siglongjmp(bus_jmp, 1);
}

/* 0: poisoned; 1: poisoned and this thread killed with SIGBUS; else -errno. */
static int inject(uint8_t *p)
{
	int r;

	if (sigsetjmp(bus_jmp, 1))
		return 1;
	bus_armed = 1;
	r = madvise(p, page_size, MADV_HWPOISON) ? -errno : 0;
	bus_armed = 0;
	return r;
}

/* Bad bytes of page @p, or -1 if reading it raised SIGBUS. */
static long read_guarded(uint8_t *buf, size_t p)
{
	size_t bad;

	if (sigsetjmp(bus_jmp, 1))
		return -1;
	bus_armed = 1;
	bad = check(buf + p * page_size, p * page_size, page_size, 1,
		    "at the end: page %zu", p);
	bus_armed = 0;
	return bad;
}

/*
 * A page poisoned while isolated for migration stays mapped (memory_failure()
 * ignores a page off the LRU, madvise() says EBUSY) until the next unmap of
 * it, which leaves a hwpoison entry: one move after the movers makes that
 * happen for sure.
 */
static void unmap_poisoned(uint8_t *p)
{
	void *pages[1] = { p };
	int where, node, status;

	if (move_pages(0, 1, pages, NULL, &where, 0) < 0)
		die("move_pages(query)");
	if (where < 0)
		return;		/* a hwpoison entry already */
	node = where == from_node ? to_node : from_node;
	if (move_pages(0, 1, pages, &node, &status, MPOL_MF_MOVE) < 0)
		die("move_pages");
}

/* The poisoned pages: 3 single pages in the middle, 8 apart. */
static size_t target[NR_POISON];

static bool is_target(size_t p)
{
	int i;

	for (i = 0; i < NR_POISON; i++)
		if (p == target[i])
			return true;
	return false;
}

static void kind_hwpoison(void)
{
	size_t mid = npages / 2;
	unsigned long base_rounds[2];
	int poisoned = 0, busy = 0, killed = 0, i, r;
	size_t p, sigbus = 0;
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint8_t *buf = filled_buf();
	struct mover m[2];
	double t0;
	long bad;

	for (i = 0; i < NR_POISON; i++)
		target[i] = mid - 8 + 8 * i;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL))
		die("sigaction(SIGBUS)");
	place(buf, buf_len, MPOL_MF_MOVE);
	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE, "");
	check(buf, 0, buf_len, 1, "after the move");

	race_buf = buf;
	race_len = buf_len;
	t0 = now_s();
	start_movers(m);
	sleep_ms(200);
	for (i = 0; i < NR_POISON; i++) {
		r = inject(buf + target[i] * page_size);
		if (r == -EINVAL || r == -EPERM)
			unsupported("madvise(MADV_HWPOISON) (CONFIG_MEMORY_FAILURE, CAP_SYS_ADMIN)", -r);
		if (r >= 0 || r == -EBUSY) {
			poisoned++;
			busy += r == -EBUSY;
			killed += r == 1;
		} else {
			fail("madvise(MADV_HWPOISON) of page %zu: %s", target[i], strerror(-r));
		}
		if (r == 1 && bus_code != BUS_MCEERR_AR)
			fail("poisoning page %zu raised SIGBUS with si_code %d", target[i], bus_code);
		sleep_ms(50);
	}
	/* Every mover goes on for 2 more rounds (both directions) and till --secs. */
	for (i = 0; i < 2; i++)
		base_rounds[i] = __atomic_load_n(&m[i].rounds, __ATOMIC_RELAXED);
	while (now_s() - t0 < secs + 60 &&
	       (now_s() - t0 < secs ||
		__atomic_load_n(&m[0].rounds, __ATOMIC_RELAXED) < base_rounds[0] + 2 ||
		__atomic_load_n(&m[1].rounds, __ATOMIC_RELAXED) < base_rounds[1] + 2))
		sleep_ms(10);
	stop_movers(m);
	for (i = 0; i < NR_POISON; i++)
		unmap_poisoned(buf + target[i] * page_size);

	for (p = 0; p < npages; p++) {
		bad = read_guarded(buf, p);
		if (bad >= 0) {
			if (is_target(p))
				fail("poisoned page %zu reads without SIGBUS", p);
			continue;
		}
		sigbus++;
		if (bus_code != BUS_MCEERR_AR)
			fail("reading page %zu raised SIGBUS with si_code %d", p, bus_code);
		if (!is_target(p))
			fail("page %zu raised SIGBUS but was not poisoned", p);
	}
	printf("poisoned=%d\npoison_busy=%d\npoison_killed=%d\nsigbus_pages=%zu\n",
	       poisoned, busy, killed, sigbus);
	if (poisoned != NR_POISON)
		fail("only %d of %d pages poisoned", poisoned, NR_POISON);
	if (sigbus != NR_POISON)
		fail("%zu pages raised SIGBUS, want %d", sigbus, NR_POISON);
}

static const struct {
	const char *name;
	void (*run)(void);
} kinds[] = {
	{ "file", kind_file },
	{ "swapcache", kind_swapcache },
	{ "ksm", kind_ksm },
	{ "mlock", kind_mlock },
	{ "uffd-wp", kind_uffd_wp },
	{ "cow", kind_cow },
	{ "race-munmap", kind_race },
	{ "race-mprotect", kind_race },
	{ "race-dontneed", kind_race },
	{ "race-exit", kind_race },
	{ "hwpoison", kind_hwpoison },
};

static void check_node(int node, const char *opt)
{
	char file[128];

	snprintf(file, sizeof(file), "/sys/devices/system/node/node%d/meminfo", node);
	if (node < 0 || node >= 64 || access(file, R_OK)) {
		fprintf(stderr, "mo_folios: %s %d: no such memory node\n", opt, node);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "path", required_argument, NULL, 'p' },
		{ "secs", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	void (*run)(void) = NULL;
	size_t i;
	int c;

	page_size = sysconf(_SC_PAGESIZE);
	restore_settings_at_exit();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': buf_len = strtoul(optarg, NULL, 0) << 20; break;
		case 'F': from_node = atoi(optarg); break;
		case 'T': to_node = atoi(optarg); break;
		case 'p': path = optarg; break;
		case 'S': secs = strtod(optarg, NULL); break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc - 1 || !buf_len || !(secs > 0))
		usage(2);
	kind = argv[optind];
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i].name))
			run = kinds[i].run;
	if (!run)
		usage(2);
	check_node(from_node, "--from");
	check_node(to_node, "--to");
	npages = buf_len / page_size;
	/* A dead child or pipe is reported, not a silent death. */
	signal(SIGPIPE, SIG_IGN);

	printf("pid=%d\nkind=%s\npages=%zu\n", getpid(), kind, npages);
	fflush(stdout);
	run();
	printf("bad_bytes=%zu\nbytes_checked=%llu\n", bad_bytes, mo_bytes_checked);
	if (bad_bytes)
		fail("%zu bytes differ from what was written last", bad_bytes);
	return nr_fail ? 1 : 0;
}
