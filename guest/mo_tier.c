// SPDX-License-Identifier: GPL-2.0
/*
 * mo_tier: hold anonymous memory on one NUMA node while writer and reader
 * threads keep checking every byte of it, and report where its pages are,
 * so that something else (memory.reclaim demoting it, NUMA balancing
 * promoting it or moving it to the task's node) can migrate it under them.
 *
 *   mo_tier --size MB --on NODE [--writers N] [--readers N] [--interval S]
 *           [--pfns] [--pfn-range LO-HI [--pfn-dump FILE]] [--fragment N]
 *           [--no-place]
 *           [--act soft-offline|pin|uring --act-pages N]
 *
 * The buffer (4K pages, MADV_NOHUGEPAGE) is faulted in bound to NODE (pages
 * reclaim moved elsewhere meanwhile are moved back, unless --no-place: a
 * buffer larger than NODE's free memory would only be demoted again), then
 * the task's policy goes back to default, so that demotion and NUMA
 * balancing may move it. Its first half belongs to the writers: each owns
 * a slice and rewrites it page by page, checking every byte of a page
 * against the generation written to it last before writing the next one.
 * The second half belongs to the readers: each owns a slice and keeps
 * checking it against the pattern it was filled with, without writing.
 * Every page is touched by one thread only (private NUMA hinting faults).
 * The pattern is guest/lib/mo_pattern.h's.
 *
 * Output, key=value lines: "placed=N pages=N" and "ready=1" once the
 * buffer is in place and the threads run; then every --interval seconds
 * (and at SIGUSR1) a status line
 *   status t=SECS n0=.. n1=.. ... other=.. writes=.. reads=.. bad=..
 * (pages per node from move_pages(2) without moving, pages written and
 * verified so far, bad bytes so far); at SIGTERM/SIGINT the threads stop,
 * every byte is checked once more, and the last lines are the final
 * counts and bad_bytes=N. The first bad byte is reported as
 *   corrupt: WHO: byte OFF is X, want Y (node N)
 *
 * For the migration reasons that move pages within a node (the reasons
 * suite): --pfns records every page's frame number (pagemap, root) once
 * the buffer is in place (printing "pfn_min=" and "pfn_max=", its lowest
 * and highest frame) and adds "pfn_changed=N" (pages now at another
 * frame) and "pfn_absent=N" (pages without a frame at that moment, e.g.
 * under migration) to the status lines, and with --pfn-range LO-HI "in_range=N"
 * (pages whose frame is in [LO, HI), e.g. a CMA area); --pfn-dump FILE then
 * also writes those frames to FILE, one decimal per line, at every status
 * line (renamed into place: a reader never sees half a list), so that a
 * caller can tell which part of the range they are in. --fragment N
 * faults in N pages of a second mapping after each page of the buffer and
 * frees that mapping afterwards, so that the buffer's frames are spread
 * over the free memory of the node, between free ones (compaction, whose
 * migration scanner covers only the low part of a zone, then meets them).
 *
 * --act makes every SIGUSR2 act on the next N (--act-pages, default 8)
 * pages in the middle of the buffer, half at the end of the writers' half
 * and half at the start of the readers' half (act k takes the k-th such
 * pair of ranges), while the threads go on:
 *  - soft-offline: madvise(MADV_SOFT_OFFLINE) page by page (the kernel
 *    migrates each page and retires its old frame);
 *  - pin: FOLL_LONGTERM pins through /sys/kernel/debug/gup_test
 *    (PIN_LONGTERM_TEST_START, writable), each range in turn: pages in
 *    ZONE_MOVABLE migrate out of it first; the pinned readers' pages are
 *    read through the pins (PIN_LONGTERM_TEST_READ) and checked, then
 *    unpinned (PIN_LONGTERM_TEST_STOP);
 *  - uring: both ranges registered as io_uring fixed buffers
 *    (IORING_REGISTER_BUFFERS pins them FOLL_LONGTERM: out of ZONE_MOVABLE
 *    first); the readers' range is written from its fixed buffer to a
 *    memfd (IORING_OP_WRITE_FIXED, the kernel reading through the pins)
 *    and checked, then both are unregistered.
 * It prints one line
 *   act n=K what=.. pages=N failed=F pfn_changed=C movable_before=B
 *       movable_after=A pin_read_bad=R pinned_moved=P unpinned_moved=U
 * (failed: calls that failed; pfn_changed: pages of the ranges at another
 * frame than before the act; movable_*: pages of the ranges in a
 * ZONE_MOVABLE, by /proc/zoneinfo; pin_read_bad: bytes read through the pins
 * that differ from the pattern; pin and uring: pinned_moved: pages that
 * moved when asked to while pinned, which must be 0 if the pins hold the
 * mapping's frames, and unpinned_moved: the same asked again after the
 * unpin, the control), then "act_done=K".
 * Exit 0 if every byte was intact, 1 if not, 2 on a setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/io_uring.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lib/mo_pattern.h"

#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif
/* mm/gup_test.h (CONFIG_GUP_TEST), not a uapi header. */
struct pin_longterm_test {
	uint64_t addr;
	uint64_t size;
	uint32_t flags;
};
#define PIN_LONGTERM_TEST_START _IOW('g', 7, struct pin_longterm_test)
#define PIN_LONGTERM_TEST_STOP _IO('g', 8)
#define PIN_LONGTERM_TEST_READ _IOW('g', 9, uint64_t)
#define PIN_LONGTERM_TEST_FLAG_USE_WRITE 1
#define GUP_TEST "/sys/kernel/debug/gup_test"

