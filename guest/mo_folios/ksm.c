// SPDX-License-Identifier: GPL-2.0
/*
 * ksm: page i holds content KSM_SEED(i) at offset 0 of the pattern, so 8
 * contents are each duplicated npages/8 times and KSM merges them into 8
 * KSM folios, each mapped many times: MPOL_MF_MOVE_ALL moves them.
 */

#include "common.h"

#define KSM "/sys/kernel/mm/ksm/"
/* ksm: 8 distinct page contents, each page a copy of one of them */
#define KSM_SEED(i) (1 + (i) % 8)
#define KSM_COW_SEED 1000
/* 8 contents, a KSM page shares at most max_page_sharing (256) mappings. */
#define KSM_MAX_FRAMES 16

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

void kind_ksm(void)
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

