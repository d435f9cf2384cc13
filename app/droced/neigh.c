/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Requests that wait for a neighbour: a QP's RTR (its AV), an AH, a
 * RESOLVE. ARP or ND may take seconds (10 s for a host that never
 * answers); the main thread serves every session, so such a request is
 * parked instead: its session leaves the epoll set (its application is
 * waiting for this reply anyway), a thread of its own asks the neighbour,
 * and when that ends the main thread serves the request as usual, the
 * neighbour known by then or not to be waited for again. Other sessions
 * go on meanwhile.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "ctl.h"
#include "droced.h"

#define NEIGH_STEP_MS 100	/* how soon a stop is seen */

struct neigh_job {
	struct droce_port *port;	/* the session's */
	uint32_t app_id;
	uint8_t gid[16];
	uint32_t ms;
};

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t done_ids[2 * DD_MAX_APPS];
static uint32_t ndone, running;

/* The GID a request's neighbour has, or -1 when it needs none. */
static int
request_gid(struct dd_app *a, const struct droce_chan_hdr *h,
		const void *body, uint8_t gid[16], uint32_t *ms)
{
	const struct ibv_ah_attr *ah = NULL;

	*ms = DD_NEIGH_MS;
	switch (h->op) {
	case DROCE_OP_MODIFY_QP: {
		const struct droce_chan_modify_qp_req *r = body;
		struct dd_qp *qp = dd_table_get(&a->qps, r->handle);

		if (qp == NULL || qp->gsi || !(r->mask & IBV_QP_AV))
			return -1;
		ah = &r->attr.ah_attr;
		break;
	}
	case DROCE_OP_CREATE_AH:
		ah = &((const struct droce_chan_create_ah_req *)body)->attr;
		break;
	case DROCE_OP_RESOLVE: {
		const struct droce_chan_resolve_req *r = body;

		memcpy(gid, r->gid, 16);
		*ms = r->timeout_ms < DD_RESOLVE_MAX_MS ? r->timeout_ms :
			DD_RESOLVE_MAX_MS;
		return 0;
	}
	default:
		return -1;
	}
	if (!ah->is_global)
		return -1;	/* refused by the handler */
	memcpy(gid, ah->grh.dgid.raw, 16);
	return 0;
}

static void *
job_run(void *arg)
{
	struct neigh_job *j = arg;
	uint64_t left = j->ms;
	uint8_t mac[6];
	uint64_t one = 1;

	while (!dd.stop && left > 0) {
		uint32_t step = left < NEIGH_STEP_MS ? (uint32_t)left : NEIGH_STEP_MS;

		if (droce_port_resolve(j->port, j->gid, mac, step) == 0)
			break;
		left -= step;
	}
	pthread_mutex_lock(&done_lock);
	if (ndone < sizeof(done_ids) / sizeof(done_ids[0]))
		done_ids[ndone++] = j->app_id;
	running--;
	pthread_mutex_unlock(&done_lock);
	if (write(dd.neigh_fd, &one, sizeof(one)) < 0)
		DD_LOG(DEBUG, "neighbour eventfd: %s", strerror(errno));
	free(j);
	return NULL;
}

bool
dd_neigh_park(struct dd_app *a, const uint8_t *msg, uint32_t len, int *fds,
		int nfds)
{
	const struct droce_chan_hdr *h = (const void *)msg;
	struct neigh_job *j;
	pthread_attr_t at;
	pthread_t t;
	uint8_t mac[6];
	int i;

	if (a->parked != NULL || dd.neigh_fd < 0)
		return false;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return false;
	if (request_gid(a, h, msg + sizeof(*h), j->gid, &j->ms) != 0 ||
			droce_port_resolve(a->dp->port, j->gid, mac, 0) == 0 ||
			(a->parked = malloc(len)) == NULL) {
		free(j);
		return false;	/* served now: no wait, or no room to park */
	}
	j->app_id = a->id;
	j->port = a->dp->port;
	memcpy(a->parked, msg, len);
	a->parked_nfds = nfds;
	for (i = 0; i < nfds; i++) {
		a->parked_fds[i] = fds[i];
		fds[i] = -1;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&done_lock);
	running++;
	pthread_mutex_unlock(&done_lock);
	if (pthread_create(&t, &at, job_run, j) != 0) {
		pthread_mutex_lock(&done_lock);
		running--;
		pthread_mutex_unlock(&done_lock);
		pthread_attr_destroy(&at);
		for (i = 0; i < nfds; i++)
			fds[i] = a->parked_fds[i];
		free(a->parked);
		a->parked = NULL;
		free(j);
		return false;	/* served now, waiting as before */
	}
	pthread_attr_destroy(&at);
	epoll_ctl(dd.ep, EPOLL_CTL_DEL, a->sock, NULL);
	a->st.parked_requests++;
	return true;
}

/* The main thread, its neighbour eventfd readable: serve what waited. */
void
dd_neigh_done(void)
{
	uint32_t ids[2 * DD_MAX_APPS], n, i, k;
	uint64_t v;

	if (read(dd.neigh_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&done_lock);
	n = ndone;
	memcpy(ids, done_ids, n * sizeof(ids[0]));
	ndone = 0;
	pthread_mutex_unlock(&done_lock);
	for (i = 0; i < n; i++) {
		struct dd_app *a = NULL;

		for (k = 0; k < dd.nb_apps; k++)
			if (dd.apps[k]->id == ids[i])
				a = dd.apps[k];
		if (a == NULL || a->parked == NULL)
			continue;	/* gone meanwhile */
		if (dd_app_watch(a) != 0 ||
				dd_serve_msg(a, a->parked, a->parked_fds,
				a->parked_nfds, 0) != 0)
			dd_app_detach(a);
		else
			dd_neigh_forget(a);
	}
}

/* A parked request's message and descriptors go (served, or its session). */
void
dd_neigh_forget(struct dd_app *a)
{
	int i;

	for (i = 0; i < a->parked_nfds; i++)
		if (a->parked_fds[i] >= 0)
			close(a->parked_fds[i]);
	a->parked_nfds = 0;
	free(a->parked);
	a->parked = NULL;
}

/* At stop: the threads see dd.stop within a step; wait for them. */
void
dd_neigh_fini(void)
{
	int i;

	for (i = 0; i < 100; i++) {
		uint32_t r;

		pthread_mutex_lock(&done_lock);
		r = running;
		pthread_mutex_unlock(&done_lock);
		if (r == 0)
			break;
		usleep(10000);
	}
}
