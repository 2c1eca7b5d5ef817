// SPDX-License-Identifier: GPL-2.0
/*
 * tiering: kswapd demotes, NUMA balancing promotes, a task works on a hot
 * window that moves through its working set (see usage()).
 */
#include "common.h"

#ifndef MPOL_F_NUMA_BALANCING
#define MPOL_F_NUMA_BALANCING (1 << 13)	/* 5.12 */
#endif

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
	/* the node counters' per-CPU parts folded in: exact at this moment */
	write_file("/proc/sys/vm/stat_refresh", "1");
	memset(s, 0, sizeof(*s));
	read_vmstat(tier_keys, NR_TIER_KEYS, s->v, s->have);
	read_cpu_stat(s->st);
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

static void run_tiering_one(int rep)
{
	unsigned long mask[NODE_MASK_LONGS] = { 0 };
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
	cpu_set_t allowed;
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
	if (pin_to_cpu(cpu))
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
	node_mask_set(mask, fast);
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
		j_num(&j, "machine_sys_s", jiffies_s(st_sys(a.st, b.st)));
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

void run_tiering(void)
{
	int rep;

	need_root();
	for (rep = opt.first_rep; rep < opt.first_rep + mode_reps(); rep++)
		run_tiering_one(rep);
}
