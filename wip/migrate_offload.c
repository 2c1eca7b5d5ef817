// SPDX-License-Identifier: GPL-2.0
/*
 * Tests for the batched and offloaded folio copy of page migration,
 * controlled through /sys/kernel/mm/migrate_offload/{engine,reasons}.
 *
 * integrity: a buffer is moved around all memory nodes with move_pages()
 *	while two threads keep rewriting and checking it; after every move
 *	every byte of it is checked. Runs for every registered copy engine
 *	(and "none" as the control) and for anonymous folios of 4K to 2M,
 *	shmem (memfd) and tmpfs files.
 * migrate_offload: pgmigrate_batch_* in /proc/vmstat against the engine
 *	and the enabled migration reasons; bad and good input to the sysfs
 *	files.
 *
 * Environment: MO_BUF_MB (integrity buffer in MiB, default 16), MO_ROUNDS
 * (trips around all nodes per engine, default 3), MO_ENGINES
 * (comma-separated engines to run integrity with, default all).
 *
 * Needs root, two memory nodes and a kernel with migrate_offload; skips
 * otherwise. The engine, the reasons and the THP settings are restored
 * when a test ends and again when the program exits.
 */
#define _GNU_SOURCE
/* The harness's timeout handler has an unused parameter: quiet -Wextra. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "../kselftest_harness.h"
#pragma GCC diagnostic pop

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <linux/kernel-page-flags.h>
#include <numaif.h>

#include "vm_util.h"

#define MO_SYSFS	"/sys/kernel/mm/migrate_offload"
#define MO_ENGINE	MO_SYSFS "/engine"
#define MO_REASONS	MO_SYSFS "/reasons"
#define THP_SYSFS	"/sys/kernel/mm/transparent_hugepage"

#define MO_NAME_MAX	64
#define MO_MAX_ENGINES	16
#define MO_MAX_NODES	64
#define MO_MAX_KNOBS	48
#define MO_NR_WORKERS	2
#define MO_COUNTER_MB	4
#define MO_TRIES	3
#define MO_STAMP_MAGIC	0x4d4fULL
#define MO_OVERLONG	4000

/* Same order as migrate_reason_names[] in mm/debug.c. */
static const char * const mo_reason_names[] = {
	"compaction",
	"memory_failure",
	"memory_hotplug",
	"syscall_or_cpuset",
	"mempolicy_mbind",
	"numa_misplaced",
	"contig_range",
	"longterm_pin",
	"demotion",
	"damon",
};

#define MO_NR_REASONS	ARRAY_SIZE(mo_reason_names)

/* ---------------------------------------------------------------------- */
/* sysfs helpers */

/* Read a sysfs file, strip trailing newlines; length or -errno. */
static int mo_read(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

/* One write(2) of exactly @len bytes; returns what write() returned. */
static ssize_t mo_write_raw(const char *path, const void *data, size_t len)
{
	ssize_t n;
	int fd, err;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = write(fd, data, len);
	err = errno;
	close(fd);
	errno = err;
	return n;
}

/* Write a string, as echo does when @newline; 0 or -errno. */
static int mo_write(const char *path, const char *val, bool newline)
{
	char buf[1024];
	ssize_t n;
	int len;

	len = snprintf(buf, sizeof(buf), "%s%s", val, newline ? "\n" : "");
	if (len < 0 || len >= (int)sizeof(buf))
		return -E2BIG;
	n = mo_write_raw(path, buf, len);
	if (n < 0)
		return -errno;
	return n == len ? 0 : -EIO;
}

/* The [bracketed] word of a sysfs choice file such as THP "enabled". */
static int mo_read_choice(const char *path, char *out, size_t size)
{
	char buf[512], *lb, *rb;
	int ret;

	ret = mo_read(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	lb = strchr(buf, '[');
	rb = lb ? strchr(lb, ']') : NULL;
	if (!rb || rb - lb - 1 >= (long)size)
		return -EINVAL;
	*rb = '\0';
	snprintf(out, size, "%s", lb + 1);
	return 0;
}

struct mo_engines {
	int nr;
	int active;
	char name[MO_MAX_ENGINES][MO_NAME_MAX];
};

/* Parse the engine file: names separated by blanks, exactly one [active]. */
static int mo_get_engines(struct mo_engines *e)
{
	char buf[1024], *tok, *save;
	bool active;
	size_t len;
	int ret;

	ret = mo_read(MO_ENGINE, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	e->nr = 0;
	e->active = -1;
	for (tok = strtok_r(buf, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		len = strlen(tok);
		active = len > 2 && tok[0] == '[' && tok[len - 1] == ']';
		if (active) {
			tok[len - 1] = '\0';
			tok++;
			if (e->active >= 0)
				return -EINVAL;
			e->active = e->nr;
		}
		if (e->nr == MO_MAX_ENGINES || strlen(tok) >= MO_NAME_MAX ||
		    strpbrk(tok, "[]"))
			return -EINVAL;
		snprintf(e->name[e->nr++], MO_NAME_MAX, "%s", tok);
	}
	return e->active >= 0 ? 0 : -EINVAL;
}

static int mo_find_engine(const struct mo_engines *e, const char *name)
{
	int i;

	for (i = 0; i < e->nr; i++)
		if (!strcmp(e->name[i], name))
			return i;
	return -1;
}

static int mo_set_engine(const char *name)
{
	return mo_write(MO_ENGINE, name, true);
}

static int mo_set_reasons(const char *list)
{
	return mo_write(MO_REASONS, list, true);
}

/* Reasons in kernel order, optionally leaving one out. */
static void mo_reason_list(char *buf, size_t size, const char *except)
{
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < MO_NR_REASONS; i++) {
		if (except && !strcmp(except, mo_reason_names[i]))
			continue;
		len += snprintf(buf + len, size - len, "%s%s", len ? "," : "",
				mo_reason_names[i]);
	}
}

struct mo_state {
	bool valid;
	char engine[MO_NAME_MAX];
	char reasons[1024];
};

static int mo_save_state(struct mo_state *st)
{
	struct mo_engines e;
	int ret;

	st->valid = false;
	ret = mo_get_engines(&e);
	if (ret)
		return ret;
	snprintf(st->engine, sizeof(st->engine), "%s", e.name[e.active]);
	ret = mo_read(MO_REASONS, st->reasons, sizeof(st->reasons));
	if (ret < 0)
		return ret;
	st->valid = true;
	return 0;
}

static int mo_restore_state(const struct mo_state *st)
{
	int ret;

	if (!st->valid)
		return 0;
	ret = mo_set_reasons(st->reasons);
	return mo_set_engine(st->engine) ?: ret;
}

/* THP settings this program changes: */
struct mo_knob {
	char path[128];
	char val[32];
};

struct mo_knobs {
	int nr;
	struct mo_knob k[MO_MAX_KNOBS];
};

static void mo_add_knob(struct mo_knobs *ks, const char *path)
{
	struct mo_knob *k;

	if (ks->nr == MO_MAX_KNOBS)
		return;
	k = &ks->k[ks->nr];
	snprintf(k->path, sizeof(k->path), "%s", path);
	if (!mo_read_choice(k->path, k->val, sizeof(k->val)))
		ks->nr++;
}

/* Save shmem_enabled and hugepages-*kB/{enabled,shmem_enabled}. */
static void mo_save_knobs(struct mo_knobs *ks)
{
	char path[sizeof(ks->k[0].path)];
	struct dirent *de;
	DIR *dir;

	ks->nr = 0;
	mo_add_knob(ks, THP_SYSFS "/shmem_enabled");
	dir = opendir(THP_SYSFS);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), THP_SYSFS "/%.64s/enabled",
			 de->d_name);
		mo_add_knob(ks, path);
		snprintf(path, sizeof(path), THP_SYSFS "/%.64s/shmem_enabled",
			 de->d_name);
		mo_add_knob(ks, path);
	}
	closedir(dir);
}

