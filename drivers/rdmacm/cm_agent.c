/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The CM agent: one thread that sleeps in poll() on every started
 * device's completion channel and a wake-up eventfd, with the nearest
 * retransmission as its timeout. It does the CM's work under the lock:
 * MADs in, answers and events out, retransmissions and timeouts.
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <unistd.h>

#include "cm_internal.h"
#include "droce_wire.h"
#include "wire_bytes.h"

#define CM_MAX_DEVS 8

void
cm_agent_wake(void)
{
	uint64_t one = 1;

	if (cm.wake_fd >= 0 && write(cm.wake_fd, &one, sizeof(one)) < 0)
		return;	/* a count already pending wakes it as well */
}

void
cm_retx_arm(struct cm_id_priv *p, const uint8_t *mad, uint32_t ms)
{
	memcpy(p->retx.mad, mad, CM_MAD_LEN);
	p->retx.armed = true;
	p->retx.left = CM_RETRIES;
	p->retx.timeout_ms = ms;
	p->retx.deadline_ms = cm_now_ms() + ms;
	cm_agent_wake();
}

void
cm_retx_stop(struct cm_id_priv *p)
{
	p->retx.armed = false;
}

void
cm_agent_timeouts(uint64_t now)
{
	struct cm_id_priv *p, *next;

	for (p = cm.ids; p != NULL; p = next) {
		next = p->next;
		if (!p->retx.armed || p->retx.deadline_ms > now)
			continue;
		if (p->retx.left == 0) {
			p->retx.armed = false;
			cm.st.timeouts++;
			cm_conn_timeout(p);
			continue;
		}
		p->retx.left--;
		p->retx.deadline_ms = now + p->retx.timeout_ms;
		cm.st.retransmits++;
		cm_send_mad(p->dev, p->ah, p->retx.mad);
	}
	cm_linger_timeouts(now);
	cm_held_timeouts(now);
}

static int
next_timeout(uint64_t now)
{
	uint64_t first = cm_linger_next();
	struct cm_id_priv *p;

	for (p = cm.ids; p != NULL; p = p->next)
		if (p->retx.armed && p->retx.deadline_ms < first)
			first = p->retx.deadline_ms;
	if (cm_held_any() && now + 1 < first)
		first = now + 1;	/* the application's polling, watched */
	if (first == UINT64_MAX)
		return -1;
	return first <= now ? 0 : (int)(first - now > 60000 ? 60000 :
		first - now);
}

/* The peer's GID from the GRH droce places before a UD receive: for
 * RoCEv2 over IPv4 the IPv4 header sits in its last 20 bytes. */
static int
grh_sgid(const uint8_t *grh, uint8_t sgid[16])
{
	static const uint8_t zero[20];

	if (memcmp(grh, zero, 20) == 0 && (grh[20] >> 4) == 4) {
		droce_gid_from_ipv4(sgid, get_be32(grh + 20 + 12));
		return 0;
	}
	if ((grh[0] >> 4) == 6) {
		memcpy(sgid, grh + 8, 16);
		return 0;
	}
	return -1;
}

void
cm_agent_rx(struct cm_dev *d, const uint8_t *grh, const uint8_t *mad,
		uint32_t len)
{
	struct cm_mad_hdr h;
	uint8_t sgid[16];

	cm.st.rx_mads++;
	if (grh_sgid(grh, sgid) != 0 || cm_mad_parse_hdr(mad, len, &h) != 0) {
		cm.st.rx_drop_malformed++;
		return;
	}
	switch (h.attr_id) {
	case CM_ATTR_SIDR_REQ:
	case CM_ATTR_SIDR_REP:
		cm_sidr_rx(d, sgid, &h, mad + CM_MAD_HDR);
		break;
	default:
		cm_conn_rx(d, sgid, &h, mad + CM_MAD_HDR);
		break;
	}
}

static void *
agent_main(void *arg)
{
	struct pollfd pfd[1 + CM_MAX_DEVS];
	struct cm_dev *devs[CM_MAX_DEVS], *d;
	struct ibv_cq *cq;
	void *ctx;
	uint64_t v;
	int n, i, tmo;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&cm.lock);
		n = 0;
		pfd[n++] = (struct pollfd){ .fd = cm.wake_fd, .events = POLLIN };
		for (d = cm.devs; d != NULL && n <= CM_MAX_DEVS; d = d->next) {
			if (!d->up)
				continue;
			devs[n - 1] = d;
			pfd[n++] = (struct pollfd){ .fd = d->ch->fd,
				.events = POLLIN };
		}
		tmo = next_timeout(cm_now_ms());
		pthread_mutex_unlock(&cm.lock);

		if (poll(pfd, (nfds_t)n, tmo) < 0 && errno != EINTR)
			continue;
		if (pfd[0].revents & POLLIN &&
				read(cm.wake_fd, &v, sizeof(v)) < 0)
			continue;
		for (i = 1; i < n; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			d = devs[i - 1];
			if (ibv_get_cq_event(d->ch, &cq, &ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(cq, 0);
			}
			pthread_mutex_lock(&cm.lock);
			cm_dev_poll(d);
			pthread_mutex_unlock(&cm.lock);
		}
		pthread_mutex_lock(&cm.lock);
		cm_agent_timeouts(cm_now_ms());
		pthread_mutex_unlock(&cm.lock);
	}
	return NULL;
}

/* Start the agent once (lock held). */
int
cm_agent_start(void)
{
	sigset_t all, old;
	int rc;

	if (cm.agent_up)
		return 0;
	cm.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cm.wake_fd < 0)
		return -1;
	/* the application's signals go to its own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&cm.agent, NULL, agent_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_detach(cm.agent);
	pthread_setname_np(cm.agent, "droce-cm");
	cm.agent_up = true;
	return 0;
}

/*
 * At exit, connections still up are disconnected and DREQs in flight get
 * a few seconds to be answered: the kernel's CM outlives a process and
 * does this after it; droce's goes with it, and a peer that never hears
 * the DREQ waits for a DISCONNECTED event forever.
 */
static void __attribute__((destructor))
cm_fini(void)
{
	uint64_t end = cm_now_ms() + CM_EXIT_LINGER_MS;
	struct cm_id_priv *p;
	bool busy;

	if (!cm.agent_up)
		return;
	pthread_mutex_lock(&cm.lock);
	for (p = cm.ids; p != NULL; p = p->next)
		if (p->state == CM_ESTABLISHED && p->id.qp_type != IBV_QPT_UD)
			cm_conn_dreq(p);
	pthread_mutex_unlock(&cm.lock);
	do {
		busy = false;
		pthread_mutex_lock(&cm.lock);
		for (p = cm.ids; p != NULL; p = p->next)
			busy |= p->state == CM_DREQ_SENT && p->retx.armed;
		busy |= cm_linger_busy();
		pthread_mutex_unlock(&cm.lock);
		if (busy)
			usleep(10000);
	} while (busy && cm_now_ms() < end);
}

int
droce_cm_stats_get(struct droce_cm_stats *st)
{
	if (st == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	*st = cm.st;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}
