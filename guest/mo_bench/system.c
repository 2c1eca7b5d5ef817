// SPDX-License-Identifier: GPL-2.0
/*
 * The machine as mo_bench sees it: /proc/vmstat, /proc/stat and
 * /proc/interrupts snapshots, nodes and their meminfo, memory tiers, a
 * kernel thread's CPU time.
 */
#include "common.h"

#include <dirent.h>

const char *const vm_keys[] = {
	"pgmigrate_success", "pgmigrate_fail",
	"pgmigrate_batch_copied", "pgmigrate_batch_fallback",
	"pgmigrate_batch_wasted",
	"thp_migration_success", "thp_migration_fail", "thp_migration_split",
	"compact_migrate_scanned", "compact_free_scanned", "compact_isolated",
	"compact_stall", "compact_fail", "compact_success",
};
_Static_assert(sizeof(vm_keys) / sizeof(vm_keys[0]) == NR_VM, "NR_VM: vm_keys[]");

/* The /proc/vmstat values of @keys (@n of them) into @v, found ones in @have. */
void read_vmstat(const char *const *keys, size_t n, long long *v, bool *have)
{
	char line[512], name[128];
	long long val;
	FILE *f = fopen("/proc/vmstat", "r");
	size_t i;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lld", name, &val) != 2)
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(name, keys[i])) {
				v[i] = val;
				have[i] = true;
			}
	}
	fclose(f);
}

/* The "cpu" line of /proc/stat (the whole machine's jiffies) into @st. */
void read_cpu_stat(long long st[NR_ST])
{
	char line[512];
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return;
	if (fgets(line, sizeof(line), f))
		sscanf(line, "cpu %lld %lld %lld %lld %lld %lld %lld %lld",
		       &st[0], &st[1], &st[2], &st[3], &st[4], &st[5], &st[6], &st[7]);
	fclose(f);
}

/* System, irq and softirq jiffies from /proc/stat reading @a to @b. */
long long st_sys(const long long *a, const long long *b)
{
	return (b[ST_SYSTEM] - a[ST_SYSTEM]) + (b[ST_IRQ] - a[ST_IRQ]) +
	       (b[ST_SOFTIRQ] - a[ST_SOFTIRQ]);
}

void snap_take(struct snap *s)
{
	long long val;
	FILE *f;

	memset(s, 0, sizeof(*s));
	read_vmstat(vm_keys, NR_VM, s->vm, s->have_vm);
	read_cpu_stat(s->st);
	f = fopen("/proc/interrupts", "r");
	if (f) {
		char *buf = NULL, *p, *end;
		size_t cap = 0;

		while (getline(&buf, &cap, f) > 0) {
			p = buf + strspn(buf, " ");
			if (strncmp(p, "TLB:", 4))
				continue;
			p += 4;
			s->have_tlb = true;
			for (;;) {
				val = strtoll(p, &end, 10);
				if (end == p)
					break;
				s->tlb += val;
				p = end;
			}
			break;
		}
		free(buf);
		fclose(f);
	}
	getrusage(RUSAGE_SELF, &s->ru);
	s->t = now_ns();
}

double jiffies_s(long long j)
{
	static long hz;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	return (double)j / (hz > 0 ? hz : 100);
}

void j_vm(struct json *j, const struct snap *a, const struct snap *b,
	  size_t idx)
{
	if (a->have_vm[idx] && b->have_vm[idx])
		j_int(j, vm_keys[idx], b->vm[idx] - a->vm[idx]);
	else
		j_null(j, vm_keys[idx]);
}

/* Migration counters, machine CPU time and TLB shootdowns over @bytes. */
void j_costs(struct json *j, const struct snap *a, const struct snap *b,
	     double bytes)
{
	double gib = bytes / GIB;
	double sys = jiffies_s(st_sys(a->st, b->st));
	size_t i;

	for (i = 0; i < VM_COMPACT0; i++)
		j_vm(j, a, b, i);
	j_num(j, "sys_s", sys);
	j_num(j, "sys_s_per_gib", gib > 0 ? sys / gib : 0);
	if (a->have_tlb && b->have_tlb) {
		j_int(j, "tlb_ipis", b->tlb - a->tlb);
		j_num(j, "tlb_ipis_per_gib", gib > 0 ? (b->tlb - a->tlb) / gib : 0);
	} else {
		j_null(j, "tlb_ipis");
		j_null(j, "tlb_ipis_per_gib");
	}
}

/* The value of @key ("MemFree:", in kB) in @node's meminfo; 0 or -1. */
static int node_meminfo(int node, const char *key, long long *kb)
{
	char path[128], buf[4096], *p;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/meminfo", node);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, key);
	return p && sscanf(p + strlen(key), "%lld", kb) == 1 ? 0 : -1;
}

bool node_has_memory(int node)
{
	long long kb;

	if (node < 0 || node >= MAX_NODES)
		return false;
	return !node_meminfo(node, "MemTotal:", &kb) && kb > 0;
}

