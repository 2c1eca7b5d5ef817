// SPDX-License-Identifier: GPL-2.0
/*
 * mo_migrate: move a buffer between NUMA nodes with move_pages(2), check
 * every byte, and report what the kernel's migration counters did.
 *
 *   mo_migrate [options]            one move of a fresh buffer, then report
 *   mo_migrate --storm SECONDS ...  threads keep moving it around the nodes
 *                                   while other threads keep rewriting it
 *
 * Used by the engine test suites of the migrate-offload lab; runs unchanged
 * on any NUMA machine (as root, for the mTHP sysfs files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lib/mo_pages.h"
#include "lib/mo_pattern.h"

#define MAX_NODES 8

static size_t page_size;
static size_t buf_len = 16 << 20;
static size_t folio_kb = 4;
static int from_node;
static int to_node = 1;
static int nr_threads = 2;
static double storm_secs;
static bool shmem;
static bool no_move;
static bool fail_moves;
static bool use_mbind;
static int nodes[MAX_NODES];
static int nr_nodes;
static const char *node_list;

static const char *const stat_names[] = {
	"pgmigrate_success", "pgmigrate_fail", "pgmigrate_batch_copied",
	"pgmigrate_batch_fallback", "pgmigrate_batch_wasted",
};
#define NR_STATS (sizeof(stat_names) / sizeof(stat_names[0]))

static void die(const char *what)
{
	fprintf(stderr, "mo_migrate: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void usage(int code)
{
	printf("usage: mo_migrate [options]\n"
	       "  -s, --size MB        buffer size (default 16)\n"
	       "  -f, --folio KB       folio size: 4 or an mTHP size (default 4);\n"
	       "                       sets hugepages-<KB>kB/enabled=always, others never\n"
	       "      --shmem          a shared anonymous (shmem) buffer instead of private anon\n"
	       "      --from NODE      node the buffer starts on (default 0)\n"
	       "      --to NODE        node to move it to (default 1)\n"
	       "      --storm SECONDS  keep moving it around the memory nodes with\n"
	       "                       --threads mover threads while as many writer\n"
	       "                       threads rewrite it page by page, each page\n"
	       "                       checked against its last generation before\n"
	       "                       every rewrite, for SECONDS or until SIGTERM;\n"
	       "                       SIGUSR1 closes a window (see storm_windows)\n"
	       "      --nodes LIST     the nodes a storm moves it around (comma\n"
	       "                       separated, 2 or more; default all)\n"
	       "  -t, --threads N      movers, and writers (default 2)\n"
	       "      --no-move        --storm without movers: the writers rewrite a\n"
	       "                       buffer placed on --from while something else\n"
	       "                       (memory offlining, compaction) migrates it\n"
	       "      --mbind          the measured move by mbind(MPOL_MF_MOVE): one\n"
	       "                       migrate_pages() call for the whole buffer, where\n"
	       "                       move_pages() of large folios migrates them one\n"
	       "                       at a time (6.12) and stops at the first failure\n"
	       "      --fail-moves     the measured move runs with make-it-fail set,\n"
	       "                       for fault injection with task-filter=Y\n"
	       "Prints key=value lines; exit 0 if every byte survived, 1 if not,\n"
	       "2 on a setup error.\n");
	exit(code);
}

static void read_stats(long long *v)
{
	char name[128];
	long long val;
	FILE *f = fopen("/proc/vmstat", "r");
	size_t i;

	if (!f)
		die("/proc/vmstat");
	for (i = 0; i < NR_STATS; i++)
		v[i] = -1;
	while (fscanf(f, "%127s %lld", name, &val) == 2)
		for (i = 0; i < NR_STATS; i++)
			if (!strcmp(name, stat_names[i]))
				v[i] = val;
	fclose(f);
	/* An absent counter must not read as "nothing happened". */
	for (i = 0; i < NR_STATS; i++)
		if (v[i] < 0) {
			fprintf(stderr, "mo_migrate: /proc/vmstat has no %s\n", stat_names[i]);
			exit(2);
		}
}

/*
 * Only @kb-sized folios (none if 4): anonymous ones, or with --shmem
 * shmem ones (per-size shmem_enabled, 6.11+; the PMD size inherits the
 * global shmem_enabled).
 */
