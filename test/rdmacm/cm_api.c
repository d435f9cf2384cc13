/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * cm_api server|client ADDR: rdma_cm's documented behaviour where no
 * Debian binary goes, built against the system's librdmacm and run on
 * droce's through droce-run (cm-pair.sh starts both ends).
 *
 * The client checks, in order: a connect to an address nobody answers
 * ends in ADDR_ERROR (or UNREACHABLE) within its timeout; a connect to a
 * port with no listener ends in REJECTED, a UD one (SIDR) in UNREACHABLE,
 * each after its request was retried; librpma's and libfabric's
 * habits (check_library_habits); hostile MADs to the server's
 * QP1 (a UD QP of its own with the CM's Q_Key); then rdma_post_send's
 * promises (rdma_verbs.h, seed 001): INLINE and SIGNALED sends return 0,
 * rdma_get_send_comp blocks and returns the completion, a send on a QP
 * moved to RESET fails with the verbs errno; a consumer reject (reason
 * 28 with the server's private data) and a server that vanishes after
 * taking the REQ (UNREACHABLE, ETIMEDOUT). The server checks that the
 * hostile MADs were dropped and counted (droce_cm_stats_get), that it
 * still accepted the real connection, that the client's DISCONNECTED
 * waits until the server has polled the completion of the client's
 * last message (cm_held.c), and that, pending on the ID's channel, it
 * follows the ID to another channel (rdma_migrate_id). Attached to
 * droced (DROCE_DAEMON),
 * the daemon answers the REQ to no listener, drops the hostile MADs, and
 * answers a REQ whose server died with a REJ.
 */

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "droce_rdmacm.h"

static int failures;

#define CHECK(c, what) do {						\
	if (c)								\
		printf("ok: %s\n", what);				\
	else {								\
		printf("FAIL: %s (errno %d %s)\n", what, errno,		\
			strerror(errno));				\
		failures++;						\
	}								\
} while (0)

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct sockaddr_in
sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

/* next event on ch, waiting at most secs; -1 when none came */
static int
next_event(struct rdma_event_channel *ch, double secs,
		enum rdma_cm_event_type *type, int *status)
{
	struct rdma_cm_event *ev;
	double end = now_s() + secs;

	while (now_s() < end) {
		if (rdma_get_cm_event(ch, &ev) == 0) {
			*type = ev->event;
			*status = ev->status;
			rdma_ack_cm_event(ev);
			return 0;
		}
		if (errno != EAGAIN)
			return -1;
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	return -1;
}

static void
check_unreachable(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of("10.9.0.77", 7471);
	enum rdma_cm_event_type t;
	struct rdma_cm_id *id;
	double t0;
	int st, rc;

	CHECK(ch != NULL, "rdma_create_event_channel");
	/* the fd can be non-blocking: rdma_get_cm_event says EAGAIN */
	rc = fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	CHECK(rc == 0, "event channel fd made non-blocking");
	CHECK(rdma_get_cm_event(ch, &(struct rdma_cm_event *){ NULL }) == -1 &&
		errno == EAGAIN, "no event yet: EAGAIN");
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	t0 = now_s();
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000) == 0,
		"rdma_resolve_addr to a silent address starts");
	rc = next_event(ch, 15, &t, &st);
	printf("  event %s status %d after %.2f s\n", rc ? "none" :
		rdma_event_str(t), st, now_s() - t0);
	CHECK(rc == 0 && (t == RDMA_CM_EVENT_ADDR_ERROR ||
		t == RDMA_CM_EVENT_UNREACHABLE) && st != 0,
		"a silent address ends in ADDR_ERROR or UNREACHABLE");
	CHECK(now_s() - t0 < 1.0 + 5.0, "within the timeout (1 s, 5 s slack)");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void
check_no_listener(const char *srv)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of(srv, 9);	/* nobody listens on 9 */
	struct ibv_qp_init_attr qa;
	enum rdma_cm_event_type t;
	struct rdma_cm_id *id;
	int st = 0;

	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000);
	CHECK(next_event(ch, 15, &t, &st) == 0 &&
		t == RDMA_CM_EVENT_ADDR_RESOLVED, "server address resolved");
	rdma_resolve_route(id, 2000);
	CHECK(next_event(ch, 15, &t, &st) == 0 &&
		t == RDMA_CM_EVENT_ROUTE_RESOLVED, "route resolved");
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	CHECK(rdma_create_qp(id, NULL, &qa) == 0, "rdma_create_qp, default PD and CQs");
	CHECK(id->send_cq != NULL && id->recv_cq != NULL && id->pd != NULL,
		"the ID carries its PD and CQs");
	CHECK(rdma_connect(id, NULL) == 0, "rdma_connect to a port nobody listens on");
	CHECK(next_event(ch, 30, &t, &st) == 0 && t == RDMA_CM_EVENT_REJECTED,
		"REJECTED");
	printf("  reject reason %d\n", st);
	{
		/* the first "invalid service ID" made the REQ go again */
		int (*get)(struct droce_cm_stats *) =
			(int (*)(struct droce_cm_stats *))dlsym(RTLD_DEFAULT,
			"droce_cm_stats_get");
		struct droce_cm_stats cs;

		CHECK(get != NULL && get(&cs) == 0 && cs.rx_rej_retried >= 1,
			"REJECTED only after the REQ was retried");
	}
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/*
 * The same for UD: a SIDR REQ to no listener. The answer "service ID not
 * supported" counts only after its grace (the server may not listen yet:
 * perftest -R -c UD), so the SIDR REQ goes again first.
 */
