// SPDX-License-Identifier: GPL-2.0
/*
 * Messages, small files, the pattern of the buffers, CPUs to run on.
 */
#include "common.h"

#include <stdarg.h>
#include <sys/stat.h>

/* fatal() and note(): one line on stderr */
static void vmsg(const char *fmt, va_list ap)
{
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void fatal(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	exit(code);
}

void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		fatal(EXIT_USAGE, "out of memory (%zu bytes)", n);
	return p;
}

/* Read a small file into @buf (NUL-terminated, trailing newline cut). */
int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return 0;
}

bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* @len bytes of anonymous memory aligned to 2M (THP needs it). */
uint8_t *map_aligned(size_t len)
{
	size_t total = len + PMD_SIZE;
	uint8_t *p = mmap(NULL, total, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t start, end;

	if (p == MAP_FAILED)
		return NULL;
	start = ((uintptr_t)p + PMD_SIZE - 1) & ~(PMD_SIZE - 1);
	end = start + len;
	if (start > (uintptr_t)p)
		munmap(p, start - (uintptr_t)p);
	if ((uintptr_t)p + total > end)
		munmap((void *)end, (uintptr_t)p + total - end);
	return (uint8_t *)start;
}

/* Fill @len bytes (a multiple of 8) at @p, which is at @base in the buffer. */
void fill(uint8_t *p, size_t base, size_t len, uint64_t seed)
{
	mo_pattern_fill(p, base, len, seed);
}

/* Bytes that differ from the pattern (guest/lib/mo_pattern.h); the first is reported. */
size_t verify(const uint8_t *p, size_t base, size_t len, uint64_t seed,
	      const char *what)
{
	struct mo_bad first = { 0 };
	size_t bad = mo_pattern_verify(p, base, len, seed, &first);

	if (bad && what)
		note("%s: corrupted data at byte offset %zu: %#x, want %#x",
		     what, first.off, first.got, first.want);
	return bad;
}

int mode_reps(void)
{
	if (opt.reps > 0)
		return opt.reps;
	return opt.mode == M_COMPACTION ? 1 : 5;
}

/* Run the calling thread on @cpu alone; 0, or -1 and errno. */
int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Run the calling thread on @cpu alone, or fail the run (@what: whose). */
void run_on_cpu(int cpu, const char *what)
{
	if (pin_to_cpu(cpu))
		fatal(EXIT_USAGE, "%s: cannot run on CPU %d: %s", what, cpu,
		      strerror(errno));
}

/* The first @max CPUs the calling thread may run on, into @cpus; how many. */
int allowed_cpus(int *cpus, int max)
{
	cpu_set_t allowed;
	int c, n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		fatal(EXIT_USAGE, "sched_getaffinity: %s", strerror(errno));
	for (c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	return n;
}

void pin_self(void)
{
	if (opt.cpu >= 0)
		run_on_cpu(opt.cpu, mode_names[opt.mode]);
}

/*
 * A line in the kernel's trace around each timed move ("mo_bench: move
 * begin|end"), so that a tracer can sum the events of the timed move alone,
 * not those of the buffer's placement. No tracefs: nothing.
 */
void trace_mark(const char *what)
{
	static int fd = -2;

	if (fd == -2)
		fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, what, strlen(what)) < 0)
		fd = -1;
}

/* Add @node to the node mask @mask (NODE_MASK_LONGS longs). */
void node_mask_set(unsigned long *mask, int node)
{
	mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
}
