// SPDX-License-Identifier: GPL-2.0
/*
 * mo_bench: the migrate-offload benchmarks, guest side.
 *
 *   mo_bench tput       [opts]  move_pages() throughput per folio size
 *   mo_bench count      [opts]  throughput against the number of 2M folios
 *   mo_bench latency    [opts]  when does the first page become usable again
 *   mo_bench memcpy     [opts]  user-space memcpy bandwidth (the ceiling)
 *   mo_bench compaction [opts]  hugepage allocation on a fragmented node
 *   mo_bench alias      [opts]  is the (emulated) machine's TLB direct-mapped?
 *   mo_bench tiering    [opts]  kswapd demotes, NUMA balancing promotes, a
 *                               task works on a moving hot set
 *
 * Every measurement is one JSON object on one line of stdout (flat keys);
 * messages go to stderr. Runs on the lab's VM and unchanged on a bare-metal
 * NUMA machine, with or without the migrate-offload series (engine
 * "vanilla" when /sys/kernel/mm/migrate_offload does not exist).
 *
 * Exit status: 0 done, 1 a measurement failed (corrupted data, a failed
 * move), 2 usage or setup error, 4 skipped (e.g. fewer than two memory
 * nodes, not root).
 *
 * Files: main.c (options, dispatch), one per mode (tput.c: tput and
 * count; latency.c, memcpy.c, alias.c, compaction.c, tiering.c), move.c
 * (a buffer on a node and its timed move), system.c (vmstat, /proc/stat,
 * nodes, sysfs), hog.c (busy loops), json.c, common.c (messages,
 * buffers, CPUs) and common.h.
 */
#include "common.h"

#include <getopt.h>
#include <sys/utsname.h>

const char *const mode_names[] = {
	"tput", "count", "latency", "memcpy", "compaction", "alias", "tiering",
};

struct options opt = {
	.size_mb = 256, .from = 0, .to = 1, .reps = -1, .node = 1,
	.fill_pct = 80, .huge = -1, .cpu = -1, .threads = 1,
	.hot_pct = 25, .seconds = 20, .warmup_s = 5,
};

size_t page_size;
char engine[64];
char kernel_rel[128];
FILE *json_file;
int failures;

