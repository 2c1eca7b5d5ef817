// SPDX-License-Identifier: GPL-2.0
/*
 * mo_bench: the migrate-offload benchmarks, guest side.
 *
 *   mo_bench tput       [opts]  move_pages() throughput per folio size
 *   mo_bench count      [opts]  throughput against the number of 2M folios
 *   mo_bench latency    [opts]  when does the first page become usable again
 *   mo_bench memcpy     [opts]  user-space memcpy bandwidth (the ceiling)
 *   mo_bench compaction [opts]  hugepage allocation on a fragmented node
 *   mo_bench alias      [opts]  is the (emulated) machine's TLB direct-mapped?
 *   mo_bench tiering    [opts]  kswapd demotes, NUMA balancing promotes, a
 *                               task works on a moving hot set
 *
 * Every measurement is one JSON object on one line of stdout (flat keys);
 * messages go to stderr. Runs on the lab's VM and unchanged on a bare-metal
 * NUMA machine, with or without the migrate-offload series (engine
 * "vanilla" when /sys/kernel/mm/migrate_offload does not exist).
 *
 * Exit status: 0 done, 1 a measurement failed (corrupted data, a failed
 * move), 2 usage or setup error, 4 skipped (e.g. fewer than two memory
 * nodes, not root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/mo_pages.h"
#include "lib/mo_pattern.h"

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
static const char *const mode_names[] = {
	"tput", "count", "latency", "memcpy", "compaction", "alias", "tiering",
};

struct list {
	long v[MAX_LIST];
	int n;
};

static struct {
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
} opt = {
	.size_mb = 256, .from = 0, .to = 1, .reps = -1, .node = 1,
	.fill_pct = 80, .huge = -1, .cpu = -1, .threads = 1,
	.hot_pct = 25, .seconds = 20, .warmup_s = 5,
};

static size_t page_size;
static char engine[64];
static char kernel_rel[128];
static FILE *json_file;
static int failures;		/* measurements that failed */

/* ---------------------------------------------------------------- misc */

static void fatal(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

static void fatal(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void note(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		fatal(EXIT_USAGE, "out of memory (%zu bytes)", n);
	return p;
}

/* Read a small file into @buf (NUL-terminated, trailing newline cut). */
static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return 0;
}

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* ------------------------------------------- settings saved and restored */

/*
 * Global settings changed by a run (THP sizes, nr_hugepages) go through
 * set_setting() (lib/mo_pages.h): put back at exit, also on SIGINT/SIGTERM,
 * after the compaction hog is stopped.
 */
static volatile pid_t hog_pid;
/* tiering --hog: one busy loop per CPU */
#define MAX_HOGS 256
static pid_t tier_hogs[MAX_HOGS];
static volatile int nr_tier_hogs;

struct hog_shared {
	volatile long long iters;
};

static struct hog_shared *tier_hog_sh;	/* the hogs' counter, if they run */

static long long hog_count(struct hog_shared *sh)
{
	return __atomic_load_n(&sh->iters, __ATOMIC_RELAXED);
}

static void kill_hog(void)
{
	int i;

	if (hog_pid > 0)
		kill(hog_pid, SIGKILL);
	for (i = 0; i < nr_tier_hogs; i++)
		kill(tier_hogs[i], SIGKILL);
}

/* ---------------------------------------------------------------- JSON */

struct json {
	char buf[4096];
	size_t len;
};

static void j_raw(struct json *j, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void j_raw(struct json *j, const char *key, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->len >= sizeof(j->buf) - 64)
		return;
	n = snprintf(j->buf + j->len, sizeof(j->buf) - j->len, "%s\"%s\":",
		     j->len > 1 ? "," : "", key);
	if (n > 0)
		j->len += n;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->len += n;
	if (j->len > sizeof(j->buf) - 4)
		j->len = sizeof(j->buf) - 4;
}

static void j_str(struct json *j, const char *key, const char *s)
{
	char esc[512];
	size_t o = 0;

	for (; *s && o < sizeof(esc) - 8; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			esc[o++] = '\\';
			esc[o++] = c;
		} else if (c < 0x20) {
			o += snprintf(esc + o, sizeof(esc) - o, "\\u%04x", c);
		} else {
			esc[o++] = c;
		}
	}
	esc[o] = 0;
	j_raw(j, key, "\"%s\"", esc);
}

static void j_int(struct json *j, const char *key, long long v)
{
	j_raw(j, key, "%lld", v);
}

static void j_num(struct json *j, const char *key, double v)
{
	if (v != v)
		j_raw(j, key, "null");
	else if (fabs(v) >= 1e5)
		j_raw(j, key, "%.1f", v);
	else
		j_raw(j, key, "%.6g", v);
}

static void j_bool(struct json *j, const char *key, bool v)
{
	j_raw(j, key, v ? "true" : "false");
}

static void j_null(struct json *j, const char *key)
{
	j_raw(j, key, "null");
}

/* Common keys; @folio_kb 0 = not applicable. */
static void j_begin(struct json *j, long folio_kb, long long size_bytes, int rep)
{
	j->len = 0;
	j->buf[j->len++] = '{';
	j->buf[j->len] = 0;
	j_str(j, "mode", mode_names[opt.mode]);
	j_str(j, "config", opt.config ? opt.config : engine);
	j_str(j, "engine", engine);
	if (folio_kb)
		j_int(j, "folio_kb", folio_kb);
	else
		j_null(j, "folio_kb");
	j_int(j, "size_bytes", size_bytes);
	j_int(j, "rep", rep);
}

static void j_end(struct json *j)
{
	j->buf[j->len++] = '}';
	j->buf[j->len++] = '\n';
	j->buf[j->len] = 0;
	fputs(j->buf, stdout);
	fflush(stdout);
	if (json_file) {
		fputs(j->buf, json_file);
		fflush(json_file);
	}
}

/*
 * End the record of a measurement that found @bad corrupted bytes: its
 * verdict, the kernel, and a failure counted if any byte was wrong.
 */
static void j_end_verified(struct json *j, size_t bad)
{
	j_int(j, "bad_bytes", bad);
	j_bool(j, "verified", !bad);
	j_str(j, "kernel", kernel_rel);
	j_end(j);
	if (bad)
		failures++;
}

/* A measurement that could not be made, with the reason. */
static void j_skipped(long folio_kb, long long size_bytes, const char *extra_key,
		      long extra, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void j_skipped(long folio_kb, long long size_bytes, const char *extra_key,
		      long extra, const char *fmt, ...)
{
	struct json j;
	char reason[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	j_begin(&j, folio_kb, size_bytes, 0);
	if (extra_key)
		j_int(&j, extra_key, extra);
	j_str(&j, "kernel", kernel_rel);
	/* a skipped measurement under a hog is still one of the hog's */
	if (opt.hog && opt.mode == M_TPUT)
		j_bool(&j, "hog", true);
	j_bool(&j, "skipped", true);
	j_str(&j, "reason", reason);
	j_end(&j);
	note("%s: skipped: %s", mode_names[opt.mode], reason);
}

/* ----------------------------------------------------- system counters */

static const char *const vm_keys[] = {
	"pgmigrate_success", "pgmigrate_fail",
	"pgmigrate_batch_copied", "pgmigrate_batch_fallback",
	"pgmigrate_batch_wasted",
	"thp_migration_success", "thp_migration_fail", "thp_migration_split",
	"compact_migrate_scanned", "compact_free_scanned", "compact_isolated",
	"compact_stall", "compact_fail", "compact_success",
};
#define NR_VM (sizeof(vm_keys) / sizeof(vm_keys[0]))
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

static void snap_take(struct snap *s)
{
	char line[512], name[128];
	long long val;
	FILE *f;
	size_t i;

	memset(s, 0, sizeof(*s));
	f = fopen("/proc/vmstat", "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%127s %lld", name, &val) != 2)
				continue;
			for (i = 0; i < NR_VM; i++)
				if (!strcmp(name, vm_keys[i])) {
					s->vm[i] = val;
					s->have_vm[i] = true;
				}
		}
		fclose(f);
	}
	f = fopen("/proc/stat", "r");
	if (f) {
		if (fgets(line, sizeof(line), f))
			sscanf(line, "cpu %lld %lld %lld %lld %lld %lld %lld %lld",
			       &s->st[0], &s->st[1], &s->st[2], &s->st[3],
			       &s->st[4], &s->st[5], &s->st[6], &s->st[7]);
		fclose(f);
	}
	f = fopen("/proc/interrupts", "r");
	if (f) {
		char *buf = NULL, *p, *end;
		size_t cap = 0;

		while (getline(&buf, &cap, f) > 0) {
			p = buf + strspn(buf, " ");
			if (strncmp(p, "TLB:", 4))
				continue;
			p += 4;
			s->have_tlb = true;
			for (;;) {
				val = strtoll(p, &end, 10);
				if (end == p)
					break;
				s->tlb += val;
				p = end;
			}
			break;
		}
		free(buf);
		fclose(f);
	}
	getrusage(RUSAGE_SELF, &s->ru);
	s->t = now_ns();
}

static double jiffies_s(long long j)
{
	static long hz;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	return (double)j / (hz > 0 ? hz : 100);
}

static void j_vm(struct json *j, const struct snap *a, const struct snap *b,
		 size_t idx)
{
	if (a->have_vm[idx] && b->have_vm[idx])
		j_int(j, vm_keys[idx], b->vm[idx] - a->vm[idx]);
	else
		j_null(j, vm_keys[idx]);
}

/* Migration counters, machine CPU time and TLB shootdowns over @bytes. */
static void j_costs(struct json *j, const struct snap *a, const struct snap *b,
		    double bytes)
{
	double gib = bytes / GIB;
	double sys = jiffies_s((b->st[ST_SYSTEM] - a->st[ST_SYSTEM]) +
			       (b->st[ST_IRQ] - a->st[ST_IRQ]) +
			       (b->st[ST_SOFTIRQ] - a->st[ST_SOFTIRQ]));
	size_t i;

	for (i = 0; i < VM_COMPACT0; i++)
		j_vm(j, a, b, i);
	j_num(j, "sys_s", sys);
	j_num(j, "sys_s_per_gib", gib > 0 ? sys / gib : 0);
	if (a->have_tlb && b->have_tlb) {
		j_int(j, "tlb_ipis", b->tlb - a->tlb);
		j_num(j, "tlb_ipis_per_gib", gib > 0 ? (b->tlb - a->tlb) / gib : 0);
	} else {
		j_null(j, "tlb_ipis");
		j_null(j, "tlb_ipis_per_gib");
	}
}

/* ----------------------------------------------------------------- nodes */

static bool node_has_memory(int node)
{
	char path[128], buf[4096], *p;
	long long kb;

	if (node < 0 || node >= MAX_NODES)
		return false;
	snprintf(path, sizeof(path), NODE_DIR "/node%d/meminfo", node);
	if (read_file(path, buf, sizeof(buf)))
		return false;
	p = strstr(buf, "MemTotal:");
	return p && sscanf(p, "MemTotal: %lld", &kb) == 1 && kb > 0;
}

/* MemFree of @node in bytes, -1 if unknown. */
static long long node_memfree(int node)
{
	char path[128], buf[4096], *p;
	long long kb;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/meminfo", node);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "MemFree:");
	if (!p || sscanf(p, "MemFree: %lld", &kb) != 1)
		return -1;
	return kb * 1024;
}

/* MemTotal of @node in bytes, -1 if unknown. */
static long long node_memtotal(int node)
{
	char path[128], buf[4096], *p;
	long long kb;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/meminfo", node);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "MemTotal:");
	if (!p || sscanf(p, "MemTotal: %lld", &kb) != 1)
		return -1;
	return kb * 1024;
}

static void memory_nodes(char *out, size_t len)
{
	size_t o = 0;
	int n;

	out[0] = 0;
	for (n = 0; n < MAX_NODES && o < len - 8; n++)
		if (node_has_memory(n))
			o += snprintf(out + o, len - o, "%s%d", o ? "," : "", n);
	if (!o)
		snprintf(out, len, "none");
}

