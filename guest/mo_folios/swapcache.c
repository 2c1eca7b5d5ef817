// SPDX-License-Identifier: GPL-2.0
/*
 * swapcache: anon folios that are in the swap cache while mapped. Paged
 * out, then MADV_WILLNEED reads them into the swap cache and read faults
 * map them from there (a synchronous device's swap-in would otherwise
 * bypass the swap cache), where they stay while swap is not half full
 * (vm_swap_full() frees the swap cache on swap-in).
 */

#include "common.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
/* /proc/kpageflags bit (uapi kernel-page-flags.h) */
#define KPF_SWAPCACHE 13

static void swap_space(void)
{
	long long size, used, total = 0, in_use = 0, need = buf_len >> 10;
	char line[512];
	int devices = 0;
	FILE *f = fopen("/proc/swaps", "r");

	if (!f)
		die("/proc/swaps");
	if (!fgets(line, sizeof(line), f))	/* the header */
		die("/proc/swaps");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %lld %lld", &size, &used) == 2) {
			devices++;
			total += size;
			in_use += used;
		}
	fclose(f);
	if (!devices)
		unsupported("no swap in /proc/swaps (swapon a device or file)", ENODEV);
	if ((total - in_use - need) * 2 < total) {
		fprintf(stderr, "mo_folios: swap too small: %lld KiB used of %lld, and %lld KiB more must leave it at most half full\n",
			in_use, total, need);
		exit(2);
	}
}

void kind_swapcache(void)
{
	size_t swapped = 0, cached, after, p;
	uint8_t *buf;
	uint64_t *pm;

	swap_space();
	buf = filled_buf();
	/* Also drains every CPU's LRU batches, which MADV_PAGEOUT would skip. */
	place(buf, buf_len, MPOL_MF_MOVE);
	if (madvise(buf, buf_len, MADV_PAGEOUT))
		die("madvise(MADV_PAGEOUT)");
	pm = pagemap_of(buf, buf_len);
	for (p = 0; p < npages; p++)
		swapped += PM_SWAP(pm[p]) && !PM_PRESENT(pm[p]);
	free(pm);
	printf("swapped_out=%zu\n", swapped);
	if (swapped <= npages / 2)
		fail("MADV_PAGEOUT swapped out only %zu of %zu pages", swapped, npages);

	prefer(from_node);
	if (madvise(buf, buf_len, MADV_WILLNEED))
		die("madvise(MADV_WILLNEED)");
	check(buf, 0, buf_len, 1, "after the swap-in");
	prefer(-1);
	cached = count_kpf(buf, buf_len, 1ULL << KPF_SWAPCACHE);
	printf("swapcache_pages=%zu\n", cached);
	if (cached <= npages / 2)
		fail("only %zu of %zu pages in the swap cache before the move", cached,
		     npages);

	/* Swapped in on --from (the policy above): no placement move of the kind. */
	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE, "");
	check(buf, 0, buf_len, 1, "after the move");
	after = count_kpf(buf, buf_len, 1ULL << KPF_SWAPCACHE);
	printf("swapcache_after=%zu\n", after);
	if (after < cached)
		fail("%zu of %zu swap-cache pages left the swap cache in the move",
		     cached - after, cached);
}

