// SPDX-License-Identifier: GPL-2.0
/*
 * cow: anon folios mapped by this process and a forked child. Plain
 * MPOL_MF_MOVE skips them (-EACCES); MPOL_MF_MOVE_ALL moves them, and the
 * child must see the same bytes in the same new frames, then get copies of
 * its own on writing, which must leave the parent's data alone.
 */

#include "common.h"

#include <sys/wait.h>

struct cow_result {
	size_t bad, same_frames;
};

void kind_cow(void)
{
	size_t n = npages, p, moved_plain = 0;
	uint8_t *buf = filled_buf();
	int go[2], done[2], *before, *after, status, calls;
	struct cow_result res = { 0 };
	uint64_t *pfns, *pm;
	pid_t pid;
	ssize_t r;

	place(buf, buf_len, MPOL_MF_MOVE);
	pfns = mmap(NULL, n * sizeof(*pfns), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	before = malloc(n * sizeof(*before));
	after = malloc(n * sizeof(*after));
	if (pfns == MAP_FAILED || !before || !after)
		die("mmap/malloc");
	if (pipe(go) || pipe(done))
		die("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		char c;

		close(go[1]);
		close(done[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		res.bad = check(buf, 0, buf_len, 1, "child, after the move");
		pm = read_pagemap(buf, buf_len);
		for (p = 0; pm && p < n; p++)
			res.same_frames += PM_PRESENT(pm[p]) && PM_PFN(pm[p]) == pfns[p];
		if (write(done[1], &res, sizeof(res)) != sizeof(res))
			_exit(2);
		/* Copy on write: pages of its own, the parent's untouched. */
		mo_pattern_fill(buf, 0, buf_len, 2);
		res.bad += check(buf, 0, buf_len, 2, "child, after its writes");
		fflush(stdout);
		_exit(res.bad || res.same_frames != n ? 1 : 0);
	}
	close(go[0]);
	close(done[1]);

	/* Informational: plain MPOL_MF_MOVE leaves pages mapped twice alone. */
	query(buf, n, to_node, before);
	move_range(buf, n, to_node, MPOL_MF_MOVE, after, &calls, 1);
	for (p = 0; p < n; p++)
		moved_plain += before[p] != to_node && after[p] == to_node;
	printf("moved_shared_move=%zu\n", moved_plain);

	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE_ALL, "");
	check(buf, 0, buf_len, 1, "after the move");
	pm = pagemap_of(buf, buf_len);
	for (p = 0; p < n; p++) {
		if (PM_PRESENT(pm[p]) && !PM_PFN(pm[p]))
			frames_hidden();
		pfns[p] = PM_PRESENT(pm[p]) ? PM_PFN(pm[p]) : 0;
	}
	free(pm);
	if (write(go[1], "g", 1) != 1)
		die("write(pipe to the child)");
	r = read(done[0], &res, sizeof(res));
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (r != sizeof(res))
		fail("the child sent no result (exit status %#x)", status);
	printf("child_bad_bytes=%zu\nchild_same_frames=%zu\n", res.bad, res.same_frames);
	printf("cow_child_ok=%d\n", r == sizeof(res) && WIFEXITED(status) &&
	       !WEXITSTATUS(status));
	if (res.bad)
		fail("the child found %zu bad bytes", res.bad);
	if (res.same_frames != n)
		fail("only %zu of %zu of the child's pages in the parent's new frames",
		     res.same_frames, n);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the child failed (wait status %#x)", status);
	check(buf, 0, buf_len, 1, "parent, after the child's writes");
}