/* Skip the mode (exit 4) unless @a and @b are memory nodes. */
static void need_nodes(int a, int b)
{
	char have[128];

	if (node_has_memory(a) && node_has_memory(b))
		return;
	memory_nodes(have, sizeof(have));
	j_skipped(0, 0, NULL, 0, "needs memory nodes %d and %d; memory nodes here: %s",
		  a, b, have);
	exit(EXIT_SKIP);
}

/*
 * Root is needed for the settings and /proc/kpageflags. Automatic NUMA
 * balancing is switched off for the run (and restored): it would migrate
 * the buffers behind our back and skew the counters.
 */
static void need_root(void)
{
	if (geteuid() != 0) {
		j_skipped(0, 0, NULL, 0, "needs root (sysfs settings, /proc/kpageflags)");
		exit(EXIT_SKIP);
	}
	if (exists("/proc/sys/kernel/numa_balancing"))
		set_setting("/proc/sys/kernel/numa_balancing", "0");
}

/* 0 if @bytes fit on @node with a margin; otherwise what is free there. */
static long long short_of_memory(int node, size_t bytes)
{
	long long free = node_memfree(node);
	long long want = bytes + bytes / 8 + 32 * MIB;

	if (free < 0 || free >= want)
		return 0;
	return free;
}

/* --------------------------------------------------------------- buffers */

/* @len bytes of anonymous memory aligned to 2M (THP needs it). */
static uint8_t *map_aligned(size_t len)
{
	size_t total = len + PMD_SIZE;
	uint8_t *p = mmap(NULL, total, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t start, end;

	if (p == MAP_FAILED)
		return NULL;
	start = ((uintptr_t)p + PMD_SIZE - 1) & ~(PMD_SIZE - 1);
	end = start + len;
	if (start > (uintptr_t)p)
		munmap(p, start - (uintptr_t)p);
	if ((uintptr_t)p + total > end)
		munmap((void *)end, (uintptr_t)p + total - end);
	return (uint8_t *)start;
}

/* Fill @len bytes (a multiple of 8) at @p, which is at @base in the buffer. */
static void fill(uint8_t *p, size_t base, size_t len, uint64_t seed)
{
	mo_pattern_fill(p, base, len, seed);
}

/* Bytes that differ from the pattern (guest/lib/mo_pattern.h); the first is reported. */
static size_t verify(const uint8_t *p, size_t base, size_t len, uint64_t seed,
		     const char *what)
{
	struct mo_bad first = { 0 };
	size_t bad = mo_pattern_verify(p, base, len, seed, &first);

	if (bad && what)
		note("%s: corrupted data at byte offset %zu: %#x, want %#x",
		     what, first.off, first.got, first.want);
	return bad;
}

/* ----------------------------------------------------- folio sizes (mTHP) */

static const long mthp_sizes[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
#define NR_MTHP (sizeof(mthp_sizes) / sizeof(mthp_sizes[0]))

static bool valid_folio_kb(long kb)
{
	size_t i;

	if (kb == 4)
		return true;
	for (i = 0; i < NR_MTHP; i++)
		if (mthp_sizes[i] == kb)
			return true;
	return false;
}

/*
 * Anonymous faults get @kb folios only: hugepages-<kb>kB/enabled=always,
 * every other size never (4: all never), THP enabled=madvise.
 * Returns NULL or the reason it cannot be done.
 */
static const char *set_folio_size(long kb, char *why, size_t len)
{
	char path[160];
	size_t i;
	int ret;

	if (kb != 4) {
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%ldkB/enabled", kb);
		/* before mTHP (6.8), PMD THP came from enabled=madvise alone */
		if (!exists(path) && !(kb == 2048 && !exists(THP_DIR "/hugepages-2048kB") &&
				       exists(THP_DIR "/enabled"))) {
			snprintf(why, len, "no %s (size not supported by this kernel)", path);
			return why;
		}
	}
	if (exists(THP_DIR "/enabled")) {
		ret = set_setting(THP_DIR "/enabled", "madvise");
		if (ret) {
			snprintf(why, len, "cannot set " THP_DIR "/enabled: %s",
				 strerror(-ret));
			return why;
		}
	}
	for (i = 0; i < NR_MTHP; i++) {
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%ldkB/enabled",
			 mthp_sizes[i]);
		if (!exists(path))
			continue;
		ret = set_setting(path, mthp_sizes[i] == kb ? "always" : "never");
		if (ret) {
			snprintf(why, len, "cannot set %s: %s", path, strerror(-ret));
			return why;
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- moving */

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

static void mover_init(struct mover *m, uint8_t *buf, size_t len)
{
	size_t i;

	m->n = len / page_size;
	m->pages = xmalloc(m->n * sizeof(*m->pages));
	m->nodes = xmalloc(m->n * sizeof(*m->nodes));
	m->status = xmalloc(m->n * sizeof(*m->status));
	m->query = xmalloc(m->n * sizeof(*m->query));
	for (i = 0; i < m->n; i++)
		m->pages[i] = buf + i * page_size;
	/* fault in the arrays now, not inside the timed call */
	memset(m->status, 0, m->n * sizeof(*m->status));
	memset(m->query, 0, m->n * sizeof(*m->query));
}

static void mover_free(struct mover *m)
{
	free(m->pages);
	free(m->nodes);
	free(m->status);
	free(m->query);
}

/* Pages of the buffer now on @node (by a move_pages() query), or -1. */
static long count_on(struct mover *m, int node)
{
	size_t i, on = 0;

	if (move_pages(0, m->n, m->pages, NULL, m->query, 0) < 0)
		return -1;
	for (i = 0; i < m->n; i++)
		on += m->query[i] == node;
	return on;
}

/* One timed move_pages() of the whole buffer to @node, then a query. */
static void move_timed(struct mover *m, int node, struct move_result *r,
		       void (*before)(void *), void *arg)
{
	size_t i;
	long long t0;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < m->n; i++) {
		m->nodes[i] = node;
		m->status[i] = INT_MIN;
	}
	if (before)
		before(arg);
	t0 = now_ns();
	r->ret = move_pages(0, m->n, m->pages, m->nodes, m->status, MPOL_MF_MOVE);
	r->ns = now_ns() - t0;
	if (r->ret < 0)
		r->err = errno;
	if (move_pages(0, m->n, m->pages, NULL, m->query, 0) < 0)
		for (i = 0; i < m->n; i++)
			m->query[i] = INT_MIN;
	for (i = 0; i < m->n; i++) {
		bool here = m->query[i] == node;

		r->stayed_behind += !here;
		if (m->status[i] == node)
			continue;
		r->not_moved++;
		if (m->status[i] == -EBUSY)
			r->ebusy++;
		else if (m->status[i] == -EAGAIN)
			r->eagain++;
		else
			r->other++;
		r->reported_but_moved += here;
	}
}

static void j_move(struct json *j, const struct move_result *r)
{
	j_int(j, "move_ret", r->ret);
	if (r->ret < 0)
		j_str(j, "move_error", strerror(r->err));
	j_int(j, "not_moved", r->not_moved);
	j_int(j, "ebusy", r->ebusy);
	j_int(j, "eagain", r->eagain);
	j_int(j, "other_status", r->other);
	j_int(j, "stayed_behind", r->stayed_behind);
	j_int(j, "reported_but_moved", r->reported_but_moved);
}

/*
 * A fresh buffer of @len bytes with @kb folios, filled with the pattern of
 * @seed and placed on @node (preferred policy at fault time, then
 * move_pages() for the pages that landed elsewhere). Returns the share of
 * pages on @node in *@placed.
 */
static uint8_t *fresh_buffer(size_t len, long kb, int node, uint64_t seed,
			     struct mover *m, double *placed)
{
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long)) + 1] = { 0 };
	uint8_t *buf = map_aligned(len);
	long on;
	size_t i;

	if (!buf)
		return NULL;
	if (kb > 4)
		madvise(buf, len, MADV_HUGEPAGE);
	else
		madvise(buf, len, MADV_NOHUGEPAGE);
	mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
	mbind(buf, len, MPOL_PREFERRED, mask, MAX_NODES, 0);
	fill(buf, 0, len, seed);
	/* back to the default policy: the timed move must not fight it */
	mbind(buf, len, MPOL_DEFAULT, NULL, 0, 0);
	mover_init(m, buf, len);
	for (i = 0; i < m->n; i++)
		m->nodes[i] = node;
	on = count_on(m, node);
	if (on >= 0 && (size_t)on < m->n) {
		move_pages(0, m->n, m->pages, m->nodes, m->status, MPOL_MF_MOVE);
		on = count_on(m, node);
	}
	*placed = on < 0 ? NAN : 100.0 * on / m->n;
	return buf;
}

/* ------------------------------------------------------------ tput, count */

static int mode_reps(void)
{
	if (opt.reps > 0)
		return opt.reps;
	return opt.mode == M_COMPACTION ? 1 : 5;
}

/* Run the calling thread on @cpu alone, or fail the run (@what: whose). */
static void run_on_cpu(int cpu, const char *what)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fatal(EXIT_USAGE, "%s: cannot run on CPU %d: %s", what, cpu,
		      strerror(errno));
}

/* The first @max CPUs the calling thread may run on, into @cpus; how many. */
static int allowed_cpus(int *cpus, int max)
{
	cpu_set_t allowed;
	int c, n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		fatal(EXIT_USAGE, "sched_getaffinity: %s", strerror(errno));
	for (c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	return n;
}

static void pin_self(void)
{
	if (opt.cpu >= 0)
		run_on_cpu(opt.cpu, mode_names[opt.mode]);
}

/*
 * A line in the kernel's trace around each timed move ("mo_bench: move
 * begin|end"), so that a tracer can sum the events of the timed move alone,
 * not those of the buffer's placement. No tracefs: nothing.
 */
static void trace_mark(const char *what)
{
	static int fd = -2;

	if (fd == -2)
		fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, what, strlen(what)) < 0)
		fd = -1;
}

static void tier_hogs_start(const cpu_set_t *cpus);
static void tier_hogs_stop(void);

/* One measured move of @len bytes of @kb folios; @folios > 0 for "count". */
static void tput_one(long kb, size_t len, long folios, int rep)
{
	uint64_t seed = (uint64_t)opt.mode << 40 | (uint64_t)kb << 16 | rep;
	struct move_result r;
	struct snap a, b;
	struct mover m;
	struct json j;
	long long hog0, hog1;
	double placed, share, share_after, secs;
	size_t bad;
	uint8_t *buf;

	buf = fresh_buffer(len, kb, opt.from, seed, &m, &placed);
	if (!buf) {
		j_skipped(kb, len, folios ? "folios" : NULL, folios,
			  "mmap of %zu bytes failed: %s", len, strerror(errno));
		failures++;
		return;
	}
	share = folio_share(buf, len, kb);
	snap_take(&a);
	hog0 = tier_hog_sh ? hog_count(tier_hog_sh) : 0;
	trace_mark("mo_bench: move begin");
	move_timed(&m, opt.to, &r, NULL, NULL);
	trace_mark("mo_bench: move end");
	hog1 = tier_hog_sh ? hog_count(tier_hog_sh) : 0;
	snap_take(&b);
	bad = verify(buf, 0, len, seed, mode_names[opt.mode]);
	share_after = folio_share(buf, len, kb);
	secs = r.ns / 1e9;

	j_begin(&j, kb, len, rep);
	if (folios)
		j_int(&j, "folios", folios);
	j_int(&j, "from", opt.from);
	j_int(&j, "to", opt.to);
	j_int(&j, "pages", m.n);
	j_num(&j, "seconds", secs);
	j_num(&j, "gbps", secs > 0 ? len / secs / 1e9 : NAN);
	j_num(&j, "folio_share", share);
	j_num(&j, "folio_share_after", share_after);
	j_num(&j, "placed_share", placed);
	j_move(&j, &r);
	j_int(&j, "bad_bytes", bad);
	j_bool(&j, "verified", !bad && r.ret >= 0);
	j_costs(&j, &a, &b, len);
	j_bool(&j, "hog", opt.hog);
	if (opt.hog) {
		/* how many, against the CPUs there are, and that they ran */
		j_int(&j, "hogs", nr_tier_hogs);
		j_int(&j, "cpus_online", sysconf(_SC_NPROCESSORS_ONLN));
		j_num(&j, "hog_per_s", secs > 0 ? (hog1 - hog0) / secs : NAN);
	}
	j_str(&j, "kernel", kernel_rel);
	j_end(&j);
	if (bad || r.ret < 0) {
		if (r.ret < 0)
			note("%s: move_pages: %s", mode_names[opt.mode], strerror(r.err));
		failures++;
	}
	mover_free(&m);
	munmap(buf, len);
}

