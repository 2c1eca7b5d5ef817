// SPDX-License-Identifier: GPL-2.0
/*
 * mo_folios: migrate folios of one special kind with move_pages(2), check
 * every byte, and check that the folios are still of that kind afterwards.
 *
 *   mo_folios KIND [--size MB] [--from NODE] [--to NODE] [--path FILE]
 *             [--secs S]
 *
 * Every kind fills a buffer of --size with the pattern of
 * guest/lib/mo_pattern.h (seed: a generation number, 1 after the fill, per
 * page or per 64 KiB chunk; offsets in the buffer, so no two pages hold the
 * same bytes, except where ksm wants them to), places it on --from, moves
 * it to --to with one move_pages() of the whole range (repeated, up to 10
 * calls, while pages are left behind) and checks every byte, that every
 * page is on --to (a move_pages() query) and how many pages got a new frame
 * (/proc/self/pagemap). Then what the kind adds: see usage().
 *
 * Every move is made by a thread of this process (the suites filter trace
 * events by its comm), so it never execs and never renames a thread.
 * Output: "pid=" first, then key=value lines; the first bad byte of a check
 * as "corrupt: WHEN: byte OFF is X, want Y"; each failed check as
 * "fail: WHY". Exit 0 if every check passed, 1 if one failed, 2 on a setup
 * error (the kind cannot be made here: no swap, no KSM, no uffd-wp, ...).
 * Runs as root (pagemap frame numbers, /proc/kpageflags, KSM sysfs,
 * MPOL_MF_MOVE_ALL, MADV_HWPOISON).
 *
 * This file: the options and the dispatch; common.c: the checks and the
 * measured move every kind uses; movers.c: the mover threads of the race
 * kinds and hwpoison; one file per kind (race.c: the four race kinds).
 */
#include "common.h"

#include <getopt.h>

size_t page_size, buf_len = 8 << 20, npages;
int from_node, to_node = 1;
const char *file_path;
double secs = 3;
const char *kind;

static void usage(int code)
{
	printf("usage: mo_folios KIND [options]\n"
	       "Moves a buffer of one folio kind from --from to --to with move_pages(2),\n"
	       "checks every byte, that every page moved and got a new frame, and what\n"
	       "the kind adds:\n"
	       "  file           page cache of --path (a real filesystem), half written\n"
	       "                 by pwrite(), half through a MAP_SHARED mapping, moved to\n"
	       "                 --to and back while a pwrite() writer and a mapping\n"
	       "                 writer rewrite it; checked by pread() and the mapping\n"
	       "  swapcache      private anon paged out (MADV_PAGEOUT) and read back into\n"
	       "                 the swap cache; stays there (needs swap)\n"
	       "  ksm            8 contents over the buffer, merged by KSM (MPOL_MF_MOVE_ALL);\n"
	       "                 stay KSM pages, a write breaks one only (needs KSM)\n"
	       "  mlock          mlock()ed; stays mlocked\n"
	       "  uffd-wp        write-protected by userfaultfd; the protection survives:\n"
	       "                 each page's first write after the move faults once\n"
	       "  cow            shared with a forked child (MPOL_MF_MOVE_ALL); the child\n"
	       "                 sees the same bytes in the same new frames, then COWs\n"
	       "  race-munmap    for --secs, 2 movers move the buffer back and forth while\n"
	       "  race-mprotect  random 64 KiB chunks are unmapped and mapped again /\n"
	       "  race-dontneed  made read-only and writable / MADV_DONTNEED'd, and\n"
	       "                 refilled, a verifier checking the chunks meanwhile;\n"
	       "                 holes_met/absent_met: pages the movers met unmapped/absent;\n"
	       "                 a read-only chunk must fault on writes (ro_writable=0),\n"
	       "                 also one under a migration entry at mprotect (ro_inflight)\n"
	       "  race-exit      for --secs, 2 movers move the pages of short-lived\n"
	       "                 children (4 MiB each) while they check them and exit\n"
	       "  hwpoison       2 movers move the buffer back and forth while 3 of its\n"
	       "                 pages get MADV_HWPOISON: exactly those raise SIGBUS\n"
	       "                 (their frames are retired for good)\n"
	       "options:\n"
	       "      --size MB    buffer size (default 8)\n"
	       "      --from NODE  node the buffer starts on (default 0)\n"
	       "      --to NODE    node it moves to (default 1)\n"
	       "      --path FILE  the file of kind file (created or truncated, left there)\n"
	       "      --secs S     race kinds and hwpoison: how long (default 3)\n"
	       "Prints key=value lines (pid= first); exit 0 if every check passed,\n"
	       "1 if one failed (\"fail:\" lines), 2 on a setup error.\n");
	exit(code);
}

static const struct {
	const char *name;
	void (*run)(void);
} kinds[] = {
	{ "file", kind_file },
	{ "swapcache", kind_swapcache },
	{ "ksm", kind_ksm },
	{ "mlock", kind_mlock },
	{ "uffd-wp", kind_uffd_wp },
	{ "cow", kind_cow },
	{ "race-munmap", kind_race },
	{ "race-mprotect", kind_race },
	{ "race-dontneed", kind_race },
	{ "race-exit", kind_race },
	{ "hwpoison", kind_hwpoison },
};

static void check_node(int node, const char *opt)
{
	char file[128];

	snprintf(file, sizeof(file), "/sys/devices/system/node/node%d/meminfo", node);
	if (node < 0 || node >= 64 || access(file, R_OK)) {
		fprintf(stderr, "mo_folios: %s %d: no such memory node\n", opt, node);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "path", required_argument, NULL, 'p' },
		{ "secs", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	void (*run)(void) = NULL;
	size_t i;
	int c;

	page_size = sysconf(_SC_PAGESIZE);
	restore_settings_at_exit();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': buf_len = strtoul(optarg, NULL, 0) << 20; break;
		case 'F': from_node = atoi(optarg); break;
		case 'T': to_node = atoi(optarg); break;
		case 'p': file_path = optarg; break;
		case 'S': secs = strtod(optarg, NULL); break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc - 1 || !buf_len || !(secs > 0))
		usage(2);
	kind = argv[optind];
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i].name))
			run = kinds[i].run;
	if (!run)
		usage(2);
	check_node(from_node, "--from");
	check_node(to_node, "--to");
	npages = buf_len / page_size;
	/* A dead child or pipe is reported, not a silent death. */
	signal(SIGPIPE, SIG_IGN);

	printf("pid=%d\nkind=%s\npages=%zu\n", getpid(), kind, npages);
	fflush(stdout);
	run();
	printf("bad_bytes=%zu\nbytes_checked=%llu\n", bad_bytes, mo_bytes_checked);
	if (bad_bytes)
		fail("%zu bytes differ from what was written last", bad_bytes);
	return nr_fail ? 1 : 0;
}