/*
 * io_uring without liburing: register @iov (@n ranges) as fixed buffers,
 * count in @pinned_moved the pages of them that move_each() could move while
 * registered, write fixed buffer @idx (@len bytes) into a memfd and read it
 * back into @copy, unregister. Returns 0, or -errno of the failed step
 * (printed).
 */
static unsigned long move_each(uint8_t *p, size_t len);

static int uring_pin_read(struct iovec *iov, unsigned int n, unsigned int idx,
			  void *copy, size_t len, unsigned long *pinned_moved)
{
	struct io_uring_params p = { 0 };
	struct io_uring_sqe *sqes = MAP_FAILED;
	struct io_uring_cqe *cqe;
	void *sq = MAP_FAILED, *cq = MAP_FAILED;
	unsigned int *sq_tail, *sq_array, *cq_head, *cq_tail;
	int fd, mfd = -1, ret = 0;
	const char *step = "io_uring_setup";
	size_t sq_len = 0, cq_len = 0;

	fd = syscall(__NR_io_uring_setup, 1, &p);
	if (fd < 0)
		goto err;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	step = "mmap(io_uring rings)";
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_CQ_RING);
	sqes = mmap(NULL, p.sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		goto err;
	step = "IORING_REGISTER_BUFFERS";
	if (syscall(__NR_io_uring_register, fd, IORING_REGISTER_BUFFERS, iov, n))
		goto err;
	for (unsigned int j = 0; j < n; j++)
		*pinned_moved += move_each(iov[j].iov_base, iov[j].iov_len);
	step = "memfd_create";
	mfd = memfd_create("mo_tier_uring", 0);
	if (mfd < 0)
		goto err;
	sq_tail = (unsigned int *)((char *)sq + p.sq_off.tail);
	sq_array = (unsigned int *)((char *)sq + p.sq_off.array);
	cq_head = (unsigned int *)((char *)cq + p.cq_off.head);
	cq_tail = (unsigned int *)((char *)cq + p.cq_off.tail);
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_WRITE_FIXED;
	sqes[0].fd = mfd;
	sqes[0].addr = (uintptr_t)iov[idx].iov_base;
	sqes[0].len = len;
	sqes[0].buf_index = idx;
	sq_array[0] = 0;
	__atomic_store_n(sq_tail, *sq_tail + 1, __ATOMIC_RELEASE);
	step = "io_uring_enter";
	if (syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		goto err;
	step = "IORING_OP_WRITE_FIXED";
	if (__atomic_load_n(cq_tail, __ATOMIC_ACQUIRE) == *cq_head) {
		errno = EIO;
		goto err;
	}
	cqe = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes) +
	      (*cq_head & *(unsigned int *)((char *)cq + p.cq_off.ring_mask));
	if (cqe->res != (int)len) {
		errno = cqe->res < 0 ? -cqe->res : EIO;
		goto err;
	}
	__atomic_store_n(cq_head, *cq_head + 1, __ATOMIC_RELEASE);
	step = "pread(memfd)";
	if (pread(mfd, copy, len, 0) != (ssize_t)len)
		goto err;
	step = "IORING_UNREGISTER_BUFFERS";
	if (syscall(__NR_io_uring_register, fd, IORING_UNREGISTER_BUFFERS, NULL, 0))
		goto err;
	goto out;
err:
	ret = -errno;
	fprintf(stderr, "mo_tier: %s: %s\n", step, strerror(errno));
out:
	if (mfd >= 0)
		close(mfd);
	if (sqes != MAP_FAILED)
		munmap(sqes, p.sq_entries * sizeof(*sqes));
	if (cq != MAP_FAILED)
		munmap(cq, cq_len);
	if (sq != MAP_FAILED)
		munmap(sq, sq_len);
	if (fd >= 0)
		close(fd);	/* also drops the buffers (and the pins) on error */
	return ret;
}

