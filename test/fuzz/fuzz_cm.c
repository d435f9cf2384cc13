/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * libFuzzer target for the CM of droce's librdmacm: MADs a hostile or
 * broken peer sends to an application's QP1, into the agent's receive
 * (cm_agent_rx, under the CM's lock, as its thread calls it). The
 * process runs the real library on an in-process device (net_ring, frames
 * to the peer go nowhere) with an RC listener, a UDP (SIDR) listener and
 * an active ID that connects to the peer and starts over whenever it is
 * rejected or disconnected. Each input is a few MADs: REQ, MRA, REJ,
 * REP, RTU, DREQ, DREP, SIDR REQ and REP, LAP, or anything, packed from
 * the input's fields (the rdma_cm private data header among them), most
 * to the listeners' service IDs and naming the comm IDs of live IDs, some
 * as raw bytes; the application answers the events they raise (accepts
 * or rejects connection requests, destroys what disconnected). Under
 * ASan and UBSan, "no crash, no leak, no hang", and each MAD is counted
 * once as received.
 */

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PORT_RC		7471
#define PORT_UD		7472
#define PS_TCP		0x0000000001060000ull
#define PS_UDP		0x0000000001110000ull
#define MAX_CHILD	8

static struct rdma_event_channel *ch;
static struct rdma_cm_id *listen_rc, *listen_ud, *active;
static struct rdma_cm_id *child[MAX_CHILD];
static struct cm_dev *dev;
static int active_dead;

static struct sockaddr_in
sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static struct rdma_cm_id *
listener(enum rdma_port_space ps, uint16_t port)
{
	struct sockaddr_in a = sin_of("10.9.9.1", port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, ps) != 0 ||
			rdma_bind_addr(id, (struct sockaddr *)&a) != 0 ||
			rdma_listen(id, 4) != 0)
		abort();
	return id;
}

/* The active ID: to the peer, which never answers but by the input. */
static void
start_active(void)
{
	struct sockaddr_in src = sin_of("10.9.9.1", 0);
	struct sockaddr_in dst = sin_of("10.9.9.2", PORT_RC);

	if (rdma_create_id(ch, &active, NULL, RDMA_PS_TCP) != 0 ||
			rdma_resolve_addr(active, (struct sockaddr *)&src,
			(struct sockaddr *)&dst, 2000) != 0)
		abort();
	active_dead = 0;
}

static void
drop_id(struct rdma_cm_id *id)
{
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static void
setup(void)
{
	setenv("DROCE_DEVARGS", "net_ring0", 1);
	setenv("DROCE_IPV4", "10.9.9.1", 1);
	setenv("DROCE_NEIGH", "10.9.9.2=02:00:00:00:09:02", 1);
	setenv("DROCE_NO_HUGE", "1", 1);
	ch = rdma_create_event_channel();
	if (ch == NULL || fcntl(ch->fd, F_SETFL, O_NONBLOCK) != 0)
		abort();
	listen_rc = listener(RDMA_PS_TCP, PORT_RC);
	listen_ud = listener(RDMA_PS_UDP, PORT_UD);
	dev = cm_dev_of(listen_rc->verbs);
	if (dev == NULL)
		abort();
	start_active();
}

static void
keep_child(struct rdma_cm_id *id)
{
	int i;

	for (i = 0; i < MAX_CHILD; i++)
		if (child[i] == NULL) {
			child[i] = id;
			return;
		}
	drop_id(child[0]);
	memmove(child, child + 1, sizeof(child[0]) * (MAX_CHILD - 1));
	child[MAX_CHILD - 1] = id;
}

static void
forget_child(struct rdma_cm_id *id)
{
	int i;

	for (i = 0; i < MAX_CHILD; i++)
		if (child[i] == id) {
			drop_id(id);
			memmove(child + i, child + i + 1,
				sizeof(child[0]) * (size_t)(MAX_CHILD - 1 - i));
			child[MAX_CHILD - 1] = NULL;
			return;
		}
}

/* What an application does with each event; accept says how it takes a
 * connection request. */
static void
answer_events(uint32_t accept)
{
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;

	while (rdma_get_cm_event(ch, &ev) == 0) {
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type t = ev->event;
		struct rdma_conn_param cp;

		memset(&cp, 0, sizeof(cp));
		cp.responder_resources = 1;
		cp.initiator_depth = 1;
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = id->ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		rdma_ack_cm_event(ev);
		switch (t) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if ((accept++ & 1) && rdma_create_qp(id, NULL, &qa) == 0
					&& rdma_accept(id, &cp) == 0) {
				keep_child(id);
				break;
			}
			rdma_reject(id, NULL, 0);
			drop_id(id);
			break;
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (id == active && rdma_resolve_route(id, 2000) != 0)
				active_dead = 1;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			if (id == active && (rdma_create_qp(id, NULL, &qa) != 0 ||
					rdma_connect(id, &cp) != 0))
				active_dead = 1;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			break;
		default:	/* errors, rejections, disconnections */
			if (id == active)
				active_dead = 1;
			else if (id != listen_rc && id != listen_ud)
				forget_child(id);
			break;
		}
	}
	if (active_dead) {
		drop_id(active);
		start_active();
	}
}

/* A comm ID of a live ID (the input picks which), or the input's own. */
static void
comm_ids(struct in *in, uint32_t *local, uint32_t *remote)
{
	uint32_t k = take(in, 1), n = 0;
	struct cm_id_priv *p;

	*local = take(in, 4);
	*remote = take(in, 4);
	if (k >= 0xe0)
		return;
	for (p = cm.ids; p != NULL; p = p->next)
		n++;
	for (p = cm.ids, k %= n ? n : 1; p != NULL && k; p = p->next)
		k--;
	if (p != NULL) {
		*local = p->remote_comm_id;	/* the peer's: ours there */
		*remote = p->local_comm_id;
	}
}

