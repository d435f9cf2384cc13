/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rpoll and rselect over rsockets and ordinary descriptors together (as
 * librspreload hands them over). An rsocket is ready by its state (data
 * queued, credits to send, an accept waiting, an error); to sleep, its
 * completion queue is armed and poll() waits on the completion channel
 * and the CM channel in its place. Events that wake the sleep but ready
 * nothing the caller asked for (credit updates, CM events) send it back
 * to sleep until the timeout.
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "cm_rsocket.h"

#define RS_POLL_SLICE_MS 500

static uint64_t
rs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What rs is ready for, its queues and events taken first. Lock held. */
static short
rs_revents(struct rs_socket *rs, short events)
{
	struct pollfd p = { .fd = rs->index, .events = POLLIN };
	short rev = 0;

	if (rs_opening(rs))
		rs_cm_progress(rs);
	switch (rs->phase) {
	case RS_LISTENING:
		if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN))
			rev = events & POLLIN;
		return rev;
	case RS_CONNECT_ERROR:
		return POLLERR | (events & (POLLIN | POLLOUT));
	case RS_CONNECTED:
	case RS_DISCONNECTED:
	case RS_ERROR:
		break;
	default:
		return 0;
	}
	rs_cm_events(rs);
	rs_process_cq(rs);
	if ((events & POLLIN) && rs_conn_have_rdata(rs))
		rev |= POLLIN;
	if ((events & POLLOUT) && rs->rmsg != NULL && rs_can_send(rs))
		rev |= POLLOUT;
	/* a hang-up once what came before it is read, as TCP's comes
	 * after the data (rstream's rpoll takes POLLHUP for a failure) */
	if (rs->phase == RS_DISCONNECTED && !rs_have_rdata(rs))
		rev |= POLLHUP;
	else if (rs->phase == RS_ERROR)
		rev |= POLLERR;
	return rev;
}

/* Arm rs to wake a sleep; its readiness, rechecked after arming. */
static short
rs_arm(struct rs_socket *rs, short events)
{
	short rev = rs_revents(rs, events);

	if (rev != 0 || rs->cq == NULL || rs->cq_armed)
		return rev;
	ibv_req_notify_cq(rs->cq, 0);
	rs->cq_armed = true;
	/* what came between the check and the arming */
	return rs_revents(rs, events);
}

struct rs_pollset {
	struct pollfd *p;	/* what poll() waits on */
	int *owner;		/* the caller's entry each one stands for */
	nfds_t n;
};

static void
rs_pollset_add(struct rs_pollset *ps, int fd, short events, int owner)
{
	ps->p[ps->n].fd = fd;
	ps->p[ps->n].events = events;
	ps->p[ps->n].revents = 0;
	ps->owner[ps->n] = owner;
	ps->n++;
}

/* The rsockets' readiness, and what to wait on. Returns how many are
 * ready. */
static int
rs_poll_build(struct pollfd *fds, nfds_t nfds, struct rs_pollset *ps)
{
	struct rs_socket *rs;
	int saved = errno, cnt = 0;
	nfds_t i;

	ps->n = 0;
	for (i = 0; i < nfds; i++) {
		fds[i].revents = 0;
		rs = rs_is_socket(fds[i].fd) ? rs_get(fds[i].fd) : NULL;
		if (rs == NULL) {
			rs_pollset_add(ps, fds[i].fd, fds[i].events, (int)i);
			continue;
		}
		fds[i].revents = rs_arm(rs, fds[i].events);
		if (fds[i].revents != 0)
			cnt++;
		if (rs->cch != NULL)
			rs_pollset_add(ps, rs->cch->fd, POLLIN, -1 - (int)i);
		if (rs->phase != RS_INIT && rs->phase != RS_BOUND)
			rs_pollset_add(ps, rs->index, POLLIN, -1 - (int)i);
		rs_put(rs);
	}
	errno = saved;
	return cnt;
}

/* After the sleep: the descriptors' answers, the rsockets' events taken. */
static void
rs_poll_collect(struct pollfd *fds, struct rs_pollset *ps)
{
	struct rs_socket *rs;
	int saved = errno, o;
	nfds_t k;

	for (k = 0; k < ps->n; k++) {
		o = ps->owner[k];
		if (o >= 0) {
			fds[o].revents = ps->p[k].revents;
			continue;
		}
		if (ps->p[k].revents == 0 || ps->p[k].fd == fds[-1 - o].fd)
			continue;
		rs = rs_get(fds[-1 - o].fd);
		if (rs == NULL)
			continue;
		rs_cq_event(rs);
		rs_put(rs);
	}
	errno = saved;
}

int
rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct rs_pollset ps;
	uint64_t deadline = timeout > 0 ? rs_now_ms() + timeout : 0, now;
	int cnt, rc, wait;
	nfds_t i;

	ps.p = malloc(sizeof(*ps.p) * (2 * nfds + 1));
	ps.owner = malloc(sizeof(*ps.owner) * (2 * nfds + 1));
	if (ps.p == NULL || ps.owner == NULL) {
		free(ps.p);
		free(ps.owner);
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		cnt = rs_poll_build(fds, nfds, &ps);
		wait = RS_POLL_SLICE_MS;
		if (cnt > 0 || timeout == 0) {
			wait = 0;
		} else if (timeout > 0) {
			now = rs_now_ms();
			wait = now >= deadline ? 0 : (int)(deadline - now);
			if (wait > RS_POLL_SLICE_MS)
				wait = RS_POLL_SLICE_MS;
		}
		rc = poll(ps.p, ps.n, wait);
		if (rc < 0) {
			cnt = -1;
			break;
		}
		rs_poll_collect(fds, &ps);
		for (i = 0, cnt = 0; i < nfds; i++)
			if (fds[i].revents != 0)
				cnt++;
		if (cnt > 0 || timeout == 0 ||
				(timeout > 0 && rs_now_ms() >= deadline))
			break;
	}
	free(ps.p);
	free(ps.owner);
	return cnt;
}

int
rselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	struct pollfd *p;
	int fd, n = 0, cnt = 0, i, rc, ms;

	p = malloc(sizeof(*p) * (nfds > 0 ? nfds : 1));
	if (p == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (rd != NULL && FD_ISSET(fd, rd))
			ev |= POLLIN;
		if (wr != NULL && FD_ISSET(fd, wr))
			ev |= POLLOUT;
		if (ev == 0 && !(ex != NULL && FD_ISSET(fd, ex)))
			continue;
		p[n].fd = fd;
		p[n].events = ev;
		n++;
	}
	ms = tv == NULL ? -1 : (int)(tv->tv_sec * 1000 + tv->tv_usec / 1000);
	rc = rpoll(p, (nfds_t)n, ms);
	if (rc < 0) {
		free(p);
		return -1;
	}
	if (rd != NULL)
		FD_ZERO(rd);
	if (wr != NULL)
		FD_ZERO(wr);
	if (ex != NULL)
		FD_ZERO(ex);
	for (i = 0; i < n; i++) {
		if (rd != NULL && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
				(p[i].events & POLLIN)) {
			FD_SET(p[i].fd, rd);
			cnt++;
		}
		if (wr != NULL && (p[i].revents & (POLLOUT | POLLERR)) &&
				(p[i].events & POLLOUT)) {
			FD_SET(p[i].fd, wr);
			cnt++;
		}
		if (ex != NULL && (p[i].revents & POLLPRI)) {
			FD_SET(p[i].fd, ex);
			cnt++;
		}
	}
	free(p);
	return cnt;
}