static void
check_no_listener_ud(const char *srv)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of(srv, 9);	/* nobody listens on 9 */
	int (*get)(struct droce_cm_stats *) =
		(int (*)(struct droce_cm_stats *))dlsym(RTLD_DEFAULT,
		"droce_cm_stats_get");
	struct droce_cm_stats before, after;
	enum rdma_cm_event_type t;
	struct rdma_cm_id *id;
	int st = 0, rc;

	CHECK(get != NULL && get(&before) == 0, "droce_cm_stats_get");
	rdma_create_id(ch, &id, NULL, RDMA_PS_UDP);
	rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000);
	CHECK(next_event(ch, 15, &t, &st) == 0 &&
		t == RDMA_CM_EVENT_ADDR_RESOLVED, "UD: server address resolved");
	rdma_resolve_route(id, 2000);
	CHECK(next_event(ch, 15, &t, &st) == 0 &&
		t == RDMA_CM_EVENT_ROUTE_RESOLVED, "UD: route resolved");
	CHECK(rdma_connect(id, NULL) == 0,
		"UD: rdma_connect (SIDR REQ) to a port nobody listens on");
	rc = next_event(ch, 60, &t, &st);
	printf("  event %s status %d\n", rc ? "none" : rdma_event_str(t), st);
	CHECK(rc == 0 && t == RDMA_CM_EVENT_UNREACHABLE && st == 1,
		"UD: UNREACHABLE, status 1 (service ID not supported)");
	CHECK(get != NULL && get(&after) == 0 &&
		after.rx_rej_retried > before.rx_rej_retried,
		"UD: UNREACHABLE only after the SIDR REQ was retried");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* MADs no CM should act on, from a UD QP of the client's own */