static int mo_restore_knobs(const struct mo_knobs *ks)
{
	int i, ret = 0;

	for (i = 0; i < ks->nr; i++)
		if (mo_write(ks->k[i].path, ks->k[i].val, false))
			ret = -EIO;
	return ret;
}

/* Write @val to every hugepages-*kB/@file that exists. */
static int mo_set_all_sizes(const char *file, const char *val)
{
	char path[PATH_MAX];
	struct dirent *de;
	int ret = 0;
	DIR *dir;

	dir = opendir(THP_SYSFS);
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), THP_SYSFS "/%s/%s", de->d_name, file);
		if (access(path, F_OK))
			continue;
		if (mo_write(path, val, false))
			ret = -EIO;
	}
	closedir(dir);
	return ret;
}

static void mo_size_path(char *path, size_t size, size_t bytes, const char *file)
{
	snprintf(path, size, THP_SYSFS "/hugepages-%zukB/%s", bytes >> 10, file);
}

/* Anonymous memory gets folios of @bytes only (base pages: no THP). */
static int mo_set_anon_folio(size_t bytes)
{
	char path[PATH_MAX];
	int ret;

	mo_size_path(path, sizeof(path), bytes, "enabled");
	if (bytes > psize() && access(path, F_OK))
		return -ENOENT;
	ret = mo_set_all_sizes("enabled", "never");
	if (!ret && bytes > psize())
		ret = mo_write(path, "always", false);
	return ret;
}

/* shmem (memfd) gets PMD folios on MADV_HUGEPAGE, or base pages only. */
static int mo_set_shmem_folio(size_t pmd_bytes, bool huge)
{
	char path[PATH_MAX];
	int ret;

	if (access(THP_SYSFS "/shmem_enabled", F_OK))
		return huge ? -ENOENT : 0;
	ret = mo_set_all_sizes("shmem_enabled", "never");
	if (ret)
		return ret;
	ret = mo_write(THP_SYSFS "/shmem_enabled", huge ? "advise" : "never",
		       false);
	mo_size_path(path, sizeof(path), pmd_bytes, "shmem_enabled");
	if (!ret && huge && !access(path, F_OK))
		ret = mo_write(path, "inherit", false);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* /proc/vmstat */

enum mo_stat {
	MO_SUCCESS,
	MO_COPIED,
	MO_FALLBACK,
	MO_WASTED,
	/* Migrations not made by this test; they disturb a measurement. */
	MO_NOISE_FIRST,
	MO_COMPACT = MO_NOISE_FIRST,
	MO_COMPACT_SCANNED,
	MO_NUMA_MIGRATED,
	MO_DEMOTE_KSWAPD,
	MO_DEMOTE_DIRECT,
	MO_DEMOTE_KHUGEPAGED,
	MO_PROMOTE,
	MO_NR_STATS,
};

static const char * const mo_stat_names[MO_NR_STATS] = {
	[MO_SUCCESS] = "pgmigrate_success",
	[MO_COPIED] = "pgmigrate_batch_copied",
	[MO_FALLBACK] = "pgmigrate_batch_fallback",
	[MO_WASTED] = "pgmigrate_batch_wasted",
	[MO_COMPACT] = "compact_isolated",
	[MO_COMPACT_SCANNED] = "compact_migrate_scanned",
	[MO_NUMA_MIGRATED] = "numa_pages_migrated",
	[MO_DEMOTE_KSWAPD] = "pgdemote_kswapd",
	[MO_DEMOTE_DIRECT] = "pgdemote_direct",
	[MO_DEMOTE_KHUGEPAGED] = "pgdemote_khugepaged",
	[MO_PROMOTE] = "pgpromote_success",
};

struct mo_vmstat {
	long long v[MO_NR_STATS];
};

/* -ENOENT if one of the counters the tests rely on is missing. */
static int mo_read_vmstat(struct mo_vmstat *s)
{
	char name[128];
	long long val;
	FILE *f;
	int i;

	for (i = 0; i < MO_NR_STATS; i++)
		s->v[i] = -1;
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%127s %lld", name, &val) == 2)
		for (i = 0; i < MO_NR_STATS; i++)
			if (!strcmp(name, mo_stat_names[i]))
				s->v[i] = val;
	fclose(f);
	for (i = 0; i < MO_NOISE_FIRST; i++)
		if (s->v[i] < 0)
			return -ENOENT;
	return 0;
}

static void mo_vmstat_delta(const struct mo_vmstat *a, const struct mo_vmstat *b,
			    struct mo_vmstat *d)
{
	int i;

	for (i = 0; i < MO_NR_STATS; i++)
		d->v[i] = (a->v[i] < 0 || b->v[i] < 0) ? 0 : b->v[i] - a->v[i];
}

static long long mo_noise(const struct mo_vmstat *d)
{
	long long sum = 0;
	int i;

	for (i = MO_NOISE_FIRST; i < MO_NR_STATS; i++)
		sum += d->v[i];
	return sum;
}

static void mo_log_delta(const char *what, const struct mo_vmstat *d)
{
	ksft_print_msg("%s: success %lld copied %lld fallback %lld wasted %lld (other %lld)\n",
		       what, d->v[MO_SUCCESS], d->v[MO_COPIED], d->v[MO_FALLBACK],
		       d->v[MO_WASTED], mo_noise(d));
}

/* ---------------------------------------------------------------------- */
/* Memory nodes, buffers, patterns */

/* Parse a node list such as "0-2,4" into a bitmap; -EINVAL if malformed. */
static int mo_parse_nodelist(const char *s, unsigned long long *mask)
{
	unsigned long a, b;
	char *end;

	*mask = 0;
	while (*s && *s != '\n') {
		a = strtoul(s, &end, 10);
		if (end == s)
			return -EINVAL;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s)
				return -EINVAL;
		}
		for (; a <= b && a < MO_MAX_NODES; a++)
			*mask |= 1ULL << a;
		s = end;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return 0;
}

/* Free memory of a node in bytes, from its meminfo; -1 if unknown. */
static long long mo_node_free(int node)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Node %d MemFree: %lld kB", &n, &kb) == 2)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb << 10;
}

/*
 * Nodes with memory that this task may use (has_memory and Mems_allowed),
 * with at least @need bytes free.
 */
static int mo_mem_nodes(int *nodes, int max, size_t need)
{
	unsigned long long has = 0, allowed = ~0ULL;
	char buf[512], line[512];
	long long freemem;
	int n, nr = 0;
	FILE *f;

	if (mo_read("/sys/devices/system/node/has_memory", buf, sizeof(buf)) < 0 ||
	    mo_parse_nodelist(buf, &has))
		return 0;
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Mems_allowed_list:", 18))
			mo_parse_nodelist(line + 18 + strspn(line + 18, " \t"),
					  &allowed);
	if (f)
		fclose(f);
	for (n = 0; n < MO_MAX_NODES && nr < max; n++) {
		if (!(has & allowed & 1ULL << n))
			continue;
		freemem = mo_node_free(n);
		if (freemem < (long long)need) {
			ksft_print_msg("node %d: %lld MiB free, not used\n", n,
				       freemem < 0 ? -1 : freemem >> 20);
			continue;
		}
		nodes[nr++] = n;
	}
	return nr;
}

static unsigned long mo_env(const char *name, unsigned long def,
			    unsigned long min, unsigned long max)
{
	const char *s = getenv(name);
	unsigned long val;
	char *end;

	if (!s || !*s)
		return def;
	errno = 0;
	val = strtoul(s, &end, 0);
	if (errno || *end || val < min || val > max) {
		ksft_print_msg("%s=%s invalid (%lu..%lu), using %lu\n", name, s,
			       min, max, def);
		return def;
	}
	return val;
}

static size_t mo_pmd_size(void)
{
	size_t pmd = read_pmd_pagesize();

	return pmd ? pmd : 2UL << 20;
}

enum mo_backing {
	MO_ANON,
	MO_SHMEM,
	MO_TMPFS,
};

