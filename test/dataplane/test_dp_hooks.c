/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce_port_set_hooks and droce_port_wake_fd on net_ring ports: an
 * INLINE port's passes (droce_port_progress) call the poll hook before
 * receiving and after the transport's progress, with the queue's lock
 * held, and count its work; cleared, it is called no more; the INLINE
 * port has no wake fd. A PROGRESS_THREAD port's thread calls the poll
 * hook, pairs the sleep hook's 1 and 0 around its naps, and drains
 * what another writer put on its wake fd.
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "eal_dir.h"
#include "droce.h"

struct hook_log {
	struct droce_port *port;
	int before[2], after[2];	/* per queue */
	int order_bad;			/* AFTER without BEFORE first */
	int last[2];			/* last phase seen per queue + 1 */
	int bad_q;
	int work;			/* what BEFORE returns */
	int sleeps, wakes, unpaired;
	int skip;			/* sleep(1) returns this */
};

static int
poll_hook(void *arg, uint32_t q, enum droce_hook_phase phase)
{
	struct hook_log *h = arg;

	if (q > 1) {
		h->bad_q++;
		return 0;
	}
	if (phase == DROCE_HOOK_BEFORE) {
		__atomic_fetch_add(&h->before[q], 1, __ATOMIC_RELAXED);
	} else {
		if (h->last[q] != DROCE_HOOK_BEFORE + 1)
			h->order_bad++;
		__atomic_fetch_add(&h->after[q], 1, __ATOMIC_RELAXED);
	}
	h->last[q] = (int)phase + 1;
	return phase == DROCE_HOOK_BEFORE ? h->work : 0;
}

static int
sleep_hook(void *arg, int sleeping)
{
	struct hook_log *h = arg;

	if (sleeping) {
		if (h->sleeps != h->wakes)
			h->unpaired++;
		__atomic_fetch_add(&h->sleeps, 1, __ATOMIC_RELAXED);
		return h->skip;
	}
	__atomic_fetch_add(&h->wakes, 1, __ATOMIC_RELAXED);
	if (h->sleeps != h->wakes)
		h->unpaired++;
	return 0;
}

static struct droce_port *
open_ring(const char *devargs, const char *name, enum droce_progress_mode m,
		uint32_t nq)
{
	static char eal[256];
	struct droce_port_conf conf;

	snprintf(eal, sizeof(eal), "--no-huge -m 512 --no-pci "
		"--file-prefix %s --log-level=lib.eal:4", eal_dir_prefix("dphk"));
	droce_port_conf_init(&conf);
	conf.eal_args = eal;
	conf.devargs = devargs;
	conf.name = name;
	conf.nb_queues = nq;
	conf.mode = m;
	conf.ipv4 = 0x0ac70001;
	return droce_port_open(&conf);
}

static void
test_inline(void)
{
	struct droce_port_hooks hk;
	struct hook_log h;
	struct droce_port *p;
	int i;

	p = open_ring("net_ring0", "droce-hk0", DROCE_PROGRESS_INLINE, 2);
	CHECK(p != NULL, "INLINE net_ring port");
	if (p == NULL)
		return;
	CHECK_EQ(droce_port_wake_fd(p), -1, "no wake fd in INLINE mode");
	memset(&h, 0, sizeof(h));
	h.port = p;
	hk.poll = poll_hook;
	hk.sleep = sleep_hook;
	hk.arg = &h;
	CHECK_EQ(droce_port_set_hooks(NULL, &hk), -EINVAL, "no port");
	CHECK_EQ(droce_port_set_hooks(p, &hk), 0, "set hooks");
	for (i = 0; i < 10; i++) {
		droce_port_progress(p, 0);
		droce_port_progress(p, 1);
	}
	CHECK(h.before[0] == 10 && h.after[0] == 10 && h.before[1] == 10 &&
		h.after[1] == 10, "phases %d/%d %d/%d", h.before[0],
		h.after[0], h.before[1], h.after[1]);
	CHECK_EQ(h.order_bad, 0, "BEFORE then AFTER in each pass");
	CHECK_EQ(h.bad_q, 0, "queue index");
	CHECK_EQ(h.sleeps + h.wakes, 0, "no progress thread, no naps");
	/* the hook's work is the pass's */
	h.work = 3;
	CHECK(droce_port_progress(p, 0) >= 3, "hook work counted");
	h.work = 0;
	/* a pass under the caller's lock calls it too */
	droce_port_lock(p, 1);
	droce_port_progress_locked(p, 1);
	droce_port_unlock(p, 1);
	CHECK_EQ(h.after[1], 11, "progress_locked calls the hook");
	CHECK_EQ(droce_port_set_hooks(p, NULL), 0, "clear hooks");
	droce_port_progress(p, 0);
	CHECK_EQ(h.before[0], 11, "cleared: no more calls");
	droce_port_close(p);
}