#define MAX_NODES 8
#define MAX_THREADS 16
/* Seed of the readers' half: never a writer's generation (those start at 1). */
#define READ_SEED 0

static size_t page_size, buf_len = 32 << 20;
static int on_node, nr_writers = 1, nr_readers = 1;
static double interval = 1;
static uint8_t *buf;
static volatile sig_atomic_t stop;
static bool track_pfns, no_place;
static size_t fragment;
static uint64_t *pfn0, range_lo, range_hi;
static const char *pfn_dump;
static int pagemap_fd = -1;
static const char *act_what;
static size_t act_pages = 8;
static int act_n;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

struct worker {
	size_t off, len;	/* the slice, bytes */
	int id;
	bool writer;
	unsigned int *gens;	/* writer: generation of each page */
	unsigned long done;	/* pages written or verified */
	size_t bad;
};

static void die(const char *what)
{
	fprintf(stderr, "mo_tier: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void usage(int code)
{
	printf("usage: mo_tier [options]\n"
	       "  -s, --size MB       buffer size (default 32)\n"
	       "      --on NODE       node the buffer is faulted in on (default 0)\n"
	       "  -w, --writers N     writer threads, first half (default 1)\n"
	       "  -r, --readers N     reader threads, second half (default 1)\n"
	       "  -i, --interval S    seconds between status lines (default 1)\n"
	       "      --pfns          report pages at another frame (pfn_changed=)\n"
	       "      --pfn-range L-H also pages with frames in [L, H) (in_range=)\n"
	       "      --pfn-dump FILE and those frames written to FILE\n"
	       "      --fragment N    N freed frames after each of the buffer's\n"
	       "      --no-place      leave pages reclaim moved off NODE at fault-in\n"
	       "      --act WHAT      at SIGUSR2: soft-offline, pin (gup_test) or uring\n"
	       "                      (io_uring fixed buffers) the next pages\n"
	       "      --act-pages N   pages per act, half per half (default 8)\n"
	       "Runs until SIGTERM/SIGINT; SIGUSR1 prints a status line at once,\n"
	       "SIGUSR2 acts (--act).\n"
	       "Exit 0 if every byte stayed intact, 1 if not, 2 on a setup error.\n");
	exit(code);
}

/* The node of the page at @p, or -1. */
static int node_of(const void *p)
{
	void *pages[1] = { (void *)p };
	int status = -1;

	if (move_pages(0, 1, pages, NULL, &status, 0) < 0)
		return -1;
	return status;
}

/* The frame of the page at @p (pagemap; 0 if not present or hidden). */
static uint64_t pfn_of(const void *p)
{
	uint64_t e;
	off_t at = (uintptr_t)p / page_size * sizeof(e);

	if (pread(pagemap_fd, &e, sizeof(e), at) != sizeof(e))
		die("pread(/proc/self/pagemap)");
	return (e >> 63) & 1 ? e & ((1ULL << 55) - 1) : 0;
}

/*
 * Asks to move each page of [@p, @p + @len) to another node (1 from node
 * 0, else 0), one at a time; returns how many got another frame. A page
 * held by a long-term pin must not (its reference count makes migration
 * fail), so the pins are proven to hold the frames the mapping has.
 */
static unsigned long move_each(uint8_t *p, size_t len)
{
	unsigned long moved = 0;
	size_t i;

	for (i = 0; i < len; i += page_size) {
		void *pg = p + i;
		uint64_t pfn = pfn_of(pg), now;
		int to = node_of(pg) == 0 ? 1 : 0, st;

		/* Its result is what pfn_of() says next: a pinned page fails. */
		if (move_pages(0, 1, &pg, &to, &st, MPOL_MF_MOVE) < 0)
			fprintf(stderr, "mo_tier: move_pages(one page): %s\n", strerror(errno));
		now = pfn_of(pg);
		/* 0: not present now (a writer's fault in flight): not a move. */
		moved += pfn && now && now != pfn;
	}
	return moved;
}

/*
 * @pfn is in a ZONE_MOVABLE (start_pfn and spanned of /proc/zoneinfo; not
 * a memory block's valid_zones, which says "none" for a block that
 * straddles the zone's start).
 */
static bool pfn_movable(uint64_t pfn)
{
	static uint64_t lo[MAX_NODES], hi[MAX_NODES];
	static int nr = -1;
	uint64_t spanned = 0, v;
	char line[256], zone[32];
	bool movable = false;
	FILE *f;
	int k;

	if (nr < 0) {
		f = fopen("/proc/zoneinfo", "r");
		if (!f)
			die("/proc/zoneinfo");
		nr = 0;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "Node %*d, zone %31s", zone) == 1)
				movable = !strcmp(zone, "Movable");
			else if (sscanf(line, " spanned %" SCNu64, &v) == 1)
				spanned = v;
			else if (sscanf(line, " start_pfn: %" SCNu64, &v) == 1 &&
				 movable && spanned && nr < MAX_NODES) {
				lo[nr] = v;
				hi[nr++] = v + spanned;
			}
		}
		fclose(f);
	}
	for (k = 0; k < nr; k++)
		if (pfn >= lo[k] && pfn < hi[k])
			return true;
	return false;
}