struct mo_buf {
	char *map;		/* reservation, @map_len bytes */
	size_t map_len;
	char *p;		/* the buffer, aligned to a PMD */
	size_t len;
	size_t npages;
	int fd;
};

static void mo_buf_free(struct mo_buf *b)
{
	if (b->map)
		munmap(b->map, b->map_len);
	if (b->fd >= 0)
		close(b->fd);
	b->map = NULL;
	b->fd = -1;
}

/*
 * Map @len bytes at a PMD-aligned address: anonymous, a memfd, or a file
 * in the tmpfs at @dir. @advice is applied with madvise() if non-zero.
 */
static int mo_buf_alloc(struct mo_buf *b, enum mo_backing backing, size_t len,
			int advice, const char *dir)
{
	size_t align = mo_pmd_size();
	char path[PATH_MAX];
	int flags = MAP_SHARED | MAP_FIXED;
	int ret;
	void *p;

	b->fd = -1;
	b->map_len = len + align;
	b->map = mmap(NULL, b->map_len, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		return -errno;
	}
	b->p = (char *)(((unsigned long)b->map + align - 1) & ~(align - 1));
	b->len = len;
	b->npages = len / psize();

	switch (backing) {
	case MO_ANON:
		flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
		break;
	case MO_SHMEM:
		b->fd = memfd_create("migrate_offload", MFD_CLOEXEC);
		break;
	case MO_TMPFS:
		snprintf(path, sizeof(path), "%s/migrate_offload.XXXXXX", dir);
		b->fd = mkstemp(path);
		if (b->fd >= 0)
			unlink(path);
		break;
	}
	if (backing != MO_ANON && (b->fd < 0 || ftruncate(b->fd, len)))
		goto err;
	p = mmap(b->p, len, PROT_READ | PROT_WRITE, flags, b->fd, 0);
	if (p != b->p)
		goto err;
	if (advice && madvise(b->p, len, advice))
		ksft_print_msg("madvise(%d): %s\n", advice, strerror(errno));
	return 0;
err:
	ret = errno ? -errno : -EINVAL;
	mo_buf_free(b);
	return ret;
}

/*
 * Page contents for generation @gen: word 0 is a stamp (magic, low bits of
 * the page frame of the virtual address, generation), every other word is
 * a hash of its own address and the generation.
 */