static void usage(FILE *f)
{
	fprintf(f,
"usage: mo_bench MODE [options]\n"
"\n"
"Benchmarks for batched/offloaded page migration. Each measurement prints\n"
"one JSON object per line on stdout (keys: mode, config, engine, folio_kb,\n"
"size_bytes, rep, then the measured values). Needs root for all modes but\n"
"memcpy. Changes THP settings and nr_hugepages, and switches automatic NUMA\n"
"balancing off, while it runs; restores them at exit (also on SIGINT/TERM).\n"
"\n"
"Modes:\n"
"  tput        move_pages() of a buffer from --from to --to, per folio size\n"
"              (--folio), --reps times, each rep with a fresh buffer: gbps,\n"
"              folio_share (percent of pages in folios of the requested size),\n"
"              bad_bytes (every byte checked), pages not moved by status and\n"
"              whether they really stayed behind, vmstat deltas, sys_s (system\n"
"              + irq + softirq time of the whole machine), TLB shootdown IPIs\n"
"  count       like tput with 2M folios, for each folio count of --folios\n"
"  latency     a reader thread on another CPU keeps reading page 0 while the\n"
"              main thread moves --pages 4K pages, or --folios 2M folios, in\n"
"              one call. first_usable_us: from t0 (just before move_pages())\n"
"              to the end of the read gap in which the reader took a page\n"
"              fault (page 0 unmapped for migration: usable_by \"fault\",\n"
"              page0_stall_us its length), else to the end of the longest\n"
"              read gap overlapping the move (usable_by \"gap\");\n"
"              max_stall_us: that longest gap\n"
"  alias       copy --size MiB word by word into a destination 2M away from\n"
"              the source, then 37 pages further: equal times on hardware;\n"
"              under QEMU TCG the first can be ten times slower (its\n"
"              software TLB is direct-mapped), and 2M folio copies are laid\n"
"              out like it. JSON: layout, threads, seconds, ns_per_word.\n"
"              One CPU's copies run on the first allowed CPU (cpu); then\n"
"              each layout by the first two at once, half of every 2M\n"
"              period each (threads 2, cpus; first_seconds and\n"
"              second_seconds: each CPU's own time): about twice as fast\n"
"              as one on hardware; under TCG either half may alias\n"
"  memcpy      user-space memcpy() of --size MiB (source on --from, target on\n"
"              --to where those nodes exist): the ceiling for throughput;\n"
"              with --threads N, N threads copy a share each, thread i on\n"
"              the i-th online CPU (JSON: threads)\n"
"  compaction  on --node: fill --fill-pct of its free memory with 4K pages,\n"
"              free one page of every aligned pair of frames (the one\n"
"              with odd bit parity), then ask for 2M\n"
"              hugetlb pages there (nr_hugepages), which compacts; wall time,\n"
"              pages obtained, migration/compaction counters, CPU time.\n"
"              --trigger compact: compact the whole node instead (write 1\n"
"              to its compact file; wall_s times that) and count the free\n"
"              2M blocks it leaves (huge_obtained); takes no hugetlb pages\n"
"              and is not subject to the allocator's compaction deferral,\n"
"              so back-to-back runs do the same work.  Both keep the\n"
"              per-CPU free lists short (vm.percpu_pagelist_high_fraction)\n"
"              while they run: pages parked there are no compaction target\n"
"  tiering     a working set 1.5x the fast node's free memory (--from; or\n"
"              --size) bound to it with MPOL_F_NUMA_BALANCING, demotion on\n"
"              and NUMA balancing in tiering mode (2): what does not fit is\n"
"              demoted to the lower tier; a task on a CPU of the fast node\n"
"              checks and rewrites every page of a hot window (--hot-pct),\n"
"              which shifts by an eighth after each pass, so that hot pages\n"
"              are promoted and cold ones demoted all the time. Over\n"
"              --seconds after --warmup: touch_per_s (the task's progress),\n"
"              demote_per_s, promote_per_s, kswapd_cpu_s (the fast node's\n"
"              kswapd), app_user_s/app_sys_s, hot_on_fast_pct (share of the\n"
"              hot window on the fast node, sampled each second), vmstat\n"
"              deltas; every byte checked at every touch and at the end\n"
"\n"
"Options (defaults in brackets):\n"
"  --size MB        buffer size for tput and memcpy [256]\n"
"  --from NODE      node the buffer starts on [0]\n"
"  --to NODE        node it is moved to [1]\n"
"  --folio LIST     tput folio sizes in KB, each 4 or an mTHP size\n"
"                   (16..2048; chosen through hugepages-<KB>kB/enabled=always,\n"
"                   all others never; 4 = all never) [4,16,64,256,1024,2048]\n"
"  --folios LIST    count: numbers of 2M folios (buffer = N x 2 MiB)\n"
"                   [1,8,16,32,64,256,512]; latency: [1,4,16]\n"
"  --pages LIST     latency: 4K pages per move_pages() call [1,8,32,128,512]\n"
"  --reps N         repetitions of every measurement [5; compaction 1]\n"
"  --first-rep N    number the repetitions from N (their \"rep\" and data\n"
"                   seed), for callers that interleave single repetitions\n"
"                   of several configurations [0]\n"
"  --cpu N          run the mover (and the compaction writer) on CPU N\n"
"                   [not pinned; compaction: first CPU of --node, else 0;\n"
"                   latency: first allowed CPU, the reader on the next]\n"
"  --threads N      memcpy: threads sharing the copy, 1-64 [1]\n"
"  --node NODE      compaction: the node to fragment and compact [1]\n"
"  --fill-pct P     compaction: percent of the node's MemFree to fill [80]\n"
"  --huge N         compaction: 2M pages to ask for [the free 2M blocks the\n"
"                   node has after fragmenting + the freed memory, in 2M: the\n"
"                   most compaction can make]\n"
"  --trigger T      compaction: hugepages or compact (see above) [hugepages]\n"
"  --hog            compaction: a child process pinned to the writer's CPU\n"
"                   busy-loops; reports hog_iterations, hog_per_s and its\n"
"                   rate alone (hog_base_per_s)\n"
"  --seconds S      tiering: the measured window [20]\n"
"  --warmup S       tiering: work before the window, not measured [5]\n"
"  --hot-pct P      tiering: the hot window, percent of the working set [25]\n"
"  --leave MB       tiering: hugetlb pages take all but MB of the fast\n"
"                   node's free memory while it runs [none taken]\n"
"  --scan-ms N      tiering: NUMA balancing scan_delay_ms and\n"
"                   scan_period_min_ms = N, scan_period_max_ms = 10 N\n"
"                   (debugfs) [as found]\n"
"  --hot-ms N       tiering: NUMA balancing hot_threshold_ms [as found]\n"
"  --squeeze        tiering, with --leave: first ask for the whole node in\n"
"                   hugetlb pages and give them back, so that reclaim pushes\n"
"                   other demotable pages off it (a test VM only: on a\n"
"                   shared machine it reclaims every tenant's memory there)\n"
"  --hog            tiering, tput: a busy loop pinned to every CPU the run\n"
"                   may use (tput: records \"hog\":true and \"hogs\")\n"
"  --config NAME    label for the \"config\" key [the engine name]\n"
"  --json-out FILE  also append every JSON line to FILE\n"
"  -h, --help       this text\n"
"\n"
"engine is the bracketed name in " MO_DIR "/engine, or \"vanilla\" if that\n"
"directory does not exist. Lists are comma-separated. A measurement that\n"
"cannot be made (size unsupported, not enough memory on a node) prints a\n"
"line with \"skipped\": true and the reason.\n"
"\n"
"Exit status: 0 done, 1 a measurement failed (bad_bytes > 0 or a failed\n"
"move_pages()), 2 usage or setup error, 4 skipped (not root, nodes missing).\n");
}