/* The rdma_cm header of a REQ's or SIDR REQ's private data. */
static void
ip_hdr(struct in *in, uint8_t *pdata)
{
	struct cm_ip_hdr h;
	uint32_t v = take(in, 1);

	memset(&h, 0, sizeof(h));
	h.ip_version = v < 0xf0 ? 4 : v & 0xf;
	h.port = (uint16_t)take(in, 2);
	h.src[10] = h.src[11] = h.dst[10] = h.dst[11] = 0xff;
	inet_pton(AF_INET, "10.9.9.2", h.src + 12);
	inet_pton(AF_INET, "10.9.9.1", h.dst + 12);
	if (v & 1)
		take_bytes(in, h.src, 16);
	cm_ip_hdr_pack(pdata, &h);
}

/* One MAD from the input into mad (CM_MAD_LEN). */
static void
decode(struct in *in, uint8_t *mad)
{
	static const uint16_t attrs[] = {
		CM_ATTR_REQ, CM_ATTR_MRA, CM_ATTR_REJ, CM_ATTR_REP, CM_ATTR_RTU,
		CM_ATTR_DREQ, CM_ATTR_DREP, CM_ATTR_SIDR_REQ, CM_ATTR_SIDR_REP,
		0x19, CM_ATTR_REQ, CM_ATTR_REP,
	};
	uint32_t ctl = take(in, 1);
	uint16_t attr = attrs[(ctl & 0xf) % (sizeof(attrs) / sizeof(attrs[0]))];
	uint8_t *msg = mad + CM_MAD_HDR;
	uint32_t unused;
	union {
		struct cm_req req;
		struct cm_rep rep;
		struct cm_rej rej;
		struct cm_mra mra;
		struct cm_simple s;
		struct cm_sidr_req sreq;
		struct cm_sidr_rep srep;
	} u;

	memset(mad, 0, CM_MAD_LEN);
	cm_mad_put_hdr(mad, attr, take(in, 4));
	if (ctl & 0x80) {	/* raw: whatever follows, header too */
		take_bytes(in, ctl & 0x40 ? mad : msg,
			ctl & 0x40 ? CM_MAD_LEN : CM_MSG_LEN);
		return;
	}
	take_bytes(in, &u, sizeof(u));
	switch (attr) {
	case CM_ATTR_REQ:
		comm_ids(in, &u.req.local_comm_id, &unused);
		if (!(ctl & 0x20))
			u.req.service_id = PS_TCP | PORT_RC;
		u.req.transport &= 3;
		u.req.e2e_fc = ctl & 1;
		u.req.srq = ctl & 2;
		u.req.mtu = (uint8_t)(1 + u.req.mtu % 5);
		ip_hdr(in, u.req.pdata);
		cm_req_pack(msg, &u.req);
		break;
	case CM_ATTR_REP:
		comm_ids(in, &u.rep.local_comm_id, &u.rep.remote_comm_id);
		u.rep.e2e_fc = ctl & 1;
		u.rep.srq = ctl & 2;
		cm_rep_pack(msg, &u.rep);
		break;
	case CM_ATTR_REJ:
		comm_ids(in, &u.rej.local_comm_id, &u.rej.remote_comm_id);
		u.rej.msg_rejected %= 3;
		cm_rej_pack(msg, &u.rej);
		break;
	case CM_ATTR_MRA:
		comm_ids(in, &u.mra.local_comm_id, &u.mra.remote_comm_id);
		u.mra.msg_mraed %= 3;
		cm_mra_pack(msg, &u.mra);
		break;
	case CM_ATTR_SIDR_REQ:
		if (!(ctl & 0x20))
			u.sreq.service_id = PS_UDP | PORT_UD;
		ip_hdr(in, u.sreq.pdata);
		cm_sidr_req_pack(msg, &u.sreq);
		break;
	case CM_ATTR_SIDR_REP:
		cm_sidr_rep_pack(msg, &u.srep);
		break;
	default:	/* RTU, DREQ, DREP; an LAP as if it were one */
		comm_ids(in, &u.s.local_comm_id, &u.s.remote_comm_id);
		cm_simple_pack(msg, attr, &u.s);
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	uint8_t grh[40], mad[CM_MAD_LEN];
	uint64_t rx0;
	int k;

	if (ch == NULL)
		setup();
	for (k = 0; k < 4 && in.n; k++) {
		uint32_t g = take(&in, 1);

		/* from the peer, mostly; an IPv4 header in the GRH's end */
		memset(grh, 0, sizeof(grh));
		grh[20] = 0x45;
		inet_pton(AF_INET, g < 0xf0 ? "10.9.9.2" : "10.9.9.3",
			grh + 20 + 12);
		inet_pton(AF_INET, "10.9.9.1", grh + 20 + 16);
		if (g == 0xff)
			grh[0] = 0x60;	/* an IPv6 GRH, the rest zero */
		pthread_mutex_lock(&cm.lock);
		decode(&in, mad);
		rx0 = cm.st.rx_mads;
		cm_agent_rx(dev, grh, mad, CM_MAD_LEN - (g == 0xfe ? 100 : 0));
		if (cm.st.rx_mads != rx0 + 1)
			abort();
		pthread_mutex_unlock(&cm.lock);
		answer_events(g);
	}
	return 0;
}
