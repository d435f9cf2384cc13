/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * UD multicast over the fake link: two UD QPs attached to a group both
 * receive a SEND to it, with the GRH; a detached QP and one with another
 * Q_Key receive nothing; frames to a group nobody joined, with one group's
 * MAC and another's IP, or to a DestQP other than 0xFFFFFF are dropped
 * and counted. Attach and detach rules (EINVAL, ENOMEM, EBUSY on destroy),
 * group MACs, and a device with two queues, where each queue delivers
 * only to its own QPs.
 */

#include <errno.h>

#include "tp_util.h"
#include "ud_qp.h"

#define QKEY 0x11111111u

static struct fakelink L;

/* A UD QP in RTS on cq's queue; a failure counted. */
static struct droce_qp *
ud_qp(struct droce_pd *pd, struct droce_cq *cq, uint32_t qkey)
{
	struct droce_qp *qp = ud_qp_rts(pd, cq, qkey);

	CHECK(qp != NULL, "UD QP in RTS");
	return qp;
}

static void
gid4(uint8_t gid[16], uint32_t ip)
{
	droce_gid_from_ipv4(gid, ip);
}

static void
post_recv(struct droce_qp *qp, struct tbuf *b, uint64_t id)
{
	struct ibv_sge s = sge_of(b, 0, (uint32_t)b->len);
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK_EQ(droce_qp_post_recv(qp, &wr, &bad), 0, "post_recv");
}

/* A SEND of len bytes of sb from qp to dgid through MAC dmac, DestQP dqpn. */
static void
send_to(struct droce_qp *qp, struct droce_cq *cq, struct tbuf *sb,
		uint32_t len, const uint8_t dgid[16], const uint8_t dmac[6],
		uint32_t dqpn)
{
	struct ibv_sge s = sge_of(sb, 0, len);
	struct ibv_send_wr wr, *bad;
	struct droce_av av;
	struct droce_ah *ah;
	struct ibv_wc wc;

	memset(&av, 0, sizeof(av));
	memcpy(av.dmac, dmac, 6);
	memcpy(av.dgid, dgid, 16);
	av.sgid_index = 1;
	av.hop_limit = 1;
	ah = droce_ah_create(L.end[0].pd, &av);
	CHECK(ah != NULL, "ah");
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = droce_ah_to_ibv(ah);
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = QKEY;
	CHECK_EQ(droce_qp_post_send(qp, &wr, &bad), 0, "post send");
	CHECK_EQ(wait_wc(&L, cq, &wc, 10000000), 0, "send completion");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "send status");
	fl_run_idle(&L, 10000000);
	droce_ah_destroy(ah);
}

static uint64_t
rx_stat(size_t off)
{
	struct droce_tp_stats st;

	droce_tp_queue_stats(L.end[1].q, &st);
	return *(const uint64_t *)((const uint8_t *)&st + off);
}
#define RX_STAT(f) rx_stat(offsetof(struct droce_tp_stats, f))

static void
test_addresses(void)
{
	static const uint8_t v6[16] = {
		0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0x00, 0x12, 0x34
	};
	uint8_t gid[16], mac[6];

	gid4(gid, 0xefa1b2c3);	/* 239.161.178.195: the top bit of b1 goes */
	CHECK(droce_gid_is_mcast(gid), "239/8 is multicast");
	CHECK_EQ(droce_gid_mcast_mac(gid, mac), 0, "v4 mac");
	CHECK(memcmp(mac, "\x01\x00\x5e\x21\xb2\xc3", 6) == 0, "v4 group mac");
	CHECK_EQ(droce_gid_mcast_mac(v6, mac), 0, "v6 mac");
	CHECK(memcmp(mac, "\x33\x33\xff\x00\x12\x34", 6) == 0, "v6 group mac");
	gid4(gid, 0x0a000002);
	CHECK(!droce_gid_is_mcast(gid), "unicast v4");
	CHECK_EQ(droce_gid_mcast_mac(gid, mac), -EINVAL, "unicast has no mac");
	gid4(gid, 0xf0000001);	/* 240/4 is not multicast */
	CHECK(!droce_gid_is_mcast(gid), "240/4");
	droce_gid_link_local(gid, L.end[0].mac);
	CHECK(!droce_gid_is_mcast(gid), "link-local");
}