static void set_folio_size(size_t kb)
{
	static const size_t sizes[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
	char path[256];
	size_t i;
	bool found = kb == 4;

	set_setting("/sys/kernel/mm/transparent_hugepage/enabled", "madvise");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/transparent_hugepage/hugepages-%zukB/enabled",
			 sizes[i]);
		if (!set_setting(path, sizes[i] == kb && !shmem ? "always" : "never") &&
		    sizes[i] == kb && !shmem)
			found = true;
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/transparent_hugepage/hugepages-%zukB/shmem_enabled",
			 sizes[i]);
		if (!set_setting(path, sizes[i] == 2048 ? "inherit" :
				sizes[i] == kb && shmem ? "always" : "never") &&
		    sizes[i] == kb && shmem)
			found = true;
	}
	/* The PMD size follows the global knob, the only one before 6.11. */
	if (shmem && kb == 2048)
		found = true;
	set_setting("/sys/kernel/mm/transparent_hugepage/shmem_enabled",
		   kb == 2048 ? "always" : "never");
	if (!found) {
		fprintf(stderr, "mo_migrate: no %zukB folio size here\n", kb);
		exit(2);
	}
}

/*
 * The buffer holds the pattern of guest/lib/mo_pattern.h with a generation
 * number as seed: 0 after the fill, then per page the generation its writer
 * wrote last; no two generations give the same word at the same offset, so
 * a stale copy of a page never passes for the current one.
 */
static void fill(uint8_t *buf, size_t base, size_t len, unsigned int gen)
{
	mo_pattern_fill(buf, base, len, gen);
}

/* Number of bad bytes; reports the first. */
static size_t check(const uint8_t *buf, size_t base, size_t len,
		    unsigned int gen, const char *when)
{
	struct mo_bad first = { 0 };
	size_t bad = mo_pattern_verify(buf, base, len, gen, &first);

	if (bad)
		printf("corrupt: %s: byte %zu is %#x, want %#x\n",
		       when, first.off, first.got, first.want);
	return bad;
}

/*
 * Move the pages at @addr to @node (or, !@do_move, only look); returns the
 * pages now on @node.
 */
/* Pages whose status from the move_pages() call itself was not the node. */
static long move_status_off = -1;

static size_t move_or_query(uint8_t *addr, size_t len, int node, size_t *busy,
			    bool do_move)
{
	size_t n = len / page_size, i, on = 0;
	void **pages = malloc(n * sizeof(*pages));
	int *nodev = malloc(n * sizeof(*nodev));
	int *status = malloc(n * sizeof(*status));

	if (!pages || !nodev || !status)
		die("malloc");
	for (i = 0; i < n; i++) {
		pages[i] = addr + i * page_size;
		nodev[i] = node;
		status[i] = INT32_MIN;
	}
	if (do_move) {
		if (move_pages(0, n, pages, nodev, status, MPOL_MF_MOVE) < 0)
			die("move_pages");
		move_status_off = 0;
		for (i = 0; i < n; i++)
			move_status_off += status[i] != node;
	}
	if (move_pages(0, n, pages, NULL, status, 0) < 0)
		die("move_pages(query)");
	for (i = 0; i < n; i++)
		on += status[i] == node;
	if (busy)
		*busy = n - on;
	free(pages);
	free(nodev);
	free(status);
	return on;
}

static size_t move(uint8_t *addr, size_t len, int node, size_t *busy)
{
	return move_or_query(addr, len, node, busy, true);
}

static bool node_exists(int n)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", n);
	return n >= 0 && n < MAX_NODES && !access(path, R_OK);
}

/* Every memory node, or those of --nodes (each must exist). */
static void find_nodes(void)
{
	char *list, *tok, *end;
	int n;

	if (!node_list) {
		for (n = 0; n < MAX_NODES; n++)
			if (node_exists(n))
				nodes[nr_nodes++] = n;
	} else {
		list = strdup(node_list);
		if (!list)
			die("strdup");
		for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
			n = strtol(tok, &end, 10);
			if (*end || end == tok || !node_exists(n) || nr_nodes == MAX_NODES) {
				fprintf(stderr, "mo_migrate: --nodes %s: '%s' is not a memory node\n",
					node_list, tok);
				exit(2);
			}
			nodes[nr_nodes++] = n;
		}
		free(list);
	}
	if (nr_nodes < 2) {
		fprintf(stderr, "mo_migrate: needs 2 or more memory nodes, found %d\n",
			nr_nodes);
		exit(2);
	}
}