static int
wait_for(const int *v, int min, int ms)
{
	while (__atomic_load_n(v, __ATOMIC_RELAXED) < min && ms-- > 0)
		usleep(1000);
	return __atomic_load_n(v, __ATOMIC_RELAXED) >= min;
}

static void
test_thread(void)
{
	struct droce_port_hooks hk;
	struct hook_log h;
	struct droce_port *p;
	struct pollfd pfd;
	uint64_t one = 1;
	int fd, n;

	p = open_ring("net_ring1", "droce-hk1", DROCE_PROGRESS_THREAD, 1);
	CHECK(p != NULL, "PROGRESS_THREAD net_ring port");
	if (p == NULL)
		return;
	fd = droce_port_wake_fd(p);
	CHECK(fd >= 0, "wake fd in PROGRESS_THREAD mode: %d", fd);
	memset(&h, 0, sizeof(h));
	h.port = p;
	hk.poll = poll_hook;
	hk.sleep = sleep_hook;
	hk.arg = &h;
	CHECK_EQ(droce_port_set_hooks(p, &hk), 0, "set hooks");
	CHECK(wait_for(&h.after[0], 5, 2000), "the thread's passes call "
		"the hook: %d", h.after[0]);
	CHECK(wait_for(&h.sleeps, 5, 2000), "the thread naps: %d", h.sleeps);
	/* a nap the hook calls off is still paired */
	h.skip = 1;
	n = h.sleeps;
	CHECK(wait_for(&h.sleeps, n + 5, 2000), "naps skipped");
	h.skip = 0;
	if (fd >= 0) {
		CHECK_EQ(write(fd, &one, sizeof(one)), sizeof(one),
			"write the wake fd");
		/* the thread's next nap wakes at once and reads it */
		n = h.sleeps;
		CHECK(wait_for(&h.sleeps, n + 3, 2000), "naps go on");
		pfd.fd = fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		CHECK_EQ(poll(&pfd, 1, 0), 0, "the thread drained the wake fd");
	}
	CHECK_EQ(droce_port_set_hooks(p, NULL), 0, "clear hooks");
	/* a nap in progress when the hooks went still ends with its wake
	 * (a loaded machine may hold the thread in it for a while) */
	for (n = 0; n < 2000 && __atomic_load_n(&h.wakes, __ATOMIC_RELAXED) !=
			__atomic_load_n(&h.sleeps, __ATOMIC_RELAXED); n++)
		usleep(1000);
	usleep(2000);
	CHECK_EQ(h.order_bad, 0, "BEFORE then AFTER in each pass");
	CHECK(h.sleeps == h.wakes && h.unpaired == 0,
		"sleep 1 and 0 paired: %d %d %d", h.sleeps, h.wakes,
		h.unpaired);
	n = h.before[0];
	usleep(5000);
	CHECK_EQ(h.before[0], n, "cleared: the thread calls it no more");
	droce_port_close(p);
}

int
main(void)
{
	test_inline();
	test_thread();
	return check_report("test_dp_hooks");
}