static size_t check_page(size_t off, uint64_t seed, const char *who)
{
	struct mo_bad first = { 0 };
	size_t bad = mo_pattern_verify(buf + off, off, page_size, seed, &first);

	if (bad) {
		pthread_mutex_lock(&out_lock);
		printf("corrupt: %s: byte %zu is %#x, want %#x (node %d)\n", who,
		       first.off, first.got, first.want, node_of(buf + first.off));
		fflush(stdout);
		pthread_mutex_unlock(&out_lock);
	}
	return bad;
}

/*
 * A pause every 32 pages leaves CPU time to the kernel's migration work and
 * to the suite (under emulation all vCPUs share one host thread), and lets
 * reclaim find pages that were not touched since its last look.
 */
static void pace(unsigned long done)
{
	if (!(done % 32))
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	size_t n = w->len / page_size, p;
	char who[64];

	while (!stop && !w->bad) {
		for (p = 0; p < n && !stop; p++) {
			size_t off = w->off + p * page_size;

			if (w->writer) {
				snprintf(who, sizeof(who), "writer %d, generation %u",
					 w->id, w->gens[p]);
				w->bad += check_page(off, w->gens[p], who);
				if (w->bad)
					break;
				mo_pattern_fill(buf + off, off, page_size, ++w->gens[p]);
			} else {
				snprintf(who, sizeof(who), "reader %d", w->id);
				w->bad += check_page(off, READ_SEED, who);
				if (w->bad)
					break;
			}
			__atomic_add_fetch(&w->done, 1, __ATOMIC_RELAXED);
			pace(w->done);
		}
	}
	return NULL;
}

