// SPDX-License-Identifier: GPL-2.0
/*
 * Race kinds and hwpoison: mover threads move a range back and forth, the
 * main thread races them. Race kinds own the buffer per 64 KiB chunk: the
 * racer and the verifier take a chunk's lock, so the verifier only checks
 * chunks that are mapped and hold their chunk's generation.
 * (The movers are in movers.c.)
 */
#include "common.h"

#include <setjmp.h>
#include <sys/wait.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define CHUNK (64 << 10)		/* what the race kinds' racer works on */
#define EXIT_REGION (4 << 20)		/* what each race-exit child fills */

struct chunk {
	pthread_mutex_t lock;
	unsigned int gen;
};

static struct chunk *chunks;
static size_t nr_chunks;

static size_t check_chunk(size_t c, const char *when)
{
	return check(race_buf + c * CHUNK, c * CHUNK, CHUNK, chunks[c].gen,
		     "%s: chunk %zu, generation %u", when, c, chunks[c].gen);
}

static void *verifier_fn(void *arg)
{
	unsigned long *verifies = arg;
	size_t c = 0;

	while (!stop) {
		pthread_mutex_lock(&chunks[c].lock);
		check_chunk(c, "verifier");
		pthread_mutex_unlock(&chunks[c].lock);
		c = (c + 1) % nr_chunks;
		if (!(++*verifies % 8))
			sleep_ms(1);
	}
	return NULL;
}

/*
 * race-mprotect: a write to a read-only chunk must fault (SIGSEGV) even
 * when the chunk migrated while read-only: the migration entry made while
 * it was writable must not come back as a writable PTE. The probe writes
 * back the byte it read, so a missed fault changes nothing but is counted.
 */
static sigjmp_buf segv_jmp;
static __thread volatile sig_atomic_t segv_armed;
static unsigned long ro_probes, ro_writable, ro_moved, ro_inflight;

static void on_sigsegv(int sig)
{
	if (!segv_armed) {
		signal(sig, SIG_DFL);	/* not a probe: fault again, and die of it */
		return;
	}
	segv_armed = 0;
	siglongjmp(segv_jmp, 1);
}

/* 1 if writing back the byte at @b faulted (SIGSEGV). */
static int write_faults(volatile uint8_t *b)
{
	if (sigsetjmp(segv_jmp, 1))
		return 1;
	segv_armed = 1;
	*b = *b;
	segv_armed = 0;
	return 0;
}

/* Pages of the read-only chunk @p a write did not fault on. */
static unsigned long probe_read_only(uint8_t *p)
{
	unsigned long writable = 0;
	size_t i;

	for (i = 0; i < CHUNK; i += page_size) {
		ro_probes++;
		writable += !write_faults(p + i);
	}
	return writable;
}

/* One racer operation on chunk @c (locked); the chunk then holds its next generation. */
static void race_op(size_t c)
{
	uint8_t *p = race_buf + c * CHUNK, *q;
	uint64_t *pm_pre, *pm0, *pm1;
	unsigned long w;
	size_t i;

	if (!strcmp(kind, "race-munmap")) {
		check_chunk(c, "before munmap");
		if (munmap(p, CHUNK))
			die("munmap");
		sleep_ms(0.5);		/* a hole for the movers to meet */
		/* NOREPLACE: never over something another thread mapped there meanwhile. */
		q = mmap(p, CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (q != p)
			die("mmap(MAP_FIXED_NOREPLACE) of an unmapped chunk");
		if (madvise(p, CHUNK, MADV_NOHUGEPAGE) && errno != EINVAL)
			die("madvise(MADV_NOHUGEPAGE)");
		check_zero(p, c * CHUNK, CHUNK, "a chunk mapped again");
	} else if (!strcmp(kind, "race-mprotect")) {
		/*
		 * A page under a migration entry just before mprotect() (not
		 * present, swap bit) and mapped again after the window: the
		 * entry was made writable and mprotect() had to make it
		 * read-only; the write probes below show if it did.
		 */
		pm_pre = pagemap_of(p, CHUNK);
		if (mprotect(p, CHUNK, PROT_READ))
			die("mprotect(PROT_READ)");
		pm0 = pagemap_of(p, CHUNK);
		check_chunk(c, "read-only");
		sleep_ms(2);		/* a read-only chunk for the movers to move */
		pm1 = pagemap_of(p, CHUNK);
		for (i = 0; i < CHUNK / page_size; i++)
			if (PM_PRESENT(pm0[i]) && PM_PRESENT(pm1[i]) &&
			    PM_PFN(pm0[i]) != PM_PFN(pm1[i]))
				break;
		ro_moved += i < CHUNK / page_size;
		for (i = 0; i < CHUNK / page_size; i++)
			if (!PM_PRESENT(pm_pre[i]) && PM_SWAP(pm_pre[i]) && PM_PRESENT(pm1[i]))
				break;
		ro_inflight += i < CHUNK / page_size;
		free(pm_pre);
		free(pm0);
		free(pm1);
		w = probe_read_only(p);
		if (w && (ro_writable += w) == w)
			printf("corrupt: chunk %zu: %lu pages writable while read-only\n", c, w);
		check_chunk(c, "read-only, after the write probes");
		if (mprotect(p, CHUNK, PROT_READ | PROT_WRITE))
			die("mprotect(PROT_READ | PROT_WRITE)");
	} else {
		check_chunk(c, "before MADV_DONTNEED");
		if (madvise(p, CHUNK, MADV_DONTNEED))
			die("madvise(MADV_DONTNEED)");
		sleep_ms(0.5);		/* absent pages for the movers to meet */
		check_zero(p, c * CHUNK, CHUNK, "a chunk after MADV_DONTNEED");
	}
	chunks[c].gen++;
	mo_pattern_fill(p, c * CHUNK, CHUNK, chunks[c].gen);
}

/*
 * race-exit: children fill EXIT_REGION (a mapping the parent never
 * touches, so their pages are their own), tell so, and exit after 0-20 ms,
 * checking it just before; the movers move the current child's pages from
 * its fork to its reaping (a zombie is reaped only after they let go of
 * its pid, so they never move a reused pid).
 */
static void race_children(double end, unsigned long *children, unsigned long *bad)
{
	unsigned int rnd = getpid() ^ (unsigned int)time(NULL);
	uint64_t seed = 1;
	unsigned long gone0;
	siginfo_t si;
	int ready[2], status, i;
	long delay_us;
	pid_t pid;
	char c;

	while (now_s() < end) {
		delay_us = rand_r(&rnd) % 20001;
		seed++;
		if (pipe(ready))
			die("pipe");
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			close(ready[0]);
			/* On from_node: a page later on to_node was moved there. */
			prefer(from_node);
			mo_pattern_fill(race_buf, 0, EXIT_REGION, seed);
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			sleep_ms(delay_us / 1000.0);
			_exit(mo_pattern_verify(race_buf, 0, EXIT_REGION, seed, NULL) ? 1 : 0);
		}
		close(ready[1]);
		pthread_rwlock_wrlock(&pid_lock);
		race_pid = pid;
		pthread_rwlock_unlock(&pid_lock);
		if (read(ready[0], &c, 1) != 1)
			printf("note: child %d died before it was ready\n", pid);
		close(ready[0]);
		if (waitid(P_PID, pid, &si, WEXITED | WNOWAIT))
			die("waitid");
		/*
		 * Reaped only once a mover met the exited child (up to 200 ms):
		 * the movers' calls then span every child's whole life.
		 */
		gone0 = __atomic_load_n(&race_gone, __ATOMIC_RELAXED);
		for (i = 0; i < 200 && __atomic_load_n(&race_gone, __ATOMIC_RELAXED) == gone0; i++)
			sleep_ms(1);
		pthread_rwlock_wrlock(&pid_lock);
		race_pid = 0;
		pthread_rwlock_unlock(&pid_lock);
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid");
		++*children;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			if (++*bad <= MAX_CORRUPT_LINES)
				printf("corrupt: child %d (generation %llu, exit after %ld us): wait status %#x\n",
				       pid, (unsigned long long)seed, delay_us, status);
		}
	}
}

