/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_hostile's cases on droced's socket: a session that never
 * reads its replies, one without a name whose neighbour never answers,
 * and floods of connections and sessions; others are served meanwhile.
 */

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "daemon_hostile.h"

/* A connected socket to path, no HELLO yet; -1 when refused. */
static int
connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(s);
		s = -1;
	}
	return s;
}

/* A new session on A answers ALLOC_PD within ms (a HELLO and a PD). */
static int
served_within(int ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct droce_chan_hello_req hr = { .version = DROCE_CHAN_VERSION };
	struct droce_chan_hdr h = { .op = DROCE_OP_HELLO, .seq = 1 };
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} in;
	int fds[DROCE_CHAN_MAX_FDS], nfds, i, ok = 0, s;
	struct pollfd p;

	(void)sa;
	s = connect_to(path_a);
	if (s < 0)
		return 0;
	snprintf(hr.comm, sizeof(hr.comm), "bystander");
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	if (droce_chan_send(s, &h, &hr, sizeof(hr), NULL, 0) == 0 &&
			poll(&p, 1, ms) == 1 &&
			droce_chan_recv(s, in.buf, sizeof(in.buf), 1, fds, &nfds) >= 0 &&
			in.h.status == 0) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		h.op = DROCE_OP_ALLOC_PD;
		h.seq = 2;
		p.revents = 0;
		ok = droce_chan_send(s, &h, NULL, 0, NULL, 0) == 0 &&
			poll(&p, 1, ms) == 1 &&
			droce_chan_recv(s, in.buf, sizeof(in.buf), 1, fds,
				&nfds) >= 0 && in.h.seq == 2 && in.h.status == 0;
	}
	close(s);
	return ok;
}

/*
 * A session that sends requests and never reads the replies: droced's
 * main thread, which serves every session, blocked in sendmsg once that
 * session's socket filled (another client's ibv_devinfo went unanswered
 * for as long as it liked). Now its replies wait in the session, which
 * is not read meanwhile, and everyone else is served.
 */
void
unread_replies(void)
{
	struct droce_chan_hdr h = { .op = DROCE_OP_QUERY_PORT };
	struct cs t;
	int sent = 0, ok;

	CHECK(cs_open(&t, path_a) == 0, "the flooding session");
	for (;;) {
		h.seq = (uint32_t)sent + 100;
		h.len = 0;
		if (send(t.sock, &h, sizeof(h), MSG_DONTWAIT) != sizeof(h))
			break;
		if (++sent == 100000)
			break;
	}
	CHECK(sent > 100, "only %d requests went", sent);
	usleep(300000);
	ok = served_within(5000);
	CHECK(ok, "another session was not served while one of %d unread "
		"requests' replies waited", sent);
	cs_close(&t);
	printf("%d requests whose replies were never read: others served\n",
		sent);
}

/*
 * A HELLO with an empty program name, then a RESOLVE of an address that
 * never answers: the name was how droced told a session that may be
 * parked, so the neighbour's wait (seconds) ran on the main thread and
 * held every session. Now it waits aside, as any session's does.
 */
void
hello_nameless(void)
{
	struct droce_chan_hello_req hr = { .version = DROCE_CHAN_VERSION };
	struct droce_chan_resolve_req r = { .timeout_ms = 5000 };
	struct droce_chan_hdr h = { .op = DROCE_OP_HELLO, .seq = 1 };
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} in;
	int fds[DROCE_CHAN_MAX_FDS], nfds, i, s = connect_to(path_a);
	struct pollfd p = { .fd = s, .events = POLLIN };

	CHECK(s >= 0, "connect");
	CHECK(droce_chan_send(s, &h, &hr, sizeof(hr), NULL, 0) == 0 &&
		poll(&p, 1, 10000) == 1 &&
		droce_chan_recv(s, in.buf, sizeof(in.buf), 1, fds, &nfds) >= 0 &&
		in.h.status == 0, "a nameless HELLO");
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	r.gid[10] = r.gid[11] = 0xff;
	r.gid[12] = 10;
	r.gid[13] = 9;
	r.gid[15] = 77;		/* nobody */
	h.op = DROCE_OP_RESOLVE;
	h.seq = 2;
	CHECK(droce_chan_send(s, &h, &r, sizeof(r), NULL, 0) == 0, "RESOLVE");
	usleep(200000);
	CHECK(served_within(2000), "another session waited for the nameless "
		"session's neighbour");
	close(s);
	printf("a nameless session's neighbour: waited for aside\n");
}

/*
 * Connections that never say HELLO (300 of them, as root), then sessions
 * of an ordinary user in three processes, 30 each: the 64 connections
 * without HELLO filled every slot droced had, and nothing limited a user.
 * Now a connection without HELLO is closed after a few seconds, or at
 * once to make room for a new one, and a user other than root holds at
 * most DROCE_APPS_PER_USER sessions (64): a new program is served.
 */
void
session_flood(const char *run)
{
	int i, k, pipefd[2], taken = 0;
	pid_t flood, kids[3];
	uint8_t n;

	/* the connections from another process (a process holds few) */
	CHECK(pipe(pipefd) == 0, "pipe");
	flood = fork();
	CHECK(flood >= 0, "fork");
	if (flood == 0) {
		/* gone with the test, whichever way it ends */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pipefd[0]);
		for (i = 0; i < 300; i++)
			if (connect_to(path_a) < 0)
				break;
		n = 1;
		if (write(pipefd[1], &n, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	CHECK(read(pipefd[0], &n, 1) == 1, "the flood");
	close(pipefd[0]);
	CHECK(served_within(5000), "a program after 300 connections without "
		"HELLO");
	kill(flood, SIGKILL);
	waitpid(flood, NULL, 0);
	/* an ordinary user: the run directory must let it reach the socket */
	CHECK(chmod(run, 0711) == 0, "chmod %s", run);
	CHECK(pipe(pipefd) == 0, "pipe");
	for (k = 0; k < 3; k++) {
		kids[k] = fork();
		CHECK(kids[k] >= 0, "fork");
		if (kids[k] == 0) {
			static struct cs s[30];

			n = 0;
			close(pipefd[0]);
			if (setgid(65534) != 0 || setuid(65534) != 0)
				_exit(2);
			/* after setuid, which clears it: gone with the test */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (i = 0; i < 30; i++)
				n += cs_open(&s[i], path_a) == 0;
			if (write(pipefd[1], &n, 1) != 1)
				_exit(3);
			pause();	/* holding them, until killed */
			_exit(0);
		}
	}
	close(pipefd[1]);
	for (k = 0; k < 3; k++) {
		n = 0;
		CHECK(read(pipefd[0], &n, 1) == 1, "a child's count");
		taken += n;
	}
	close(pipefd[0]);
	CHECK(taken > 0 && taken <= 64, "an ordinary user holds %d sessions "
		"(at most 64)", taken);
	CHECK(served_within(5000), "a program beside the user's %d sessions",
		taken);
	for (k = 0; k < 3; k++) {
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
	}
	printf("300 connections without HELLO, a user's %d sessions: others "
		"served\n", taken);
}