static inline unsigned long long mo_word(const unsigned long long *page,
					 size_t i, unsigned int gen)
{
	unsigned long long x = (unsigned long)&page[i];

	if (!i)
		return MO_STAMP_MAGIC << 48 |
		       ((x >> 12) & 0xffffULL) << 32 | gen;
	x ^= (unsigned long long)gen * 0x9e3779b97f4a7c15ULL;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline unsigned long long *mo_page(const struct mo_buf *b, size_t pg)
{
	return (unsigned long long *)(b->p + pg * psize());
}

static void mo_fill_page(const struct mo_buf *b, size_t pg, unsigned int gen)
{
	unsigned long long *w = mo_page(b, pg);
	size_t i, n = psize() / sizeof(*w);

	for (i = 0; i < n; i++)
		w[i] = mo_word(w, i, gen);
}

/* Index of the first word that differs from generation @gen, or -1. */
static long mo_check_page(const struct mo_buf *b, size_t pg, unsigned int gen,
			  unsigned long long *want, unsigned long long *got)
{
	unsigned long long *w = mo_page(b, pg);
	size_t i, n = psize() / sizeof(*w);

	/* Really read memory: no value may be remembered from the last write. */
	asm volatile("" ::: "memory");
	for (i = 0; i < n; i++) {
		if (w[i] != mo_word(w, i, gen)) {
			*want = mo_word(w, i, gen);
			*got = w[i];
			return i;
		}
	}
	return -1;
}

/* Node a page is on now, or -errno. */
static int mo_page_node(void *addr)
{
	int status = -1;

	if (move_pages(0, 1, &addr, NULL, &status, 0))
		return -errno;
	return status;
}

static void mo_report_bad(struct __test_metadata *_metadata, const char *who,
			  const struct mo_buf *b, size_t pg, long word,
			  unsigned int gen, unsigned long long want,
			  unsigned long long got)
{
	unsigned long long stamp = mo_page(b, pg)[0];

	TH_LOG("%s: page %zu (%p) byte %ld: want %#llx got %#llx (gen %u); stamp %#llx%s, node %d",
	       who, pg, mo_page(b, pg), word * 8, want, got, gen, stamp,
	       (stamp >> 48) == MO_STAMP_MAGIC ? "" : " (not a stamp)",
	       mo_page_node(mo_page(b, pg)));
}

/* Check every byte of @b against @gens (NULL: all generation 0). */
static long mo_verify_all(struct __test_metadata *_metadata,
			  const struct mo_buf *b, const unsigned int *gens,
			  const char *when)
{
	unsigned long long want, got;
	long word, bad = 0;
	unsigned int gen;
	size_t pg;

	for (pg = 0; pg < b->npages; pg++) {
		gen = gens ? gens[pg] : 0;
		word = mo_check_page(b, pg, gen, &want, &got);
		if (word < 0)
			continue;
		if (bad++ < 8)
			mo_report_bad(_metadata, when, b, pg, word, gen, want, got);
	}
	if (bad)
		TH_LOG("%s: %ld of %zu pages corrupted", when, bad, b->npages);
	return bad;
}

/*
 * Percentage of the pages of @b that sit in folios of exactly @nr pages,
 * by /proc/self/pagemap and /proc/kpageflags; -errno if unknown.
 */
static int mo_folio_share(const struct mo_buf *b, size_t nr)
{
	unsigned long long *pm = NULL, *fl = NULL, pfn;
	size_t blk, i, good = 0;
	int pmfd, kfd, ret;
	ssize_t n;

	pmfd = open("/proc/self/pagemap", O_RDONLY);
	kfd = open("/proc/kpageflags", O_RDONLY);
	pm = malloc(b->npages * sizeof(*pm));
	fl = malloc((nr + 1) * sizeof(*fl));
	ret = -errno;
	if (pmfd < 0 || kfd < 0 || !pm || !fl)
		goto out;
	n = pread(pmfd, pm, b->npages * sizeof(*pm),
		  (unsigned long)b->p / psize() * sizeof(*pm));
	ret = -EIO;
	if (n != (ssize_t)(b->npages * sizeof(*pm)))
		goto out;
	for (blk = 0; blk + nr <= b->npages; blk += nr) {
		if (!(pm[blk] & PM_PRESENT))
			continue;
		pfn = PAGEMAP_PFN(pm[blk]);
		ret = -EPERM;	/* PFNs are hidden without CAP_SYS_ADMIN */
		if (!pfn)
			goto out;
		if (pfn % nr)
			continue;
		for (i = 1; i < nr; i++)
			if (!(pm[blk + i] & PM_PRESENT) ||
			    PAGEMAP_PFN(pm[blk + i]) != pfn + i)
				break;
		if (i < nr)
			continue;
		memset(fl, 0, (nr + 1) * sizeof(*fl));
		n = pread(kfd, fl, (nr + 1) * sizeof(*fl), pfn * sizeof(*fl));
		ret = -EIO;
		if (n < (ssize_t)(nr * sizeof(*fl)))
			goto out;
		if (nr == 1) {
			if (fl[0] & (1ULL << KPF_COMPOUND_HEAD |
				     1ULL << KPF_COMPOUND_TAIL))
				continue;
		} else {
			if (!(fl[0] & 1ULL << KPF_COMPOUND_HEAD))
				continue;
			for (i = 1; i < nr; i++)
				if (!(fl[i] & 1ULL << KPF_COMPOUND_TAIL))
					break;
			/* a tail right after it: the folio is larger */
			if (i < nr || fl[nr] & 1ULL << KPF_COMPOUND_TAIL)
				continue;
		}
		good += nr;
	}
	ret = good * 100 / b->npages;
out:
	if (pmfd >= 0)
		close(pmfd);
	if (kfd >= 0)
		close(kfd);
	free(pm);
	free(fl);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* move_pages() */

struct mo_pages {
	size_t n;
	void **addr;
	int *nodes;
	int *status;
	int *where;
};

static void mo_pages_free(struct mo_pages *mp)
{
	free(mp->addr);
	free(mp->nodes);
	free(mp->status);
	free(mp->where);
	memset(mp, 0, sizeof(*mp));
}

static int mo_pages_init(struct mo_pages *mp, const struct mo_buf *b)
{
	size_t i;

	mp->n = b->npages;
	mp->addr = calloc(mp->n, sizeof(*mp->addr));
	mp->nodes = calloc(mp->n, sizeof(*mp->nodes));
	mp->status = calloc(mp->n, sizeof(*mp->status));
	mp->where = calloc(mp->n, sizeof(*mp->where));
	if (!mp->addr || !mp->nodes || !mp->status || !mp->where) {
		mo_pages_free(mp);
		return -ENOMEM;
	}
	for (i = 0; i < mp->n; i++)
		mp->addr[i] = mo_page(b, i);
	return 0;
}

struct mo_hist {
	int status;		/* from the move: -errno, or a node */
	int where;		/* where the first such page is now */
	size_t first;
	size_t count;
};

#define MO_HIST_MAX	8

static bool mo_tolerated(int status)
{
	/* Transient: the folio was busy or pinned; or the node was full. */
	return status == -EBUSY || status == -EAGAIN || status == -ENOMEM ||
	       status >= 0;
}

/*
 * Pages of @mp not on @node: count them by the status the move gave them.
 * Returns the number of pages on @node, -1 on an unexpected error.
 */
static long mo_tally(struct __test_metadata *_metadata, struct mo_pages *mp,
		     int node, const int *moved, const char *when)
{
	struct mo_hist h[MO_HIST_MAX];
	int i, nh = 0, unexpected = 0;
	size_t pg, on = 0;

	if (move_pages(0, mp->n, mp->addr, NULL, mp->where, 0)) {
		TH_LOG("%s: move_pages(query): %s", when, strerror(errno));
		return -1;
	}
	for (pg = 0; pg < mp->n; pg++) {
		int st = moved ? moved[pg] : mp->where[pg];

		if (mp->where[pg] == node) {
			on++;
			continue;
		}
		for (i = 0; i < nh; i++)
			if (h[i].status == st)
				break;
		if (i == nh && nh < MO_HIST_MAX)
			h[nh++] = (struct mo_hist){ st, mp->where[pg], pg, 0 };
		if (i < nh)
			h[i].count++;
		if (!mo_tolerated(st))
			unexpected++;
	}
	if (on == mp->n)
		return on;
	ksft_print_msg("%s: %zu of %zu pages not on node %d\n", when,
		       mp->n - on, mp->n, node);
	for (i = 0; i < nh; i++)
		ksft_print_msg("  %zu x status %d (%s), first page %zu now on %d\n",
			       h[i].count, h[i].status,
			       h[i].status < 0 ? strerror(-h[i].status) : "a node",
			       h[i].first, h[i].where);
	if (unexpected) {
		TH_LOG("%s: %d pages not moved with an unexpected error", when,
		       unexpected);
		return -1;
	}
	return on;
}

/*
 * Move all of @mp to @node. Pages left behind with -EBUSY/-EAGAIN are
 * reported; fails if another error shows up or less than 90% moved.
 */
static int mo_move(struct __test_metadata *_metadata, struct mo_pages *mp,
		   int node, const char *when, double *secs)
{
	struct timespec t0, t1;
	size_t i;
	long ret;

	for (i = 0; i < mp->n; i++) {
		mp->nodes[i] = node;
		mp->status[i] = INT_MIN;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = move_pages(0, mp->n, mp->addr, mp->nodes, mp->status,
			 MPOL_MF_MOVE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (secs)
		*secs += t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (ret < 0) {
		TH_LOG("%s: move_pages(-> node %d): %s", when, node,
		       strerror(errno));
		return -1;
	}
	ret = mo_tally(_metadata, mp, node, mp->status, when);
	if (ret < 0)
		return -1;
	if ((size_t)ret * 10 < mp->n * 9) {
		TH_LOG("%s: only %ld of %zu pages reached node %d", when, ret,
		       mp->n, node);
		return -1;
	}
	return 0;
}

/* Move @b to @node with mbind(MPOL_BIND, MPOL_MF_MOVE): reason mbind. */
static int mo_mbind_move(struct __test_metadata *_metadata,
			 const struct mo_buf *b, struct mo_pages *mp, int node)
{
	unsigned long mask[MO_MAX_NODES / (8 * sizeof(long))] = { 0 };
	long on;

	if (node >= MO_MAX_NODES) {
		TH_LOG("node %d: too large for this test's node mask", node);
		return -1;
	}
	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
	if (mbind(b->p, b->len, MPOL_BIND, mask, MO_MAX_NODES + 1,
		  MPOL_MF_MOVE)) {
		TH_LOG("mbind(MPOL_BIND, node %d, MPOL_MF_MOVE): %s", node,
		       strerror(errno));
		return -1;
	}
	mbind(b->p, b->len, MPOL_DEFAULT, NULL, 0, 0);
	on = mo_tally(_metadata, mp, node, NULL, "mbind");
	if (on < 0 || (size_t)on * 10 < mp->n * 9) {
		TH_LOG("mbind: %ld of %zu pages on node %d", on, mp->n, node);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Threads that rewrite and check their own pages during migration */

struct mo_ctl;

struct mo_worker {
	struct mo_ctl *ctl;
	pthread_t tid;
	int id;
	unsigned long ops;
	bool failed;
	size_t bad_page;
	long bad_word;
	unsigned int bad_gen;
	unsigned long long want, got;
};

struct mo_ctl {
	const struct mo_buf *b;
	unsigned int *gens;	/* generation of each page, owner-written */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int pause;
	int stop;
	int parked;
	int running;
	int started;
	struct mo_worker w[MO_NR_WORKERS];
};

/* Wait while paused; true if the worker is to stop. */
static bool mo_worker_park(struct mo_ctl *c)
{
	bool stop;

	pthread_mutex_lock(&c->lock);
	c->parked++;
	pthread_cond_broadcast(&c->cond);
	while (c->pause && !c->stop)
		pthread_cond_wait(&c->cond, &c->lock);
	c->parked--;
	stop = c->stop;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

/*
 * Worker @id owns the pages pg with pg % MO_NR_WORKERS == id. For each, in
 * turn, it checks the whole page against the generation it last wrote,
 * then writes the next generation, for as long as it runs.
 */
static void *mo_worker_fn(void *arg)
{
	struct mo_worker *w = arg;
	struct mo_ctl *c = w->ctl;
	unsigned long long want, got;
	size_t pg;
	long word;

	for (;;) {
		for (pg = w->id; pg < c->b->npages; pg += MO_NR_WORKERS) {
			if (__atomic_load_n(&c->pause, __ATOMIC_ACQUIRE) &&
			    mo_worker_park(c))
				goto out;
			word = mo_check_page(c->b, pg, c->gens[pg], &want, &got);
			if (word >= 0) {
				w->failed = true;
				w->bad_page = pg;
				w->bad_word = word;
				w->bad_gen = c->gens[pg];
				w->want = want;
				w->got = got;
				goto out;
			}
			mo_fill_page(c->b, pg, ++c->gens[pg]);
			w->ops++;
		}
	}
out:
	pthread_mutex_lock(&c->lock);
	c->running--;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int mo_workers_start(struct mo_ctl *c, const struct mo_buf *b)
{
	int i;

	c->b = b;
	c->gens = calloc(b->npages, sizeof(*c->gens));
	if (!c->gens)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->pause = 0;
	c->stop = 0;
	c->parked = 0;
	c->running = 0;
	for (i = 0; i < MO_NR_WORKERS; i++) {
		c->w[i] = (struct mo_worker){ .ctl = c, .id = i };
		pthread_mutex_lock(&c->lock);
		c->running++;
		pthread_mutex_unlock(&c->lock);
		if (pthread_create(&c->w[i].tid, NULL, mo_worker_fn, &c->w[i])) {
			pthread_mutex_lock(&c->lock);
			c->running--;
			pthread_mutex_unlock(&c->lock);
			return -EAGAIN;
		}
		c->started++;
	}
	return 0;
}

/* Park all running workers: the buffer is quiet until mo_resume(). */
static void mo_pause(struct mo_ctl *c)
{
	pthread_mutex_lock(&c->lock);
	__atomic_store_n(&c->pause, 1, __ATOMIC_RELEASE);
	while (c->parked < c->running)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

static void mo_resume(struct mo_ctl *c)
{
	pthread_mutex_lock(&c->lock);
	__atomic_store_n(&c->pause, 0, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void mo_workers_stop(struct mo_ctl *c)
{
	int i;

	if (!c->gens)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	__atomic_store_n(&c->pause, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	for (i = 0; i < c->started; i++)
		pthread_join(c->w[i].tid, NULL);
	c->started = 0;
}

/* Report workers that found a bad page; true if any. */
static bool mo_workers_failed(struct __test_metadata *_metadata,
			      struct mo_ctl *c)
{
	bool failed = false;
	char who[32];
	int i;

	for (i = 0; i < c->started; i++) {
		struct mo_worker *w = &c->w[i];

		if (!w->failed)
			continue;
		snprintf(who, sizeof(who), "worker %d", i);
		mo_report_bad(_metadata, who, c->b, w->bad_page, w->bad_word,
			      w->bad_gen, w->want, w->got);
		failed = true;
	}
	return failed;
}

static unsigned long mo_worker_ops(const struct mo_ctl *c)
{
	unsigned long ops = 0;
	int i;

	for (i = 0; i < c->started; i++)
		ops += c->w[i].ops;
	return ops;
}

/* ---------------------------------------------------------------------- */
/* State shared by the whole program */

static struct mo_state mo_saved_state;
static struct mo_knobs mo_saved_knobs;
static pid_t mo_main_pid;

/* A test that crashed or timed out has not restored anything: do it here. */
static void mo_restore_at_exit(void)
{
	int ret;

	if (getpid() != mo_main_pid)
		return;
	ret = mo_restore_state(&mo_saved_state);
	ret |= mo_restore_knobs(&mo_saved_knobs);
	if (ret)
		ksft_print_msg("could not restore the settings found at start\n");
}

/* ---------------------------------------------------------------------- */
/* sysfs and counter tests */

FIXTURE(migrate_offload)
{
	struct mo_state state;
	struct mo_knobs knobs;
	int nodes[MO_MAX_NODES];
	int nr_nodes;
	int cur;		/* index in nodes[] of the buffer's node */
	struct mo_buf buf;
	struct mo_pages pages;
};

FIXTURE_SETUP(migrate_offload)
{
	self->buf.fd = -1;
	ASSERT_EQ(0, mo_save_state(&self->state));
	mo_save_knobs(&self->knobs);
	self->nr_nodes = mo_mem_nodes(self->nodes, MO_MAX_NODES,
				      3 * (MO_COUNTER_MB << 20));
}

FIXTURE_TEARDOWN(migrate_offload)
{
	mo_pages_free(&self->pages);
	mo_buf_free(&self->buf);
	EXPECT_EQ(0, mo_restore_knobs(&self->knobs));
	EXPECT_EQ(0, mo_restore_state(&self->state));
}

struct mo_bad_input {
	const char *what;
	const char *data;
	size_t len;
};

/*
 * Write each of @cases to @path: every write must fail with EINVAL, except
 * that an empty write may return 0 (sysfs does not pass empty writes on to
 * the attribute); the file must read back unchanged. Returns the failures.
 */
static int mo_check_bad_input(struct __test_metadata *_metadata, const char *path,
			      const struct mo_bad_input *cases, int nr)
{
	char before[1024], after[1024];
	int i, err, fails = 0;
	ssize_t n;

	for (i = 0; i < nr; i++) {
		if (mo_read(path, before, sizeof(before)) < 0) {
			TH_LOG("%s: read failed", path);
			return fails + 1;
		}
		errno = 0;
		n = mo_write_raw(path, cases[i].data, cases[i].len);
		err = errno;
		if (!(n == -1 && err == EINVAL) && !(cases[i].len == 0 && n == 0)) {
			TH_LOG("%s: writing %s returned %zd, errno %d (%s); want -1, EINVAL",
			       path, cases[i].what, n, err, strerror(err));
			fails++;
		}
		if (mo_read(path, after, sizeof(after)) < 0 || strcmp(before, after)) {
			TH_LOG("%s: changed by writing %s: \"%s\" -> \"%s\"",
			       path, cases[i].what, before, after);
			fails++;
		}
	}
	return fails;
}

static const unsigned char mo_junk[] = {
	0xff, 0x01, 0xfe, 0x80, 0x7f, 0x1b, 0x00, 0x9c, 0xc3, 0x28,
};

TEST_F(migrate_offload, engine_bad_input)
{
	char *overlong = malloc(MO_OVERLONG);
	const struct mo_bad_input cases[] = {
		{ "\"bogus\"", "bogus", 5 },
		{ "\"bogus\\n\"", "bogus\n", 6 },
		{ "an empty string", "", 0 },
		{ "\"\\n\"", "\n", 1 },
		{ "\" \"", " ", 1 },
		{ "\"no\" (prefix of none)", "no", 2 },
		{ "\"nonex\"", "nonex", 5 },
		{ "\"[none]\"", "[none]", 6 },
		{ "\"none cpu\"", "none cpu", 8 },
		{ "4000 bytes", overlong, MO_OVERLONG },
		{ "binary junk", (const char *)mo_junk, sizeof(mo_junk) },
	};
	struct mo_engines e;

	ASSERT_NE(NULL, overlong);
	memset(overlong, 'x', MO_OVERLONG);
	/* Start from an engine other than none, so accepting "no..." shows. */
	ASSERT_EQ(0, mo_set_engine("cpu"));
	ASSERT_EQ(0, mo_get_engines(&e));
	ASSERT_STREQ("cpu", e.name[e.active]);
	EXPECT_EQ(0, mo_check_bad_input(_metadata, MO_ENGINE, cases,
					ARRAY_SIZE(cases)));
	free(overlong);
}

TEST_F(migrate_offload, reasons_bad_input)
{
	char *overlong = malloc(MO_OVERLONG);
	const struct mo_bad_input cases[] = {
		{ "\"bogus\"", "bogus", 5 },
		{ "an empty string", "", 0 },
		{ "\"\\n\"", "\n", 1 },
		{ "\" \"", " ", 1 },
		{ "4000 bytes", overlong, MO_OVERLONG },
		{ "binary junk", (const char *)mo_junk, sizeof(mo_junk) },
		{ "\"compaction,bogus\"", "compaction,bogus", 16 },
		{ "\"bogus,compaction\"", "bogus,compaction", 16 },
		{ "\",\"", ",", 1 },
		{ "\"compaction,,demotion\"", "compaction,,demotion", 20 },
		{ "\"compaction,\"", "compaction,", 11 },
		{ "\",compaction\"", ",compaction", 11 },
		{ "\"compactio\" (prefix)", "compactio", 9 },
		{ "\"compactionx\"", "compactionx", 11 },
		{ "\"compaction demotion\"", "compaction demotion", 19 },
	};
	char buf[1024];

	ASSERT_NE(NULL, overlong);
	memset(overlong, 'x', MO_OVERLONG);
	/* Neither "all" nor "none", so that accepting either shows. */
	ASSERT_EQ(0, mo_set_reasons("compaction,demotion"));
	ASSERT_LT(0, mo_read(MO_REASONS, buf, sizeof(buf)));
	ASSERT_STREQ("compaction,demotion", buf);
	EXPECT_EQ(0, mo_check_bad_input(_metadata, MO_REASONS, cases,
					ARRAY_SIZE(cases)));
	free(overlong);
}

TEST_F(migrate_offload, reasons_roundtrip)
{
	char all[1024], buf[1024];
	struct {
		const char *in;
		const char *out;	/* NULL: every reason */
	} cases[] = {
		{ "all", NULL },
		{ "none", "none" },
		{ "compaction,syscall_or_cpuset", "compaction,syscall_or_cpuset" },
		{ "syscall_or_cpuset,compaction", "compaction,syscall_or_cpuset" },
		{ "damon,compaction,numa_misplaced", "compaction,numa_misplaced,damon" },
		{ "all\n", NULL },
		{ "none\n", "none" },
		{ "demotion\n", "demotion" },
	};
	size_t i;
	int fails = 0;

	mo_reason_list(all, sizeof(all), NULL);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *want = cases[i].out ?: all;
		ssize_t n = mo_write_raw(MO_REASONS, cases[i].in, strlen(cases[i].in));

		if (n != (ssize_t)strlen(cases[i].in)) {
			TH_LOG("writing \"%s\": %s", cases[i].in, strerror(errno));
			fails++;
			continue;
		}
		if (mo_read(MO_REASONS, buf, sizeof(buf)) < 0 || strcmp(buf, want)) {
			TH_LOG("wrote \"%s\", read \"%s\", want \"%s\"", cases[i].in,
			       buf, want);
			fails++;
		}
	}
	for (i = 0; i < MO_NR_REASONS; i++) {
		if (mo_set_reasons(mo_reason_names[i]) ||
		    mo_read(MO_REASONS, buf, sizeof(buf)) < 0 ||
		    strcmp(buf, mo_reason_names[i])) {
			TH_LOG("reason %s does not round-trip (read \"%s\")",
			       mo_reason_names[i], buf);
			fails++;
		}
	}
	EXPECT_EQ(0, fails);
}

TEST_F(migrate_offload, engine_roundtrip)
{
	struct mo_engines e, now;
	int i, j, ret, fails = 0;
	bool newline;

	ASSERT_EQ(0, mo_get_engines(&e));
	EXPECT_LE(0, mo_find_engine(&e, "none"));
	EXPECT_LE(0, mo_find_engine(&e, "cpu"));
	for (i = 0; i < 2 * e.nr; i++) {
		newline = i >= e.nr;
		ret = mo_write(MO_ENGINE, e.name[i % e.nr], newline);
		if (ret) {
			TH_LOG("selecting %s%s: %s", e.name[i % e.nr],
			       newline ? "\\n" : "", strerror(-ret));
			fails++;
			continue;
		}
		if (mo_get_engines(&now)) {
			TH_LOG("engine file malformed after selecting %s",
			       e.name[i % e.nr]);
			fails++;
			continue;
		}
		if (strcmp(now.name[now.active], e.name[i % e.nr])) {
			TH_LOG("selected %s, active is %s", e.name[i % e.nr],
			       now.name[now.active]);
			fails++;
		}
		for (j = 0; j < e.nr && now.nr == e.nr; j++)
			if (strcmp(now.name[j], e.name[j]))
				break;
		if (now.nr != e.nr || j < e.nr) {
			TH_LOG("list of engines changed by selecting %s",
			       e.name[i % e.nr]);
			fails++;
		}
	}
	EXPECT_EQ(0, fails);
}

/* A 4 MiB anonymous buffer, filled and placed on the first node. */
static bool mo_counters_prepare(struct __test_metadata *_metadata,
				FIXTURE_DATA(migrate_offload) *self, int advice)
{
	size_t pg;

	if (self->nr_nodes < 2)
		SKIP(return false, "fewer than two nodes with enough free memory");
	ASSERT_EQ(0, mo_buf_alloc(&self->buf, MO_ANON, MO_COUNTER_MB << 20,
				  advice, NULL));
	for (pg = 0; pg < self->buf.npages; pg++)
		mo_fill_page(&self->buf, pg, 0);
	ASSERT_EQ(0, mo_pages_init(&self->pages, &self->buf));
	ASSERT_EQ(0, mo_move(_metadata, &self->pages, self->nodes[0], "placement",
			     NULL));
	self->cur = 0;
	return true;
}

enum mo_how {
	MO_BY_MOVE_PAGES,
	MO_BY_MBIND,
};

/*
 * Move the buffer to the other node by @how and return the vmstat deltas
 * in @d. Repeats up to MO_TRIES times while other migrations happened in
 * the system meanwhile. Returns 0 for a quiet measurement, 1 if all were
 * disturbed.
 */
static int mo_measure(struct __test_metadata *_metadata,
		      FIXTURE_DATA(migrate_offload) *self, enum mo_how how,
		      const char *what, struct mo_vmstat *d)
{
	struct mo_vmstat a, b;
	int try, node, ret;

	for (try = 0; try < MO_TRIES; try++) {
		self->cur = !self->cur;
		node = self->nodes[self->cur];
		ASSERT_EQ(0, mo_read_vmstat(&a));
		if (how == MO_BY_MBIND)
			ret = mo_mbind_move(_metadata, &self->buf, &self->pages, node);
		else
			ret = mo_move(_metadata, &self->pages, node, what, NULL);
		ASSERT_EQ(0, mo_read_vmstat(&b));
		ASSERT_EQ(0, ret);
		mo_vmstat_delta(&a, &b, d);
		mo_log_delta(what, d);
		if (!mo_noise(d))
			return 0;
		ksft_print_msg("%s: other migrations meanwhile, measuring again\n",
			       what);
	}
	return 1;
}

/* copied == success + wasted and copied > 0, for anon/shmem-only runs. */
static void mo_expect_batched(struct __test_metadata *_metadata,
			      const struct mo_vmstat *d, int noisy)
{
	bool ok = d->v[MO_COPIED] > 0 &&
		  d->v[MO_COPIED] == d->v[MO_SUCCESS] + d->v[MO_WASTED];

	if (!ok && noisy)
		SKIP(return, "other migrations in every try; cannot judge counters");
	EXPECT_LT(0, d->v[MO_SUCCESS]);
	EXPECT_LT(0, d->v[MO_COPIED]);
	EXPECT_EQ(d->v[MO_COPIED], d->v[MO_SUCCESS] + d->v[MO_WASTED]);
}

/* Batch counters unchanged while pages migrated. */
static void mo_expect_unbatched(struct __test_metadata *_metadata,
				const struct mo_vmstat *d, int noisy)
{
	bool ok = !d->v[MO_COPIED] && !d->v[MO_FALLBACK] && !d->v[MO_WASTED];

	if (!ok && noisy)
		SKIP(return, "other migrations in every try; cannot judge counters");
	EXPECT_LT(0, d->v[MO_SUCCESS]);
	EXPECT_EQ(0, d->v[MO_COPIED]);
	EXPECT_EQ(0, d->v[MO_FALLBACK]);
	EXPECT_EQ(0, d->v[MO_WASTED]);
}

TEST_F_TIMEOUT(migrate_offload, counters_cpu_all, 120)
{
	struct mo_vmstat d;
	int noisy;

	if (!mo_counters_prepare(_metadata, self, MADV_NOHUGEPAGE))
		return;
	ASSERT_EQ(0, mo_set_engine("cpu"));
	ASSERT_EQ(0, mo_set_reasons("all"));
	noisy = mo_measure(_metadata, self, MO_BY_MOVE_PAGES, "cpu, all, 4K", &d);
	mo_expect_batched(_metadata, &d, noisy);
	EXPECT_EQ(0, mo_verify_all(_metadata, &self->buf, NULL, "after moves"));
}

TEST_F_TIMEOUT(migrate_offload, counters_cpu_all_thp, 120)
{
	size_t pmd = mo_pmd_size();
	struct mo_vmstat d;
	int noisy, share;

	if (mo_set_anon_folio(pmd))
		SKIP(return, "cannot enable %zukB THP", pmd >> 10);
	if (!mo_counters_prepare(_metadata, self, MADV_HUGEPAGE))
		return;
	share = mo_folio_share(&self->buf, pmd / psize());
	if (share >= 0 && share < 50)
		SKIP(return, "only %d%% of the buffer in THPs", share);
	ASSERT_EQ(0, mo_set_engine("cpu"));
	ASSERT_EQ(0, mo_set_reasons("all"));
	noisy = mo_measure(_metadata, self, MO_BY_MOVE_PAGES, "cpu, all, THP", &d);
	mo_expect_batched(_metadata, &d, noisy);
	EXPECT_EQ(0, mo_verify_all(_metadata, &self->buf, NULL, "after moves"));
}

TEST_F_TIMEOUT(migrate_offload, counters_reason_disabled, 120)
{
	char reasons[1024];
	struct mo_vmstat d;
	int noisy;

	if (!mo_counters_prepare(_metadata, self, MADV_NOHUGEPAGE))
		return;
	mo_reason_list(reasons, sizeof(reasons), "syscall_or_cpuset");
	ASSERT_EQ(0, mo_set_engine("cpu"));
	ASSERT_EQ(0, mo_set_reasons(reasons));
	noisy = mo_measure(_metadata, self, MO_BY_MOVE_PAGES,
			   "cpu, all but syscall_or_cpuset", &d);
	mo_expect_unbatched(_metadata, &d, noisy);
	EXPECT_EQ(0, mo_verify_all(_metadata, &self->buf, NULL, "after moves"));
}

TEST_F_TIMEOUT(migrate_offload, counters_engine_none, 120)
{
	struct mo_vmstat d;
	int noisy;

	if (!mo_counters_prepare(_metadata, self, MADV_NOHUGEPAGE))
		return;
	ASSERT_EQ(0, mo_set_engine("none"));
	ASSERT_EQ(0, mo_set_reasons("all"));
	noisy = mo_measure(_metadata, self, MO_BY_MOVE_PAGES, "none, all", &d);
	/* Nothing at all may be batched with engine none: no excuses. */
	mo_expect_unbatched(_metadata, &d, 0);
	if (noisy)
		ksft_print_msg("(other migrations happened, still nothing batched)\n");
	EXPECT_EQ(0, mo_verify_all(_metadata, &self->buf, NULL, "after moves"));
}

/* Only mempolicy_mbind enabled: mbind() batches, move_pages() does not. */
TEST_F_TIMEOUT(migrate_offload, counters_mbind_reason, 120)
{
	struct mo_vmstat d;
	int noisy;

	if (!mo_counters_prepare(_metadata, self, MADV_NOHUGEPAGE))
		return;
	ASSERT_EQ(0, mo_set_engine("cpu"));
	ASSERT_EQ(0, mo_set_reasons("mempolicy_mbind"));
	noisy = mo_measure(_metadata, self, MO_BY_MOVE_PAGES,
			   "cpu, mempolicy_mbind, move_pages", &d);
	mo_expect_unbatched(_metadata, &d, noisy);
	noisy = mo_measure(_metadata, self, MO_BY_MBIND,
			   "cpu, mempolicy_mbind, mbind", &d);
	mo_expect_batched(_metadata, &d, noisy);
	EXPECT_EQ(0, mo_verify_all(_metadata, &self->buf, NULL, "after moves"));
}

/* ---------------------------------------------------------------------- */
/* Data integrity */

FIXTURE(integrity)
{
	struct mo_state state;
	struct mo_knobs knobs;
	int nodes[MO_MAX_NODES];
	int nr_nodes;
	size_t len;
	char tmpfs[PATH_MAX];
	struct mo_buf buf;
	struct mo_pages pages;
	struct mo_ctl ctl;
};

FIXTURE_VARIANT(integrity)
{
	enum mo_backing backing;
	size_t folio_kb;	/* 0: PMD size */
};

FIXTURE_VARIANT_ADD(integrity, anon_4k) { .backing = MO_ANON, .folio_kb = 4 };
FIXTURE_VARIANT_ADD(integrity, anon_16k) { .backing = MO_ANON, .folio_kb = 16 };
FIXTURE_VARIANT_ADD(integrity, anon_64k) { .backing = MO_ANON, .folio_kb = 64 };
FIXTURE_VARIANT_ADD(integrity, anon_256k) { .backing = MO_ANON, .folio_kb = 256 };
FIXTURE_VARIANT_ADD(integrity, anon_1m) { .backing = MO_ANON, .folio_kb = 1024 };
FIXTURE_VARIANT_ADD(integrity, anon_2m) { .backing = MO_ANON, .folio_kb = 2048 };
FIXTURE_VARIANT_ADD(integrity, shmem_4k) { .backing = MO_SHMEM, .folio_kb = 4 };
FIXTURE_VARIANT_ADD(integrity, shmem_thp) { .backing = MO_SHMEM, .folio_kb = 0 };
FIXTURE_VARIANT_ADD(integrity, tmpfs_4k) { .backing = MO_TMPFS, .folio_kb = 4 };
FIXTURE_VARIANT_ADD(integrity, tmpfs_thp) { .backing = MO_TMPFS, .folio_kb = 0 };

FIXTURE_SETUP(integrity)
{
	size_t pmd = mo_pmd_size();

	self->buf.fd = -1;
	self->len = mo_env("MO_BUF_MB", 16, 1, 1 << 20) << 20;
	self->len = (self->len + pmd - 1) / pmd * pmd;
	ASSERT_EQ(0, mo_save_state(&self->state));
	mo_save_knobs(&self->knobs);
	self->nr_nodes = mo_mem_nodes(self->nodes, MO_MAX_NODES,
				      self->len + self->len / 2);
}

FIXTURE_TEARDOWN(integrity)
{
	mo_workers_stop(&self->ctl);
	free(self->ctl.gens);
	mo_pages_free(&self->pages);
	mo_buf_free(&self->buf);
	EXPECT_EQ(0, mo_restore_knobs(&self->knobs));
	EXPECT_EQ(0, mo_restore_state(&self->state));
}

/*
 * Mount a tmpfs of our own over /tmp (or another existing directory) in a
 * private mount namespace, so that nothing outside sees it and it goes
 * away with us.
 */
static int mo_mount_tmpfs(char *dir, size_t size, size_t bytes, bool huge)
{
	static const char * const where[] = {
		"/tmp", "/mnt", "/run", "/var/tmp", "/root", "/home",
	};
	char opts[64];
	size_t i;
	int err = ENOENT;

	if (unshare(CLONE_NEWNS))
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	snprintf(opts, sizeof(opts), "size=%zuk,huge=%s", bytes >> 10,
		 huge ? "always" : "never");
	for (i = 0; i < ARRAY_SIZE(where); i++) {
		if (!mount("migrate_offload", where[i], "tmpfs", 0, opts)) {
			snprintf(dir, size, "%s", where[i]);
			return 0;
		}
		err = errno;
		if (err == EINVAL)	/* the options, not the place */
			break;
	}
	return -err;
}

/* Pick the engines to run: MO_ENGINES or all; "none" first, as the control. */
static int mo_pick_engines(struct __test_metadata *_metadata,
			   struct mo_engines *run)
{
	const char *env = getenv("MO_ENGINES");
	char list[512], *tok, *save;
	struct mo_engines e;
	int i;

	if (mo_get_engines(&e))
		return -1;
	run->nr = 0;
	run->active = -1;
	if (env && *env) {
		snprintf(list, sizeof(list), "%s", env);
		for (tok = strtok_r(list, ", ", &save); tok;
		     tok = strtok_r(NULL, ", ", &save)) {
			if (mo_find_engine(&e, tok) < 0) {
				TH_LOG("MO_ENGINES: %s is not a registered engine", tok);
				return -1;
			}
			if (mo_find_engine(run, tok) < 0 && run->nr < MO_MAX_ENGINES)
				snprintf(run->name[run->nr++], MO_NAME_MAX, "%s", tok);
		}
		return 0;
	}
	snprintf(run->name[run->nr++], MO_NAME_MAX, "none");
	for (i = 0; i < e.nr; i++)
		if (strcmp(e.name[i], "none"))
			snprintf(run->name[run->nr++], MO_NAME_MAX, "%s", e.name[i]);
	return 0;
}

/* Pause the workers, check the whole buffer, resume; false on corruption. */
static bool mo_checkpoint(struct __test_metadata *_metadata,
			  FIXTURE_DATA(integrity) *self, const char *when)
{
	long bad;

	mo_pause(&self->ctl);
	bad = mo_verify_all(_metadata, &self->buf, self->ctl.gens, when);
	if (mo_workers_failed(_metadata, &self->ctl))
		bad++;
	mo_resume(&self->ctl);
	return !bad;
}

/*
 * With @engine active and every reason batched, move the buffer around
 * all nodes MO_ROUNDS times, checking all of it after each move.
 */
static void mo_integrity_engine(struct __test_metadata *_metadata,
				FIXTURE_DATA(integrity) *self, const char *engine,
				unsigned long rounds)
{
	unsigned long r, ops = mo_worker_ops(&self->ctl);
	int k, node, moves = 0, move_fails = 0;
	struct mo_vmstat a, b, d;
	char when[128];
	double secs = 0;

	ASSERT_EQ(0, mo_set_engine(engine)) {
		TH_LOG("selecting engine %s failed", engine);
	}
	ASSERT_EQ(0, mo_set_reasons("all"));
	ASSERT_EQ(0, mo_read_vmstat(&a));
	for (r = 0; r < rounds; r++) {
		for (k = 1; k <= self->nr_nodes; k++) {
			node = self->nodes[k % self->nr_nodes];
			snprintf(when, sizeof(when), "%s: round %lu, to node %d",
				 engine, r, node);
			if (mo_move(_metadata, &self->pages, node, when, &secs))
				move_fails++;
			moves++;
			ASSERT_TRUE(mo_checkpoint(_metadata, self, when));
		}
	}
	ASSERT_EQ(0, mo_read_vmstat(&b));
	mo_vmstat_delta(&a, &b, &d);
	ksft_print_msg("%s: %d moves of %zu MiB in %.3f s (%.0f MiB/s), %lu page writes\n",
		       engine, moves, self->buf.len >> 20, secs,
		       secs > 0 ? moves * (self->buf.len >> 20) / secs : 0.0,
		       mo_worker_ops(&self->ctl) - ops);
	mo_log_delta(engine, &d);
	EXPECT_EQ(0, move_fails);
	EXPECT_LT(0, d.v[MO_SUCCESS]);
	if (!strcmp(engine, "none")) {
		EXPECT_EQ(0, d.v[MO_COPIED]);
		EXPECT_EQ(0, d.v[MO_FALLBACK]);
		EXPECT_EQ(0, d.v[MO_WASTED]);
		return;
	}
	/* The batch path must have been used, and its books balance. */
	EXPECT_LT(0, d.v[MO_COPIED]);
	if (!mo_noise(&d))
		EXPECT_EQ(d.v[MO_COPIED], d.v[MO_SUCCESS] + d.v[MO_WASTED]);
}

TEST_F_TIMEOUT(integrity, move_pages, 900)
{
	unsigned long rounds = mo_env("MO_ROUNDS", 3, 1, 1000);
	size_t pmd = mo_pmd_size(), bytes, pg;
	int ret, advice = 0, share, i;
	bool huge;
	struct mo_engines run;
	char nodes[256];

	bytes = variant->folio_kb ? variant->folio_kb << 10 : pmd;
	if (bytes < psize() || bytes > pmd)
		SKIP(return, "%zukB folios do not exist here", bytes >> 10);
	huge = bytes > psize();
	if (self->nr_nodes < 2)
		SKIP(return, "fewer than two nodes with %zu MiB free",
		     (self->len + self->len / 2) >> 20);
	ASSERT_EQ(0, mo_pick_engines(_metadata, &run));

	switch (variant->backing) {
	case MO_ANON:
		ret = mo_set_anon_folio(bytes);
		if (ret == -ENOENT)
			SKIP(return, "no %zukB anonymous mTHP", bytes >> 10);
		ASSERT_EQ(0, ret);
		advice = huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
		break;
	case MO_SHMEM:
		ret = mo_set_shmem_folio(pmd, huge);
		if (ret == -ENOENT)
			SKIP(return, "no shmem THP");
		ASSERT_EQ(0, ret);
		advice = huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
		break;
	case MO_TMPFS:
		ret = mo_mount_tmpfs(self->tmpfs, sizeof(self->tmpfs),
				     2 * self->len, huge);
		if (ret == -EINVAL && huge)
			SKIP(return, "tmpfs does not take huge=always");
		ASSERT_EQ(0, ret) {
			TH_LOG("mounting a tmpfs: %s", strerror(-ret));
		}
		break;
	}
	ASSERT_EQ(0, mo_buf_alloc(&self->buf, variant->backing, self->len, advice,
				  self->tmpfs));
	for (pg = 0; pg < self->buf.npages; pg++)
		mo_fill_page(&self->buf, pg, 0);

	share = mo_folio_share(&self->buf, bytes / psize());
	if (share < 0 && huge)
		SKIP(return, "cannot read folio sizes: %s", strerror(-share));
	if (share >= 0 && share < 50)
		SKIP(return, "only %d%% of the buffer in %zukB folios", share,
		     bytes >> 10);
	nodes[0] = '\0';
	for (i = 0; i < self->nr_nodes; i++)
		snprintf(nodes + strlen(nodes), sizeof(nodes) - strlen(nodes),
			 "%s%d", i ? " -> " : "", self->nodes[i]);
	ksft_print_msg("%zu MiB, %d%% in %zukB folios, %d workers, %lu rounds of nodes %s -> %d\n",
		       self->len >> 20, share, bytes >> 10, MO_NR_WORKERS, rounds,
		       nodes, self->nodes[0]);

	ASSERT_EQ(0, mo_pages_init(&self->pages, &self->buf));
	ASSERT_EQ(0, mo_workers_start(&self->ctl, &self->buf));
	ASSERT_EQ(0, mo_set_engine(run.name[0]));
	ASSERT_EQ(0, mo_set_reasons("all"));
	EXPECT_EQ(0, mo_move(_metadata, &self->pages, self->nodes[0], "placement",
			     NULL));
	ASSERT_TRUE(mo_checkpoint(_metadata, self, "placement"));

	for (i = 0; i < run.nr; i++)
		mo_integrity_engine(_metadata, self, run.name[i], rounds);

	mo_workers_stop(&self->ctl);
	ASSERT_FALSE(mo_workers_failed(_metadata, &self->ctl));
	ASSERT_EQ(0, mo_verify_all(_metadata, &self->buf, self->ctl.gens, "end"));
	share = mo_folio_share(&self->buf, bytes / psize());
	ksft_print_msg("at the end: %d%% in %zukB folios\n", share, bytes >> 10);
}

/* ---------------------------------------------------------------------- */

static bool mo_listing(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-l") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int nodes[MO_MAX_NODES];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mo_listing(argc, argv))
		return test_harness_run(argc, argv);

	if (access(MO_SYSFS, F_OK)) {
		ksft_print_header();
		ksft_exit_skip("%s not present: kernel without migrate_offload\n",
			       MO_SYSFS);
	}
	if (geteuid()) {
		ksft_print_header();
		ksft_exit_skip("must be run as root\n");
	}
	if (mo_mem_nodes(nodes, MO_MAX_NODES, 0) < 2) {
		ksft_print_header();
		ksft_exit_skip("fewer than two NUMA nodes with memory\n");
	}
	if (mo_save_state(&mo_saved_state)) {
		ksft_print_header();
		ksft_exit_fail_msg("%s is malformed\n", MO_SYSFS);
	}
	mo_save_knobs(&mo_saved_knobs);
	mo_main_pid = getpid();
	atexit(mo_restore_at_exit);

	return test_harness_run(argc, argv);
}
