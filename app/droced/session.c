/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Sessions on the control socket, as the main thread keeps them: who may
 * attach and how many (per user, per process, in all), the HELLO that
 * must come within DD_HELLO_MS, and replies an application does not read
 * yet. The main thread serves every session, so nothing here may wait on
 * one: sockets are non-blocking, a reply that does not fit the socket
 * waits in the session (which is not read meanwhile: its application
 * asks one thing at a time), and a session that says nothing is closed.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "droced.h"

#define DD_HELLO_MS 5000	/* from connect to HELLO */

static uint64_t
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* The kernel let the peer connect (write permission on the socket); we
 * check it against the socket's owner, group and mode too, and log it. */
static int
peer_allowed(int sock, struct ucred *cr)
{
	socklen_t len = sizeof(*cr);
	struct stat st;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, cr, &len) != 0)
		return 0;
	if (cr->uid == 0 || cr->uid == geteuid())
		return 1;
	if (stat(dd.sock_path, &st) != 0)
		return 0;
	return (cr->uid == st.st_uid && (st.st_mode & S_IWUSR)) ||
		(cr->gid == st.st_gid && (st.st_mode & S_IWGRP)) ||
		(st.st_mode & S_IWOTH);
}

/* Whose limit a new session of cr would pass, or NULL. root's sessions
 * count against no user's limit (root can stop droced anyway). */
static const char *
over_limit(const struct ucred *cr)
{
	uint32_t i, per_user = 0, per_proc = 0;

	for (i = 0; i < dd.nb_apps; i++) {
		per_user += dd.apps[i]->uid == cr->uid;
		per_proc += dd.apps[i]->pid == cr->pid;
	}
	if (cr->uid != 0 && per_user >= dd.lim.apps_per_user)
		return "its user's";
	if (per_proc >= dd.lim.apps_per_proc)
		return "its process's";
	return NULL;
}

/* The session that has gone longest without a HELLO, or NULL. */
static struct dd_app *
oldest_unbound(void)
{
	struct dd_app *old = NULL;
	uint32_t i;

	for (i = 0; i < dd.nb_apps; i++) {
		struct dd_app *a = dd.apps[i];

		if (a->dp == NULL && (old == NULL || a->since_ms < old->since_ms))
			old = a;
	}
	return old;
}

static uint64_t last_refusal_log;

