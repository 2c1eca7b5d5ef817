/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mo_bench's shared declarations: the options (main.c), messages, buffers
 * and CPUs (common.c), the JSON lines (json.c), counters, nodes and sysfs
 * (system.c), the busy-loop hogs (hog.c), a buffer and its timed move
 * (move.c), and the entry point of each mode (a file each).
 */
#ifndef MO_BENCH_COMMON_H
#define MO_BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "../lib/mo_pages.h"
#include "../lib/mo_pattern.h"

#define PROG "mo_bench"
#define MAX_LIST 32
#define MAX_NODES 64
#define PMD_SIZE (2UL << 20)
#define MIB (1UL << 20)
#define GIB (1UL << 30)

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_SKIP 4

#define MO_DIR "/sys/kernel/mm/migrate_offload"
#define THP_DIR "/sys/kernel/mm/transparent_hugepage"
#define NODE_DIR "/sys/devices/system/node"

enum mode { M_TPUT, M_COUNT, M_LATENCY, M_MEMCPY, M_COMPACTION, M_ALIAS, M_TIERING };
extern const char *const mode_names[];

struct list {
	long v[MAX_LIST];
	int n;
};

struct options {
	enum mode mode;
	long size_mb;
	int from, to;
	struct list folio_kb, folios, pages;
	int reps;
	int first_rep;		/* number of the first repetition (seed, JSON) */
	int node;
	int fill_pct;
	long huge;		/* -1: default */
	bool hog;
	enum { TRIG_HUGEPAGES, TRIG_COMPACT } trigger;
	int cpu;		/* -1: not pinned */
	int threads;		/* memcpy: threads sharing the copy */
	const char *json_out;
	const char *config;
	bool size_set;
	int hot_pct;		/* tiering: share of the working set that is hot */
	double seconds, warmup_s;
	long leave_mb;		/* tiering: free memory left on the fast node */
	int scan_ms, hot_ms;	/* tiering: NUMA balancing periods (0: as found) */
	bool squeeze;		/* tiering: push other pages off the node first */
};

extern struct options opt;
extern size_t page_size;
extern char engine[64];
extern char kernel_rel[128];
extern FILE *json_file;
extern int failures;		/* measurements that failed */

/* common.c */
void fatal(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long long now_ns(void);
void *xmalloc(size_t n);
int read_file(const char *path, char *buf, size_t len);
bool exists(const char *path);
int mode_reps(void);
int pin_to_cpu(int cpu);
void run_on_cpu(int cpu, const char *what);
int allowed_cpus(int *cpus, int max);
void pin_self(void);
void trace_mark(const char *what);
uint8_t *map_aligned(size_t len);
void fill(uint8_t *p, size_t base, size_t len, uint64_t seed);
size_t verify(const uint8_t *p, size_t base, size_t len, uint64_t seed,
	      const char *what);
/* A node mask for mbind() */
#define NODE_MASK_LONGS (MAX_NODES / (8 * sizeof(unsigned long)) + 1)
void node_mask_set(unsigned long *mask, int node);

/* json.c: one measurement, one line */
struct json {
	char buf[4096];
	size_t len;
};

void j_raw(struct json *j, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void j_str(struct json *j, const char *key, const char *s);
void j_int(struct json *j, const char *key, long long v);
void j_num(struct json *j, const char *key, double v);
void j_bool(struct json *j, const char *key, bool v);
void j_null(struct json *j, const char *key);
void j_begin(struct json *j, long folio_kb, long long size_bytes, int rep);
void j_end(struct json *j);
void j_end_verified(struct json *j, size_t bad);
void j_skipped(long folio_kb, long long size_bytes, const char *extra_key,
	       long extra, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* system.c: /proc/vmstat, /proc/stat, /proc/interrupts, nodes, sysfs */
#define NR_VM 14		/* vm_keys[] */
extern const char *const vm_keys[];
enum { VM_SUCCESS, VM_FAIL, VM_COPIED, VM_FALLBACK, VM_WASTED, VM_THP_OK,
       VM_THP_FAIL, VM_THP_SPLIT, VM_COMPACT0 };

/* /proc/stat "cpu" fields */
enum { ST_USER, ST_NICE, ST_SYSTEM, ST_IDLE, ST_IOWAIT, ST_IRQ, ST_SOFTIRQ,
       ST_STEAL, NR_ST };

struct snap {
	long long vm[NR_VM];
	bool have_vm[NR_VM];
	long long st[NR_ST];
	long long tlb;
	bool have_tlb;
	struct rusage ru;
	long long t;
};

void snap_take(struct snap *s);
void read_vmstat(const char *const *keys, size_t n, long long *v, bool *have);
void read_cpu_stat(long long st[NR_ST]);
long long st_sys(const long long *a, const long long *b);
double jiffies_s(long long j);
void j_vm(struct json *j, const struct snap *a, const struct snap *b, size_t idx);
void j_costs(struct json *j, const struct snap *a, const struct snap *b,
	     double bytes);
bool node_has_memory(int node);
long long node_memfree(int node);
long long node_memtotal(int node);
void memory_nodes(char *out, size_t len);
void need_nodes(int a, int b);
void need_root(void);
long long short_of_memory(int node, size_t bytes);
long free_2m_blocks(int node);
int node_first_cpu(int node);
#define TIER_DIR "/sys/devices/virtual/memory_tiering"
int tier_of(int node);
double task_cpu_s(const char *comm);

/* hog.c: busy loops pinned to CPUs, stopped before settings are restored */
struct hog_shared {
	volatile long long iters;
};

extern volatile pid_t hog_pid;		/* compaction --hog */
extern volatile int nr_tier_hogs;	/* tput and tiering --hog */
extern struct hog_shared *tier_hog_sh;	/* the hogs' counter, if they run */
long long hog_count(struct hog_shared *sh);
void kill_hog(void);
pid_t start_hog(int cpu, struct hog_shared *sh);
void tier_hogs_start(const cpu_set_t *cpus);
void tier_hogs_stop(void);

/* move.c: folio sizes, a filled buffer on a node, its timed move */
bool valid_folio_kb(long kb);
const char *set_folio_size(long kb, char *why, size_t len);
struct move_result {
	long ret;		/* move_pages() return value */
	int err;		/* its errno if ret < 0 */
	long long ns;
	size_t not_moved, ebusy, eagain, other;
	size_t stayed_behind;	/* query: not on the target node */
	size_t reported_but_moved; /* status said not moved, query says moved */
};

struct mover {
	size_t n;
	void **pages;
	int *nodes, *status, *query;
};

void mover_init(struct mover *m, uint8_t *buf, size_t len);
void mover_free(struct mover *m);
long count_on(struct mover *m, int node);
void move_timed(struct mover *m, int node, struct move_result *r,
		void (*before)(void *), void *arg);
void j_move(struct json *j, const struct move_result *r);
uint8_t *fresh_buffer(size_t len, long kb, int node, uint64_t seed,
		      struct mover *m, double *placed);

/* The modes (tput.c: tput and count) */
void run_tput(void);
void run_count(void);
void run_latency(void);
void run_memcpy(void);
void run_compaction(void);
void run_alias(void);
void run_tiering(void);

#endif /* MO_BENCH_COMMON_H */
