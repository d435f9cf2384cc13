/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* verbs_api's case on RAW_PACKET QPs (verbs_api.c runs it). */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#include "verbs_api.h"

/* The device's raw caps: TSO and checksums in process, none attached. */
static void
raw_caps(int attached)
{
	struct ibv_device_attr_ex da;

	memset(&da, 0, sizeof(da));
	CHECK(ibv_query_device_ex(ctx, NULL, &da) == 0 &&
		(da.tso_caps.max_tso != 0) == !attached &&
		!!(da.tso_caps.supported_qpts & (1u << IBV_QPT_RAW_PACKET)) ==
		!attached && !!(da.raw_packet_caps &
		IBV_RAW_PACKET_CAP_IP_CSUM) == !attached,
		"raw caps %s (max_tso %u, raw_packet_caps %#x)", attached ?
		"none attached" : "TSO and checksums", da.tso_caps.max_tso,
		da.raw_packet_caps);
}

/* A raw QP to RTS with the state (and port) alone. */
static void
raw_to_rts(struct ibv_qp *q)
{
	struct ibv_qp_attr qa;
	int n;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	n = ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_PORT);
	qa.qp_state = IBV_QPS_RTR;
	n |= ibv_modify_qp(q, &qa, IBV_QP_STATE);
	qa.qp_state = IBV_QPS_RTS;
	n |= ibv_modify_qp(q, &qa, IBV_QP_STATE);
	CHECK(n == 0, "raw QP to RTS with the state (and port) alone");
}

/* Two frames to dst_mac from f: one the flow does not take (another
 * EtherType), then one it does; each first refused inline (too long). */
static void
raw_send_two(struct ibv_qp *q, uint8_t *f, const uint8_t *dst_mac)
{
	struct ibv_send_wr w, *bad;
	int i;

	for (i = 0; i < 2; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)f, .length = 100,
			.lkey = mr->lkey };

		memset(f, 0, 100);
		memcpy(f, dst_mac, 6);
		memcpy(f + 6, "\x02\x11\x22\x33\x44\x55", 6);
		f[12] = 0x88;
		f[13] = i == 0 ? 0xb7 : 0xb6;
		memset(f + 14, 0x40 + i, 86);
		memset(&w, 0, sizeof(w));
		w.wr_id = 10 + (uint64_t)i;
		w.sg_list = &s;
		w.num_sge = 1;
		w.opcode = IBV_WR_SEND;
		w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		CHECK(ibv_post_send(q, &w, &bad) == EINVAL,
			"raw SEND longer than max_inline_data: EINVAL");
		w.send_flags = IBV_SEND_SIGNALED;
		CHECK(ibv_post_send(q, &w, &bad) == 0, "raw SEND %d", i);
	}
}

/* Both SENDs' completions and the one frame received into in, whole (f
 * its last sent); nothing more. */
static void
raw_collect(struct ibv_cq *cq, const uint8_t *in, const uint8_t *f)
{
	int n, got_send = 0, got_recv = 0;
	struct ibv_wc wc;
	time_t end;

	end = time(NULL) + 5;
	while ((got_send < 2 || got_recv < 1) && time(NULL) < end) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n != 1)
			continue;
		if (wc.opcode == IBV_WC_SEND && wc.status == IBV_WC_SUCCESS)
			got_send++;
		if (wc.opcode == IBV_WC_RECV) {
			got_recv++;
			CHECK(wc.wr_id == 5 && wc.status == IBV_WC_SUCCESS &&
				wc.byte_len == 100 && in[13] == 0xb6 &&
				in[99] == 0x41 && memcmp(in, f, 100) == 0,
				"the frame the flow takes comes back whole "
				"(%u bytes, status %d)", wc.byte_len, wc.status);
		}
	}
	usleep(100000);
	n = ibv_poll_cq(cq, 1, &wc);
	CHECK(got_send == 2 && got_recv == 1 && n == 0,
		"both SENDs complete, one frame received, not the other "
		"(%d, %d, %d)", got_send, got_recv, n);
}

/*
 * RAW_PACKET QPs (in process; attached: refused, EOPNOTSUPP, and the
 * device says no TSO): over net_ring, which hands every frame back, a
 * frame a flow matches comes back whole into the QP; one it does not is
 * never seen; a QP with a flow is EBUSY to destroy.
 */
void
test_raw(void)
{
	int attached = getenv("DROCE_DAEMON") != NULL;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			.max_recv_sge = 1 } };
	struct {
		struct ibv_flow_attr a;
		struct ibv_flow_spec_eth eth;
	} r;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_sge sg;
	struct ibv_flow *fl;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint8_t *f = buf + 4096, *in = buf + 8192;

	raw_caps(attached);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = cq;
	errno = 0;
	q = cq ? ibv_create_qp(pd, &ia) : NULL;
	if (attached) {
		CHECK(q == NULL && errno == EOPNOTSUPP,
			"RAW_PACKET QP attached: EOPNOTSUPP");
		goto out;
	}
	CHECK(q != NULL, "RAW_PACKET QP: %s", strerror(errno));
	if (q == NULL)
		goto out;
	raw_to_rts(q);
	memset(&r, 0, sizeof(r));
	r.a.type = IBV_FLOW_ATTR_NORMAL;
	r.a.size = sizeof(r);
	r.a.num_of_specs = 1;
	r.a.port = 1;
	r.eth.type = IBV_FLOW_SPEC_ETH;
	r.eth.size = sizeof(r.eth);
	memcpy(r.eth.val.dst_mac, "\x02\xaa\xbb\xcc\xdd\xee", 6);
	memset(r.eth.mask.dst_mac, 0xff, 6);
	r.eth.val.ether_type = htons(0x88b6);
	r.eth.mask.ether_type = 0xffff;
	fl = ibv_create_flow(q, &r.a);
	CHECK(fl != NULL, "ibv_create_flow (destination MAC, EtherType): %s",
		strerror(errno));
	sg = (struct ibv_sge){ .addr = (uintptr_t)in, .length = 256,
		.lkey = mr->lkey };
	rw = (struct ibv_recv_wr){ .wr_id = 5, .sg_list = &sg, .num_sge = 1 };
	CHECK(ibv_post_recv(q, &rw, &rbad) == 0, "raw post_recv");
	raw_send_two(q, f, r.eth.val.dst_mac);
	raw_collect(cq, in, f);
	CHECK(ibv_destroy_qp(q) == EBUSY, "destroy a raw QP with a flow: EBUSY");
	CHECK(fl != NULL && ibv_destroy_flow(fl) == 0, "ibv_destroy_flow");
	CHECK(ibv_destroy_qp(q) == 0, "destroy the raw QP");
out:
	if (cq)
		ibv_destroy_cq(cq);
}