static void run_tput(void)
{
	char why[256];
	cpu_set_t online;
	int i, rep;

	need_root();
	need_nodes(opt.from, opt.to);
	/*
	 * --hog: a busy loop on every CPU this task may use (the mover's too),
	 * for the whole run; forked before any buffer, so that none is shared
	 * copy-on-write.
	 */
	if (opt.hog) {
		if (sched_getaffinity(0, sizeof(online), &online))
			fatal(EXIT_USAGE, "sched_getaffinity: %s", strerror(errno));
		tier_hogs_start(&online);
	}
	pin_self();
	for (i = 0; i < opt.folio_kb.n; i++) {
		long kb = opt.folio_kb.v[i];
		size_t len = opt.size_mb * MIB;
		long long free;

		if (set_folio_size(kb, why, sizeof(why))) {
			j_skipped(kb, len, NULL, 0, "%s", why);
			continue;
		}
		if ((free = short_of_memory(opt.from, len)) ||
		    (free = short_of_memory(opt.to, len))) {
			j_skipped(kb, len, NULL, 0,
				  "%zu MiB do not fit: node %d or %d has %lld MiB free",
				  len / MIB, opt.from, opt.to, free / (long long)MIB);
			continue;
		}
		for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++)
			tput_one(kb, len, 0, rep);
	}
	tier_hogs_stop();
}

static void run_count(void)
{
	char why[256];
	int i, rep;

	need_root();
	need_nodes(opt.from, opt.to);
	pin_self();
	if (set_folio_size(2048, why, sizeof(why))) {
		j_skipped(2048, 0, NULL, 0, "%s", why);
		exit(EXIT_SKIP);
	}
	for (i = 0; i < opt.folios.n; i++) {
		long n = opt.folios.v[i];
		size_t len = n * PMD_SIZE;
		long long free;

		if ((free = short_of_memory(opt.from, len)) ||
		    (free = short_of_memory(opt.to, len))) {
			j_skipped(2048, len, "folios", n,
				  "%zu MiB do not fit: node %d or %d has %lld MiB free",
				  len / MIB, opt.from, opt.to, free / (long long)MIB);
			continue;
		}
		for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++)
			tput_one(2048, len, n, rep);
	}
}

/* --------------------------------------------------------------- latency */

/*
 * The reader times its reads of page 0. It keeps the NR_GAPS longest gaps
 * between consecutive reads since the move began, and the gaps during which
 * it took a page fault (a read that hit page 0's migration entry and waited
 * for the page to be mapped again at its destination): only gaps longer
 * than a few read periods are checked, with getrusage(RUSAGE_THREAD).
 * Afterwards the gaps overlapping the move are picked out (the reader
 * learns when the move ended only later).
 */
#define NR_GAPS 32
#define NR_FGAPS 8

struct gap {
	long long start, end;
};

struct reader {
	volatile uint64_t *word;	/* in page 0 of the buffer */
	int cpu;
	atomic_int stop, started, saw_end;
	atomic_llong t0, t_end;		/* ns; 0 until set */
	/* results, valid after join */
	struct gap gaps[NR_GAPS];	/* the longest */
	struct gap fgaps[NR_FGAPS];	/* with a fault, in time order */
	int nr_gaps, nr_fgaps;
	long long reads_during, warm_reads, warm_ns;
	uint64_t sink;
};

static long thread_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_minflt + ru.ru_majflt;
}

/* Keep the gap if it is among the NR_GAPS longest; returns the new floor. */
static long long reader_gap(struct reader *r, long long start, long long end)
{
	long long floor = LLONG_MAX;
	int i, min = 0;

	if (r->nr_gaps < NR_GAPS) {
		r->gaps[r->nr_gaps++] = (struct gap){ start, end };
		if (r->nr_gaps < NR_GAPS)
			return 0;
	} else {
		for (i = 1; i < NR_GAPS; i++)
			if (r->gaps[i].end - r->gaps[i].start <
			    r->gaps[min].end - r->gaps[min].start)
				min = i;
		r->gaps[min] = (struct gap){ start, end };
	}
	for (i = 0; i < NR_GAPS; i++)
		if (r->gaps[i].end - r->gaps[i].start < floor)
			floor = r->gaps[i].end - r->gaps[i].start;
	return floor;
}

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	long long prev, t, t0 = 0, te = 0, first, floor = 0, thresh = 0;
	long faults = 0, f;
	uint64_t sink = 0;

	if (r->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(r->cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	prev = first = now_ns();
	atomic_store(&r->started, 1);
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		sink += *r->word;
		t = now_ns();
		if (!t0) {
			t0 = atomic_load_explicit(&r->t0, memory_order_acquire);
			if (!t0) {
				r->warm_reads++;
				r->warm_ns = t - first;
				prev = t;
				continue;
			}
			/* gaps worth a fault check: 8 read periods, >= 1 us */
			thresh = r->warm_reads ? 8 * r->warm_ns / r->warm_reads : 0;
			if (thresh < 1000)
				thresh = 1000;
			faults = thread_faults();
		}
		if (!te)
			te = atomic_load_explicit(&r->t_end, memory_order_acquire);
		if (t > t0) {
			if (!te || prev < te)
				r->reads_during++;
			if (t - prev > floor)
				floor = reader_gap(r, prev, t);
			if (t - prev > thresh && (f = thread_faults()) != faults) {
				if (r->nr_fgaps < NR_FGAPS)
					r->fgaps[r->nr_fgaps++] = (struct gap){ prev, t };
				faults = f;
			}
		}
		if (te && t > te)
			atomic_store(&r->saw_end, 1);
		/* the fault check is not part of the next gap */
		prev = t - prev > thresh && t0 ? now_ns() : t;
	}
	r->sink = sink;
	return NULL;
}

static bool overlaps(const struct gap *g, long long t0, long long te)
{
	return g->end > t0 && g->start < te;
}

/* The longest recorded gap overlapping [t0, te], or NULL. */
static const struct gap *longest_gap(const struct reader *r, long long t0,
				     long long te)
{
	const struct gap *best = NULL;
	int i;

	for (i = 0; i < r->nr_gaps; i++) {
		const struct gap *g = &r->gaps[i];

		if (!overlaps(g, t0, te))
			continue;
		if (!best || g->end - g->start > best->end - best->start)
			best = g;
	}
	return best;
}

/* The last gap with a fault overlapping [t0, te], or NULL; counts them. */
static const struct gap *fault_gap(const struct reader *r, long long t0,
				   long long te, int *n)
{
	const struct gap *last = NULL;
	int i;

	*n = 0;
	for (i = 0; i < r->nr_fgaps; i++)
		if (overlaps(&r->fgaps[i], t0, te)) {
			last = &r->fgaps[i];
			(*n)++;
		}
	return last;
}

static void latency_start(void *arg)
{
	struct reader *r = arg;

	atomic_store_explicit(&r->t0, now_ns(), memory_order_release);
}

/* CPUs for the mover and the reader: different ones if possible. */
static void pick_cpus(int *main_cpu, int *reader_cpu)
{
	cpu_set_t set;
	int c;

	*main_cpu = opt.cpu;
	*reader_cpu = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	if (*main_cpu < 0)
		for (c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set)) {
				*main_cpu = c;
				break;
			}
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set) && c != *main_cpu) {
			*reader_cpu = c;
			break;
		}
}

static void latency_one(long kb, size_t len, long folios, int rep,
			int main_cpu, int reader_cpu)
{
	uint64_t seed = (uint64_t)opt.mode << 40 | (uint64_t)len << 8 | rep;
	struct reader rd = { .cpu = reader_cpu };
	const struct gap *g, *fg;
	struct move_result r;
	int nfg;
	struct snap a, b;
	struct mover m;
	struct json j;
	pthread_t tid;
	double placed, share;
	long long t0, waited;
	size_t bad;
	uint8_t *buf;

	buf = fresh_buffer(len, kb, opt.from, seed, &m, &placed);
	if (!buf) {
		j_skipped(kb, len, NULL, 0, "mmap failed: %s", strerror(errno));
		failures++;
		return;
	}
	share = folio_share(buf, len, kb);
	rd.word = (volatile uint64_t *)buf;
	if (pthread_create(&tid, NULL, reader_fn, &rd))
		fatal(EXIT_USAGE, "pthread_create failed");
	/* let the reader settle: some reads, at least 5 ms */
	t0 = now_ns();
	while (!atomic_load(&rd.started) || now_ns() - t0 < 5000000)
		usleep(1000);
	snap_take(&a);
	move_timed(&m, opt.to, &r, latency_start, &rd);
	atomic_store_explicit(&rd.t_end, atomic_load(&rd.t0) + r.ns,
			      memory_order_release);
	/* wait for a read that completes after the move, at most 2 s */
	waited = now_ns();
	while (!atomic_load(&rd.saw_end) && now_ns() - waited < 2000000000LL)
		sched_yield();
	atomic_store(&rd.stop, 1);
	pthread_join(tid, NULL);
	snap_take(&b);
	bad = verify(buf, 0, len, seed, "latency");
	t0 = atomic_load(&rd.t0);
	g = longest_gap(&rd, t0, atomic_load(&rd.t_end));
	fg = fault_gap(&rd, t0, atomic_load(&rd.t_end), &nfg);

	j_begin(&j, kb, len, rep);
	j_int(&j, "pages", m.n);
	if (folios)
		j_int(&j, "folios", folios);
	j_int(&j, "from", opt.from);
	j_int(&j, "to", opt.to);
	j_num(&j, "move_us", r.ns / 1e3);
	/* page 0 usable: the end of its fault, else of the longest gap */
	if (fg || g) {
		const struct gap *u = fg ? fg : g;

		j_num(&j, "first_usable_us", (u->end - t0) / 1e3);
		j_str(&j, "usable_by", fg ? "fault" : "gap");
	} else {
		j_null(&j, "first_usable_us");
		j_null(&j, "usable_by");
	}
	if (fg)
		j_num(&j, "page0_stall_us", (fg->end - fg->start) / 1e3);
	else
		j_null(&j, "page0_stall_us");
	if (g)
		j_num(&j, "max_stall_us", (g->end - g->start) / 1e3);
	else
		j_null(&j, "max_stall_us");
	j_int(&j, "fault_gaps", nfg);
	j_int(&j, "reads_during", rd.reads_during);
	j_num(&j, "read_period_ns",
	      rd.warm_reads ? (double)rd.warm_ns / rd.warm_reads : NAN);
	j_bool(&j, "reader_saw_end", atomic_load(&rd.saw_end));
	j_int(&j, "main_cpu", main_cpu);
	j_int(&j, "reader_cpu", reader_cpu);
	j_bool(&j, "pinned", reader_cpu >= 0 && main_cpu >= 0);
	j_num(&j, "folio_share", share);
	j_num(&j, "placed_share", placed);
	j_move(&j, &r);
	j_int(&j, "bad_bytes", bad);
	j_bool(&j, "verified", !bad && r.ret >= 0);
	j_vm(&j, &a, &b, VM_SUCCESS);
	j_vm(&j, &a, &b, VM_COPIED);
	j_vm(&j, &a, &b, VM_FALLBACK);
	j_str(&j, "kernel", kernel_rel);
	j_end(&j);
	if (bad || r.ret < 0)
		failures++;
	mover_free(&m);
	munmap(buf, len);
}

/*
 * Latency runs for each count in @counts of @unit-byte pieces (4K pages or
 * 2M folios, per @kb); a count that does not fit on both nodes is skipped.
 */