static void status(struct worker *w, int nr, double t)
{
	size_t n = buf_len / page_size, i;
	unsigned long per[MAX_NODES] = { 0 }, other = 0, writes = 0, reads = 0;
	size_t bad = 0;
	void **pages = malloc(n * sizeof(*pages));
	int *st = malloc(n * sizeof(*st));
	int k;

	if (!pages || !st)
		die("malloc");
	for (i = 0; i < n; i++)
		pages[i] = buf + i * page_size;
	if (move_pages(0, n, pages, NULL, st, 0) < 0)
		die("move_pages(query)");
	for (i = 0; i < n; i++) {
		if (st[i] >= 0 && st[i] < MAX_NODES)
			per[st[i]]++;
		else
			other++;
	}
	for (k = 0; k < nr; k++) {
		unsigned long d = __atomic_load_n(&w[k].done, __ATOMIC_RELAXED);

		if (w[k].writer)
			writes += d;
		else
			reads += d;
		bad += w[k].bad;
	}
	pthread_mutex_lock(&out_lock);
	printf("status t=%.1f", t);
	for (k = 0; k < MAX_NODES; k++)
		if (per[k] || k < 3)
			printf(" n%d=%lu", k, per[k]);
	printf(" other=%lu writes=%lu reads=%lu bad=%zu", other, writes, reads, bad);
	if (track_pfns) {
		unsigned long changed = 0, in_range = 0, absent = 0;
		char tmp[PATH_MAX];
		FILE *dump = NULL;

		if (pfn_dump) {
			snprintf(tmp, sizeof(tmp), "%s.tmp", pfn_dump);
			dump = fopen(tmp, "w");
			if (!dump)
				die(tmp);
		}
		for (i = 0; i < n; i++) {
			uint64_t pfn = pfn_of(buf + i * page_size);
			bool in = pfn >= range_lo && pfn < range_hi;

			/* 0: not present (a migration entry), neither moved nor in range */
			absent += !pfn;
			changed += pfn && pfn != pfn0[i];
			in_range += in;
			if (dump && in)
				fprintf(dump, "%" PRIu64 "\n", pfn);
		}
		if (dump && (fclose(dump) || rename(tmp, pfn_dump)))
			die(pfn_dump);
		printf(" pfn_changed=%lu pfn_absent=%lu", changed, absent);
		if (range_hi)
			printf(" in_range=%lu", in_range);
	}
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	free(pages);
	free(st);
}

/*
 * The act on SIGUSR2 (see the top): the k-th pair of ranges around the
 * middle of the buffer, one at the end of the writers' half, one at the
 * start of the readers' half, act_pages / 2 pages each.
 */
