// SPDX-License-Identifier: GPL-2.0
/*
 * The movers of the race kinds and hwpoison: two threads move race_buf
 * (or, for race-exit, race_pid's pages there) back and forth between
 * --from and --to until stop, counting what they meet.
 */
#include "common.h"

uint8_t *race_buf;
size_t race_len;
bool race_exit;
pid_t race_pid;
unsigned long race_gone;
pthread_rwlock_t pid_lock;

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

void start_movers(struct mover *m)
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
unsigned long stop_movers(struct mover *m)
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