static void latency_sizes(long kb, const struct list *counts, size_t unit,
			  const char *what, int main_cpu, int reader_cpu)
{
	char why[256];
	int i, rep;

	if (counts->n && set_folio_size(kb, why, sizeof(why))) {
		j_skipped(kb, 0, NULL, 0, "%s", why);
		return;
	}
	for (i = 0; i < counts->n; i++) {
		size_t len = counts->v[i] * unit;
		long long free;

		if ((free = short_of_memory(opt.from, len)) ||
		    (free = short_of_memory(opt.to, len))) {
			j_skipped(kb, len, what, counts->v[i],
				  "%zu MiB do not fit: %lld MiB free", len / MIB,
				  free / (long long)MIB);
			continue;
		}
		/* Only the 2M runs record how many folios they moved. */
		for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++)
			latency_one(kb, len, kb == 4 ? 0 : counts->v[i], rep,
				    main_cpu, reader_cpu);
	}
}

static void run_latency(void)
{
	int main_cpu, reader_cpu;
	cpu_set_t set;

	need_root();
	need_nodes(opt.from, opt.to);
	pick_cpus(&main_cpu, &reader_cpu);
	if (main_cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(main_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			fatal(EXIT_USAGE, "cannot run on CPU %d: %s", main_cpu,
			      strerror(errno));
	}
	if (reader_cpu < 0)
		note("latency: one CPU only: the reader shares it with the mover");

	latency_sizes(4, &opt.pages, page_size, "pages", main_cpu, reader_cpu);
	latency_sizes(2048, &opt.folios, PMD_SIZE, "folios", main_cpu,
		      reader_cpu);
}

/* ---------------------------------------------------------------- memcpy */

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
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long)) + 1] = { 0 };

	if (!node_has_memory(node))
		return;
	mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
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

static void run_memcpy(void)
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

/* ----------------------------------------------------------------- alias */

/* One 8-byte load and store per word: no library call, no vector code. */
static void copy_words(uint64_t *d, const uint64_t *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		__asm__ volatile("" ::: "memory");
		d[i] = s[i];
	}
}

/* One CPU's part of the two-CPU alias copy: bytes [from, to) of every 2M. */
struct alias_part {
	pthread_t tid;
	pthread_barrier_t *go;
	uint8_t *dst;
	const uint8_t *src;
	size_t len, from, to;
	int cpu;
	long long start_ns, end_ns;
};

static void *alias_part_fn(void *arg)
{
	struct alias_part *p = arg;
	size_t off;

	run_on_cpu(p->cpu, "alias");
	pthread_barrier_wait(p->go);
	p->start_ns = now_ns();
	for (off = 0; off < p->len; off += PMD_SIZE)
		copy_words((uint64_t *)(p->dst + off + p->from),
			   (const uint64_t *)(p->src + off + p->from),
			   (p->to - p->from) / sizeof(uint64_t));
	p->end_ns = now_ns();
	return NULL;
}

/*
 * The copy of run_alias() by CPUs @cpu[0] and @cpu[1] at once, the first
 * half of every 2M period by one, the second by the other: two copiers of
 * one 2M folio each with a part of it, as mtcopy's threads and dcbm's
 * channels (and the split of "auto") are, though they cut it otherwise.
 * From the first start to the last end; each CPU's own time in @part_ns.
 */
static long long alias_two(uint8_t *dst, const uint8_t *src, size_t len,
			   const int cpu[2], long long part_ns[2])
{
	struct alias_part part[2];
	pthread_barrier_t go;
	int i;

	if (pthread_barrier_init(&go, NULL, 2))
		fatal(EXIT_USAGE, "alias: pthread_barrier_init failed");
	for (i = 0; i < 2; i++) {
		part[i].go = &go;
		part[i].dst = dst;
		part[i].src = src;
		part[i].len = len;
		part[i].cpu = cpu[i];
		part[i].from = i * PMD_SIZE / 2;
		part[i].to = (i + 1) * PMD_SIZE / 2;
		if (pthread_create(&part[i].tid, NULL, alias_part_fn, &part[i]))
			fatal(EXIT_USAGE, "alias: pthread_create failed");
	}
	for (i = 0; i < 2; i++)
		pthread_join(part[i].tid, NULL);
	pthread_barrier_destroy(&go);
	for (i = 0; i < 2; i++)
		part_ns[i] = part[i].end_ns - part[i].start_ns;
	return (part[0].end_ns > part[1].end_ns ? part[0].end_ns : part[1].end_ns) -
	       (part[0].start_ns < part[1].start_ns ? part[0].start_ns : part[1].start_ns);
}

/*
 * Copy --size MiB word by word twice: into a destination a multiple of 2M
 * away from the source (every source page and its destination page sit at
 * the same offset of a 2M period, as a 2M folio and its copy do), and into
 * one shifted by 37 pages more. On hardware the two take about the same
 * time. QEMU's TCG translates addresses through a direct-mapped software
 * TLB of at most a few thousand entries, resized as it runs: when it has
 * 512 entries or fewer, the first layout makes every load evict the
 * store's entry and the reverse. Migration copies 2M folios in exactly
 * that layout, so this ratio says how much of a 2M throughput figure
 * measured here is the emulator. The one-CPU copies run on the first CPU
 * the task may use; then each layout is copied by the first two at once,
 * half of every 2M period each (records with "threads":2): on hardware
 * about twice as fast as one; under TCG each vCPU's TLB has its own size,
 * and either half may alias. The layouts alternate which goes first.
 */
static void run_alias(void)
{
	size_t len = opt.size_mb * MIB, shift = 37 * page_size;
	uint8_t *src = map_aligned(len), *dst = map_aligned(len + shift);
	int rep, i, threads, cpus[2], ncpu;
	const char *two_why = NULL;

	if (!src || !dst)
		fatal(EXIT_USAGE, "alias: cannot map 2 x %ld MiB: %s", opt.size_mb,
		      strerror(errno));
	/* 4K pages on both sides: the same TLB entries whatever THP does */
	madvise(src, len, MADV_NOHUGEPAGE);
	madvise(dst, len + shift, MADV_NOHUGEPAGE);
	fill(src, 0, len, 7);
	pin_self();	/* --cpu: that CPU alone, no two-CPU copies */
	ncpu = allowed_cpus(cpus, 2);
	if (ncpu < 2)
		two_why = "one CPU to run on: no two-CPU copy";
	else if (len % PMD_SIZE)
		two_why = "--size not a multiple of 2 MiB: no two-CPU copy";
	if (!ncpu)
		fatal(EXIT_USAGE, "alias: no CPU to run on");
	run_on_cpu(cpus[0], "alias");
	if (two_why)
		j_skipped(0, len, "threads", 2, "%s", two_why);
	for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++) {
		for (threads = 1; threads <= 2; threads++) {
			if (threads == 2 && two_why)
				break;
			for (i = 0; i < 2; i++) {
				/* rep by rep, the other layout first */
				int k = (i + rep) % 2;
				size_t off = k ? shift : 0;
				long long t0, ns, part_ns[2] = { 0, 0 };
				char both[32];
				struct json j;
				size_t bad;

				/* a stale copy from the last run would pass */
				memset(dst, 0, len + shift);
				if (threads == 1) {
					t0 = now_ns();
					copy_words((uint64_t *)(dst + off),
						   (const uint64_t *)src,
						   len / sizeof(uint64_t));
					ns = now_ns() - t0;
				} else {
					ns = alias_two(dst + off, src, len, cpus, part_ns);
				}
				bad = verify(dst + off, 0, len, 7, "alias");
				j_begin(&j, 0, len, rep);
				j_str(&j, "layout", k ? "shifted" : "2m_apart");
				j_int(&j, "offset_pages", off / page_size);
				j_int(&j, "threads", threads);
				if (threads == 1) {
					j_int(&j, "cpu", cpus[0]);
				} else {
					snprintf(both, sizeof(both), "%d,%d", cpus[0], cpus[1]);
					j_str(&j, "cpus", both);
				}
				j_num(&j, "seconds", ns / 1e9);
				j_num(&j, "ns_per_word", ns / (double)(len / sizeof(uint64_t)));
				if (threads == 2) {
					j_num(&j, "first_seconds", part_ns[0] / 1e9);
					j_num(&j, "second_seconds", part_ns[1] / 1e9);
				}
				j_end_verified(&j, bad);
			}
		}
	}
	munmap(src, len);
	munmap(dst, len + shift);
}

/* ------------------------------------------------------------ compaction */

/* Free 2M-or-larger blocks of @node from /proc/buddyinfo, in 2M units. */
static long free_2m_blocks(int node)
{
	char line[512], zone[32];
	long total = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");
	int n, order, used;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p;

		if (sscanf(line, "Node %d, zone %31s%n", &n, zone, &used) != 2 || n != node)
			continue;
		p = line + used;
		for (order = 0;; order++) {
			char *end;
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (order >= 9)
				total += c << (order - 9);
			p = end;
		}
	}
	fclose(f);
	return total;
}

/*
 * Is page @i one the compaction run frees?  The page of each aligned pair
 * whose frame number (or index) has odd bit parity.  Plain odd frames
 * would alias with the compaction free scanner's power-of-two stride:
 * after a few full pageblocks it samples even frames only, finds nothing
 * free and ends compaction early (about every other run here did).
 */
static bool frag_drop(bool by_pfn, const uint64_t *pm, size_t i)
{
	if (!by_pfn)
		return __builtin_parityll(i);
	return PM_PRESENT(pm[i]) && __builtin_parityll(PM_PFN(pm[i]));
}

/* The first CPU of @node, or -1. */
static int node_first_cpu(int node)
{
	char path[128], buf[256];
	int c;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/cpulist", node);
	if (read_file(path, buf, sizeof(buf)) || sscanf(buf, "%d", &c) != 1)
		return -1;
	return c;
}

static pid_t start_hog(int cpu, struct hog_shared *sh)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		fatal(EXIT_USAGE, "fork: %s", strerror(errno));
	if (!pid) {
		cpu_set_t set;
		unsigned int i;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)	/* the parent died before prctl() */
			_exit(0);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
		for (;;) {
			for (i = 0; i < 4096; i++)
				__asm__ volatile("" ::: "memory");
			__atomic_add_fetch(&sh->iters, 4096, __ATOMIC_RELAXED);
		}
	}
	return pid;
}