static long parse_num(const char *opt_name, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		fatal(EXIT_USAGE, "%s: '%s' is not a number in %ld..%ld", opt_name, s,
		      min, max);
	return v;
}

static void parse_list(const char *opt_name, const char *s, struct list *l,
		       long min, long max)
{
	char tmp[512], *tok, *save;

	if (strlen(s) >= sizeof(tmp))
		fatal(EXIT_USAGE, "%s: list too long", opt_name);
	strcpy(tmp, s);
	l->n = 0;
	for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (l->n == MAX_LIST)
			fatal(EXIT_USAGE, "%s: more than %d values", opt_name, MAX_LIST);
		l->v[l->n++] = parse_num(opt_name, tok, min, max);
	}
	if (!l->n)
		fatal(EXIT_USAGE, "%s: empty list", opt_name);
}

static void read_engine(void)
{
	if (!exists(MO_DIR))
		snprintf(engine, sizeof(engine), "vanilla");
	else if (read_setting(MO_DIR "/engine", engine, sizeof(engine)))
		snprintf(engine, sizeof(engine), "unknown");
}

int main(int argc, char **argv)
{
	enum { O_SIZE = 256, O_FROM, O_TO, O_FOLIO, O_FOLIOS, O_PAGES, O_REPS,
	       O_NODE, O_FILL, O_HUGE, O_HOG, O_JSON, O_CONFIG, O_CPU, O_TRIGGER,
	       O_FIRST_REP, O_THREADS, O_SECONDS, O_WARMUP, O_HOT_PCT, O_LEAVE,
	       O_SCAN_MS, O_HOT_MS, O_SQUEEZE };
	static const struct option lopts[] = {
		{ "size", required_argument, NULL, O_SIZE },
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "folio", required_argument, NULL, O_FOLIO },
		{ "folios", required_argument, NULL, O_FOLIOS },
		{ "pages", required_argument, NULL, O_PAGES },
		{ "reps", required_argument, NULL, O_REPS },
		{ "first-rep", required_argument, NULL, O_FIRST_REP },
		{ "node", required_argument, NULL, O_NODE },
		{ "fill-pct", required_argument, NULL, O_FILL },
		{ "huge", required_argument, NULL, O_HUGE },
		{ "hog", no_argument, NULL, O_HOG },
		{ "trigger", required_argument, NULL, O_TRIGGER },
		{ "json-out", required_argument, NULL, O_JSON },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "cpu", required_argument, NULL, O_CPU },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "hot-pct", required_argument, NULL, O_HOT_PCT },
		{ "leave", required_argument, NULL, O_LEAVE },
		{ "scan-ms", required_argument, NULL, O_SCAN_MS },
		{ "hot-ms", required_argument, NULL, O_HOT_MS },
		{ "squeeze", no_argument, NULL, O_SQUEEZE },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	bool folios_set = false;
	struct utsname u;
	size_t m;
	int c, i;

	page_size = sysconf(_SC_PAGESIZE);
	if (argc < 2)
		fatal(EXIT_USAGE, "no mode given (tput, count, latency, memcpy, compaction, alias, tiering; see --help)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	for (m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
		if (!strcmp(argv[1], mode_names[m]))
			break;
	if (m == sizeof(mode_names) / sizeof(mode_names[0]))
		fatal(EXIT_USAGE, "unknown mode '%s' (tput, count, latency, memcpy, compaction, alias, tiering; see --help)",
		      argv[1]);
	opt.mode = m;

	parse_list("--folio", "4,16,64,256,1024,2048", &opt.folio_kb, 4, 2048);
	parse_list("--folios", "1,8,16,32,64,256,512", &opt.folios, 1, 1 << 20);
	parse_list("--pages", "1,8,32,128,512", &opt.pages, 1, 1 << 24);

	opterr = 0;
	argv++;
	argc--;
	while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
		switch (c) {
		case O_SIZE:
			opt.size_mb = parse_num("--size", optarg, 1, 1L << 30);
			opt.size_set = true;
			break;
		case O_FROM: opt.from = parse_num("--from", optarg, 0, MAX_NODES - 1); break;
		case O_TO: opt.to = parse_num("--to", optarg, 0, MAX_NODES - 1); break;
		case O_FOLIO:
			parse_list("--folio", optarg, &opt.folio_kb, 4, 2048);
			for (i = 0; i < opt.folio_kb.n; i++)
				if (!valid_folio_kb(opt.folio_kb.v[i]))
					fatal(EXIT_USAGE, "--folio: %ld is not a folio size (4, 16, 32, ..., 2048 KB)",
					      opt.folio_kb.v[i]);
			break;
		case O_FOLIOS:
			parse_list("--folios", optarg, &opt.folios, 1, 1 << 20);
			folios_set = true;
			break;
		case O_PAGES: parse_list("--pages", optarg, &opt.pages, 1, 1 << 24); break;
		case O_REPS: opt.reps = parse_num("--reps", optarg, 1, 1000000); break;
		case O_FIRST_REP:
			opt.first_rep = parse_num("--first-rep", optarg, 0, 1000000);
			break;
		case O_NODE: opt.node = parse_num("--node", optarg, 0, MAX_NODES - 1); break;
		case O_FILL: opt.fill_pct = parse_num("--fill-pct", optarg, 1, 99); break;
		case O_HUGE: opt.huge = parse_num("--huge", optarg, 0, 1L << 30); break;
		case O_HOG: opt.hog = true; break;
		case O_TRIGGER:
			if (!strcmp(optarg, "hugepages"))
				opt.trigger = TRIG_HUGEPAGES;
			else if (!strcmp(optarg, "compact"))
				opt.trigger = TRIG_COMPACT;
			else
				fatal(EXIT_USAGE, "--trigger: '%s' is not hugepages or compact",
				      optarg);
			break;
		case O_JSON: opt.json_out = optarg; break;
		case O_CONFIG: opt.config = optarg; break;
		case O_CPU: opt.cpu = parse_num("--cpu", optarg, 0, CPU_SETSIZE - 1); break;
		case O_THREADS: opt.threads = parse_num("--threads", optarg, 1, 64); break;
		case O_SECONDS: opt.seconds = parse_num("--seconds", optarg, 1, 86400); break;
		case O_WARMUP: opt.warmup_s = parse_num("--warmup", optarg, 0, 86400); break;
		case O_HOT_PCT: opt.hot_pct = parse_num("--hot-pct", optarg, 1, 100); break;
		case O_LEAVE: opt.leave_mb = parse_num("--leave", optarg, 1, 1L << 30); break;
		case O_SCAN_MS: opt.scan_ms = parse_num("--scan-ms", optarg, 1, 100000); break;
		case O_HOT_MS: opt.hot_ms = parse_num("--hot-ms", optarg, 1, 1000000); break;
		case O_SQUEEZE: opt.squeeze = true; break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			fatal(EXIT_USAGE, "option '%s' needs a value (see --help)",
			      argv[optind - 1]);
		default:
			fatal(EXIT_USAGE, "unknown option '%s' (see --help)",
			      argv[optind - 1]);
		}
	}
	if (optind < argc)
		fatal(EXIT_USAGE, "unexpected argument '%s' (see --help)", argv[optind]);
	if (opt.from == opt.to && opt.mode != M_MEMCPY && opt.mode != M_COMPACTION &&
	    opt.mode != M_ALIAS && opt.mode != M_TIERING)
		fatal(EXIT_USAGE, "--from and --to are both %d", opt.from);
	if (opt.hog && opt.mode != M_TPUT && opt.mode != M_TIERING &&
	    opt.mode != M_COMPACTION)
		fatal(EXIT_USAGE, "--hog: only tput, tiering and compaction take it");
	if (opt.mode == M_LATENCY && !folios_set)
		parse_list("--folios", "1,4,16", &opt.folios, 1, 1 << 20);
	if ((size_t)opt.size_mb > SIZE_MAX / MIB / 2)
		fatal(EXIT_USAGE, "--size: %ld MiB is too large", opt.size_mb);

	if (opt.json_out) {
		json_file = fopen(opt.json_out, "a");
		if (!json_file)
			fatal(EXIT_USAGE, "--json-out %s: %s", opt.json_out, strerror(errno));
	}
	read_engine();
	if (!uname(&u))
		snprintf(kernel_rel, sizeof(kernel_rel), "%s", u.release);

	mo_before_restore = kill_hog;
	restore_settings_at_exit();

	switch (opt.mode) {
	case M_TPUT: run_tput(); break;
	case M_COUNT: run_count(); break;
	case M_LATENCY: run_latency(); break;
	case M_MEMCPY: run_memcpy(); break;
	case M_COMPACTION: run_compaction(); break;
	case M_ALIAS: run_alias(); break;
	case M_TIERING: run_tiering(); break;
	}
	if (json_file)
		fclose(json_file);
	return failures ? EXIT_FAILED : 0;
}