/* Two attached QPs receive, a detached one and one with another Q_Key
 * do not; the bad frames are counted. */
static void
test_delivery(void)
{
	struct droce_dev *rdev = L.end[1].dev;
	struct droce_cq *scq, *rcq;
	struct droce_qp *s, *a, *b, *c, *k;
	struct tbuf sb, ra, rb, rc, rk;
	uint8_t grp[16], other[16], unjoined[16], mac[6], omac[6], umac[6];
	struct ibv_wc wc;
	uint64_t drops;
	int i;

	gid4(grp, 0xef010203);		/* 239.1.2.3 */
	gid4(other, 0xef810203);	/* 239.129.2.3: the same MAC */
	gid4(unjoined, 0xef090909);
	droce_gid_mcast_mac(grp, mac);
	droce_gid_mcast_mac(other, omac);
	droce_gid_mcast_mac(unjoined, umac);
	CHECK(memcmp(mac, omac, 6) == 0, "groups sharing a MAC");
	scq = droce_cq_create(L.end[0].dev, 0, 64);
	rcq = droce_cq_create(rdev, 0, 64);
	s = ud_qp(L.end[0].pd, scq, QKEY);
	a = ud_qp(L.end[1].pd, rcq, QKEY);
	b = ud_qp(L.end[1].pd, rcq, QKEY);
	c = ud_qp(L.end[1].pd, rcq, QKEY);
	k = ud_qp(L.end[1].pd, rcq, 0x2222);
	tbuf_init(&sb, L.end[0].pd, 256, ACC_ALL);
	tbuf_init(&ra, L.end[1].pd, DROCE_GRH_LEN + 256, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, DROCE_GRH_LEN + 256, ACC_ALL);
	tbuf_init(&rc, L.end[1].pd, DROCE_GRH_LEN + 256, ACC_ALL);
	tbuf_init(&rk, L.end[1].pd, DROCE_GRH_LEN + 256, ACC_ALL);
	pattern(sb.p, 256, 5);
	CHECK_EQ(droce_qp_attach_mcast(a, grp), 0, "attach a");
	CHECK_EQ(droce_qp_attach_mcast(a, grp), 0, "attach a again");
	CHECK_EQ(droce_qp_attach_mcast(b, grp), 0, "attach b");
	CHECK_EQ(droce_qp_attach_mcast(c, grp), 0, "attach c");
	CHECK_EQ(droce_qp_attach_mcast(k, grp), 0, "attach k");
	CHECK_EQ(droce_qp_detach_mcast(c, grp), 0, "detach c");
	CHECK_EQ(droce_qp_detach_mcast(c, grp), -EINVAL, "detach c again");
	CHECK_EQ(droce_tp_queue_mcast_groups(L.end[1].q), 1, "one group");
	for (i = 0; i < 4; i++) {
		post_recv(a, &ra, 10);
		post_recv(b, &rb, 20);
		post_recv(c, &rc, 30);
		post_recv(k, &rk, 40);
	}

	send_to(s, scq, &sb, 200, grp, mac, DROCE_MCAST_QPN);
	CHECK_EQ(droce_cq_poll(rcq, &wc, 1), 1, "first copy");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == DROCE_GRH_LEN + 200
		&& (wc.wc_flags & IBV_WC_GRH) && wc.src_qp == droce_qp_num(s),
		"copy: status %d len %u flags %x", wc.status, wc.byte_len,
		wc.wc_flags);
	CHECK(wc.qp_num == droce_qp_num(a) || wc.qp_num == droce_qp_num(b),
		"first copy to a or b");
	CHECK_EQ(droce_cq_poll(rcq, &wc, 1), 1, "second copy");
	CHECK(wc.qp_num == droce_qp_num(a) || wc.qp_num == droce_qp_num(b),
		"second copy to a or b");
	CHECK_EQ(droce_cq_poll(rcq, &wc, 1), 0, "no third copy");
	/* the GRH's IPv4 header: destination the group */
	CHECK(memcmp(ra.p + 36, "\xef\x01\x02\x03", 4) == 0 &&
		memcmp(rb.p + 36, "\xef\x01\x02\x03", 4) == 0, "GRH dst group");
	CHECK(pattern_ok(ra.p + DROCE_GRH_LEN, 200, 5) &&
		pattern_ok(rb.p + DROCE_GRH_LEN, 200, 5), "payload");
	CHECK(rc.p[DROCE_GRH_LEN] == 0, "detached QP untouched");
	CHECK_EQ(RX_STAT(rx_drop_qkey), 1, "k: another Q_Key");

	/* nobody joined; one group's MAC with another's IP; a DestQP */
	drops = RX_STAT(rx_drop_mcast);
	send_to(s, scq, &sb, 64, unjoined, umac, DROCE_MCAST_QPN);
	CHECK_EQ(RX_STAT(rx_drop_mcast), drops + 1, "unjoined group dropped");
	send_to(s, scq, &sb, 64, other, mac, DROCE_MCAST_QPN);
	CHECK_EQ(RX_STAT(rx_drop_mcast), drops + 2, "other IP dropped");
	drops = RX_STAT(rx_drop_noqp);
	send_to(s, scq, &sb, 64, grp, mac, droce_qp_num(a));
	CHECK_EQ(RX_STAT(rx_drop_noqp), drops + 1, "DestQP not 0xFFFFFF");
	/* the group's IP to the device's own MAC: not the group's frame */
	drops = RX_STAT(rx_drop_mcast);
	send_to(s, scq, &sb, 64, grp, L.end[1].mac, DROCE_MCAST_QPN);
	CHECK_EQ(RX_STAT(rx_drop_mcast), drops + 1, "group IP, unicast MAC");
	CHECK_EQ(droce_cq_poll(rcq, &wc, 1), 0, "none delivered");

	/* detached: nothing more for a */
	CHECK_EQ(droce_qp_destroy(a), -EBUSY, "destroy while attached");
	CHECK_EQ(droce_qp_detach_mcast(a, grp), 0, "detach a");
	send_to(s, scq, &sb, 100, grp, mac, DROCE_MCAST_QPN);
	CHECK_EQ(droce_cq_poll(rcq, &wc, 1), 1, "b still gets it");
	CHECK_EQ(wc.qp_num, droce_qp_num(b), "only b");
	CHECK_EQ(droce_cq_poll(rcq, &wc, 1), 0, "a gets nothing");
	CHECK_EQ(droce_qp_detach_mcast(b, grp), 0, "detach b");
	CHECK_EQ(droce_qp_detach_mcast(k, grp), 0, "detach k");
	CHECK_EQ(droce_tp_queue_mcast_groups(L.end[1].q), 0, "no group");
	drops = RX_STAT(rx_drop_mcast);
	send_to(s, scq, &sb, 64, grp, mac, DROCE_MCAST_QPN);
	CHECK_EQ(RX_STAT(rx_drop_mcast), drops + 1, "left group dropped");

	CHECK_EQ(droce_qp_destroy(a), 0, "destroy a");
	droce_qp_destroy(b);
	droce_qp_destroy(c);
	droce_qp_destroy(k);
	droce_qp_destroy(s);
	tbuf_fini(&sb);
	tbuf_fini(&ra);
	tbuf_fini(&rb);
	tbuf_fini(&rc);
	tbuf_fini(&rk);
	droce_cq_destroy(scq);
	droce_cq_destroy(rcq);
}