/* MemFree of @node in bytes, -1 if unknown. */
long long node_memfree(int node)
{
	long long kb;

	return node_meminfo(node, "MemFree:", &kb) ? -1 : kb * 1024;
}

/* MemTotal of @node in bytes, -1 if unknown. */
long long node_memtotal(int node)
{
	long long kb;

	return node_meminfo(node, "MemTotal:", &kb) ? -1 : kb * 1024;
}

void memory_nodes(char *out, size_t len)
{
	size_t o = 0;
	int n;

	out[0] = 0;
	for (n = 0; n < MAX_NODES && o < len - 8; n++)
		if (node_has_memory(n))
			o += snprintf(out + o, len - o, "%s%d", o ? "," : "", n);
	if (!o)
		snprintf(out, len, "none");
}

/* Skip the mode (exit 4) unless @a and @b are memory nodes. */
void need_nodes(int a, int b)
{
	char have[128];

	if (node_has_memory(a) && node_has_memory(b))
		return;
	memory_nodes(have, sizeof(have));
	j_skipped(0, 0, NULL, 0, "needs memory nodes %d and %d; memory nodes here: %s",
		  a, b, have);
	exit(EXIT_SKIP);
}

/*
 * Root is needed for the settings and /proc/kpageflags. Automatic NUMA
 * balancing is switched off for the run (and restored): it would migrate
 * the buffers behind our back and skew the counters.
 */
void need_root(void)
{
	if (geteuid() != 0) {
		j_skipped(0, 0, NULL, 0, "needs root (sysfs settings, /proc/kpageflags)");
		exit(EXIT_SKIP);
	}
	if (exists("/proc/sys/kernel/numa_balancing"))
		set_setting("/proc/sys/kernel/numa_balancing", "0");
}

/* 0 if @bytes fit on @node with a margin; otherwise what is free there. */
long long short_of_memory(int node, size_t bytes)
{
	long long free = node_memfree(node);
	long long want = bytes + bytes / 8 + 32 * MIB;

	if (free < 0 || free >= want)
		return 0;
	return free;
}

/* Free 2M-or-larger blocks of @node from /proc/buddyinfo, in 2M units. */
long free_2m_blocks(int node)
{
	char line[512], zone[32];
	long total = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");
	int n, order, used;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p;

		if (sscanf(line, "Node %d, zone %31s%n", &n, zone, &used) != 2 || n != node)
			continue;
		p = line + used;
		for (order = 0;; order++) {
			char *end;
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (order >= 9)
				total += c << (order - 9);
			p = end;
		}
	}
	fclose(f);
	return total;
}

/* The first CPU of @node, or -1. */
int node_first_cpu(int node)
{
	char path[128], buf[256];
	int c;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/cpulist", node);
	if (read_file(path, buf, sizeof(buf)) || sscanf(buf, "%d", &c) != 1)
		return -1;
	return c;
}

/* Is @node in a kernel node list such as "0-1,3"? */
static bool in_nodelist(const char *list, int node)
{
	const char *p = list;
	char *end;
	long lo, hi;

	while (*p) {
		lo = strtol(p, &end, 10);
		if (end == p)
			return false;
		hi = lo;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (node >= lo && node <= hi)
			return true;
		p = *end == ',' ? end + 1 : end;
		if (*p == '\n')
			break;
	}
	return false;
}

/* The memory tier (memory_tierX: X) of @node, -1 if it has none. */
int tier_of(int node)
{
	char path[160], buf[256];
	int t;

	/* tiers are numbered by abstract distance / 128: at most a few hundred */
	for (t = 0; t < 4096; t++) {
		snprintf(path, sizeof(path), TIER_DIR "/memory_tier%d/nodelist", t);
		if (!read_file(path, buf, sizeof(buf)) && in_nodelist(buf, node))
			return t;
	}
	return -1;
}

/* The CPU time (user + system, s) of the task called @comm, -1 if none. */
double task_cpu_s(const char *comm)
{
	static char cached[32];
	static int pid = -1;
	char path[64], buf[512], *p;
	unsigned long long ut, st;

	if (pid < 0 || strcmp(cached, comm)) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		pid = -1;
		snprintf(cached, sizeof(cached), "%s", comm);
		while (d && (e = readdir(d))) {
			int n = atoi(e->d_name);

			if (n <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/comm", n);
			if (read_file(path, buf, sizeof(buf)) ||
			    strncmp(buf, comm, strlen(comm)) ||
			    (buf[strlen(comm)] != '\n' && buf[strlen(comm)]))
				continue;
			/* a kernel thread: a child of kthreadd (pid 2) */
			snprintf(path, sizeof(path), "/proc/%d/stat", n);
			p = read_file(path, buf, sizeof(buf)) ? NULL : strrchr(buf, ')');
			if (p && atoi(p + 4) == 2) {
				pid = n;
				break;
			}
		}
		if (d)
			closedir(d);
		if (pid < 0)
			return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	/* fields after "(comm)": state is field 3, utime 14, stime 15 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return jiffies_s(ut + st);
}