static void run_compaction_one(int rep, int cpu)
{
	char nr_path[160], buf[64];
	long long memfree, fill_bytes, hog0 = 0, hog1 = 0, hog_base = 0;
	long long t_base = 0, t0, t1 = 0, th0, th1;
	char compact_path[160];
	int cret = 0;
	long orig_huge, got = -1, target, free2m_before, free2m_after_frag;
	size_t len, n, i, bad = 0, freed = 0;
	uint64_t seed = 0xc0ffee00 + rep;
	uint64_t *pm = NULL;
	struct hog_shared *sh = NULL;
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long)) + 1] = { 0 };
	struct snap a, b;
	struct json j;
	bool by_pfn;
	uint8_t *buf8;
	int ret = 0;

	snprintf(nr_path, sizeof(nr_path),
		 NODE_DIR "/node%d/hugepages/hugepages-2048kB/nr_hugepages", opt.node);
	if (read_file(nr_path, buf, sizeof(buf)) || sscanf(buf, "%ld", &orig_huge) != 1) {
		j_skipped(4, 0, NULL, 0, "no %s (no hugetlb 2M pages)", nr_path);
		exit(EXIT_SKIP);
	}
	snprintf(compact_path, sizeof(compact_path), NODE_DIR "/node%d/compact", opt.node);
	if (opt.trigger == TRIG_COMPACT && !exists(compact_path)) {
		j_skipped(4, 0, NULL, 0, "no %s (CONFIG_COMPACTION off?)", compact_path);
		exit(EXIT_SKIP);
	}
	memfree = node_memfree(opt.node);
	if (memfree <= 0) {
		j_skipped(4, 0, NULL, 0, "MemFree of node %d unknown", opt.node);
		exit(EXIT_SKIP);
	}
	fill_bytes = memfree / 100 * opt.fill_pct;
	len = fill_bytes / PMD_SIZE * PMD_SIZE;
	if (len < 4 * PMD_SIZE) {
		j_skipped(4, len, NULL, 0, "node %d has too little free memory (%lld MiB)",
			  opt.node, memfree / (long long)MIB);
		exit(EXIT_SKIP);
	}
	n = len / page_size;

	/* 4K pages bound to the node, no THP */
	buf8 = map_aligned(len);
	if (!buf8)
		fatal(EXIT_USAGE, "compaction: mmap of %zu MiB: %s", len / MIB,
		      strerror(errno));
	madvise(buf8, len, MADV_NOHUGEPAGE);
	madvise(buf8, len, MADV_DONTFORK);	/* the hog does not need it */
	mask[opt.node / (8 * sizeof(unsigned long))] |=
		1UL << (opt.node % (8 * sizeof(unsigned long)));
	if (mbind(buf8, len, MPOL_BIND, mask, MAX_NODES, 0))
		fatal(EXIT_USAGE, "compaction: mbind to node %d: %s", opt.node,
		      strerror(errno));
	/*
	 * Keep the per-CPU free lists short (restored at exit): pages freed
	 * below park there first (by default up to the zone's low watermark
	 * per CPU), where they neither count as free nor are seen by the
	 * compaction free scanner; the fragmentation should be what we made.
	 */
	set_setting("/proc/sys/vm/percpu_pagelist_high_fraction", "100000");
	fill(buf8, 0, len, seed);

	/*
	 * Free one page of every aligned pair of frames, so that no free
	 * buddy above order 0 (let alone 2M) is left: by physical frame
	 * number where pagemap shows it, else by address.
	 */
	pm = read_pagemap(buf8, len);
	by_pfn = pm && PM_PFN(pm[0]);
	for (i = 0; i < n; i++) {
		size_t k = i;

		if (!frag_drop(by_pfn, pm, i))
			continue;
		/* coalesce a run of pages to drop */
		while (k + 1 < n && by_pfn && frag_drop(by_pfn, pm, k + 1))
			k++;
		madvise(buf8 + i * page_size, (k - i + 1) * page_size, MADV_DONTNEED);
		freed += k - i + 1;
		i = k;
	}
	free2m_after_frag = free_2m_blocks(opt.node);
	target = opt.huge >= 0 ? opt.huge
			       : (free2m_after_frag > 0 ? free2m_after_frag : 0) +
				 (long)(freed * page_size / PMD_SIZE);
	free2m_before = free2m_after_frag;

	if (opt.hog) {
		sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (sh == MAP_FAILED)
			fatal(EXIT_USAGE, "mmap: %s", strerror(errno));
		sh->iters = 0;
		hog_pid = start_hog(cpu, sh);
		usleep(100000);
		hog_base = hog_count(sh);
		t_base = now_ns();
		usleep(500000);
		hog_base = hog_count(sh) - hog_base;
		t_base = now_ns() - t_base;
	}

	/*
	 * The measured step (wall time, counters, CPU time, hog): the hugepage
	 * request (the allocator compacts), or a full compaction of the node,
	 * after which the request only counts what compaction made.
	 */
	snap_take(&a);
	if (sh)
		hog0 = hog_count(sh);
	t0 = now_ns();
	if (opt.trigger == TRIG_COMPACT) {
		cret = write_file(compact_path, "1");
		t1 = th0 = th1 = now_ns();
		if (sh)
			hog1 = hog_count(sh);
		snap_take(&b);
		/*
		 * Count what compaction made instead of allocating hugetlb
		 * pages: the allocation is not what is measured, and those
		 * pages are unmovable, so taking them can leave their
		 * pageblocks marked unmovable for the next run.
		 */
		got = free_2m_blocks(opt.node);
	} else {
		snprintf(buf, sizeof(buf), "%ld", orig_huge + target);
		th0 = now_ns();
		ret = set_setting(nr_path, buf);
		t1 = th1 = now_ns();
		if (sh)
			hog1 = hog_count(sh);
		snap_take(&b);
		if (!read_file(nr_path, buf, sizeof(buf)) && sscanf(buf, "%ld", &got) == 1)
			got -= orig_huge;
	}
	if (hog_pid > 0) {
		kill(hog_pid, SIGKILL);
		waitpid(hog_pid, NULL, 0);
		hog_pid = 0;
	}

	/* give the pages back, then check what we kept */
	snprintf(buf, sizeof(buf), "%ld", orig_huge);
	write_file(nr_path, buf);
	for (i = 0; i < n; i++) {
		bool kept = (!by_pfn || PM_PRESENT(pm[i])) && !frag_drop(by_pfn, pm, i);

		if (kept)
			bad += verify(buf8 + i * page_size, i * page_size, page_size,
				      seed, bad ? NULL : "compaction");
	}

	{
		double wall = (t1 - t0) / 1e9;
		long long tot = 0;
		double sys = jiffies_s((b.st[ST_SYSTEM] - a.st[ST_SYSTEM]) +
				       (b.st[ST_IRQ] - a.st[ST_IRQ]) +
				       (b.st[ST_SOFTIRQ] - a.st[ST_SOFTIRQ]));
		double wsys = (b.ru.ru_stime.tv_sec - a.ru.ru_stime.tv_sec) +
			      (b.ru.ru_stime.tv_usec - a.ru.ru_stime.tv_usec) / 1e6;
		int k;

		for (k = 0; k < NR_ST; k++)
			tot += b.st[k] - a.st[k];
		j_begin(&j, 4, len, rep);
		j_int(&j, "node", opt.node);
		j_int(&j, "fill_pct", opt.fill_pct);
		j_bool(&j, "hog", opt.hog);
		j_int(&j, "cpu", cpu);
		j_str(&j, "fragment_by", by_pfn ? "pfn" : "vaddr");
		j_int(&j, "freed_bytes", (long long)freed * page_size);
		j_int(&j, "free_2m_before", free2m_before);
		j_int(&j, "huge_target", target);
		j_int(&j, "huge_obtained", got);
		if (ret)
			j_str(&j, "huge_write_error", strerror(-ret));
		j_str(&j, "trigger", opt.trigger == TRIG_COMPACT ? "compact" : "hugepages");
		if (cret)
			j_str(&j, "compact_write_error", strerror(-cret));
		j_num(&j, "wall_s", wall);
		j_num(&j, "huge_wall_s", (th1 - th0) / 1e9);
		for (k = 0; k < (int)NR_VM; k++)
			if (k != VM_THP_OK && k != VM_THP_FAIL && k != VM_THP_SPLIT)
				j_vm(&j, &a, &b, k);
		j_num(&j, "user_s", jiffies_s((b.st[ST_USER] - a.st[ST_USER]) +
					      (b.st[ST_NICE] - a.st[ST_NICE])));
		j_num(&j, "sys_s", sys);
		j_num(&j, "idle_s", jiffies_s((b.st[ST_IDLE] - a.st[ST_IDLE]) +
					      (b.st[ST_IOWAIT] - a.st[ST_IOWAIT])));
		j_num(&j, "sys_pct", tot > 0 ? 100.0 *
		      ((b.st[ST_SYSTEM] - a.st[ST_SYSTEM]) +
		       (b.st[ST_IRQ] - a.st[ST_IRQ]) +
		       (b.st[ST_SOFTIRQ] - a.st[ST_SOFTIRQ])) / tot : NAN);
		j_num(&j, "writer_sys_s", wsys);
		j_num(&j, "writer_sys_pct", wall > 0 ? 100.0 * wsys / wall : NAN);
		if (sh) {
			j_int(&j, "hog_iterations", hog1 - hog0);
			j_num(&j, "hog_per_s", wall > 0 ? (hog1 - hog0) / wall : NAN);
			j_num(&j, "hog_base_per_s",
			      t_base > 0 ? hog_base / (t_base / 1e9) : NAN);
		}
		j_end_verified(&j, bad);
	}
	if (sh)
		munmap(sh, sizeof(*sh));
	free(pm);
	munmap(buf8, len);
}

static void run_compaction(void)
{
	cpu_set_t set;
	int cpu, rep;

	need_root();
	if (!node_has_memory(opt.node)) {
		char have[128];

		memory_nodes(have, sizeof(have));
		j_skipped(4, 0, NULL, 0, "node %d has no memory; memory nodes here: %s",
			  opt.node, have);
		exit(EXIT_SKIP);
	}
	/* the writer (this process) and the hog share one CPU, of the node if any */
	cpu = opt.cpu >= 0 ? opt.cpu : node_first_cpu(opt.node);
	if (cpu < 0)
		cpu = 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fatal(EXIT_USAGE, "cannot run on CPU %d: %s", cpu, strerror(errno));
	for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++)
		run_compaction_one(rep, cpu);
}

/* --------------------------------------------------------------- tiering */

#define TIER_DIR "/sys/devices/virtual/memory_tiering"
#ifndef MPOL_F_NUMA_BALANCING
#define MPOL_F_NUMA_BALANCING (1 << 13)	/* 5.12 */
#endif
/* Is @node in a kernel node list such as "0-1,3"? */
static bool in_nodelist(const char *list, int node)
{
	const char *p = list;
	char *end;
	long lo, hi;

	while (*p) {
		lo = strtol(p, &end, 10);
		if (end == p)
			return false;
		hi = lo;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (node >= lo && node <= hi)
			return true;
		p = *end == ',' ? end + 1 : end;
		if (*p == '\n')
			break;
	}
	return false;
}

/* The memory tier (memory_tierX: X) of @node, -1 if it has none. */
static int tier_of(int node)
{
	char path[160], buf[256];
	int t;

	/* tiers are numbered by abstract distance / 128: at most a few hundred */
	for (t = 0; t < 4096; t++) {
		snprintf(path, sizeof(path), TIER_DIR "/memory_tier%d/nodelist", t);
		if (!read_file(path, buf, sizeof(buf)) && in_nodelist(buf, node))
			return t;
	}
	return -1;
}

/* The CPU time (user + system, s) of the task called @comm, -1 if none. */
static double task_cpu_s(const char *comm)
{
	static char cached[32];
	static int pid = -1;
	char path[64], buf[512], *p;
	unsigned long long ut, st;

	if (pid < 0 || strcmp(cached, comm)) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		pid = -1;
		snprintf(cached, sizeof(cached), "%s", comm);
		while (d && (e = readdir(d))) {
			int n = atoi(e->d_name);

			if (n <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/comm", n);
			if (read_file(path, buf, sizeof(buf)) ||
			    strncmp(buf, comm, strlen(comm)) ||
			    (buf[strlen(comm)] != '\n' && buf[strlen(comm)]))
				continue;
			/* a kernel thread: a child of kthreadd (pid 2) */
			snprintf(path, sizeof(path), "/proc/%d/stat", n);
			p = read_file(path, buf, sizeof(buf)) ? NULL : strrchr(buf, ')');
			if (p && atoi(p + 4) == 2) {
				pid = n;
				break;
			}
		}
		if (d)
			closedir(d);
		if (pid < 0)
			return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	/* fields after "(comm)": state is field 3, utime 14, stime 15 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return jiffies_s(ut + st);
}


static const char *const tier_keys[] = {
	"pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged",
	"pgpromote_success", "pgpromote_candidate", "numa_hint_faults",
	"numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail",
	"pgmigrate_batch_copied", "pgmigrate_batch_fallback",
};
#define NR_TIER_KEYS (sizeof(tier_keys) / sizeof(tier_keys[0]))
enum { TK_DEM_KSWAPD, TK_DEM_DIRECT, TK_DEM_KHUGE, TK_PROMOTED, TK_CANDIDATES,
       TK_HINT, TK_NUMA_MIGRATED, TK_MIG_OK, TK_MIG_FAIL, TK_COPIED,
       TK_FALLBACK };

struct tier_snap {
	long long v[NR_TIER_KEYS];
	bool have[NR_TIER_KEYS];
	long long st[NR_ST];	/* /proc/stat "cpu": the whole machine */
	long long hog;		/* the hogs' iterations */
	double kswapd_s;
	struct rusage ru;
	long long t;
};

static void tier_snap_take(struct tier_snap *s, const char *kswapd)
{
	char line[256], name[128];
	long long val;
	FILE *f;
	size_t i;

	/* the node counters' per-CPU parts folded in: exact at this moment */
	write_file("/proc/sys/vm/stat_refresh", "1");
	f = fopen("/proc/vmstat", "r");

	memset(s, 0, sizeof(*s));
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lld", name, &val) != 2)
			continue;
		for (i = 0; i < NR_TIER_KEYS; i++)
			if (!strcmp(name, tier_keys[i])) {
				s->v[i] = val;
				s->have[i] = true;
			}
	}
	if (f)
		fclose(f);
	f = fopen("/proc/stat", "r");
	if (f) {
		if (fgets(line, sizeof(line), f))
			sscanf(line, "cpu %lld %lld %lld %lld %lld %lld %lld %lld",
			       &s->st[0], &s->st[1], &s->st[2], &s->st[3],
			       &s->st[4], &s->st[5], &s->st[6], &s->st[7]);
		fclose(f);
	}
	s->hog = tier_hog_sh ? hog_count(tier_hog_sh) : 0;
	s->kswapd_s = task_cpu_s(kswapd);
	getrusage(RUSAGE_SELF, &s->ru);
	s->t = now_ns();
}