static void act(size_t half)
{
	size_t per = act_pages / 2, k = act_n, r, i, bad = 0;
	size_t start[2] = { half - (k + 1) * per * page_size, half + k * per * page_size };
	unsigned long failed = 0, changed = 0, mov0 = 0, mov1 = 0;
	unsigned long pinned_moved = 0, unpinned_moved = 0;
	uint64_t before[2][per ? per : 1];
	int fd = -1;

	act_n++;
	if (!per || (k + 1) * per * page_size > half)
		goto out;	/* nothing left: all counts 0 */
	for (r = 0; r < 2; r++)
		for (i = 0; i < per; i++) {
			before[r][i] = pfn_of(buf + start[r] + i * page_size);
			mov0 += pfn_movable(before[r][i]);
		}
	if (!strcmp(act_what, "pin")) {
		fd = open(GUP_TEST, O_RDWR);
		if (fd < 0)
			die("open(" GUP_TEST ")");
	}
	if (!strcmp(act_what, "uring")) {
		struct iovec iov[2] = {
			{ buf + start[0], per * page_size }, { buf + start[1], per * page_size },
		};
		uint8_t *copy = malloc(per * page_size);
		struct mo_bad first;

		if (!copy)
			die("malloc");
		if (uring_pin_read(iov, 2, 1, copy, per * page_size, &pinned_moved)) {
			failed++;
		} else {
			bad = mo_pattern_verify(copy, start[1], per * page_size, READ_SEED, &first);
			if (bad)
				printf("corrupt: read through the io_uring pins: byte %zu is %#x, want %#x\n",
				       first.off, first.got, first.want);
		}
		free(copy);
		goto moved;
	}
	for (r = 0; r < 2; r++) {
		if (fd < 0) {
			for (i = 0; i < per; i++)
				if (madvise(buf + start[r] + i * page_size, page_size,
					    MADV_SOFT_OFFLINE)) {
					fprintf(stderr, "mo_tier: madvise(MADV_SOFT_OFFLINE) of page %zu: %s\n",
						start[r] / page_size + i, strerror(errno));
					failed++;
				}
			continue;
		}
		struct pin_longterm_test pin = {
			.addr = (uintptr_t)(buf + start[r]), .size = per * page_size,
			.flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE,
		};
		if (ioctl(fd, PIN_LONGTERM_TEST_START, &pin)) {
			fprintf(stderr, "mo_tier: PIN_LONGTERM_TEST_START: %s\n", strerror(errno));
			failed++;
			continue;
		}
		pinned_moved += move_each(buf + start[r], per * page_size);
		if (r == 1) {
			/* The readers' pages, as the kernel sees them through the pins. */
			uint8_t *copy = malloc(per * page_size);
			uint64_t to = (uintptr_t)copy;
			struct mo_bad first;

			if (!copy)
				die("malloc");
			if (ioctl(fd, PIN_LONGTERM_TEST_READ, &to)) {
				fprintf(stderr, "mo_tier: PIN_LONGTERM_TEST_READ: %s\n", strerror(errno));
				failed++;
			} else {
				bad = mo_pattern_verify(copy, start[r], per * page_size, READ_SEED, &first);
				if (bad)
					printf("corrupt: read through the pins: byte %zu is %#x, want %#x\n",
					       first.off, first.got, first.want);
			}
			free(copy);
		}
		if (ioctl(fd, PIN_LONGTERM_TEST_STOP))
			die("PIN_LONGTERM_TEST_STOP");
	}
moved:
	for (r = 0; r < 2; r++)
		for (i = 0; i < per; i++) {
			uint64_t pfn = pfn_of(buf + start[r] + i * page_size);

			changed += pfn && pfn != before[r][i];
			mov1 += pfn_movable(pfn);
		}
	/* The control of move_each(): unpinned, the same pages do move. */
	if (fd >= 0 || !strcmp(act_what, "uring"))
		for (r = 0; r < 2; r++)
			unpinned_moved += move_each(buf + start[r], per * page_size);
	if (fd >= 0)
		close(fd);
out:
	pthread_mutex_lock(&out_lock);
	printf("act n=%d what=%s pages=%zu failed=%lu pfn_changed=%lu movable_before=%lu movable_after=%lu pin_read_bad=%zu pinned_moved=%lu unpinned_moved=%lu\nact_done=%d\n",
	       act_n, act_what, 2 * per, failed, changed, mov0, mov1, bad, pinned_moved,
	       unpinned_moved, act_n);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "on", required_argument, NULL, 'o' },
		{ "writers", required_argument, NULL, 'w' },
		{ "readers", required_argument, NULL, 'r' },
		{ "interval", required_argument, NULL, 'i' },
		{ "pfns", no_argument, NULL, 'P' },
		{ "pfn-range", required_argument, NULL, 'R' },
		{ "pfn-dump", required_argument, NULL, 'D' },
		{ "fragment", required_argument, NULL, 'F' },
		{ "no-place", no_argument, NULL, 'X' },
		{ "act", required_argument, NULL, 'A' },
		{ "act-pages", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct worker w[2 * MAX_THREADS];
	pthread_t tid[2 * MAX_THREADS];
	size_t half, wslice, rslice, n, i, p, bad = 0;
	unsigned long mask, writes = 0, reads = 0, placed;
	double t0, next;
	sigset_t sigs;
	void **pages;
	int *nodev, *st, c, nr = 0, k, sig;

	page_size = sysconf(_SC_PAGESIZE);
	while ((c = getopt_long(argc, argv, "s:w:r:i:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': buf_len = strtoul(optarg, NULL, 0) << 20; break;
		case 'o': on_node = atoi(optarg); break;
		case 'w': nr_writers = atoi(optarg); break;
		case 'r': nr_readers = atoi(optarg); break;
		case 'i': interval = strtod(optarg, NULL); break;
		case 'P': track_pfns = true; break;
		case 'R':
			track_pfns = true;
			if (sscanf(optarg, "%" SCNu64 "-%" SCNu64, &range_lo, &range_hi) != 2 ||
			    range_hi <= range_lo)
				usage(2);
			break;
		case 'D': pfn_dump = optarg; break;
		case 'F': fragment = strtoul(optarg, NULL, 0); break;
		case 'X': no_place = true; break;
		case 'A':
			act_what = optarg;
			if (strcmp(act_what, "soft-offline") && strcmp(act_what, "pin") &&
			    strcmp(act_what, "uring"))
				usage(2);
			track_pfns = true;
			break;
		case 'N': act_pages = strtoul(optarg, NULL, 0); break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (!buf_len || on_node < 0 || on_node >= MAX_NODES || interval <= 0 ||
	    (pfn_dump && !range_hi) ||
	    nr_writers < 1 || nr_writers > MAX_THREADS ||
	    nr_readers < 1 || nr_readers > MAX_THREADS)
		usage(2);
	half = buf_len / 2 / page_size * page_size;
	wslice = half / nr_writers / page_size * page_size;
	rslice = half / nr_readers / page_size * page_size;
	if (!wslice || !rslice)
		usage(2);

	buf = mmap(NULL, buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	if (madvise(buf, buf_len, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)");
	/* Fault in on the node, then leave placement to the kernel. */
	mask = 1UL << on_node;
	if (set_mempolicy(MPOL_BIND, &mask, sizeof(mask) * 8))
		die("set_mempolicy");
	if (fragment) {
		/* A page of the buffer, N of the filler, ...; then free the filler. */
		size_t filler_len = buf_len * fragment, f;
		uint8_t *filler = mmap(NULL, filler_len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (filler == MAP_FAILED)
			die("mmap(filler)");
		if (madvise(filler, filler_len, MADV_NOHUGEPAGE))
			die("madvise(filler)");
		for (p = 0; p < buf_len / page_size; p++) {
			buf[p * page_size] = 1;
			for (f = 0; f < fragment; f++)
				filler[(p * fragment + f) * page_size] = 1;
		}
		munmap(filler, filler_len);
	}
	for (k = 0; k < nr_writers; k++) {
		w[nr] = (struct worker){ .off = k * wslice, .len = wslice, .id = k, .writer = true };
		w[nr].gens = malloc(wslice / page_size * sizeof(*w[nr].gens));
		if (!w[nr].gens)
			die("malloc");
		for (p = 0; p < wslice / page_size; p++)
			w[nr].gens[p] = 1;
		mo_pattern_fill(buf + w[nr].off, w[nr].off, wslice, 1);
		nr++;
	}
	for (k = 0; k < nr_readers; k++) {
		w[nr] = (struct worker){ .off = half + k * rslice, .len = rslice, .id = k };
		mo_pattern_fill(buf + w[nr].off, w[nr].off, rslice, READ_SEED);
		nr++;
	}
	if (set_mempolicy(MPOL_DEFAULT, NULL, 0))
		die("set_mempolicy(default)");

	/* Stragglers (there should be none with MPOL_BIND): move them. */
	n = buf_len / page_size;
	pages = malloc(n * sizeof(*pages));
	nodev = malloc(n * sizeof(*nodev));
	st = malloc(n * sizeof(*st));
	if (!pages || !nodev || !st)
		die("malloc");
	for (i = 0; i < n; i++) {
		pages[i] = buf + i * page_size;
		nodev[i] = on_node;
	}
	if (move_pages(0, n, pages, NULL, st, 0) < 0)
		die("move_pages(query)");
	for (i = placed = 0; i < n; i++)
		placed += st[i] == on_node;
	if (placed != n && !no_place) {
		if (move_pages(0, n, pages, nodev, st, MPOL_MF_MOVE) < 0)
			die("move_pages");
		for (i = placed = 0; i < n; i++)
			placed += st[i] == on_node;
	}
	free(pages);
	free(nodev);
	free(st);
	printf("pages=%zu\nplaced=%lu\n", n, placed);
	if (track_pfns) {
		pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
		if (pagemap_fd < 0)
			die("open(/proc/self/pagemap)");
		pfn0 = malloc(n * sizeof(*pfn0));
		if (!pfn0)
			die("malloc");
		for (i = 0; i < n; i++) {
			pfn0[i] = pfn_of(buf + i * page_size);
			if (!pfn0[i]) {
				errno = EPERM;
				die("pagemap shows no frame (not root?)");
			}
		}
		{
			uint64_t lo = UINT64_MAX, hi = 0;

			for (i = 0; i < n; i++) {
				lo = pfn0[i] < lo ? pfn0[i] : lo;
				hi = pfn0[i] > hi ? pfn0[i] : hi;
			}
			printf("pfn_min=%" PRIu64 "\npfn_max=%" PRIu64 "\n", lo, hi);
		}
		if (range_hi) {
			unsigned long in = 0;

			for (i = 0; i < n; i++)
				in += pfn0[i] >= range_lo && pfn0[i] < range_hi;
			printf("in_range_placed=%lu\n", in);
		}
	}

	/* Only the main thread takes these, with sigtimedwait(). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	for (k = 0; k < nr; k++)
		if (pthread_create(&tid[k], NULL, worker_fn, &w[k]))
			die("pthread_create");
	printf("ready=1\n");
	fflush(stdout);

	t0 = now_s();
	next = t0 + interval;
	for (;;) {
		double left = next - now_s();
		struct timespec ts;

		if (left > 0) {
			ts.tv_sec = (time_t)left;
			ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
			sig = sigtimedwait(&sigs, NULL, &ts);
			if (sig < 0 && errno == EINTR)
				continue;
			if (sig == SIGTERM || sig == SIGINT)
				break;
			if (sig == SIGUSR2) {
				if (act_what)
					act(half);
				continue;
			}
			if (sig < 0)
				next += interval;	/* timed out */
		} else {
			next = now_s() + interval;
		}
		status(w, nr, now_s() - t0);
	}
	stop = 1;
	for (k = 0; k < nr; k++)
		pthread_join(tid[k], NULL);
	status(w, nr, now_s() - t0);
	/* Every page once more: the writers' last generations, the readers' seed. */
	for (k = 0; k < nr; k++) {
		bad += w[k].bad;
		if (w[k].writer)
			writes += w[k].done;
		else
			reads += w[k].done;
		for (p = 0; !w[k].bad && p < w[k].len / page_size; p++)
			bad += check_page(w[k].off + p * page_size,
					  w[k].writer ? w[k].gens[p] : READ_SEED, "at the end");
	}
	printf("page_writes=%lu\npage_reads=%lu\nbad_bytes=%zu\nbytes_checked=%llu\n", writes, reads,
	       bad, mo_bytes_checked);
	return bad ? 1 : 0;
}