static void
send_hostile(const char *srv)
{
	struct ibv_context **devs = rdma_get_devices(NULL);
	struct ibv_qp_init_attr qa;
	struct ibv_ah_attr aa;
	struct ibv_qp_attr a;
	struct ibv_pd *pd = ibv_alloc_pd(devs[0]);
	struct ibv_cq *cq = ibv_create_cq(devs[0], 16, NULL, NULL, 0);
	static uint8_t mads[6][256];
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	int i, n = 0;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x80010000;
	ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = 64;
	aa.grh.sgid_index = 1;
	aa.grh.dgid.raw[10] = aa.grh.dgid.raw[11] = 0xff;
	inet_pton(AF_INET, srv, aa.grh.dgid.raw + 12);
	ah = ibv_create_ah(pd, &aa);
	/* 0: a MAD of version 2; 1: of another class; 2: a REQ whose
	 * rdma_cm header says IP version 9; 3: a REP for no connection;
	 * 4: an LAP (no alternate paths on RoCE); 5: random bytes */
	for (i = 0; i < 6; i++) {
		mads[i][0] = 1;
		mads[i][1] = 0x07;
		mads[i][2] = 2;
		mads[i][3] = 0x03;
	}
	mads[0][0] = 2;
	mads[0][17] = 0x10;
	mads[1][1] = 0x81;
	mads[2][17] = 0x10;
	mads[2][24 + 140 + 1] = 0x90;
	mads[3][17] = 0x13;
	mads[3][24 + 4] = 0x5a;
	mads[4][17] = 0x19;
	srand(7);
	for (i = 0; i < 256; i++)
		mads[5][i] = (uint8_t)rand();
	mr = ibv_reg_mr(pd, mads, sizeof(mads), IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 6; i++) {
		sge.addr = (uintptr_t)mads[i];
		sge.length = 256;
		sge.lkey = mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 1;
		wr.wr.ud.remote_qkey = 0x80010000;
		if (ibv_post_send(qp, &wr, &bad) == 0)
			n++;
	}
	for (i = 0; i < 100 * n && n > 0; i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			n--;
		else
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	CHECK(n == 0, "six hostile MADs sent to the server's QP1");
	ibv_destroy_qp(qp);
	ibv_destroy_ah(ah);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_free_devices(devs);
}

/* multicast joins: what is refused, and a join that works */
static void
check_multicast(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in grp = sin_of("239.1.2.4", 0), uni = sin_of("10.9.0.9", 0);
	struct sockaddr_in me = sin_of("10.9.0.2", 0);
	struct rdma_cm_id *ud, *rc;
	enum rdma_cm_event_type t;
	int st;

	rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP);
	rdma_create_id(ch, &rc, NULL, RDMA_PS_TCP);
	CHECK(rdma_join_multicast(ud, (struct sockaddr *)&grp, NULL) == -1 &&
		errno == EINVAL, "join before binding: EINVAL");
	rdma_bind_addr(ud, (struct sockaddr *)&me);
	rdma_bind_addr(rc, (struct sockaddr *)&me);
	CHECK(rdma_join_multicast(ud, (struct sockaddr *)&uni, NULL) == -1 &&
		errno == EINVAL, "join of a unicast address: EINVAL");
	CHECK(rdma_join_multicast(rc, (struct sockaddr *)&grp, NULL) == -1 &&
		errno == EINVAL, "join on an RC (TCP port space) ID: EINVAL");
	CHECK(rdma_leave_multicast(ud, (struct sockaddr *)&grp) == -1 &&
		errno == EADDRNOTAVAIL, "leave of a group not joined: EADDRNOTAVAIL");
	CHECK(rdma_join_multicast(ud, (struct sockaddr *)&grp, (void *)0x77) == 0,
		"join 239.1.2.4");
	CHECK(next_event(ch, 5, &t, &st) == 0 &&
		t == RDMA_CM_EVENT_MULTICAST_JOIN && st == 0, "MULTICAST_JOIN");
	CHECK(rdma_leave_multicast(ud, (struct sockaddr *)&grp) == 0, "leave");
	rdma_destroy_id(rc);
	rdma_destroy_id(ud);
	rdma_destroy_event_channel(ch);
}

/*
 * Habits of librpma and libfabric's verbs provider that rdma-core
 * serves: a synchronous ID that resolved its route moves onto a channel
 * (rdma_migrate_id acks the ID's last event itself; droce's waited for
 * that ack forever), a loopback address binds (to no device: libfabric
 * then takes its devices' interface addresses), rdma_getaddrinfo with
 * neither node nor service gives back the hints' addresses.
 */
static void
check_library_habits(const char *srv)
{
	struct sockaddr_in dst = sin_of(srv, 7471), lo = sin_of("127.0.0.1", 0);
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = NULL;
	int rc;

	ch = rdma_create_event_channel();
	CHECK(ch != NULL && rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0,
		"a synchronous ID");
	if (id == NULL)
		return;
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 10000) == 0 &&
		rdma_resolve_route(id, 10000) == 0,
		"synchronous address and route resolution");
	/* a hang here is the failure: the alarm ends the process */
	alarm(60);
	rc = rdma_migrate_id(id, ch);
	alarm(0);
	CHECK(rc == 0 && id->channel == ch,
		"rdma_migrate_id of a synchronous ID that has an event");
	rdma_destroy_id(id);

	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0 &&
		rdma_bind_addr(id, (struct sockaddr *)&lo) == 0 &&
		id->verbs == NULL, "rdma_bind_addr 127.0.0.1: bound, no device");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	rc = rdma_getaddrinfo(NULL, NULL, &hints, &res);
	CHECK(rc == 0 && res->ai_dst_addr != NULL &&
		res->ai_dst_len == sizeof(dst) &&
		memcmp(res->ai_dst_addr, &dst, sizeof(dst)) == 0 &&
		res->ai_family == AF_INET,
		"rdma_getaddrinfo(NULL, NULL): the hints' destination");
	if (rc == 0)
		rdma_freeaddrinfo(res);
}