static long long tk(const struct tier_snap *a, const struct tier_snap *b, int k)
{
	return a->have[k] && b->have[k] ? b->v[k] - a->v[k] : 0;
}

static double tv_s(struct timeval t)
{
	return t.tv_sec + t.tv_usec / 1e6;
}

/*
 * The working set and its hot window: page i holds the pattern of seed
 * tier_seed(gen[i]); a touch checks every byte of the page against it, then
 * rewrites the page with the next generation.
 */
struct tier_ws {
	uint8_t *buf;
	size_t n;		/* pages */
	uint32_t *gen;
	size_t hot, step;	/* pages in the hot window, and its shift per pass */
	size_t start;		/* first page of the hot window */
	unsigned long long touched, passes;
	size_t bad;
	void **query_pages;	/* the pages, for move_pages() queries */
	int *query;
};

/*
 * Differences between seeds are (page, generation) differences, so no page
 * can verify as another or as an older copy of itself; the nonce, new in
 * every run, keeps a frame a previous run left from verifying.
 */
static uint64_t tier_nonce;

static uint64_t tier_seed(size_t page, uint32_t gen)
{
	return tier_nonce + ((uint64_t)gen << 32) + page;
}

static void tier_touch(struct tier_ws *w, size_t i)
{
	uint8_t *p = w->buf + i * page_size;

	w->bad += verify(p, i * page_size, page_size, tier_seed(i, w->gen[i]),
			 w->bad ? NULL : "tiering");
	w->gen[i]++;
	fill(p, i * page_size, page_size, tier_seed(i, w->gen[i]));
	w->touched++;
}

/*
 * Touch the hot window until @until_ns, shifting it by w->step pages after
 * each pass over it (the work done decides how fast data turns hot); every
 * second (and at the end) add the share of the window on @fast to *@on_fast.
 */
static void tier_run(struct tier_ws *w, long long until_ns, int fast,
		     double *on_fast, int *samples)
{
	long long next_sample = now_ns() + 1000000000LL;
	size_t k;

	for (;;) {
		for (k = 0; k < w->hot; k++) {
			tier_touch(w, (w->start + k) % w->n);
			if ((k & 63) == 63 || k + 1 == w->hot) {
				long long t = now_ns();

				if (on_fast && t >= next_sample) {
					/* at most 4096 pages spread over the window */
					size_t i, on = 0, m = 0, stride = w->hot / 4096 + 1;
					size_t nq = (w->hot + stride - 1) / stride;

					for (i = 0; i < nq; i++)
						w->query_pages[i] = w->buf + ((w->start + i * stride) % w->n) * page_size;
					if (!move_pages(0, nq, w->query_pages, NULL, w->query, 0)) {
						for (i = 0; i < nq; i++) {
							on += w->query[i] == fast;
							m += w->query[i] >= 0;
						}
						if (m) {
							*on_fast += 100.0 * on / m;
							(*samples)++;
						}
					}
					next_sample = t + 1000000000LL;
				}
				if (t >= until_ns)
					return;
			}
		}
		w->start = (w->start + w->step) % w->n;
		w->passes++;
	}
}

/* Pages of the working set per node: @fast, @slow tier, other, absent. */
static void tier_where(struct tier_ws *w, int fast, int fast_tier, size_t out[4])
{
	int tiers[MAX_NODES];
	size_t i, done;

	memset(out, 0, 4 * sizeof(*out));
	for (i = 0; i < MAX_NODES; i++)
		tiers[i] = -2;
	for (done = 0; done < w->n; done += w->hot) {
		size_t cnt = w->n - done < w->hot ? w->n - done : w->hot;

		for (i = 0; i < cnt; i++)
			w->query_pages[i] = w->buf + (done + i) * page_size;
		if (move_pages(0, cnt, w->query_pages, NULL, w->query, 0)) {
			out[3] += cnt;
			continue;
		}
		for (i = 0; i < cnt; i++) {
			int nd = w->query[i];

			if (nd < 0 || nd >= MAX_NODES) {
				out[3]++;
				continue;
			}
			if (tiers[nd] == -2)
				tiers[nd] = tier_of(nd);
			if (nd == fast)
				out[0]++;
			else if (tiers[nd] > fast_tier)
				out[1]++;
			else
				out[2]++;
		}
	}
}

/* A busy loop pinned to every CPU of @cpus. */
static void tier_hogs_start(const cpu_set_t *cpus)
{
	struct hog_shared *sh;
	int cpu;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		fatal(EXIT_USAGE, "mmap: %s", strerror(errno));
	tier_hog_sh = sh;
	for (cpu = 0; cpu < CPU_SETSIZE && nr_tier_hogs < MAX_HOGS; cpu++)
		if (CPU_ISSET(cpu, cpus))
			tier_hogs[nr_tier_hogs++] = start_hog(cpu, sh);
}

