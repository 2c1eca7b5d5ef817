// SPDX-License-Identifier: GPL-2.0
/*
 * hwpoison: SIGBUS of this thread (an injection's kill, a read of a
 * poisoned page) returns to the sigsetjmp() of the page; anywhere else it
 * is a failure.
 */
#include "common.h"

#include <setjmp.h>

#ifndef MADV_HWPOISON
#define MADV_HWPOISON 100
#endif
#define NR_POISON 3

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

void kind_hwpoison(void)
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

