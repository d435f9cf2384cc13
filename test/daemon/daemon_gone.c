/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * daemon_gone PIDFILE: a verbs program attached to droced (through
 * droce-run and DROCE_DAEMON), built against the system's headers, that
 * blocks where an application blocks (a completion channel, the async
 * event queue) and kills the daemon under itself (its pid from PIDFILE).
 * Passes when the async queue gives IBV_EVENT_DEVICE_FATAL, the blocked
 * ibv_get_cq_event returns an error, and verbs calls after that fail
 * instead of waiting (the test's timeout catches a hang).
 */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define CHECK(c, msg) do { \
	if (!(c)) { \
		fprintf(stderr, "FAIL: %s\n", msg); \
		exit(1); \
	} \
} while (0)

static struct ibv_comp_channel *chan;
static volatile int cq_event_rc = 1;

static void *
cq_waiter(void *arg)
{
	struct ibv_cq *cq;
	void *ctx;

	(void)arg;
	cq_event_rc = ibv_get_cq_event(chan, &cq, &ctx);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *c;
	struct ibv_async_event ev;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	pthread_t t;
	FILE *f;
	int n, pid = 0;

	CHECK(argc == 2, "usage: daemon_gone PIDFILE");
	list = ibv_get_device_list(&n);
	CHECK(list != NULL && n > 0, "no device (is droced there?)");
	c = ibv_open_device(list[0]);
	CHECK(c != NULL, "open");
	pd = ibv_alloc_pd(c);
	CHECK(pd != NULL, "alloc_pd");
	chan = ibv_create_comp_channel(c);
	CHECK(chan != NULL, "channel");
	cq = ibv_create_cq(c, 16, NULL, chan, 0);
	CHECK(cq != NULL, "cq");
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "arm");
	CHECK(pthread_create(&t, NULL, cq_waiter, NULL) == 0, "thread");
	usleep(200000);
	f = fopen(argv[1], "r");
	CHECK(f != NULL && fscanf(f, "%d", &pid) == 1 && pid > 0, "pid file");
	fclose(f);
	printf("killing droced (pid %d)\n", pid);
	fflush(stdout);
	CHECK(kill(pid, SIGKILL) == 0, "kill");
	CHECK(ibv_get_async_event(c, &ev) == 0, "get_async_event");
	printf("async event: %s\n", ibv_event_type_str(ev.event_type));
	CHECK(ev.event_type == IBV_EVENT_DEVICE_FATAL, "not DEVICE_FATAL");
	ibv_ack_async_event(&ev);
	pthread_join(t, NULL);
	CHECK(cq_event_rc != 0, "ibv_get_cq_event returned an event");
	printf("blocked ibv_get_cq_event returned %d\n", cq_event_rc);
	CHECK(ibv_alloc_pd(c) == NULL, "alloc_pd after the daemon died");
	CHECK(ibv_poll_cq(cq, 1, &wc) < 0, "poll_cq after the daemon died");
	CHECK(ibv_req_notify_cq(cq, 0) != 0, "arm after the daemon died");
	/* tearing down must not hang either */
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(chan);
	ibv_dealloc_pd(pd);
	ibv_close_device(c);
	ibv_free_device_list(list);
	printf("PASS: fatal event, errors, no hang\n");
	return 0;
}