/* a synchronous connect to the server's listener; -1 and errno */
static int
connect_sync(const char *srv, struct rdma_cm_id **id)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(srv, "7471", &hints, &res) != 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	rc = rdma_create_ep(id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	return rc != 0 ? rc : rdma_connect(*id, NULL);
}

/* the server rejects the next request with private data, then takes one
 * and vanishes without answering */
static void
check_reject_and_vanish(const char *srv)
{
	struct rdma_cm_id *id;
	double t0;
	int rc;

	errno = 0;
	rc = connect_sync(srv, &id);
	CHECK(rc == -1 && errno == ECONNREFUSED, "a consumer reject: ECONNREFUSED");
	CHECK(id->event != NULL && id->event->event == RDMA_CM_EVENT_REJECTED &&
		id->event->status == 28 &&
		id->event->param.conn.private_data_len >= 3 &&
		memcmp(id->event->param.conn.private_data, "no", 3) == 0,
		"REJECTED, reason 28 (consumer), the server's private data");
	rdma_destroy_ep(id);
	t0 = now_s();
	errno = 0;
	rc = connect_sync(srv, &id);
	printf("  peer gone mid-handshake: rc %d errno %d after %.1f s\n", rc,
		errno, now_s() - t0);
	/* attached, the server's droced outlives it and answers the REQ's
	 * retries as a kernel's CM does once the process is gone: a REJ */
	CHECK((rc == -1 && errno == ETIMEDOUT && id->event != NULL &&
		id->event->event == RDMA_CM_EVENT_UNREACHABLE) ||
		(getenv("DROCE_DAEMON") != NULL && rc == -1 &&
		errno == ECONNREFUSED && id->event != NULL &&
		id->event->event == RDMA_CM_EVENT_REJECTED),
		"a peer gone mid-handshake: UNREACHABLE, ETIMEDOUT (attached: "
		"or REJECTED by its daemon)");
	CHECK(now_s() - t0 < 60, "within the REQ's retries (16 s, slack)");
	rdma_destroy_ep(id);
}

static int
client(const char *srv)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_qp_attr qa;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	/* not on the stack: attached, the calling thread's stack cannot be
	 * registered (drivers/ibverbs/attach_mem.c) */
	static char buf[64] = "droce", rbuf[64];
	int rc;

	check_unreachable();
	check_no_listener(srv);
	check_no_listener_ud(srv);
	check_multicast();
	check_library_habits(srv);
	send_hostile(srv);

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(rdma_getaddrinfo(srv, "7471", &hints, &res) == 0, "rdma_getaddrinfo");
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = 16;
	attr.sq_sig_all = 0;
	rc = rdma_create_ep(&id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	CHECK(rc == 0, "rdma_create_ep (synchronous ID, QP on the default PD)");
	if (rc)
		return 1;
	mr = rdma_reg_msgs(id, rbuf, sizeof(rbuf));
	CHECK(mr != NULL, "rdma_reg_msgs");
	CHECK(rdma_post_recv(id, NULL, rbuf, sizeof(rbuf), mr) == 0, "rdma_post_recv");
	CHECK(rdma_connect(id, NULL) == 0, "rdma_connect (waits for ESTABLISHED)");

	/* INLINE: no MR needed; SIGNALED: one completion */
	rc = rdma_post_send(id, (void *)0x1234, buf, 6, NULL,
		IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	CHECK(rc == 0, "rdma_post_send INLINE|SIGNALED returns 0");
	rc = rdma_get_send_comp(id, &wc);
	CHECK(rc == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x1234 &&
		wc.opcode == IBV_WC_SEND,
		"rdma_get_send_comp blocks and returns the send's completion");
	rc = rdma_get_recv_comp(id, &wc);
	CHECK(rc == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 6 &&
		strcmp(rbuf, "reply") == 0, "rdma_get_recv_comp: the server's reply");
	/* the last message: acknowledged, then the DREQ right behind it */
	rc = rdma_post_send(id, NULL, "last", 5, NULL,
		IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	CHECK(rc == 0 && rdma_get_send_comp(id, &wc) == 1 &&
		wc.status == IBV_WC_SUCCESS, "the last message sent and acknowledged");

	/* a QP in RESET takes no sends: the verbs errno comes back */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RESET;
	ibv_modify_qp(id->qp, &qa, IBV_QP_STATE);
	errno = 0;
	rc = rdma_post_send(id, NULL, buf, 6, NULL, IBV_SEND_INLINE);
	CHECK(rc != 0 && (rc == -1 ? errno : rc) == EINVAL,
		"rdma_post_send on a QP in RESET fails with EINVAL");

	CHECK(rdma_disconnect(id) == 0, "rdma_disconnect");
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	check_reject_and_vanish(srv);
	return failures ? 1 : 0;
}

/* fd readable within secs */
static int
readable(int fd, int secs)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, secs * 1000) == 1;
}