static void tier_hogs_stop(void)
{
	while (nr_tier_hogs > 0) {
		pid_t p = tier_hogs[--nr_tier_hogs];

		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
}

static void run_tiering_one(int rep)
{
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long)) + 1] = { 0 };
	int fast = opt.from, fast_tier, slow = -1, n, cpu;
	long kb = opt.folio_kb.v[0];
	long long free_fast, free_slow = 0, ballast = 0;
	char path[160], val[64], kswapd[32], why[256];
	struct tier_snap a, b;
	struct tier_ws w = { 0 };
	struct json j;
	size_t len, where[4], start[4];
	double on_fast = 0, secs;
	int samples = 0, policy_ok;
	const char *policy = "bind+numa_balancing";
	cpu_set_t set, allowed;
	int hogs;
	size_t i;

	/* no balancing while the working set is placed */
	set_setting("/proc/sys/kernel/numa_balancing", "0");
	if (!node_has_memory(fast)) {
		j_skipped(kb, 0, NULL, 0, "node %d has no memory", fast);
		exit(EXIT_SKIP);
	}
	fast_tier = tier_of(fast);
	for (n = 0; n < MAX_NODES && fast_tier >= 0; n++) {
		int t = n == fast || !node_has_memory(n) ? -1 : tier_of(n);

		if (t > fast_tier) {
			free_slow += node_memfree(n);
			if (slow < 0)
				slow = n;
		}
	}
	if (fast_tier < 0 || slow < 0) {
		j_skipped(kb, 0, NULL, 0, "no memory tier below node %d's (%s: node %d in %s)",
			  fast, TIER_DIR, fast, fast_tier < 0 ? "none" : "the lowest");
		exit(EXIT_SKIP);
	}
	if (set_setting("/sys/kernel/mm/numa/demotion_enabled", "1") ||
	    !exists("/proc/sys/kernel/numa_balancing")) {
		j_skipped(kb, 0, NULL, 0, "demotion or NUMA balancing not available (CONFIG_NUMA_BALANCING, /sys/kernel/mm/numa/demotion_enabled)");
		exit(EXIT_SKIP);
	}
	if (set_folio_size(kb, why, sizeof(why))) {
		j_skipped(kb, 0, NULL, 0, "%s", why);
		return;
	}

	/*
	 * The fast node made small: hugetlb pages hold all but --leave MiB,
	 * adjusted both ways until what is free stays within 16 MiB of it.
	 * With --squeeze, first a request for the whole node, given back at
	 * once: its reclaim demotes what else can leave the node (the guest's
	 * tmpfs files), which would otherwise make room later, under the
	 * measurement. A node with a hugetlb pool of its own is left alone.
	 */
	free_fast = node_memfree(fast);
	if (opt.leave_mb > 0 && free_fast > (long long)(opt.leave_mb * MIB)) {
		long long leave = opt.leave_mb * MIB, have = 0;

		snprintf(path, sizeof(path), NODE_DIR "/node%d/hugepages/hugepages-2048kB/nr_hugepages",
			 fast);
		if (read_setting(path, val, sizeof(val)) || atoll(val) != 0) {
			j_skipped(kb, 0, NULL, 0, "node %d has a hugetlb pool of its own (%s: %s); --leave needs it empty",
				  fast, path, val);
			restore_settings();
			return;
		}
		if (opt.squeeze) {
			snprintf(val, sizeof(val), "%lld", node_memtotal(fast) / PMD_SIZE);
			if (set_setting(path, val))
				fatal(EXIT_USAGE, "cannot write %s", path);
			write_file(path, "0");
			usleep(500000);
		}
		for (i = 0; i < 8; i++) {
			long long diff;

			free_fast = node_memfree(fast);
			diff = (free_fast - leave) / (long long)PMD_SIZE;
			if (diff > -8 && diff < 8)
				break;
			have = have + diff > 0 ? have + diff : 0;
			snprintf(val, sizeof(val), "%lld", have);
			if (set_setting(path, val))
				fatal(EXIT_USAGE, "cannot write %s", path);
			if (!read_setting(path, val, sizeof(val)))
				have = atoll(val);
			usleep(500000);
		}
		ballast = have * PMD_SIZE;
		free_fast = node_memfree(fast);
		/* the pressure every run is compared at: within 1/8 of --leave */
		if (free_fast < leave / 8 * 7 || free_fast > leave / 8 * 9) {
			j_skipped(kb, 0, NULL, 0, "cannot leave %ld MiB free on node %d (%lld MiB free with %lld MiB of hugetlb pages)",
				  opt.leave_mb, fast, free_fast / (long long)MIB, ballast / (long long)MIB);
			restore_settings();
			return;
		}
	}
	/* sized from --leave, not from what is free: the same in every run */
	len = opt.size_set ? (size_t)opt.size_mb * MIB :
	      opt.leave_mb > 0 ? (size_t)opt.leave_mb * MIB / 2 * 3 :
	      (size_t)(free_fast / 2 * 3);
	len &= ~(PMD_SIZE - 1);		/* whole 2M folios when --folio 2048 */
	if (!len)
		len = PMD_SIZE;
	/* every byte must fit somewhere without swap: no OOM kill mid-run */
	if ((long long)len > free_fast + free_slow * 3 / 4) {
		j_skipped(kb, len, NULL, 0, "a %zu MiB working set does not fit on node %d (%lld MiB free) and the lower tier (%lld MiB free)",
			  len / MIB, fast, free_fast / (long long)MIB, free_slow / (long long)MIB);
		return;
	}

	cpu = opt.cpu >= 0 ? opt.cpu : node_first_cpu(fast);
	if (cpu < 0)
		fatal(EXIT_USAGE, "node %d has no CPU: give --cpu", fast);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		fatal(EXIT_USAGE, "sched_getaffinity: %s", strerror(errno));
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fatal(EXIT_USAGE, "cannot run on CPU %d: %s", cpu, strerror(errno));
	snprintf(kswapd, sizeof(kswapd), "kswapd%d", fast);

	/*
	 * The hogs first: forked after the working set, they would share it
	 * copy-on-write, and every rewrite would then copy a page.
	 */
	if (opt.hog)
		tier_hogs_start(&allowed);
	hogs = nr_tier_hogs;
	tier_nonce = (uint64_t)now_ns() * MO_PATTERN_G ^ (uint64_t)getpid() << 40 ^ rep;
	w.buf = map_aligned(len);
	if (!w.buf)
		fatal(EXIT_USAGE, "mmap %zu MiB: %s", len / MIB, strerror(errno));
	madvise(w.buf, len, kb > 4 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	madvise(w.buf, len, MADV_DONTFORK);
	w.n = len / page_size;
	w.gen = xmalloc(w.n * sizeof(*w.gen));
	memset(w.gen, 0, w.n * sizeof(*w.gen));
	w.hot = w.n * opt.hot_pct / 100;
	if (w.hot < 64)
		w.hot = 64 < w.n ? 64 : w.n;
	w.step = w.hot / 8 ? w.hot / 8 : 1;
	w.query_pages = xmalloc(w.hot * sizeof(*w.query_pages));
	w.query = xmalloc(w.hot * sizeof(*w.query));
	/*
	 * Born on the fast node only (reclaim demotes what does not fit), and
	 * promoted back to it by NUMA balancing (MPOL_F_NUMA_BALANCING).
	 */
	mask[fast / (8 * sizeof(unsigned long))] |= 1UL << (fast % (8 * sizeof(unsigned long)));
	policy_ok = !mbind(w.buf, len, MPOL_BIND | MPOL_F_NUMA_BALANCING, mask, MAX_NODES + 1, 0);
	if (!policy_ok) {
		/* before 5.12: preferred, so that the balancer may still move it */
		policy = mbind(w.buf, len, MPOL_PREFERRED, mask, MAX_NODES + 1, 0) ?
			 "default" : "preferred";
	}
	for (i = 0; i < w.n; i++)
		fill(w.buf + i * page_size, i * page_size, page_size, tier_seed(i, 0));

	/* the balancer on, in tiering mode, with the caller's scan periods */
	set_setting("/proc/sys/kernel/numa_balancing", "2");
	if (opt.scan_ms > 0) {
		static const char *const nbd[] = { "scan_delay_ms", "scan_period_min_ms" };

		snprintf(val, sizeof(val), "%d", opt.scan_ms);
		for (i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "/sys/kernel/debug/sched/numa_balancing/%s", nbd[i]);
			if (set_setting(path, val))
				note("tiering: cannot set %s (debugfs mounted?)", path);
		}
		snprintf(path, sizeof(path), "/sys/kernel/debug/sched/numa_balancing/scan_period_max_ms");
		snprintf(val, sizeof(val), "%d", opt.scan_ms * 10);
		set_setting(path, val);
	}
	if (opt.hot_ms > 0) {
		snprintf(val, sizeof(val), "%d", opt.hot_ms);
		if (set_setting("/sys/kernel/debug/sched/numa_balancing/hot_threshold_ms", val))
			note("tiering: cannot set hot_threshold_ms (debugfs mounted?)");
	}
	tier_run(&w, now_ns() + (long long)(opt.warmup_s * 1e9), fast, NULL, NULL);
	tier_where(&w, fast, fast_tier, start);
	{
		unsigned long long touched0 = w.touched, passes0 = w.passes;

		trace_mark("mo_bench: tiering begin");
		tier_snap_take(&a, kswapd);
		tier_run(&w, a.t + (long long)(opt.seconds * 1e9), fast, &on_fast, &samples);
		tier_snap_take(&b, kswapd);
		trace_mark("mo_bench: tiering end");
		w.touched -= touched0;
		w.passes -= passes0;
	}
	tier_hogs_stop();
	if (tier_hog_sh) {
		munmap(tier_hog_sh, sizeof(*tier_hog_sh));
		tier_hog_sh = NULL;
	}
	set_setting("/proc/sys/kernel/numa_balancing", "0");
	tier_where(&w, fast, fast_tier, where);
	for (i = 0; i < w.n; i++)
		w.bad += verify(w.buf + i * page_size, i * page_size, page_size,
				tier_seed(i, w.gen[i]), w.bad ? NULL : "tiering (final check)");

	secs = (b.t - a.t) / 1e9;
	j_begin(&j, kb, len, rep);
	j_int(&j, "fast_node", fast);
	j_int(&j, "slow_node", slow);
	j_int(&j, "cpu", cpu);
	j_str(&j, "policy", policy);
	j_int(&j, "ballast_mb", ballast / MIB);
	j_int(&j, "fast_free_mb", free_fast / MIB);
	j_int(&j, "hot_pct", opt.hot_pct);
	j_int(&j, "hot_pages", w.hot);
	j_bool(&j, "hog", opt.hog);
	j_int(&j, "hogs", hogs);
	j_int(&j, "scan_ms", opt.scan_ms);
	j_num(&j, "warmup_s", opt.warmup_s);
	j_num(&j, "seconds", secs);
	j_int(&j, "passes", w.passes);
	j_int(&j, "touched_pages", w.touched);
	j_num(&j, "touch_per_s", secs > 0 ? w.touched / secs : NAN);
	j_int(&j, "demoted", tk(&a, &b, TK_DEM_KSWAPD) + tk(&a, &b, TK_DEM_DIRECT) +
	      tk(&a, &b, TK_DEM_KHUGE));
	for (i = 0; i < NR_TIER_KEYS; i++) {
		if (a.have[i] && b.have[i])
			j_int(&j, tier_keys[i], b.v[i] - a.v[i]);
		else
			j_null(&j, tier_keys[i]);
	}
	j_num(&j, "demote_per_s", secs > 0 ? (tk(&a, &b, TK_DEM_KSWAPD) + tk(&a, &b, TK_DEM_DIRECT) +
					      tk(&a, &b, TK_DEM_KHUGE)) / secs : NAN);
	j_num(&j, "promote_per_s", secs > 0 ? tk(&a, &b, TK_PROMOTED) / secs : NAN);
	if (a.kswapd_s >= 0 && b.kswapd_s >= 0)
		j_num(&j, "kswapd_cpu_s", b.kswapd_s - a.kswapd_s);
	else
		j_null(&j, "kswapd_cpu_s");
	j_num(&j, "app_user_s", tv_s(b.ru.ru_utime) - tv_s(a.ru.ru_utime));
	j_num(&j, "app_sys_s", tv_s(b.ru.ru_stime) - tv_s(a.ru.ru_stime));
	{
		/* the whole machine: kworkers and DMA threads included */
		long long busy = 0, tot = 0;
		int k;

		for (k = 0; k < NR_ST; k++) {
			tot += b.st[k] - a.st[k];
			if (k != ST_IDLE && k != ST_IOWAIT)
				busy += b.st[k] - a.st[k];
		}
		j_num(&j, "machine_busy_s", jiffies_s(busy));
		j_num(&j, "machine_sys_s", jiffies_s((b.st[ST_SYSTEM] - a.st[ST_SYSTEM]) +
						     (b.st[ST_IRQ] - a.st[ST_IRQ]) +
						     (b.st[ST_SOFTIRQ] - a.st[ST_SOFTIRQ])));
		j_num(&j, "machine_cpu_s", jiffies_s(tot));
	}
	if (opt.hog)
		j_num(&j, "hog_per_s", secs > 0 ? (b.hog - a.hog) / secs : NAN);
	{
		char rs[160];

		if (!read_setting(MO_DIR "/reasons", rs, sizeof(rs)))
			j_str(&j, "reasons", rs);
		else
			j_null(&j, "reasons");
	}
	if (samples)
		j_num(&j, "hot_on_fast_pct", on_fast / samples);
	else
		j_null(&j, "hot_on_fast_pct");
	j_int(&j, "start_fast_pages", start[0]);
	j_int(&j, "start_slow_pages", start[1]);
	j_int(&j, "end_fast_pages", where[0]);
	j_int(&j, "end_slow_pages", where[1]);
	j_int(&j, "end_other_pages", where[2]);
	j_int(&j, "end_absent_pages", where[3]);
	j_end_verified(&j, w.bad);

	munmap(w.buf, len);
	free(w.gen);
	free(w.query_pages);
	free(w.query);
	/* the ballast and the balancer back for the next repetition */
	restore_settings();
}

static void run_tiering(void)
{
	int rep;

	need_root();
	for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++)
		run_tiering_one(rep);
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f,
"usage: mo_bench MODE [options]\n"
"\n"
"Benchmarks for batched/offloaded page migration. Each measurement prints\n"
"one JSON object per line on stdout (keys: mode, config, engine, folio_kb,\n"
"size_bytes, rep, then the measured values). Needs root for all modes but\n"
"memcpy. Changes THP settings and nr_hugepages, and switches automatic NUMA\n"
"balancing off, while it runs; restores them at exit (also on SIGINT/TERM).\n"
"\n"
"Modes:\n"
"  tput        move_pages() of a buffer from --from to --to, per folio size\n"
"              (--folio), --reps times, each rep with a fresh buffer: gbps,\n"
"              folio_share (percent of pages in folios of the requested size),\n"
"              bad_bytes (every byte checked), pages not moved by status and\n"
"              whether they really stayed behind, vmstat deltas, sys_s (system\n"
"              + irq + softirq time of the whole machine), TLB shootdown IPIs\n"
"  count       like tput with 2M folios, for each folio count of --folios\n"
"  latency     a reader thread on another CPU keeps reading page 0 while the\n"
"              main thread moves --pages 4K pages, or --folios 2M folios, in\n"
"              one call. first_usable_us: from t0 (just before move_pages())\n"
"              to the end of the read gap in which the reader took a page\n"
"              fault (page 0 unmapped for migration: usable_by \"fault\",\n"
"              page0_stall_us its length), else to the end of the longest\n"
"              read gap overlapping the move (usable_by \"gap\");\n"
"              max_stall_us: that longest gap\n"
"  alias       copy --size MiB word by word into a destination 2M away from\n"
"              the source, then 37 pages further: equal times on hardware;\n"
"              under QEMU TCG the first can be ten times slower (its\n"
"              software TLB is direct-mapped), and 2M folio copies are laid\n"
"              out like it. JSON: layout, threads, seconds, ns_per_word.\n"
"              One CPU's copies run on the first allowed CPU (cpu); then\n"
"              each layout by the first two at once, half of every 2M\n"
"              period each (threads 2, cpus; first_seconds and\n"
"              second_seconds: each CPU's own time): about twice as fast\n"
"              as one on hardware; under TCG either half may alias\n"
"  memcpy      user-space memcpy() of --size MiB (source on --from, target on\n"
"              --to where those nodes exist): the ceiling for throughput;\n"
"              with --threads N, N threads copy a share each, thread i on\n"
"              the i-th online CPU (JSON: threads)\n"
"  compaction  on --node: fill --fill-pct of its free memory with 4K pages,\n"
"              free one page of every aligned pair of frames (the one\n"
"              with odd bit parity), then ask for 2M\n"
"              hugetlb pages there (nr_hugepages), which compacts; wall time,\n"
"              pages obtained, migration/compaction counters, CPU time.\n"
"              --trigger compact: compact the whole node instead (write 1\n"
"              to its compact file; wall_s times that) and count the free\n"
"              2M blocks it leaves (huge_obtained); takes no hugetlb pages\n"
"              and is not subject to the allocator's compaction deferral,\n"
"              so back-to-back runs do the same work.  Both keep the\n"
"              per-CPU free lists short (vm.percpu_pagelist_high_fraction)\n"
"              while they run: pages parked there are no compaction target\n"
"  tiering     a working set 1.5x the fast node's free memory (--from; or\n"
"              --size) bound to it with MPOL_F_NUMA_BALANCING, demotion on\n"
"              and NUMA balancing in tiering mode (2): what does not fit is\n"
"              demoted to the lower tier; a task on a CPU of the fast node\n"
"              checks and rewrites every page of a hot window (--hot-pct),\n"
"              which shifts by an eighth after each pass, so that hot pages\n"
"              are promoted and cold ones demoted all the time. Over\n"
"              --seconds after --warmup: touch_per_s (the task's progress),\n"
"              demote_per_s, promote_per_s, kswapd_cpu_s (the fast node's\n"
"              kswapd), app_user_s/app_sys_s, hot_on_fast_pct (share of the\n"
"              hot window on the fast node, sampled each second), vmstat\n"
"              deltas; every byte checked at every touch and at the end\n"
"\n"
"Options (defaults in brackets):\n"
"  --size MB        buffer size for tput and memcpy [256]\n"
"  --from NODE      node the buffer starts on [0]\n"
"  --to NODE        node it is moved to [1]\n"
"  --folio LIST     tput folio sizes in KB, each 4 or an mTHP size\n"
"                   (16..2048; chosen through hugepages-<KB>kB/enabled=always,\n"
"                   all others never; 4 = all never) [4,16,64,256,1024,2048]\n"
"  --folios LIST    count: numbers of 2M folios (buffer = N x 2 MiB)\n"
"                   [1,8,16,32,64,256,512]; latency: [1,4,16]\n"
"  --pages LIST     latency: 4K pages per move_pages() call [1,8,32,128,512]\n"
"  --reps N         repetitions of every measurement [5; compaction 1]\n"
"  --first-rep N    number the repetitions from N (their \"rep\" and data\n"
"                   seed), for callers that interleave single repetitions\n"
"                   of several configurations [0]\n"
"  --cpu N          run the mover (and the compaction writer) on CPU N\n"
"                   [not pinned; compaction: first CPU of --node, else 0;\n"
"                   latency: first allowed CPU, the reader on the next]\n"
"  --threads N      memcpy: threads sharing the copy, 1-64 [1]\n"
"  --node NODE      compaction: the node to fragment and compact [1]\n"
"  --fill-pct P     compaction: percent of the node's MemFree to fill [80]\n"
"  --huge N         compaction: 2M pages to ask for [the free 2M blocks the\n"
"                   node has after fragmenting + the freed memory, in 2M: the\n"
"                   most compaction can make]\n"
"  --trigger T      compaction: hugepages or compact (see above) [hugepages]\n"
"  --hog            compaction: a child process pinned to the writer's CPU\n"
"                   busy-loops; reports hog_iterations, hog_per_s and its\n"
"                   rate alone (hog_base_per_s)\n"
"  --seconds S      tiering: the measured window [20]\n"
"  --warmup S       tiering: work before the window, not measured [5]\n"
"  --hot-pct P      tiering: the hot window, percent of the working set [25]\n"
"  --leave MB       tiering: hugetlb pages take all but MB of the fast\n"
"                   node's free memory while it runs [none taken]\n"
"  --scan-ms N      tiering: NUMA balancing scan_delay_ms and\n"
"                   scan_period_min_ms = N, scan_period_max_ms = 10 N\n"
"                   (debugfs) [as found]\n"
"  --hot-ms N       tiering: NUMA balancing hot_threshold_ms [as found]\n"
"  --squeeze        tiering, with --leave: first ask for the whole node in\n"
"                   hugetlb pages and give them back, so that reclaim pushes\n"
"                   other demotable pages off it (a test VM only: on a\n"
"                   shared machine it reclaims every tenant's memory there)\n"
"  --hog            tiering, tput: a busy loop pinned to every CPU the run\n"
"                   may use (tput: records \"hog\":true and \"hogs\")\n"
"  --config NAME    label for the \"config\" key [the engine name]\n"
"  --json-out FILE  also append every JSON line to FILE\n"
"  -h, --help       this text\n"
"\n"
"engine is the bracketed name in " MO_DIR "/engine, or \"vanilla\" if that\n"
"directory does not exist. Lists are comma-separated. A measurement that\n"
"cannot be made (size unsupported, not enough memory on a node) prints a\n"
"line with \"skipped\": true and the reason.\n"
"\n"
"Exit status: 0 done, 1 a measurement failed (bad_bytes > 0 or a failed\n"
"move_pages()), 2 usage or setup error, 4 skipped (not root, nodes missing).\n");
}

