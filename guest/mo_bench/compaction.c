// SPDX-License-Identifier: GPL-2.0
/*
 * compaction: hugepages (or a full compaction) on a node that was filled
 * with 4K pages and fragmented, with the migration it takes, timed.
 */
#include "common.h"

#include <sys/wait.h>

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
	unsigned long mask[NODE_MASK_LONGS] = { 0 };
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
	node_mask_set(mask, opt.node);
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
		double sys = jiffies_s(st_sys(a.st, b.st));
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
		j_num(&j, "sys_pct", tot > 0 ? 100.0 * st_sys(a.st, b.st) / tot : NAN);
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

void run_compaction(void)
{
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
	if (pin_to_cpu(cpu))
		fatal(EXIT_USAGE, "cannot run on CPU %d: %s", cpu, strerror(errno));
	for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++)
		run_compaction_one(rep, cpu);
}
