// SPDX-License-Identifier: GPL-2.0
/*
 * The reader times its reads of page 0. It keeps the NR_GAPS longest gaps
 * between consecutive reads since the move began, and the gaps during which
 * it took a page fault (a read that hit page 0's migration entry and waited
 * for the page to be mapped again at its destination): only gaps longer
 * than a few read periods are checked, with getrusage(RUSAGE_THREAD).
 * Afterwards the gaps overlapping the move are picked out (the reader
 * learns when the move ended only later).
 */
#include "common.h"

#include <stdatomic.h>

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

	if (r->cpu >= 0)
		pin_to_cpu(r->cpu);
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

void run_latency(void)
{
	int main_cpu, reader_cpu;

	need_root();
	need_nodes(opt.from, opt.to);
	pick_cpus(&main_cpu, &reader_cpu);
	if (main_cpu >= 0 && pin_to_cpu(main_cpu))
		fatal(EXIT_USAGE, "cannot run on CPU %d: %s", main_cpu, strerror(errno));
	if (reader_cpu < 0)
		note("latency: one CPU only: the reader shares it with the mover");

	latency_sizes(4, &opt.pages, page_size, "pages", main_cpu, reader_cpu);
	latency_sizes(2048, &opt.folios, PMD_SIZE, "folios", main_cpu,
		      reader_cpu);
}