static long parse_num(const char *opt_name, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		fatal(EXIT_USAGE, "%s: '%s' is not a number in %ld..%ld", opt_name, s,
		      min, max);
	return v;
}

static void parse_list(const char *opt_name, const char *s, struct list *l,
		       long min, long max)
{
	char tmp[512], *tok, *save;

	if (strlen(s) >= sizeof(tmp))
		fatal(EXIT_USAGE, "%s: list too long", opt_name);
	strcpy(tmp, s);
	l->n = 0;
	for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (l->n == MAX_LIST)
			fatal(EXIT_USAGE, "%s: more than %d values", opt_name, MAX_LIST);
		l->v[l->n++] = parse_num(opt_name, tok, min, max);
	}
	if (!l->n)
		fatal(EXIT_USAGE, "%s: empty list", opt_name);
}

static void read_engine(void)
{
	if (!exists(MO_DIR))
		snprintf(engine, sizeof(engine), "vanilla");
	else if (read_setting(MO_DIR "/engine", engine, sizeof(engine)))
		snprintf(engine, sizeof(engine), "unknown");
}

int main(int argc, char **argv)
{
	enum { O_SIZE = 256, O_FROM, O_TO, O_FOLIO, O_FOLIOS, O_PAGES, O_REPS,
	       O_NODE, O_FILL, O_HUGE, O_HOG, O_JSON, O_CONFIG, O_CPU, O_TRIGGER,
	       O_FIRST_REP, O_THREADS, O_SECONDS, O_WARMUP, O_HOT_PCT, O_LEAVE,
	       O_SCAN_MS, O_HOT_MS, O_SQUEEZE };
	static const struct option lopts[] = {
		{ "size", required_argument, NULL, O_SIZE },
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "folio", required_argument, NULL, O_FOLIO },
		{ "folios", required_argument, NULL, O_FOLIOS },
		{ "pages", required_argument, NULL, O_PAGES },
		{ "reps", required_argument, NULL, O_REPS },
		{ "first-rep", required_argument, NULL, O_FIRST_REP },
		{ "node", required_argument, NULL, O_NODE },
		{ "fill-pct", required_argument, NULL, O_FILL },
		{ "huge", required_argument, NULL, O_HUGE },
		{ "hog", no_argument, NULL, O_HOG },
		{ "trigger", required_argument, NULL, O_TRIGGER },
		{ "json-out", required_argument, NULL, O_JSON },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "cpu", required_argument, NULL, O_CPU },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "hot-pct", required_argument, NULL, O_HOT_PCT },
		{ "leave", required_argument, NULL, O_LEAVE },
		{ "scan-ms", required_argument, NULL, O_SCAN_MS },
		{ "hot-ms", required_argument, NULL, O_HOT_MS },
		{ "squeeze", no_argument, NULL, O_SQUEEZE },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	bool folios_set = false;
	struct utsname u;
	size_t m;
	int c, i;

	page_size = sysconf(_SC_PAGESIZE);
	if (argc < 2)
		fatal(EXIT_USAGE, "no mode given (tput, count, latency, memcpy, compaction, alias, tiering; see --help)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	for (m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
		if (!strcmp(argv[1], mode_names[m]))
			break;
	if (m == sizeof(mode_names) / sizeof(mode_names[0]))
		fatal(EXIT_USAGE, "unknown mode '%s' (tput, count, latency, memcpy, compaction, alias, tiering; see --help)",
		      argv[1]);
	opt.mode = m;

	parse_list("--folio", "4,16,64,256,1024,2048", &opt.folio_kb, 4, 2048);
	parse_list("--folios", "1,8,16,32,64,256,512", &opt.folios, 1, 1 << 20);
	parse_list("--pages", "1,8,32,128,512", &opt.pages, 1, 1 << 24);

	opterr = 0;
	argv++;
	argc--;
	while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
		switch (c) {
		case O_SIZE:
			opt.size_mb = parse_num("--size", optarg, 1, 1L << 30);
			opt.size_set = true;
			break;
		case O_FROM: opt.from = parse_num("--from", optarg, 0, MAX_NODES - 1); break;
		case O_TO: opt.to = parse_num("--to", optarg, 0, MAX_NODES - 1); break;
		case O_FOLIO:
			parse_list("--folio", optarg, &opt.folio_kb, 4, 2048);
			for (i = 0; i < opt.folio_kb.n; i++)
				if (!valid_folio_kb(opt.folio_kb.v[i]))
					fatal(EXIT_USAGE, "--folio: %ld is not a folio size (4, 16, 32, ..., 2048 KB)",
					      opt.folio_kb.v[i]);
			break;
		case O_FOLIOS:
			parse_list("--folios", optarg, &opt.folios, 1, 1 << 20);
			folios_set = true;
			break;
		case O_PAGES: parse_list("--pages", optarg, &opt.pages, 1, 1 << 24); break;
		case O_REPS: opt.reps = parse_num("--reps", optarg, 1, 1000000); break;
		case O_FIRST_REP:
			opt.first_rep = parse_num("--first-rep", optarg, 0, 1000000);
			break;
		case O_NODE: opt.node = parse_num("--node", optarg, 0, MAX_NODES - 1); break;
		case O_FILL: opt.fill_pct = parse_num("--fill-pct", optarg, 1, 99); break;
		case O_HUGE: opt.huge = parse_num("--huge", optarg, 0, 1L << 30); break;
		case O_HOG: opt.hog = true; break;
		case O_TRIGGER:
			if (!strcmp(optarg, "hugepages"))
				opt.trigger = TRIG_HUGEPAGES;
			else if (!strcmp(optarg, "compact"))
				opt.trigger = TRIG_COMPACT;
			else
				fatal(EXIT_USAGE, "--trigger: '%s' is not hugepages or compact",
				      optarg);
			break;
		case O_JSON: opt.json_out = optarg; break;
		case O_CONFIG: opt.config = optarg; break;
		case O_CPU: opt.cpu = parse_num("--cpu", optarg, 0, CPU_SETSIZE - 1); break;
		case O_THREADS: opt.threads = parse_num("--threads", optarg, 1, 64); break;
		case O_SECONDS: opt.seconds = parse_num("--seconds", optarg, 1, 86400); break;
		case O_WARMUP: opt.warmup_s = parse_num("--warmup", optarg, 0, 86400); break;
		case O_HOT_PCT: opt.hot_pct = parse_num("--hot-pct", optarg, 1, 100); break;
		case O_LEAVE: opt.leave_mb = parse_num("--leave", optarg, 1, 1L << 30); break;
		case O_SCAN_MS: opt.scan_ms = parse_num("--scan-ms", optarg, 1, 100000); break;
		case O_HOT_MS: opt.hot_ms = parse_num("--hot-ms", optarg, 1, 1000000); break;
		case O_SQUEEZE: opt.squeeze = true; break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			fatal(EXIT_USAGE, "option '%s' needs a value (see --help)",
			      argv[optind - 1]);
		default:
			fatal(EXIT_USAGE, "unknown option '%s' (see --help)",
			      argv[optind - 1]);
		}
	}
	if (optind < argc)
		fatal(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
	if (opt.from == opt.to && opt.mode != M_MEMCPY && opt.mode != M_COMPACTION &&
	    opt.mode != M_ALIAS && opt.mode != M_TIERING)
		fatal(EXIT_USAGE, "--from and --to are both %d", opt.from);
	if (opt.hog && opt.mode != M_TPUT && opt.mode != M_TIERING &&
	    opt.mode != M_COMPACTION)
		fatal(EXIT_USAGE, "--hog: only tput, tiering and compaction take it");
	if (opt.mode == M_LATENCY && !folios_set)
		parse_list("--folios", "1,4,16", &opt.folios, 1, 1 << 20);
	if ((size_t)opt.size_mb > SIZE_MAX / MIB / 2)
		fatal(EXIT_USAGE, "--size: %ld MiB is too large", opt.size_mb);

	if (opt.json_out) {
		json_file = fopen(opt.json_out, "a");
		if (!json_file)
			fatal(EXIT_USAGE, "--json-out %s: %s", opt.json_out, strerror(errno));
	}
	read_engine();
	if (!uname(&u))
		snprintf(kernel_rel, sizeof(kernel_rel), "%s", u.release);

	mo_before_restore = kill_hog;
	restore_settings_at_exit();

	switch (opt.mode) {
	case M_TPUT: run_tput(); break;
	case M_COUNT: run_count(); break;
	case M_LATENCY: run_latency(); break;
	case M_MEMCPY: run_memcpy(); break;
	case M_COMPACTION: run_compaction(); break;
	case M_ALIAS: run_alias(); break;
	case M_TIERING: run_tiering(); break;
	}
	if (json_file)
		fclose(json_file);
	return failures ? EXIT_FAILED : 0;
}
