// SPDX-License-Identifier: GPL-2.0
/*
 * tput: one timed move_pages() of a fresh buffer per folio size and
 * repetition; count: the same with 2M folios, per number of folios.
 */
#include "common.h"

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

void run_tput(void)
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

void run_count(void)
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
