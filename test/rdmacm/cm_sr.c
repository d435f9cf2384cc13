/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * cm_sr server|client ADDR TELEMETRY sr|gbn [full]: selective repeat
 * negotiated through rdma_cm's private data (doc/rdmacm.md), built
 * against the system's librdmacm and run on droce's through droce-run
 * (cm-pair.sh starts both ends, with the loss it injects).
 *
 * The client connects with 48 bytes of private data (leaving the 8 that
 * droce's offer takes), the server accepts with 188; with full, 56 and
 * 196 (no room: no offer). Each side checks the peer application's bytes
 * arrived intact and the rest of the area is zeros, whatever droce put
 * there. Then each side SENDs 4 MB to the other (256 messages of 16 KB,
 * every byte checked), and reads its own QP's transport counters from
 * DPDK telemetry at TELEMETRY (its own process's in process, its
 * daemon's attached): sr wants SACKs sent and received (the connection
 * has selective repeat), gbn none, and the loss recovered by go-back-N
 * (NAKs or timeouts). Exit 0 when every check holds.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <rdma/rdma_cma.h>

#define PORT 7473
#define NMSG 256
#define MSG 16384
#define REQ_ROOM 56		/* REQ private data after rdma_cm's header */
#define REP_ROOM 196
#define SR_TAG 8		/* droce's offer, at the end of each area */

static int failures;

#define CHECK(c, ...) do {						\
	if (c) {							\
		printf("ok: ");						\
	} else {							\
		printf("FAIL: ");					\
		failures++;						\
	}								\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)

#define DIE(...) do {							\
	printf("FAIL: " __VA_ARGS__);					\
	printf(" (errno %d %s)\n", errno, strerror(errno));		\
	exit(1);							\
} while (0)

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *rx, *tx, *fin;
};

static uint8_t
pat(unsigned int seed, size_t i)
{
	/* never 0, so that a zeroed byte cannot pass for the pattern */
	return (uint8_t)(1 + (seed * 131 + i * 7 + (i >> 8)) % 255);
}

/* the next event, which must be want: its private data into pd */
static void
expect_event(struct conn *c, enum rdma_cm_event_type want,
		struct rdma_cm_id **child, uint8_t *pd, uint8_t *pd_len)
{
	struct pollfd pfd = { .fd = c->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, 60000) != 1)
		DIE("no %s within 60 s", rdma_event_str(want));
	if (rdma_get_cm_event(c->ch, &ev) != 0)
		DIE("rdma_get_cm_event");
	if (ev->event != want)
		DIE("%s (status %d), want %s", rdma_event_str(ev->event),
			ev->status, rdma_event_str(want));
	if (child != NULL)
		*child = ev->id;
	if (pd != NULL) {
		*pd_len = ev->param.conn.private_data_len;
		if (*pd_len > 0)
			memcpy(pd, ev->param.conn.private_data, *pd_len);
	}
	rdma_ack_cm_event(ev);
}

/* the peer application's len bytes of seed, then zeros up to room */
static void
check_pdata(const char *what, const uint8_t *pd, uint8_t got, size_t len,
		size_t room, unsigned int seed)
{
	size_t i, bad = 0, nonzero = 0;

	for (i = 0; i < len && i < got; i++)
		bad += pd[i] != pat(seed, i);
	for (; i < room && i < got; i++)
		nonzero += pd[i] != 0;
	CHECK(got == room && bad == 0 && nonzero == 0, "%s: %u bytes, the "
		"application's %zu intact (%zu wrong), zeros after (%zu not)",
		what, got, len, bad, nonzero);
}

static void
setup_qp(struct conn *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	int i;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = NMSG + 1;
	qa.cap.max_recv_wr = NMSG + 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa) != 0)
		DIE("rdma_create_qp");
	c->rx = calloc(2 * NMSG + 2, MSG);
	if (c->rx == NULL)
		DIE("calloc");
	c->tx = c->rx + (size_t)NMSG * MSG;
	c->fin = c->tx + (size_t)NMSG * MSG;
	c->mr = ibv_reg_mr(id->pd, c->rx, (size_t)(2 * NMSG + 2) * MSG,
		IBV_ACCESS_LOCAL_WRITE);
	if (c->mr == NULL)
		DIE("ibv_reg_mr");
	/* every receive posted before the connection: no RNR */
	for (i = 0; i <= NMSG; i++) {
		sge.addr = (uintptr_t)(i < NMSG ? c->rx + (size_t)i * MSG :
			c->fin);
		sge.length = MSG;
		sge.lkey = c->mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = (uint64_t)i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(id->qp, &wr, &bad) != 0)
			DIE("ibv_post_recv");
	}
	c->id = id;
}