/*
 * The client disconnects: once its DISCONNECTED waits on the ID's own
 * channel, the ID moves onto another, and the event must go with it, as
 * the kernel's ucma moves a migrated ID's pending events (droce's
 * dropped them: librpma, which migrates an accepted ID onto its own
 * channel, then missed an ESTABLISHED that came in between).
 */
static void
check_migrate_pending(struct rdma_cm_id *id)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;

	CHECK(readable(id->channel->fd, 120),
		"the client's DISCONNECTED waits on the ID's channel");
	CHECK(ch != NULL && rdma_migrate_id(id, ch) == 0,
		"rdma_migrate_id with an event pending");
	CHECK(ch != NULL && readable(ch->fd, 30) &&
		rdma_get_cm_event(ch, &ev) == 0 &&
		ev->event == RDMA_CM_EVENT_DISCONNECTED && ev->id == id &&
		rdma_ack_cm_event(ev) == 0,
		"the pending DISCONNECTED moved with it");
}

/*
 * The client's last message, then its DREQ: the receive's completion
 * is in our CQ, not yet polled, when the DREQ comes, so the DISCONNECTED
 * waits for it to be polled (100 ms at most): a program that polls its
 * CQ and then reads its events does not take the disconnect first and
 * destroy its QP with the message still in the CQ.
 */
static void
check_disconnect_after_completion(struct rdma_cm_id *id, const char *last,
		int (*stats_get)(struct droce_cm_stats *), uint64_t held0,
		uint64_t expired0)
{
	struct droce_cm_stats st;
	double end = now_s() + 60;
	struct ibv_wc wc;
	int early;

	/* the verbs entries the hold stands on refuse what they cannot mark */
	{
		int (*mark)(struct ibv_context *, uint32_t, uint64_t *) =
			(int (*)(struct ibv_context *, uint32_t, uint64_t *))
			dlsym(RTLD_DEFAULT, "droce_qp_cq_mark");
		int (*passed)(struct ibv_context *, uint32_t, uint64_t) =
			(int (*)(struct ibv_context *, uint32_t, uint64_t))
			dlsym(RTLD_DEFAULT, "droce_qp_cq_passed");
		uint64_t m;

		CHECK(mark != NULL && passed != NULL &&
			mark(NULL, id->qp->qp_num, &m) == EINVAL &&
			mark(id->verbs, id->qp->qp_num, NULL) == EINVAL &&
			mark(id->verbs, 0xfffffe, &m) == ENOENT &&
			passed(id->verbs, 0xfffffe, 0) == 1,
			"droce_qp_cq_mark: EINVAL without a context or mark, "
			"ENOENT for no such QP; a QP gone counts as polled");
	}
	memset(&st, 0, sizeof(st));
	while (stats_get != NULL && stats_get(&st) == 0 &&
			st.disc_held == held0 && now_s() < end)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	CHECK(st.disc_held == held0 + 1,
		"the client's DREQ came with a receive not yet polled: "
		"its DISCONNECTED held");
	early = readable(id->channel->fd, 0);
	if (stats_get != NULL)
		stats_get(&st);
	CHECK(!early || st.disc_hold_expired > expired0,
		"no DISCONNECTED before the completion is polled (or the hold "
		"ran out)");
	CHECK(rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
		wc.byte_len == 5 && strcmp(last, "last") == 0,
		"the client's last message received");
}