/* EINVAL for other QP types and GIDs, ENOMEM at each limit, the MACs. */
static void
test_rules(void)
{
	struct droce_dev *dev = L.end[1].dev;
	const struct droce_dev_limits *lim = droce_dev_limits(dev);
	uint32_t n = lim->max_mcast_qp_attach + 1, i;
	struct droce_qp *qps[64], *rcqp;
	struct ibv_qp_init_attr ia;
	struct droce_cq *cq;
	uint8_t gid[16], macs[4][6];

	CHECK(lim->max_mcast_grp > 0 && lim->max_mcast_qp_attach > 0 &&
		lim->max_total_mcast_qp_attach >= lim->max_mcast_qp_attach,
		"limits set");
	CHECK(n <= 64 && lim->max_mcast_grp < 1000, "test sized for limits");
	cq = droce_cq_create(dev, 0, 64);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	rcqp = droce_qp_create(L.end[1].pd, &ia, cq, cq, NULL);
	gid4(gid, 0xe0000101);
	CHECK_EQ(droce_qp_attach_mcast(rcqp, gid), -EINVAL, "RC attach");
	CHECK_EQ(droce_qp_detach_mcast(rcqp, gid), -EINVAL, "RC detach");
	ia.qp_type = IBV_QPT_UC;
	droce_qp_destroy(rcqp);
	rcqp = droce_qp_create(L.end[1].pd, &ia, cq, cq, NULL);
	CHECK_EQ(droce_qp_attach_mcast(rcqp, gid), -EINVAL, "UC attach");
	droce_qp_destroy(rcqp);

	for (i = 0; i < n; i++)
		qps[i] = ud_qp(L.end[1].pd, cq, QKEY);
	gid4(gid, 0x0a000002);
	CHECK_EQ(droce_qp_attach_mcast(qps[0], gid), -EINVAL, "unicast GID");
	/* a full group */
	gid4(gid, 0xe0000101);
	for (i = 0; i + 1 < n; i++)
		CHECK_EQ(droce_qp_attach_mcast(qps[i], gid), 0, "fill group");
	CHECK_EQ(droce_qp_attach_mcast(qps[n - 1], gid), -ENOMEM,
		"group full");
	CHECK_EQ(droce_qp_detach_mcast(qps[0], gid), 0, "one leaves");
	CHECK_EQ(droce_qp_attach_mcast(qps[n - 1], gid), 0, "room again");
	for (i = 1; i < n; i++)
		CHECK_EQ(droce_qp_detach_mcast(qps[i], gid), 0, "empty group");
	/* all the groups the device may have */
	for (i = 0; i < lim->max_mcast_grp; i++) {
		gid4(gid, 0xe1000000 + i);
		CHECK_EQ(droce_qp_attach_mcast(qps[0], gid), 0, "fill groups");
	}
	gid4(gid, 0xe2000000);
	CHECK_EQ(droce_qp_attach_mcast(qps[1], gid), -ENOMEM, "no group left");
	CHECK_EQ(droce_dev_mcast_macs(dev, macs, 4), lim->max_mcast_grp,
		"a MAC per group");
	for (i = 0; i < lim->max_mcast_grp; i++) {
		gid4(gid, 0xe1000000 + i);
		CHECK_EQ(droce_qp_detach_mcast(qps[0], gid), 0, "leave groups");
	}
	CHECK_EQ(droce_dev_mcast_macs(dev, macs, 4), 0, "no MAC left");
	/* two groups, one MAC (RFC 1112 maps 32 groups to each) */
	gid4(gid, 0xe0010101);
	CHECK_EQ(droce_qp_attach_mcast(qps[0], gid), 0, "224.1.1.1");
	gid4(gid, 0xe1010101);
	CHECK_EQ(droce_qp_attach_mcast(qps[1], gid), 0, "225.1.1.1");
	CHECK_EQ(droce_dev_mcast_macs(dev, macs, 4), 1, "one MAC for both");
	CHECK(memcmp(macs[0], "\x01\x00\x5e\x01\x01\x01", 6) == 0, "its MAC");
	CHECK_EQ(droce_qp_detach_mcast(qps[0], gid), -EINVAL,
		"detach from another QP's group");
	CHECK_EQ(droce_qp_detach_mcast(qps[1], gid), 0, "leave 225.1.1.1");
	gid4(gid, 0xe0010101);
	CHECK_EQ(droce_qp_detach_mcast(qps[0], gid), 0, "leave 224.1.1.1");
	for (i = 0; i < n; i++)
		CHECK_EQ(droce_qp_destroy(qps[i]), 0, "destroy");
	droce_cq_destroy(cq);
}

