/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a buffer's pages are and how they are grouped, for the guest
 * programs (mo_migrate, mo_bench, mo_folios): /proc/self/pagemap and
 * /proc/kpageflags (root, CONFIG_PROC_PAGE_MONITOR); and write_file() and
 * set_setting() (put back at exit) for their sysfs and sysctl settings.
 * Pure helpers are static inline here; the saved settings are state that
 * every .c file of a program must share, so they and the functions that
 * use them live in mo_state.c, which every program links.
 */
#ifndef MO_PAGES_H
#define MO_PAGES_H

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/kpageflags bits (include/uapi/linux/kernel-page-flags.h) */
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16

/* Per-page /proc/self/pagemap entries of [@p, @p + @len), or NULL. */
static inline uint64_t *read_pagemap(const void *p, size_t len)
{
	size_t psize = sysconf(_SC_PAGESIZE), n = len / psize, done = 0;
	uint64_t *ent = malloc(n * sizeof(*ent));
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0 || !ent) {
		if (fd >= 0)
			close(fd);
		free(ent);
		return NULL;
	}
	while (done < n) {
		off_t off = ((uintptr_t)p / psize + done) * sizeof(*ent);
		ssize_t r = pread(fd, ent + done, (n - done) * sizeof(*ent), off);

		if (r <= 0) {
			close(fd);
			free(ent);
			return NULL;
		}
		done += r / sizeof(*ent);
	}
	close(fd);
	return ent;
}

#define PM_PFN(e) ((e) & ((1ULL << 55) - 1))
#define PM_PRESENT(e) (((e) >> 63) & 1)

struct kpf_cache {
	int fd;
	uint64_t base, n;
	uint64_t v[512];
};

static inline int kpf_get(struct kpf_cache *c, uint64_t pfn, uint64_t *flags)
{
	if (pfn < c->base || pfn >= c->base + c->n) {
		ssize_t r;

		c->base = pfn & ~511ULL;
		r = pread(c->fd, c->v, sizeof(c->v), c->base * 8);
		if (r < 8 || (pfn - c->base) >= (uint64_t)r / 8) {
			c->n = 0;
			return -1;
		}
		c->n = r / 8;
	}
	*flags = c->v[pfn - c->base];
	return 0;
}

/*
 * Percentage of the buffer's pages that sit in folios of exactly @kb
 * (pagemap + kpageflags); NaN when that cannot be read (no root, no
 * CONFIG_PROC_PAGE_MONITOR).
 */
static inline double folio_share(const void *p, size_t len, long kb)
{
	size_t psize = sysconf(_SC_PAGESIZE);
	size_t n = len / psize, i = 0, match = 0, want = kb * 1024 / psize;
	uint64_t *pm = read_pagemap(p, len), fl;
	struct kpf_cache c = { .n = 0 };

	if (!pm)
		return NAN;
	c.fd = open("/proc/kpageflags", O_RDONLY);
	if (c.fd < 0) {
		free(pm);
		return NAN;
	}
	while (i < n) {
		uint64_t pfn = PM_PFN(pm[i]);
		size_t j;

		if (!PM_PRESENT(pm[i])) {
			i++;
			continue;
		}
		if (!pfn || kpf_get(&c, pfn, &fl)) {	/* PFNs hidden */
			match = SIZE_MAX;
			break;
		}
		if (fl & (1ULL << KPF_COMPOUND_HEAD)) {
			for (j = i + 1; j < n; j++) {
				uint64_t t;

				if (!PM_PRESENT(pm[j]) || PM_PFN(pm[j]) != pfn + (j - i) ||
				    kpf_get(&c, PM_PFN(pm[j]), &t) ||
				    !(t & (1ULL << KPF_COMPOUND_TAIL)))
					break;
			}
			if (j - i == want)
				match += j - i;
			i = j;
		} else {
			if (!(fl & (1ULL << KPF_COMPOUND_TAIL)) && want == 1)
				match++;
			i++;
		}
	}
	close(c.fd);
	free(pm);
	if (match == SIZE_MAX)
		return NAN;
	return 100.0 * match / n;
}

/* Write @val to a sysfs/procfs file; 0 or -errno. Async-signal-safe. */
static inline int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;
	int ret = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * set_setting(): write_file() to a sysfs/procfs setting whose first value
 * (of a choice file, "always [madvise] never", the active choice) is put
 * back by restore_settings(), last written first: a program leaves the
 * THP, KSM and sysctl settings as it found them, so that the next test
 * does not inherit its folio sizes (hmm-tests' migrations to device memory
 * fail on mTHP). restore_settings_at_exit() makes that happen at exit and
 * on SIGINT, SIGTERM and SIGHUP (a suite's timeout kills with SIGTERM).
 * Defined in mo_state.c: one table of saved settings per program.
 */

/* Called first by restore_settings(), e.g. to stop a helper process. */
extern void (*mo_before_restore)(void);

/* Puts every saved setting back; async-signal-safe (open, write, close). */
void restore_settings(void);
void restore_settings_at_exit(void);

/*
 * The value of a small file in @out (newline cut), or of a choice file its
 * active choice; 0 or -errno.
 */
static inline int read_setting(const char *path, char *out, size_t len)
{
	char buf[256], *a, *b;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	a = strchr(buf, '[');
	b = a ? strchr(a, ']') : NULL;
	if (a && b) {
		a++;
		*b = 0;
	} else {
		a = buf;
		a[strcspn(a, "\n")] = 0;
	}
	if (strlen(a) >= len)
		return -ENAMETOOLONG;
	strcpy(out, a);
	return 0;
}

/*
 * Write @val to @path, its first value recorded for restore_settings();
 * 0 or -errno. A value that cannot be recorded (unreadable, too long, too
 * many settings) is not written: nothing may change that is not put back.
 */
int set_setting(const char *path, const char *val);

#endif /* MO_PAGES_H */
