// SPDX-License-Identifier: GPL-2.0
/*
 * The busy loops of --hog: compaction's one on the writer's CPU, one per
 * CPU for tput and tiering. kill_hog() is mo_before_restore: it stops
 * them before the settings are put back.
 *
 * Global settings changed by a run (THP sizes, nr_hugepages) go through
 * set_setting() (lib/mo_pages.h): put back at exit, also on SIGINT/SIGTERM,
 * after the compaction hog is stopped.
 */
#include "common.h"

#include <sys/prctl.h>
#include <sys/wait.h>

volatile pid_t hog_pid;
/* tiering --hog: one busy loop per CPU */
#define MAX_HOGS 256
static pid_t tier_hogs[MAX_HOGS];
volatile int nr_tier_hogs;

struct hog_shared *tier_hog_sh;

long long hog_count(struct hog_shared *sh)
{
	return __atomic_load_n(&sh->iters, __ATOMIC_RELAXED);
}

void kill_hog(void)
{
	int i;

	if (hog_pid > 0)
		kill(hog_pid, SIGKILL);
	for (i = 0; i < nr_tier_hogs; i++)
		kill(tier_hogs[i], SIGKILL);
}

pid_t start_hog(int cpu, struct hog_shared *sh)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		fatal(EXIT_USAGE, "fork: %s", strerror(errno));
	if (!pid) {
		unsigned int i;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)	/* the parent died before prctl() */
			_exit(0);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		pin_to_cpu(cpu);
		for (;;) {
			for (i = 0; i < 4096; i++)
				__asm__ volatile("" ::: "memory");
			__atomic_add_fetch(&sh->iters, 4096, __ATOMIC_RELAXED);
		}
	}
	return pid;
}

/* A busy loop pinned to every CPU of @cpus. */
void tier_hogs_start(const cpu_set_t *cpus)
{
	struct hog_shared *sh;
	int cpu;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		fatal(EXIT_USAGE, "mmap: %s", strerror(errno));
	tier_hog_sh = sh;
	for (cpu = 0; cpu < CPU_SETSIZE && nr_tier_hogs < MAX_HOGS; cpu++)
		if (CPU_ISSET(cpu, cpus))
			tier_hogs[nr_tier_hogs++] = start_hog(cpu, sh);
}

void tier_hogs_stop(void)
{
	while (nr_tier_hogs > 0) {
		pid_t p = tier_hogs[--nr_tier_hogs];

		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
}