static uint8_t *alloc_buf(void)
{
	int flags = shmem ? MAP_SHARED | MAP_ANONYMOUS : MAP_PRIVATE | MAP_ANONYMOUS;
	uint8_t *buf = mmap(NULL, buf_len, PROT_READ | PROT_WRITE, flags, -1, 0);

	if (buf == MAP_FAILED)
		die("mmap");
	if (folio_kb > 4 && madvise(buf, buf_len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	return buf;
}

struct storm {
	uint8_t *buf;
	size_t off, len;
	int id;
	/*
	 * Mover: a move adds to these under @lock, so that main (closing a
	 * window) never sees its pages asked without its pages moved.
	 */
	pthread_mutex_t lock;
	unsigned long moves, pages_asked, pages_moved, errors;
	/* Writer: the generation each page of the slice holds now. */
	unsigned int *gens;
	unsigned long writes;
	size_t bad;
};

static volatile sig_atomic_t stop;

/*
 * Each mover owns a slice and keeps moving it on to the next node. Counts
 * the pages asked to move (those not on the target already) and those that
 * did (on the target now); a failed move_pages() call is an error.
 */
static void *mover_fn(void *arg)
{
	struct storm *s = arg;
	size_t n = s->len / page_size, i, asked, moved;
	void **pages = malloc(n * sizeof(*pages));
	int *nodev = malloc(n * sizeof(*nodev));
	int *status = malloc(n * sizeof(*status));
	int *where = malloc(n * sizeof(*where));
	int k = s->id;

	if (!pages || !nodev || !status || !where)
		die("malloc");
	for (i = 0; i < n; i++)
		pages[i] = s->buf + s->off + i * page_size;
	if (move_pages(0, n, pages, NULL, where, 0) < 0)
		die("move_pages(query)");
	while (!stop) {
		int node = nodes[k++ % nr_nodes];

		for (i = 0; i < n; i++)
			nodev[i] = node;
		if (move_pages(0, n, pages, nodev, status, MPOL_MF_MOVE) < 0 ||
		    move_pages(0, n, pages, NULL, status, 0) < 0) {
			pthread_mutex_lock(&s->lock);
			if (++s->errors == 1)
				printf("error: mover %d, move to node %d: %s\n",
				       s->id, node, strerror(errno));
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		for (i = asked = moved = 0; i < n; i++) {
			asked += where[i] != node;
			moved += status[i] == node && where[i] != node;
			where[i] = status[i];
		}
		pthread_mutex_lock(&s->lock);
		s->pages_asked += asked;
		s->pages_moved += moved;
		s->moves++;
		pthread_mutex_unlock(&s->lock);
	}
	free(pages);
	free(nodev);
	free(status);
	free(where);
	return NULL;
}

/*
 * Each writer owns a slice and rewrites it page by page, forever, while
 * the movers migrate it: before a page gets its next generation, every
 * byte of it must still hold the last generation written to it.
 */
static void *writer_fn(void *arg)
{
	struct storm *s = arg;
	size_t n = s->len / page_size, p;
	char when[64];

	while (!stop && !s->bad) {
		for (p = 0; p < n && !stop; p++) {
			size_t off = s->off + p * page_size;

			snprintf(when, sizeof(when), "writer %d, generation %u",
				 s->id, s->gens[p]);
			s->bad += check(s->buf + off, off, page_size, s->gens[p], when);
			if (s->bad)
				break;
			fill(s->buf + off, off, page_size, ++s->gens[p]);
			/*
			 * A pause every 32 pages leaves CPU time to the movers
			 * and to whatever the suite does meanwhile (under
			 * emulation all vCPUs share one host thread), while
			 * the writes keep reaching pages under migration.
			 */
			if (!(++s->writes % 32))
				nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
		}
	}
	return NULL;
}

/* Pages asked to move and moved so far by all movers (while they run). */
static void pages_so_far(struct storm *st, unsigned long *asked,
			 unsigned long *moved)
{
	int i;

	*asked = *moved = 0;
	for (i = 0; i < nr_threads; i++) {
		pthread_mutex_lock(&st[i].lock);
		*asked += st[i].pages_asked;
		*moved += st[i].pages_moved;
		pthread_mutex_unlock(&st[i].lock);
	}
}

/*
 * Movers and writers on the same slices until SIGTERM/SIGINT or the time is
 * up. Each SIGUSR1 closes a window (the suite sends one per cycle of
 * whatever it does meanwhile): storm_empty_windows counts the windows in
 * which no page moved, storm_min_window_pages the fewest pages moved in one,
 * storm_min_window_moved_pct the lowest share of the pages asked in a
 * window that moved (0 if none was asked).
 */
static int run_storm(void)
{
	struct storm st[16];
	pthread_t mover[16], writer[16];
	struct timespec end, now, left;
	unsigned long windows = 0, empty = 0, min_win = ~0UL, min_pct = 100;
	unsigned long prev_asked = 0, prev_moved = 0, cur_asked, cur_moved, pct;
	unsigned long moves = 0, asked = 0, moved = 0, errors = 0, writes = 0;
	size_t slice, bad = 0, p;
	uint8_t *buf = alloc_buf();
	sigset_t sigs;
	int i, sig;

	if (nr_threads < 1 || nr_threads > 16)
		usage(2);
	slice = buf_len / nr_threads / page_size * page_size;
	for (i = 0; i < nr_threads; i++) {
		st[i] = (struct storm){ .buf = buf, .off = i * slice, .len = slice, .id = i };
		pthread_mutex_init(&st[i].lock, NULL);
		st[i].gens = calloc(slice / page_size, sizeof(*st[i].gens));
		if (!st[i].gens)
			die("calloc");
		fill(buf + st[i].off, st[i].off, slice, 0);
	}
	/* Only the main thread takes these, with sigtimedwait(). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	for (i = 0; i < nr_threads; i++)
		if ((!no_move && pthread_create(&mover[i], NULL, mover_fn, &st[i])) ||
		    pthread_create(&writer[i], NULL, writer_fn, &st[i]))
			die("pthread_create");
	printf("storm_ready=1\n");
	fflush(stdout);

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)storm_secs;
	end.tv_nsec += (long)((storm_secs - (time_t)storm_secs) * 1e9);
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			break;
		sig = sigtimedwait(&sigs, NULL, &left);
		if (sig < 0 && errno == EINTR)
			continue;
		if (sig != SIGUSR1)
			break;	/* SIGTERM, SIGINT or time up */
		pages_so_far(st, &cur_asked, &cur_moved);
		windows++;
		empty += cur_moved == prev_moved;
		if (cur_moved - prev_moved < min_win)
			min_win = cur_moved - prev_moved;
		pct = cur_asked == prev_asked ? 0 :
		      (cur_moved - prev_moved) * 100 / (cur_asked - prev_asked);
		if (pct < min_pct)
			min_pct = pct;
		prev_asked = cur_asked;
		prev_moved = cur_moved;
	}
	stop = 1;
	for (i = 0; i < nr_threads; i++) {
		if (!no_move)
			pthread_join(mover[i], NULL);
		pthread_join(writer[i], NULL);
		moves += st[i].moves;
		asked += st[i].pages_asked;
		moved += st[i].pages_moved;
		errors += st[i].errors;
		writes += st[i].writes;
	}
	/* Every page must hold the generation its writer wrote last. */
	for (i = 0; i < nr_threads; i++) {
		bad += st[i].bad;
		for (p = 0; !st[i].bad && p < slice / page_size; p++) {
			size_t off = st[i].off + p * page_size;

			bad += check(buf + off, off, page_size, st[i].gens[p],
				     "at the end");
		}
	}
	printf("storm_moves=%lu\nstorm_pages_asked=%lu\nstorm_pages_moved=%lu\n"
	       "storm_move_errors=%lu\nstorm_page_writes=%lu\n",
	       moves, asked, moved, errors, writes);
	printf("storm_windows=%lu\nstorm_empty_windows=%lu\nstorm_min_window_pages=%lu\n"
	       "storm_min_window_moved_pct=%lu\n",
	       windows, empty, windows ? min_win : 0, windows ? min_pct : 0);
	printf("bad_bytes=%zu\nbytes_checked=%llu\n", bad, mo_bytes_checked);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "folio", required_argument, NULL, 'f' },
		{ "shmem", no_argument, NULL, 'S' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "storm", required_argument, NULL, 'x' },
		{ "threads", required_argument, NULL, 't' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "no-move", no_argument, NULL, 'N' },
		{ "fail-moves", no_argument, NULL, 'M' },
		{ "mbind", no_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	long long before[NR_STATS], after[NR_STATS];
	size_t i, on, busy, bad;
	double share, share_after;
	unsigned long mask;
	struct timespec t0, t1;
	uint8_t *buf;
	int c;

	page_size = sysconf(_SC_PAGESIZE);
	/* A storm is stopped by SIGTERM: its THP settings must go back too. */
	restore_settings_at_exit();
	while ((c = getopt_long(argc, argv, "s:f:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': buf_len = strtoul(optarg, NULL, 0) << 20; break;
		case 'f': folio_kb = strtoul(optarg, NULL, 0); break;
		case 'S': shmem = true; break;
		case 'F': from_node = atoi(optarg); break;
		case 'T': to_node = atoi(optarg); break;
		case 'x': storm_secs = strtod(optarg, NULL); break;
		case 't': nr_threads = atoi(optarg); break;
		case 'n': node_list = optarg; break;
		case 'N': no_move = true; break;
		case 'M': fail_moves = true; break;
		case 'B': use_mbind = true; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (!buf_len || folio_kb < 4)
		usage(2);
	find_nodes();
	set_folio_size(folio_kb);
	if (no_move && storm_secs <= 0)
		usage(2);
	if (storm_secs > 0) {
		/* Without movers, the buffer stays where it is faulted in. */
		mask = 1UL << from_node;
		if (no_move && set_mempolicy(MPOL_BIND, &mask, sizeof(mask) * 8))
			die("set_mempolicy");
		return run_storm();
	}

	/*
	 * Fault the buffer in on --from, so that the placement move moves
	 * nothing as a rule and counters read around the whole run (as the
	 * suites read the engines' own) are those of the measured move.
	 */
	mask = 1UL << from_node;
	if (set_mempolicy(MPOL_PREFERRED, &mask, sizeof(mask) * 8))
		die("set_mempolicy");
	buf = alloc_buf();
	fill(buf, 0, buf_len, 0);
	if (set_mempolicy(MPOL_DEFAULT, NULL, 0))
		die("set_mempolicy(default)");
	on = move(buf, buf_len, from_node, NULL);
	if (on != buf_len / page_size)
		printf("note: only %zu of %zu pages placed on node %d\n", on,
		       buf_len / page_size, from_node);
	/* A "2048K" move of 4K pages would test something else. */
	share = folio_share(buf, buf_len, folio_kb);
	printf("folio_share=%.1f\n", share);
	if (!(share >= 90)) {
		fprintf(stderr, "mo_migrate: only %.1f%% of the buffer in %zuK folios (90%% needed)\n",
			share, folio_kb);
		return 2;
	}

	/* Only the measured move: the placement move must not use up faults. */
	if (fail_moves && write_file("/proc/thread-self/make-it-fail", "1"))
		die("/proc/thread-self/make-it-fail (needs CONFIG_FAULT_INJECTION)");
	read_stats(before);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (use_mbind) {
		/* Without MPOL_MF_STRICT: pages that stay are counted below. */
		mask = 1UL << to_node;
		if (mbind(buf, buf_len, MPOL_BIND, &mask, sizeof(mask) * 8, MPOL_MF_MOVE))
			die("mbind(MPOL_MF_MOVE)");
		on = move_or_query(buf, buf_len, to_node, &busy, false);
	} else {
		on = move(buf, buf_len, to_node, &busy);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	read_stats(after);
	if (fail_moves && write_file("/proc/thread-self/make-it-fail", "0"))
		die("/proc/thread-self/make-it-fail");
	bad = check(buf, 0, buf_len, 0, "after the move");
	share_after = folio_share(buf, buf_len, folio_kb);

	printf("pages=%zu\nmoved=%zu\nnot_moved=%zu\nbad_bytes=%zu\nbytes_checked=%llu\n",
	       buf_len / page_size, on, busy, bad, mo_bytes_checked);
	/* The move keeps folio sizes: a batch path that split them shows. */
	printf("folio_share_after=%.1f\n", share_after);
	if (!(share_after >= 90)) {
		printf("corrupt: only %.1f%% of the buffer in %zuK folios after the move\n",
		       share_after, folio_kb);
		bad++;
	}
	/* e.g. -EBUSY for a page that moved (6.12: one per large folio) */
	if (!use_mbind)
		printf("move_status_off=%ld\n", move_status_off);
	printf("seconds=%.6f\n", t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (i = 0; i < NR_STATS; i++)
		printf("%s=%lld\n", stat_names[i], after[i] - before[i]);
	return bad ? 1 : 0;
}
