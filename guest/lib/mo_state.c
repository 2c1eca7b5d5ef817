// SPDX-License-Identifier: GPL-2.0
/*
 * The state behind lib/mo_pages.h and lib/mo_pattern.h, once per program.
 * A static in a header is one copy per .c file: a program of several files
 * would put back only the settings saved by the file that restores them,
 * and count only the bytes checked by the file that prints the count.
 * Every guest program links this file (guest/Makefile).
 */
#include "mo_pages.h"
#include "mo_pattern.h"

/* Bytes mo_pattern_verify() has read, for the programs' bytes_checked= line. */
unsigned long long mo_bytes_checked;

void (*mo_before_restore)(void);

#define MO_SAVED_MAX 32
static struct { char path[160]; char val[64]; } mo_saved[MO_SAVED_MAX];
static volatile int mo_nr_saved;
/* Whose settings: a forked child that exit()s must not put them back. */
static pid_t mo_saved_pid;

/*
 * Async-signal-safe (open, write, close). Written before it is dropped: a
 * signal that interrupts the atexit call writes the same value again
 * rather than skip it.
 */
void restore_settings(void)
{
	/* The hook decides for itself (mo_bench's hog: its own pid or 0). */
	if (mo_before_restore)
		mo_before_restore();
	if (getpid() != mo_saved_pid)
		return;
	while (mo_nr_saved > 0) {
		write_file(mo_saved[mo_nr_saved - 1].path,
			   mo_saved[mo_nr_saved - 1].val);
		mo_nr_saved--;
	}
}

static void mo_restore_on_signal(int sig)
{
	restore_settings();
	signal(sig, SIG_DFL);
	raise(sig);
}

void restore_settings_at_exit(void)
{
	atexit(restore_settings);
	signal(SIGINT, mo_restore_on_signal);
	signal(SIGTERM, mo_restore_on_signal);
	signal(SIGHUP, mo_restore_on_signal);
}

int set_setting(const char *path, const char *val)
{
	int i, ret;

	/* A forked child records its own: the parent's are the parent's. */
	if (mo_nr_saved && mo_saved_pid != getpid())
		mo_nr_saved = 0;
	for (i = 0; i < mo_nr_saved; i++)
		if (!strcmp(mo_saved[i].path, path))
			return write_file(path, val);
	if (mo_nr_saved >= MO_SAVED_MAX || strlen(path) >= sizeof(mo_saved[0].path))
		return -ENOSPC;
	ret = read_setting(path, mo_saved[i].val, sizeof(mo_saved[0].val));
	if (ret)
		return ret;
	strcpy(mo_saved[i].path, path);
	mo_saved_pid = getpid();
	mo_nr_saved++;
	return write_file(path, val);
}