static void
post_send(struct conn *c, uint8_t *buf, uint32_t len, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge = { (uintptr_t)buf, len, c->mr->lkey };

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->id->qp, &wr, &bad) != 0)
		DIE("ibv_post_send");
}

/* n completions from cq (any status), within 120 s */
static void
take(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *what)
{
	struct timespec nap = { 0, 50000 }, t0, t;
	int got = 0, k;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		k = ibv_poll_cq(cq, n - got, wc + got);
		if (k < 0)
			DIE("ibv_poll_cq");
		got += k;
		if (k > 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 120)
			DIE("%s: %d of %d completions in 120 s", what, got, n);
		nanosleep(&nap, NULL);
	}
}

/* 4 MB each way, every byte checked; the server's "fin" goes once its
 * own SENDs are acknowledged, so the client disconnects only then */
static void
exchange(struct conn *c, int server)
{
	static struct ibv_wc wc[NMSG + 1];
	unsigned int seed = server ? 3 : 4, peer = server ? 4 : 3;
	size_t i, bad = 0;
	int k, errs = 0;

	for (k = 0; k < NMSG; k++) {
		for (i = 0; i < MSG; i++)
			c->tx[(size_t)k * MSG + i] = pat(seed + k, i);
		post_send(c, c->tx + (size_t)k * MSG, MSG, (uint64_t)k);
	}
	take(c->id->send_cq, wc, NMSG, "sends");
	for (k = 0; k < NMSG; k++)
		errs += wc[k].status != IBV_WC_SUCCESS;
	CHECK(errs == 0, "%d SENDs of %d bytes completed", NMSG, MSG);
	take(c->id->recv_cq, wc, NMSG, "receives");
	for (k = 0; k < NMSG; k++) {
		if (wc[k].status != IBV_WC_SUCCESS || wc[k].byte_len != MSG ||
				wc[k].wr_id != (uint64_t)k) {
			errs++;
			continue;
		}
		for (i = 0; i < MSG; i++)
			bad += c->rx[(size_t)k * MSG + i] != pat(peer + k, i);
	}
	CHECK(errs == 0 && bad == 0, "%d messages received in order, every "
		"byte checked (%d bad completions, %zu bad bytes)", NMSG, errs,
		bad);
	if (server) {
		post_send(c, c->tx, 1, 1000);
	} else {
		take(c->id->recv_cq, wc, 1, "fin");
		CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == NMSG,
			"the server's fin");
	}
}

/* one counter out of a telemetry reply ("name":value) */
static long long
counter(const char *json, const char *name)
{
	char key[64];
	const char *at;

	snprintf(key, sizeof(key), "\"%s\":", name);
	at = strstr(json, key);
	return at != NULL ? strtoll(at + strlen(key), NULL, 10) : -1;
}

/* the QP's transport counters, from DPDK telemetry (port 0) */
static void
qp_counters(const char *path, uint32_t qpn, char *out, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char cmd[64];
	ssize_t n;
	int s;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		DIE("telemetry socket %s", path);
	if (recv(s, out, len - 1, 0) <= 0)	/* its greeting */
		DIE("telemetry greeting");
	snprintf(cmd, sizeof(cmd), "/droce/qp/stats,0.%u", qpn);
	if (send(s, cmd, strlen(cmd), 0) < 0)
		DIE("telemetry send");
	n = recv(s, out, len - 1, 0);
	if (n <= 0)
		DIE("telemetry reply");
	out[n] = '\0';
	close(s);
}

static void
check_counters(struct conn *c, const char *tele, int want_sr)
{
	static char json[16384];
	long long stx, srx, held, nak, to;

	qp_counters(tele, c->id->qp->qp_num, json, sizeof(json));
	stx = counter(json, "sack_tx");
	srx = counter(json, "sack_rx");
	held = counter(json, "sr_held");
	nak = counter(json, "nak_seq_tx") + counter(json, "nak_seq_rx");
	to = counter(json, "timeouts");
	printf("qp %u: sack_tx %lld sack_rx %lld sr_held %lld naks %lld "
		"timeouts %lld\n", c->id->qp->qp_num, stx, srx, held, nak, to);
	if (want_sr)
		CHECK(stx > 0 && srx > 0 && held > 0, "selective repeat: "
			"requests held, SACKs sent and received");
	else
		CHECK(stx == 0 && srx == 0 && held == 0 && nak + to > 0,
			"go-back-N: no SACK, the loss recovered by NAKs or "
			"timeouts");
}