static int
server(const char *addr)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *listen_id, *id;
	int (*stats_get)(struct droce_cm_stats *);
	struct droce_cm_stats st;
	static char rbuf[64], reply[8] = "reply";	/* not on the stack */
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint64_t held0 = 0, expired0 = 0;

	stats_get = (int (*)(struct droce_cm_stats *))dlsym(RTLD_DEFAULT,
		"droce_cm_stats_get");
	if (stats_get != NULL && stats_get(&st) == 0) {
		held0 = st.disc_held;
		expired0 = st.disc_hold_expired;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(rdma_getaddrinfo(addr, "7471", &hints, &res) == 0,
		"rdma_getaddrinfo (passive)");
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = 16;
	CHECK(rdma_create_ep(&listen_id, res, NULL, &attr) == 0,
		"rdma_create_ep (passive)");
	rdma_freeaddrinfo(res);
	CHECK(rdma_listen(listen_id, 4) == 0, "rdma_listen");
	CHECK(rdma_get_request(listen_id, &id) == 0 && id->qp != NULL,
		"rdma_get_request: a new ID with the listener's QP attributes");
	mr = rdma_reg_msgs(id, rbuf, sizeof(rbuf));
	rdma_post_recv(id, NULL, rbuf, sizeof(rbuf), mr);
	rdma_post_recv(id, NULL, rbuf + 32, 32, mr);	/* the last message */
	CHECK(rdma_accept(id, NULL) == 0, "rdma_accept (waits for ESTABLISHED)");
	CHECK(rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
		strcmp(rbuf, "droce") == 0, "the client's inline send arrived");
	CHECK(rdma_post_send(id, NULL, reply, 6, NULL,
		IBV_SEND_INLINE | IBV_SEND_SIGNALED) == 0 &&
		rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS,
		"reply sent");

	CHECK(stats_get != NULL && stats_get(&st) == 0,
		"droce_cm_stats_get (droce's librdmacm)");
	if (getenv("DROCE_DAEMON") != NULL) {
		/* QP1 is droced's: it drops the hostile MADs and answers
		 * the REQ to no listener (its /droced/stats count them) */
		printf("  attached: CM MAD counts are the daemon's\n");
	} else if (stats_get != NULL) {
		printf("  rx %lu malformed %lu unknown %lu state %lu rej %lu "
			"orphan %lu\n", (unsigned long)st.rx_mads,
			(unsigned long)st.rx_drop_malformed,
			(unsigned long)st.rx_drop_unknown,
			(unsigned long)st.rx_drop_state,
			(unsigned long)st.rej_sent,
			(unsigned long)st.rx_drop_orphan);
		/* versions, class, IP header, LAP and noise: malformed; the
		 * stray REP: unknown; the port nobody listens on: a REJ */
		CHECK(st.rx_drop_malformed >= 5 && st.rx_drop_unknown >= 1,
			"hostile MADs dropped and counted");
		/* its first copy only remembered, the retransmission
		 * answered (a server may be between two listens) */
		CHECK(st.rx_drop_orphan >= 1 && st.rej_sent >= 1,
			"a REQ to no listener: dropped once, then a REJ");
	}
	check_disconnect_after_completion(id, rbuf + 32, stats_get, held0,
		expired0);
	check_migrate_pending(id);
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);

	/* the next request: rejected with private data */
	CHECK(rdma_get_request(listen_id, &id) == 0, "a second request");
	CHECK(rdma_reject(id, "no", 3) == 0, "rdma_reject with private data");
	CHECK(rdma_accept(id, NULL) == -1 && errno == EINVAL,
		"rdma_accept after rdma_reject: EINVAL");
	rdma_destroy_ep(id);
	/* the one after: this process goes without answering */
	CHECK(rdma_get_request(listen_id, &id) == 0, "a third request");
	printf("server: leaving mid-handshake\n");
	fflush(stdout);
	_exit(failures ? 1 : 0);
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: cm_api server|client ADDR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return strcmp(argv[1], "server") == 0 ? server(argv[2]) :
		client(argv[2]);
}
