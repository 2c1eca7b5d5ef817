// SPDX-License-Identifier: GPL-2.0
/* mlock: mlocked folios must stay mlocked through the move. */
#include "common.h"

/* /proc/kpageflags bit (not in the uapi header: linux/kernel-page-flags.h) */
#define KPF_MLOCKED 33

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
void kind_mlock(void)
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