static void
server(const char *addr, const char *tele, int want_sr, int full)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons(PORT) };
	struct rdma_conn_param cp;
	struct rdma_cm_id *lid, *id;
	uint8_t pd[256], pd_len = 0, mine[REP_ROOM];
	size_t i, n = full ? REP_ROOM : REP_ROOM - SR_TAG;
	struct conn c = { 0 };

	inet_pton(AF_INET, addr, &sin.sin_addr);
	c.ch = rdma_create_event_channel();
	if (c.ch == NULL || rdma_create_id(c.ch, &lid, NULL, RDMA_PS_TCP) ||
			rdma_bind_addr(lid, (struct sockaddr *)&sin) ||
			rdma_listen(lid, 1))
		DIE("listen on %s", addr);
	expect_event(&c, RDMA_CM_EVENT_CONNECT_REQUEST, &id, pd, &pd_len);
	check_pdata("the client's private data", pd, pd_len,
		full ? REQ_ROOM : REQ_ROOM - SR_TAG, REQ_ROOM, 1);
	setup_qp(&c, id);
	for (i = 0; i < n; i++)
		mine[i] = pat(2, i);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = mine;
	cp.private_data_len = (uint8_t)n;
	cp.responder_resources = cp.initiator_depth = 1;
	cp.retry_count = cp.rnr_retry_count = 7;
	if (rdma_accept(id, &cp) != 0)
		DIE("rdma_accept");
	expect_event(&c, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL, NULL);
	exchange(&c, 1);
	check_counters(&c, tele, want_sr);
	expect_event(&c, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL, NULL);
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	ibv_dereg_mr(c.mr);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(c.ch);
}

static void
client(const char *addr, const char *tele, int want_sr, int full)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons(PORT) };
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	uint8_t pd[256], pd_len = 0, mine[REQ_ROOM];
	size_t i, n = full ? REQ_ROOM : REQ_ROOM - SR_TAG;
	struct conn c = { 0 };

	inet_pton(AF_INET, addr, &sin.sin_addr);
	c.ch = rdma_create_event_channel();
	if (c.ch == NULL || rdma_create_id(c.ch, &id, NULL, RDMA_PS_TCP) ||
			rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
			5000))
		DIE("resolve %s", addr);
	expect_event(&c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL, NULL);
	if (rdma_resolve_route(id, 5000) != 0)
		DIE("rdma_resolve_route");
	expect_event(&c, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL, NULL);
	setup_qp(&c, id);
	for (i = 0; i < n; i++)
		mine[i] = pat(1, i);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = mine;
	cp.private_data_len = (uint8_t)n;
	cp.responder_resources = cp.initiator_depth = 1;
	cp.retry_count = cp.rnr_retry_count = 7;
	if (rdma_connect(id, &cp) != 0)
		DIE("rdma_connect");
	expect_event(&c, RDMA_CM_EVENT_ESTABLISHED, NULL, pd, &pd_len);
	check_pdata("the server's private data", pd, pd_len,
		full ? REP_ROOM : REP_ROOM - SR_TAG, REP_ROOM, 2);
	exchange(&c, 0);
	check_counters(&c, tele, want_sr);
	if (rdma_disconnect(id) != 0)
		DIE("rdma_disconnect");
	expect_event(&c, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL, NULL);
	rdma_destroy_qp(id);
	ibv_dereg_mr(c.mr);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(c.ch);
}

int
main(int argc, char **argv)
{
	int srv, want_sr, full;

	if (argc < 5 || argc > 6 || (strcmp(argv[1], "server") &&
			strcmp(argv[1], "client")) || (strcmp(argv[4], "sr") &&
			strcmp(argv[4], "gbn")) ||
			(argc == 6 && strcmp(argv[5], "full"))) {
		fprintf(stderr, "usage: cm_sr server|client ADDR TELEMETRY "
			"sr|gbn [full]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	srv = strcmp(argv[1], "server") == 0;
	want_sr = strcmp(argv[4], "sr") == 0;
	full = argc == 6;
	if (srv)
		server(argv[2], argv[3], want_sr, full);
	else
		client(argv[2], argv[3], want_sr, full);
	printf("%s: %s\n", failures ? "FAIL" : "PASS", want_sr ?
		"selective repeat on both ends" : "go-back-N on both ends");
	return failures ? 1 : 0;
}
