// SPDX-License-Identifier: GPL-2.0
/*
 * alias: is the (emulated) machine's TLB direct-mapped? Word copies 2M
 * apart and shifted, by one CPU and by two (see run_alias()).
 */
#include "common.h"

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
void run_alias(void)
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
