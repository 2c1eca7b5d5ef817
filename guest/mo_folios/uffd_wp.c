// SPDX-License-Identifier: GPL-2.0
/*
 * uffd-wp: the uffd-wp bit of each PTE must survive the migration entry.
 * After the move, the main thread writes every page; each first write must
 * raise one write-protect fault, which the handler thread resolves by
 * unprotecting that page. A lost bit is a silent write.
 */

#include "common.h"

#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

/* /proc/self/pagemap bit */
#define PM_UFFD_WP(e) (((e) >> 57) & 1)

static int uffd;
static uint8_t *uffd_buf;
static unsigned int *uffd_faults;	/* per page */
static unsigned long uffd_other;	/* events that are no WP fault on the buffer */

static void *uffd_handler_fn(void *arg)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffdio_writeprotect wp = { .mode = 0 };
	struct uffd_msg msg;
	uintptr_t addr;
	ssize_t r;
	size_t p;

	(void)arg;
	while (!stop) {
		r = poll(&pfd, 1, 100);
		if (r < 0 && errno != EINTR)
			die("poll(userfaultfd)");
		if (r <= 0)
			continue;
		r = read(uffd, &msg, sizeof(msg));
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r != sizeof(msg))
			die("read(userfaultfd)");
		addr = msg.arg.pagefault.address & ~(uintptr_t)(page_size - 1);
		p = (addr - (uintptr_t)uffd_buf) / page_size;
		if (msg.event != UFFD_EVENT_PAGEFAULT || addr < (uintptr_t)uffd_buf ||
		    p >= npages) {
			uffd_other++;
			continue;
		}
		if (!(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
			/* Nobody would resolve it: the writer would hang. */
			fail("a userfault on page %zu that is no write-protect fault", p);
			fflush(stdout);
			exit(1);
		}
		uffd_faults[p]++;
		wp.range.start = addr;
		wp.range.len = page_size;
		if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
			die("ioctl(UFFDIO_WRITEPROTECT, 0)");
	}
	return NULL;
}

static size_t count_uffd_wp(void)
{
	uint64_t *pm = pagemap_of(uffd_buf, buf_len);
	size_t p, n = 0;

	for (p = 0; p < npages; p++)
		n += PM_UFFD_WP(pm[p]);
	free(pm);
	return n;
}

void kind_uffd_wp(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	size_t p, wp0, wp1, faults = 0, read_faults = 0, wrong = 0;
	pthread_t handler;

	uffd_buf = filled_buf();
	place(uffd_buf, buf_len, MPOL_MF_MOVE);
	uffd_faults = calloc(npages, sizeof(*uffd_faults));
	if (!uffd_faults)
		die("calloc");
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		unsupported("userfaultfd", errno);
	if (ioctl(uffd, UFFDIO_API, &api))
		unsupported("UFFDIO_API with UFFD_FEATURE_PAGEFAULT_FLAG_WP", errno);
	if (!(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP))
		unsupported("UFFD_FEATURE_PAGEFAULT_FLAG_WP", EOPNOTSUPP);
	reg.range.start = (uintptr_t)uffd_buf;
	reg.range.len = buf_len;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		unsupported("UFFDIO_REGISTER_MODE_WP on private anon", errno);
	if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT)))
		unsupported("UFFDIO_WRITEPROTECT on private anon", EOPNOTSUPP);
	wp.range = reg.range;
	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
		die("ioctl(UFFDIO_WRITEPROTECT)");
	wp0 = count_uffd_wp();
	printf("uffd_wp_pages=%zu\n", wp0);
	if (wp0 != npages)
		fail("only %zu of %zu pages write-protected before the move", wp0, npages);

	/* Running from here on: a read that faulted to it is counted, not hung. */
	stop = 0;
	if (pthread_create(&handler, NULL, uffd_handler_fn, NULL))
		die("pthread_create");
	measured_move(uffd_buf, buf_len, to_node, MPOL_MF_MOVE, "");
	wp1 = count_uffd_wp();
	printf("uffd_wp_after=%zu\n", wp1);
	if (wp1 < wp0)
		fail("%zu pages lost their uffd-wp bit in the move", wp0 - wp1);
	check(uffd_buf, 0, buf_len, 1, "after the move");
	for (p = 0; p < npages; p++)
		read_faults += __atomic_load_n(&uffd_faults[p], __ATOMIC_RELAXED);
	printf("wp_read_faults=%zu\n", read_faults);
	if (read_faults)
		fail("%zu write-protect faults while only reading", read_faults);

	for (p = 0; p < npages; p++)
		mo_pattern_fill(uffd_buf + p * page_size, p * page_size, page_size, 2);
	stop = 1;
	pthread_join(handler, NULL);
	for (p = 0; p < npages; p++) {
		faults += uffd_faults[p];
		if (uffd_faults[p] != 1 && wrong++ < MAX_CORRUPT_LINES)
			printf("note: page %zu raised %u write-protect faults\n", p,
			       uffd_faults[p]);
	}
	printf("wp_faults=%zu\nwp_faults_other=%lu\n", faults, uffd_other);
	if (faults != npages || wrong)
		fail("%zu pages raised no or more than one write-protect fault on their first write (%zu faults, %zu pages)",
		     wrong, faults, npages);
	if (uffd_other)
		fail("%lu unexpected userfaultfd events", uffd_other);
	check(uffd_buf, 0, buf_len, 2, "after the writes");
}

