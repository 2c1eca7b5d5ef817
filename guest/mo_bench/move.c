// SPDX-License-Identifier: GPL-2.0
/*
 * A buffer of one folio size, filled and placed on a node, and its timed
 * move_pages() with what the status and a query say about every page.
 */
#include "common.h"

static const long mthp_sizes[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
#define NR_MTHP (sizeof(mthp_sizes) / sizeof(mthp_sizes[0]))

bool valid_folio_kb(long kb)
{
	size_t i;

	if (kb == 4)
		return true;
	for (i = 0; i < NR_MTHP; i++)
		if (mthp_sizes[i] == kb)
			return true;
	return false;
}

/*
 * Anonymous faults get @kb folios only: hugepages-<kb>kB/enabled=always,
 * every other size never (4: all never), THP enabled=madvise.
 * Returns NULL or the reason it cannot be done.
 */
const char *set_folio_size(long kb, char *why, size_t len)
{
	char path[160];
	size_t i;
	int ret;

	if (kb != 4) {
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%ldkB/enabled", kb);
		/* before mTHP (6.8), PMD THP came from enabled=madvise alone */
		if (!exists(path) && !(kb == 2048 && !exists(THP_DIR "/hugepages-2048kB") &&
				       exists(THP_DIR "/enabled"))) {
			snprintf(why, len, "no %s (size not supported by this kernel)", path);
			return why;
		}
	}
	if (exists(THP_DIR "/enabled")) {
		ret = set_setting(THP_DIR "/enabled", "madvise");
		if (ret) {
			snprintf(why, len, "cannot set " THP_DIR "/enabled: %s",
				 strerror(-ret));
			return why;
		}
	}
	for (i = 0; i < NR_MTHP; i++) {
		snprintf(path, sizeof(path), THP_DIR "/hugepages-%ldkB/enabled",
			 mthp_sizes[i]);
		if (!exists(path))
			continue;
		ret = set_setting(path, mthp_sizes[i] == kb ? "always" : "never");
		if (ret) {
			snprintf(why, len, "cannot set %s: %s", path, strerror(-ret));
			return why;
		}
	}
	return NULL;
}

void mover_init(struct mover *m, uint8_t *buf, size_t len)
{
	size_t i;

	m->n = len / page_size;
	m->pages = xmalloc(m->n * sizeof(*m->pages));
	m->nodes = xmalloc(m->n * sizeof(*m->nodes));
	m->status = xmalloc(m->n * sizeof(*m->status));
	m->query = xmalloc(m->n * sizeof(*m->query));
	for (i = 0; i < m->n; i++)
		m->pages[i] = buf + i * page_size;
	/* fault in the arrays now, not inside the timed call */
	memset(m->status, 0, m->n * sizeof(*m->status));
	memset(m->query, 0, m->n * sizeof(*m->query));
}

void mover_free(struct mover *m)
{
	free(m->pages);
	free(m->nodes);
	free(m->status);
	free(m->query);
}

/* Pages of the buffer now on @node (by a move_pages() query), or -1. */
long count_on(struct mover *m, int node)
{
	size_t i, on = 0;

	if (move_pages(0, m->n, m->pages, NULL, m->query, 0) < 0)
		return -1;
	for (i = 0; i < m->n; i++)
		on += m->query[i] == node;
	return on;
}

/* One timed move_pages() of the whole buffer to @node, then a query. */
void move_timed(struct mover *m, int node, struct move_result *r,
		void (*before)(void *), void *arg)
{
	size_t i;
	long long t0;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < m->n; i++) {
		m->nodes[i] = node;
		m->status[i] = INT_MIN;
	}
	if (before)
		before(arg);
	t0 = now_ns();
	r->ret = move_pages(0, m->n, m->pages, m->nodes, m->status, MPOL_MF_MOVE);
	r->ns = now_ns() - t0;
	if (r->ret < 0)
		r->err = errno;
	if (move_pages(0, m->n, m->pages, NULL, m->query, 0) < 0)
		for (i = 0; i < m->n; i++)
			m->query[i] = INT_MIN;
	for (i = 0; i < m->n; i++) {
		bool here = m->query[i] == node;

		r->stayed_behind += !here;
		if (m->status[i] == node)
			continue;
		r->not_moved++;
		if (m->status[i] == -EBUSY)
			r->ebusy++;
		else if (m->status[i] == -EAGAIN)
			r->eagain++;
		else
			r->other++;
		r->reported_but_moved += here;
	}
}

void j_move(struct json *j, const struct move_result *r)
{
	j_int(j, "move_ret", r->ret);
	if (r->ret < 0)
		j_str(j, "move_error", strerror(r->err));
	j_int(j, "not_moved", r->not_moved);
	j_int(j, "ebusy", r->ebusy);
	j_int(j, "eagain", r->eagain);
	j_int(j, "other_status", r->other);
	j_int(j, "stayed_behind", r->stayed_behind);
	j_int(j, "reported_but_moved", r->reported_but_moved);
}

/*
 * A fresh buffer of @len bytes with @kb folios, filled with the pattern of
 * @seed and placed on @node (preferred policy at fault time, then
 * move_pages() for the pages that landed elsewhere). Returns the share of
 * pages on @node in *@placed.
 */
uint8_t *fresh_buffer(size_t len, long kb, int node, uint64_t seed,
		      struct mover *m, double *placed)
{
	unsigned long mask[NODE_MASK_LONGS] = { 0 };
	uint8_t *buf = map_aligned(len);
	long on;
	size_t i;

	if (!buf)
		return NULL;
	if (kb > 4)
		madvise(buf, len, MADV_HUGEPAGE);
	else
		madvise(buf, len, MADV_NOHUGEPAGE);
	node_mask_set(mask, node);
	mbind(buf, len, MPOL_PREFERRED, mask, MAX_NODES, 0);
	fill(buf, 0, len, seed);
	/* back to the default policy: the timed move must not fight it */
	mbind(buf, len, MPOL_DEFAULT, NULL, 0, 0);
	mover_init(m, buf, len);
	for (i = 0; i < m->n; i++)
		m->nodes[i] = node;
	on = count_on(m, node);
	if (on >= 0 && (size_t)on < m->n) {
		move_pages(0, m->n, m->pages, m->nodes, m->status, MPOL_MF_MOVE);
		on = count_on(m, node);
	}
	*placed = on < 0 ? NAN : 100.0 * on / m->n;
	return buf;
}