void
dd_session_accept(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct ucred cr;
	struct dd_app *a;
	const char *why;
	int s = accept4(dd.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (s < 0)
		return;
	if (!peer_allowed(s, &cr)) {
		DD_LOG(WARNING, "refused a peer: pid %d uid %u gid %u",
			(int)cr.pid, cr.uid, cr.gid);
		dd.refused_peers++;
		close(s);
		return;
	}
	why = over_limit(&cr);
	if (why == NULL && dd.nb_apps >= dd.lim.max_apps) {
		/* full: a session that never said HELLO makes room (a
		 * program that attaches says it at once) */
		a = oldest_unbound();
		if (a != NULL) {
			DD_LOG(DEBUG, "app %u (pid %d): no HELLO yet, closed "
				"for a new session", a->id, (int)a->pid);
			dd.unbound_closed++;
			dd_app_detach(a);
		} else {
			why = "droced's";
		}
	}
	if (why == NULL && (a = dd_app_new(s)) == NULL)
		why = "memory's";
	if (why != NULL) {
		/* a flood logs a line a second; telemetry counts them all */
		if (now_ms() - last_refusal_log >= 1000) {
			DD_LOG(WARNING, "pid %d uid %u: %s limit of sessions "
				"reached: refused (%" PRIu64 " so far)",
				(int)cr.pid, cr.uid, why, dd.refused_sessions + 1);
			last_refusal_log = now_ms();
		}
		dd.refused_sessions++;
		close(s);
		return;
	}
	a->pid = cr.pid;
	a->uid = cr.uid;
	a->gid = cr.gid;
	a->id = ++dd.next_id;
	a->since_ms = now_ms();
	dd_lock_all();
	pthread_mutex_lock(&dd.apps_lock);
	dd.apps[dd.nb_apps++] = a;
	pthread_mutex_unlock(&dd.apps_lock);
	dd_unlock_all();
	dd.attached++;
	ev.data.ptr = a;
	epoll_ctl(dd.ep, EPOLL_CTL_ADD, s, &ev);
	/* INFO once it asks for more than HELLO (ibv_get_device_list's
	 * look at the device is not worth a line) */
	DD_LOG(DEBUG, "app %u connected: pid %d uid %u gid %u", a->id,
		(int)cr.pid, cr.uid, cr.gid);
}

/* What the main thread waits for on a session: its next request, or
 * room for the reply it holds. */
static uint32_t
watch_events(const struct dd_app *a)
{
	return (a->pend != NULL ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP;
}

int
dd_app_watch(struct dd_app *a)
{
	struct epoll_event ev = { .events = watch_events(a), .data.ptr = a };

	return epoll_ctl(dd.ep, EPOLL_CTL_ADD, a->sock, &ev);
}

static void
pend_free(struct dd_app *a)
{
	uint32_t i;

	if (a->pend == NULL)
		return;
	for (i = 0; i < a->pend_nfds; i++)
		if (a->pend_close & (1u << i))
			close(a->pend_fds[i]);
	free(a->pend);
	a->pend = NULL;
	a->pend_nfds = 0;
}

int
dd_reply(struct dd_app *a, struct droce_chan_hdr *hdr, const void *body,
		uint32_t len, const int *fds, uint32_t nfds, uint32_t close_mask)
{
	struct epoll_event ev = { .data.ptr = a };
	uint32_t i;
	int rc;

	rc = droce_chan_send(a->sock, hdr, body, len, fds, (int)nfds);
	if (rc == -EAGAIN && nfds <= DROCE_CHAN_MAX_FDS &&
			(a->pend = malloc(sizeof(*hdr) + len)) != NULL) {
		/* it does not read its replies: this one waits, and so
		 * does the session */
		memcpy(a->pend, hdr, sizeof(*hdr));
		memcpy(a->pend + sizeof(*hdr), body, len);
		a->pend_len = len;
		memcpy(a->pend_fds, fds, nfds * sizeof(fds[0]));
		a->pend_nfds = nfds;
		a->pend_close = close_mask;
		a->st.replies_held++;
		ev.events = watch_events(a);
		epoll_ctl(dd.ep, EPOLL_CTL_MOD, a->sock, &ev);
		return 0;
	}
	for (i = 0; i < nfds; i++)
		if (close_mask & (1u << i))
			close(fds[i]);
	return rc < 0 ? -1 : 0;
}

/* The socket has room: the reply held goes. 0, or -1 when the session
 * must end. */
static int
flush_reply(struct dd_app *a)
{
	struct epoll_event ev = { .data.ptr = a };
	struct droce_chan_hdr hdr;
	int rc;

	if (a->pend == NULL)
		return 0;
	memcpy(&hdr, a->pend, sizeof(hdr));
	rc = droce_chan_send(a->sock, &hdr, a->pend + sizeof(hdr), a->pend_len,
		a->pend_fds, (int)a->pend_nfds);
	if (rc == -EAGAIN)
		return 0;
	pend_free(a);
	if (rc < 0)
		return -1;
	ev.events = watch_events(a);
	return epoll_ctl(dd.ep, EPOLL_CTL_MOD, a->sock, &ev) == 0 ? 0 : -1;
}

void
dd_session_event(struct dd_app *a, uint32_t events)
{
	if ((events & EPOLLOUT) && flush_reply(a) != 0) {
		dd_app_detach(a);
		return;
	}
	if ((events & EPOLLIN) && a->pend == NULL && dd_serve(a) != 0) {
		dd_app_detach(a);
		return;
	}
	if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
		dd_app_detach(a);
}

void
dd_app_detach(struct dd_app *a)
{
	uint64_t q0 = dd.reclaimed_qps, m0 = dd.reclaimed_mrs;
	uint64_t refused = a->st.refused_wqes, bad_req = a->st.refused_requests;
	uint32_t id = a->id;
	pid_t pid = a->pid;
	bool announced = a->announced;
	char comm[sizeof(a->comm)];

	memcpy(comm, a->comm, sizeof(comm));
	epoll_ctl(dd.ep, EPOLL_CTL_DEL, a->sock, NULL);	/* parked: not in it */
	dd_neigh_forget(a);
	pend_free(a);
	dd_app_free(a);
	dd.detached++;
	if (announced)
		DD_LOG(INFO, "app %u (pid %d, %s) gone: reclaimed %" PRIu64
			" QPs, %" PRIu64 " MRs; it had %" PRIu64 " WQEs and %"
			PRIu64 " requests refused", id, (int)pid, comm,
			dd.reclaimed_qps - q0, dd.reclaimed_mrs - m0, refused,
			bad_req);
}

/* Sessions whose shared memory shrank under one of our mappings (the
 * guard replaced the pages): ended, as the application broke its side. */
static void
end_shrunk(void)
{
	uint32_t ids[DD_MAX_APPS], n = dd_guard_hits(ids, DD_MAX_APPS), i, k;

	for (i = 0; i < n; i++)
		for (k = 0; k < dd.nb_apps; k++) {
			struct dd_app *a = dd.apps[k];

			if (a->id != ids[i])
				continue;
			DD_LOG(WARNING, "app %u (pid %d, %s): memory it "
				"registered shrank under droced: session ended",
				a->id, (int)a->pid, a->comm);
			a->st.refused_requests++;
			dd_app_detach(a);
			break;
		}
}

void
dd_sessions_sweep(void)
{
	uint64_t now = now_ms();
	uint32_t i;

	end_shrunk();
	/* backwards: a detach moves the last session into its slot */
	i = dd.nb_apps;
	while (i-- > 0) {
		struct dd_app *a = dd.apps[i];

		if (a->dp != NULL || now - a->since_ms < DD_HELLO_MS)
			continue;
		DD_LOG(DEBUG, "app %u (pid %d uid %u): no HELLO in %u ms: "
			"closed", a->id, (int)a->pid, a->uid, DD_HELLO_MS);
		dd.unbound_closed++;
		dd_app_detach(a);
	}
}
