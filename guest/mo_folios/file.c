// SPDX-License-Identifier: GPL-2.0
/*
 * file: the page cache of a file, mapped and written two ways while it
 * moves. Even pages belong to a pwrite() writer, odd ones to a writer
 * through the mapping, so that each large folio gets both; each writer
 * checks a page's last generation (by pread(), through the mapping) before
 * it writes the next one.
 */

#include "common.h"

static int file_fd;
static uint8_t *file_map;
static unsigned int *file_gens;

struct file_writer {
	int id;			/* 0: pwrite(), even pages; 1: the mapping, odd pages */
	unsigned long writes;
	pthread_t thread;
};

static uint8_t *page_buf(void)
{
	uint8_t *b = aligned_alloc(page_size, page_size);

	if (!b)
		die("aligned_alloc");
	return b;
}

static void pread_page(uint8_t *b, size_t off)
{
	if (pread(file_fd, b, page_size, off) != (ssize_t)page_size)
		die("pread");
}

static void pwrite_page(const uint8_t *b, size_t off)
{
	if (pwrite(file_fd, b, page_size, off) != (ssize_t)page_size)
		die("pwrite");
}

static void *file_writer_fn(void *arg)
{
	struct file_writer *w = arg;
	uint8_t *b = page_buf();
	size_t p, off;

	while (!stop) {
		for (p = w->id; p < npages && !stop; p += 2) {
			off = p * page_size;
			if (w->id == 0) {
				pread_page(b, off);
				if (check(b, off, page_size, file_gens[p],
					  "pwrite writer: page %zu, generation %u (pread)",
					  p, file_gens[p]))
					goto out;
				mo_pattern_fill(b, off, page_size, file_gens[p] + 1);
				pwrite_page(b, off);
			} else {
				if (check(file_map + off, off, page_size, file_gens[p],
					  "mapping writer: page %zu, generation %u", p,
					  file_gens[p]))
					goto out;
				mo_pattern_fill(file_map + off, off, page_size,
						file_gens[p] + 1);
			}
			file_gens[p]++;
			/* CPU time for the movers (all vCPUs share a host thread) */
			if (!(++w->writes % 32))
				sleep_ms(1);
		}
	}
out:
	free(b);
	return NULL;
}

static void check_file(const char *when)
{
	uint8_t *b = page_buf();
	size_t p, off;

	for (p = 0; p < npages; p++) {
		off = p * page_size;
		pread_page(b, off);
		check(b, off, page_size, file_gens[p], "%s: page %zu (pread)", when, p);
		check(file_map + off, off, page_size, file_gens[p], "%s: page %zu (mapping)",
		      when, p);
	}
	free(b);
}

void kind_file(void)
{
	struct file_writer w[2] = { { .id = 0 }, { .id = 1 } };
	uint8_t *b = page_buf();
	size_t p, cached = 0;
	uint64_t *pm;
	int round, i;

	if (!file_path) {
		fprintf(stderr, "mo_folios: kind file needs --path FILE\n");
		exit(2);
	}
	file_fd = open(file_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (file_fd < 0)
		die(file_path);
	if (ftruncate(file_fd, buf_len))
		die("ftruncate");
	file_map = mmap(NULL, buf_len, PROT_READ | PROT_WRITE, MAP_SHARED, file_fd, 0);
	if (file_map == MAP_FAILED)
		die("mmap(MAP_SHARED)");
	file_gens = calloc(npages, sizeof(*file_gens));
	if (!file_gens)
		die("calloc");

	prefer(from_node);
	for (p = 0; p < npages; p += 2) {
		mo_pattern_fill(b, p * page_size, page_size, 1);
		pwrite_page(b, p * page_size);
	}
	for (p = 1; p < npages; p += 2)
		mo_pattern_fill(file_map + p * page_size, p * page_size, page_size, 1);
	for (p = 0; p < npages; p++)
		file_gens[p] = 1;
	/* Written back, clean, and still cached: no POSIX_FADV_DONTNEED. */
	if (msync(file_map, buf_len, MS_SYNC))
		die("msync");
	prefer(-1);
	/* Reading every page through the mapping maps it: move_pages() moves only mapped pages. */
	check_file("after the fill");

	pm = pagemap_of(file_map, buf_len);
	for (p = 0; p < npages; p++)
		cached += PM_PRESENT(pm[p]);
	free(pm);
	printf("file_pages_cached=%zu\n", cached);
	if (cached != npages)
		fail("only %zu of %zu pages of the file mapped before the move", cached,
		     npages);
	place(file_map, buf_len, MPOL_MF_MOVE);

	/* To --to and back, each move while both writers run (and a little after). */
	for (round = 0; round < 2; round++) {
		stop = 0;
		for (i = 0; i < 2; i++)
			if (pthread_create(&w[i].thread, NULL, file_writer_fn, &w[i]))
				die("pthread_create");
		sleep_ms(20);
		measured_move(file_map, buf_len, round ? from_node : to_node,
			      MPOL_MF_MOVE, round ? "_back" : "");
		sleep_ms(50);
		stop = 1;
		for (i = 0; i < 2; i++)
			pthread_join(w[i].thread, NULL);
		check_file(round ? "after the move back" : "after the move");
	}
	printf("pwrite_writes=%lu\nmmap_writes=%lu\n", w[0].writes, w[1].writes);
	free(b);
}

