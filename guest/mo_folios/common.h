/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mo_folios' shared pieces: the options, the failure count, the checks,
 * the moves of a whole buffer (common.c), the mover threads of the race
 * kinds and hwpoison (movers.c), and each kind's entry point.
 */
#ifndef MO_FOLIOS_COMMON_H
#define MO_FOLIOS_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "../lib/mo_pages.h"
#include "../lib/mo_pattern.h"

/* /proc/self/pagemap bits */
#define PM_SWAP(e) (((e) >> 62) & 1)

#define MAX_CORRUPT_LINES 20
#define MAX_MOVE_CALLS 10

/* The options (main.c) */
extern size_t page_size, buf_len, npages;
extern int from_node, to_node;
extern const char *file_path;		/* --path */
extern double secs;
extern const char *kind;

extern unsigned long nr_fail;		/* fail() calls */
extern size_t bad_bytes;		/* what check() and check_zero() found */
extern volatile sig_atomic_t stop;	/* tells the threads of a kind to stop */

/* common.c */
void die(const char *what) __attribute__((noreturn));
void unsupported(const char *what, int err) __attribute__((noreturn));
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
size_t check(const void *p, size_t base, size_t len, uint64_t seed,
	     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
size_t check_zero(const uint8_t *p, size_t base, size_t len, const char *when);
void read_line(const char *file, char *buf, size_t size);
double now_s(void);
void sleep_ms(double ms);
void prefer(int node);
uint8_t *anon_buf(size_t len);
uint8_t *filled_buf(void);
uint64_t *pagemap_of(const void *p, size_t len);
void frames_hidden(void) __attribute__((noreturn));
size_t count_kpf(const void *p, size_t len, uint64_t mask);
void **page_ptrs(uint8_t *p, size_t n);
size_t query(uint8_t *p, size_t n, int node, int *where);
size_t move_range(uint8_t *p, size_t n, int node, int flags, int *where,
		  int *calls, int max_calls);
void place(uint8_t *p, size_t len, int flags);

struct moved {
	size_t on, new_frames;
};

struct moved measured_move(uint8_t *p, size_t len, int node, int flags,
			   const char *sfx);

/* movers.c: two threads move race_buf back and forth (race kinds, hwpoison) */
struct mover {
	int id;
	unsigned long rounds, errors, gone;
	unsigned long holes, absent;	/* pages met unmapped (-EFAULT), not present (-ENOENT) */
	unsigned long placed;		/* race-exit: pages reported on to_node */
	pthread_t thread;
};

extern uint8_t *race_buf;
extern size_t race_len;
extern bool race_exit;
extern pid_t race_pid;			/* race-exit: whose pages; 0: none */
extern unsigned long race_gone;		/* race-exit: calls that met an exited child */
extern pthread_rwlock_t pid_lock;

void start_movers(struct mover *m);
unsigned long stop_movers(struct mover *m);

/* The kinds, one file each (race.c: the four race kinds) */
void kind_file(void);
void kind_swapcache(void);
void kind_ksm(void);
void kind_mlock(void);
void kind_uffd_wp(void);
void kind_cow(void);
void kind_race(void);
void kind_hwpoison(void);

#endif /* MO_FOLIOS_COMMON_H */