void kind_race(void)
{
	unsigned long ops = 0, verifies = 0, children = 0, bad_children = 0;
	unsigned int rnd = getpid() ^ (unsigned int)time(NULL);
	uint8_t *buf = filled_buf();
	pthread_rwlockattr_t attr;
	struct mover m[2];
	pthread_t verifier;
	double end;
	size_t c;

	place(buf, buf_len, MPOL_MF_MOVE);
	measured_move(buf, buf_len, to_node, MPOL_MF_MOVE, "");
	check(buf, 0, buf_len, 1, "after the move");

	race_exit = !strcmp(kind, "race-exit");
	if (race_exit) {
		/* Movers hold it for whole calls: they must not starve the racer. */
		pthread_rwlockattr_init(&attr);
		pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&pid_lock, &attr);
		/* Children need not carry the buffer. */
		if (madvise(buf, buf_len, MADV_DONTFORK))
			die("madvise(MADV_DONTFORK)");
		race_buf = anon_buf(EXIT_REGION);
		race_len = EXIT_REGION;
		start_movers(m);
		end = now_s() + secs;
		race_children(end, &children, &bad_children);
		stop_movers(m);
		printf("racer_ops=%lu\nchildren=%lu\nbad_children=%lu\n", children, children,
		       bad_children);
		if (!children)
			fail("no child ran");
		if (bad_children)
			fail("%lu of %lu children found their pages bad", bad_children, children);
		check(buf, 0, buf_len, 1, "at the end");
		return;
	}

	race_buf = buf;
	race_len = buf_len;
	nr_chunks = buf_len / CHUNK;
	chunks = calloc(nr_chunks, sizeof(*chunks));
	if (!chunks)
		die("calloc");
	for (c = 0; c < nr_chunks; c++) {
		pthread_mutex_init(&chunks[c].lock, NULL);
		chunks[c].gen = 1;
	}
	if (signal(SIGSEGV, on_sigsegv) == SIG_ERR)
		die("signal(SIGSEGV)");
	start_movers(m);
	if (pthread_create(&verifier, NULL, verifier_fn, &verifies))
		die("pthread_create");
	end = now_s() + secs;
	while (now_s() < end) {
		c = rand_r(&rnd) % nr_chunks;
		pthread_mutex_lock(&chunks[c].lock);
		race_op(c);
		pthread_mutex_unlock(&chunks[c].lock);
		ops++;
		sleep_ms(1);
	}
	stop_movers(m);
	pthread_join(verifier, NULL);
	printf("racer_ops=%lu\nverifies=%lu\n", ops, verifies);
	if (!ops)
		fail("the racer did nothing");
	if (!strcmp(kind, "race-mprotect")) {
		printf("ro_probes=%lu\nro_writable=%lu\nro_moved=%lu\nro_inflight=%lu\n", ro_probes,
		       ro_writable, ro_moved, ro_inflight);
		if (ro_writable)
			fail("%lu writes to read-only pages did not fault", ro_writable);
	}
	for (c = 0; c < nr_chunks; c++)
		check_chunk(c, "at the end");
}