static uint8_t captured[2048];
static uint32_t captured_len;

static int
capture(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	(void)l;
	if (dir == 0 && len <= sizeof(captured) && (f[0] & 1)) {
		memcpy(captured, f, len);
		captured_len = len;
	}
	return 0;
}

/*
 * A device with two queues: a frame to the group given to a queue
 * reaches only that queue's attached QPs (the dataplane hands a copy to
 * each queue with groups).
 */
static void
test_queues(void)
{
	struct droce_dev_conf conf;
	struct droce_dev *dev;
	struct droce_pd *pd;
	struct droce_cq *scq, *cq[2];
	struct droce_qp *s, *qp[2];
	struct tbuf sb, rb[2];
	const uint8_t *frames[1];
	uint32_t lens[1], i;
	uint8_t grp[16], mac[6];
	struct ibv_wc wc;

	memset(&conf, 0, sizeof(conf));
	memcpy(conf.mac, "\x02\x00\x00\x00\x00\x09", 6);
	conf.nb_queues = 2;
	droce_gid_from_ipv4(conf.gids[1].gid, 0x0a000009);
	conf.gids[1].valid = 1;
	dev = droce_dev_create(&conf);
	CHECK(dev != NULL, "two-queue device");
	pd = droce_pd_alloc(dev);
	gid4(grp, 0xef000001);
	droce_gid_mcast_mac(grp, mac);
	for (i = 0; i < 2; i++) {
		cq[i] = droce_cq_create(dev, i, 16);
		qp[i] = ud_qp(pd, cq[i], QKEY);
		CHECK_EQ(droce_qpn_queue(dev, droce_qp_num(qp[i])), i, "queue");
		tbuf_init(&rb[i], pd, DROCE_GRH_LEN + 64, ACC_ALL);
		post_recv(qp[i], &rb[i], i);
		CHECK_EQ(droce_qp_attach_mcast(qp[i], grp), 0, "attach");
		CHECK_EQ(droce_tp_queue_mcast_groups(droce_dev_queue(dev, i)),
			1, "queue has the group");
	}
	/* a real frame from the link's sender */
	scq = droce_cq_create(L.end[0].dev, 0, 16);
	s = ud_qp(L.end[0].pd, scq, QKEY);
	tbuf_init(&sb, L.end[0].pd, 64, ACC_ALL);
	L.filter = capture;
	send_to(s, scq, &sb, 32, grp, mac, DROCE_MCAST_QPN);
	L.filter = NULL;
	CHECK(captured_len > 0, "frame captured");
	frames[0] = captured;
	lens[0] = captured_len;
	droce_tp_rx_burst(droce_dev_queue(dev, 1), frames, lens, 1, 1);
	CHECK_EQ(droce_cq_poll(cq[0], &wc, 1), 0, "queue 0's QP: not via 1");
	CHECK_EQ(droce_cq_poll(cq[1], &wc, 1), 1, "queue 1's QP");
	droce_tp_rx_burst(droce_dev_queue(dev, 0), frames, lens, 1, 2);
	CHECK_EQ(droce_cq_poll(cq[0], &wc, 1), 1, "queue 0's QP");
	CHECK_EQ(droce_cq_poll(cq[1], &wc, 1), 0, "queue 1's QP: once");
	for (i = 0; i < 2; i++) {
		CHECK_EQ(droce_qp_detach_mcast(qp[i], grp), 0, "detach");
		droce_qp_destroy(qp[i]);
		droce_cq_destroy(cq[i]);
		tbuf_fini(&rb[i]);
	}
	droce_qp_destroy(s);
	droce_cq_destroy(scq);
	tbuf_fini(&sb);
	droce_pd_dealloc(pd);
	droce_dev_destroy(dev);
}

int
main(void)
{
	CHECK_EQ(fl_init(&L, 31, 1500), 0, "fl_init");
	test_addresses();
	test_delivery();
	test_rules();
	test_queues();
	fl_fini(&L);
	return check_report("transport_mcast");
}
