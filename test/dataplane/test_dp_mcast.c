/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * A UD SEND to a multicast group through a real PMD: net_ring, whose
 * queues each loop back to themselves, so the port receives its own
 * frame. Two queues: the sender and one receiver on queue 0, the other
 * receiver on queue 1, so the frame (arriving on queue 0) must be handed
 * to queue 1 as well. The group's MAC comes from droce_port_resolve
 * without ARP; after both leave, the NIC's filter has no group and a
 * frame to the group is dropped and counted.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "eal_dir.h"
#include "dp_internal.h"
#include "ud_qp.h"

#define QKEY 0x5a5a0001u

static struct droce_qp *
ud_qp(struct droce_pd *pd, struct droce_cq *cq, uint32_t qkey)
{
	struct droce_qp *qp = ud_qp_rts(pd, cq, qkey);

	CHECK(qp != NULL, "UD QP in RTS");
	return qp;
}

/* Progress both queues until n completions came on cq (up to 2 s). */
static int
wait_wcs(struct droce_port *p, struct droce_cq *cq, struct ibv_wc *wc, int n)
{
	uint64_t end = droce_now_ns() + 2000000000ull;
	int got = 0, r;

	while (got < n && droce_now_ns() < end) {
		droce_port_progress(p, 0);
		droce_port_progress(p, 1);
		droce_port_lock(p, droce_cq_queue(cq) ==
			droce_dev_queue(droce_port_dev(p), 0) ? 0 : 1);
		r = droce_cq_poll(cq, wc + got, n - got);
		droce_port_unlock(p, droce_cq_queue(cq) ==
			droce_dev_queue(droce_port_dev(p), 0) ? 0 : 1);
		if (r > 0)
			got += r;
	}
	return got;
}

static void
send_group(struct droce_port *p, struct droce_qp *s, struct droce_cq *scq,
		struct droce_ah *ah, struct ibv_sge *sge)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = droce_ah_to_ibv(ah);
	wr.wr.ud.remote_qpn = DROCE_MCAST_QPN;
	wr.wr.ud.remote_qkey = QKEY;
	droce_port_lock(p, 0);
	CHECK_EQ(droce_qp_post_send(s, &wr, &bad), 0, "post send");
	droce_port_unlock(p, 0);
	CHECK_EQ(wait_wcs(p, scq, &wc, 1), 1, "send completion");
}

/* The port, the sender s and a receiver on each queue, the group. */
struct mc {
	struct droce_port *p;
	struct droce_dev *dev;
	struct droce_pd *pd;
	struct droce_cq *cq[2];
	struct droce_qp *s, *r[2];
	struct droce_mr *mr;
	struct droce_ah *ah;
	struct ibv_sge sge;	/* what s sends */
	uint8_t *mem, grp[16], mac[6];
};

/* net_ring0 with two queues: 0, or -1 (said). */
static int
open_port(struct mc *m)
{
	static char eal[256];
	struct droce_port_conf conf;

	snprintf(eal, sizeof(eal), "--no-huge -m 512 --no-pci "
		"--file-prefix %s --log-level=lib.eal:4",
		eal_dir_prefix("dpmc"));
	droce_port_conf_init(&conf);
	conf.eal_args = eal;
	conf.devargs = "net_ring0";
	conf.nb_queues = 2;
	conf.mode = DROCE_PROGRESS_INLINE;
	conf.ipv4 = 0x0ac70001;
	m->p = droce_port_open(&conf);
	if (m->p == NULL) {
		fprintf(stderr, "test_dp_mcast: no net_ring port\n");
		return -1;
	}
	m->dev = droce_port_dev(m->p);
	return 0;
}

/* The buffer, a CQ on each queue, the sender and r[1] on queue 1. */
static void
make_qps(struct mc *m)
{
	int i;

	m->pd = droce_pd_alloc(m->dev);
	m->mem = calloc(1, 4096);
	m->mr = droce_mr_reg(m->pd, m->mem, 4096, (uintptr_t)m->mem,
		IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 2; i++)
		m->cq[i] = droce_cq_create(m->dev, (uint32_t)i, 16);
	m->s = ud_qp(m->pd, m->cq[0], QKEY);
	m->r[0] = ud_qp(m->pd, m->cq[0], QKEY);
	m->r[1] = ud_qp(m->pd, m->cq[1], QKEY);
	CHECK(m->s != NULL && m->r[0] != NULL && m->r[1] != NULL, "UD QPs");
	CHECK_EQ(droce_qpn_queue(m->dev, droce_qp_num(m->r[1])), 1,
		"r1 on queue 1");
}

/* 239.7.8.9, its MAC with no ARP (a timeout of 0 allows none); both
 * receivers join it, each with a receive posted. */
static void
join_group(struct mc *m)
{
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge rsge[2];
	int i;

	droce_gid_from_ipv4(m->grp, 0xef070809);
	CHECK_EQ(droce_port_resolve(m->p, m->grp, m->mac, 0), 0,
		"resolve group");
	CHECK(memcmp(m->mac, "\x01\x00\x5e\x07\x08\x09", 6) == 0,
		"group MAC");
	for (i = 0; i < 2; i++) {
		CHECK_EQ(droce_port_attach_mcast(m->p, m->r[i], m->grp), 0,
			"attach");
		rsge[i].addr = (uintptr_t)(m->mem + 1024 + 1024 * i);
		rsge[i].length = 1024;
		rsge[i].lkey = droce_mr_lkey(m->mr);
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 100 + (uint64_t)i;
		rwr.sg_list = &rsge[i];
		rwr.num_sge = 1;
		droce_port_lock(m->p, (uint32_t)i);
		CHECK_EQ(droce_qp_post_recv(m->r[i], &rwr, &rbad), 0,
			"post recv");
		droce_port_unlock(m->p, (uint32_t)i);
	}
	CHECK(m->p->mc_filter != DP_MCF_NONE && m->p->mc_macs == 1,
		"NIC filter has the group (%s, %u MACs)",
		dp_filter_mc_name(m->p), m->p->mc_macs);
	printf("test_dp_mcast: mc_filter %s\n", dp_filter_mc_name(m->p));
}

/* A SEND to the group: a copy on each queue, queue 0 handed it on. */
static void
send_copies(struct mc *m)
{
	struct droce_port_queue_stats qs;
	struct droce_av av;
	struct ibv_wc wc[2];
	int i;

	memset(&av, 0, sizeof(av));
	memcpy(av.dmac, m->mac, 6);
	memcpy(av.dgid, m->grp, 16);
	av.sgid_index = 1;
	av.hop_limit = 1;
	m->ah = droce_ah_create(m->pd, &av);
	memset(m->mem, 0x3c, 64);
	m->sge.addr = (uintptr_t)m->mem;
	m->sge.length = 64;
	m->sge.lkey = droce_mr_lkey(m->mr);
	send_group(m->p, m->s, m->cq[0], m->ah, &m->sge);
	for (i = 0; i < 2; i++) {
		CHECK_EQ(wait_wcs(m->p, m->cq[i], wc, 1), 1,
			"a copy on each queue");
		CHECK(wc[0].status == IBV_WC_SUCCESS &&
			wc[0].qp_num == droce_qp_num(m->r[i]) &&
			(wc[0].wc_flags & IBV_WC_GRH) &&
			wc[0].byte_len == DROCE_GRH_LEN + 64 &&
			wc[0].src_qp == droce_qp_num(m->s),
			"copy %d: status %d qp %u len %u", i, wc[0].status,
			wc[0].qp_num, wc[0].byte_len);
		CHECK(m->mem[1024 + 1024 * i + DROCE_GRH_LEN] == 0x3c &&
			m->mem[1024 + 1024 * i + DROCE_GRH_LEN + 63] == 0x3c,
			"payload %d", i);
	}
	CHECK_EQ(droce_port_queue_stats(m->p, 0, &qs), 0, "queue 0 stats");
	CHECK(qs.handoffs >= 1, "queue 0 handed the frame to queue 1");
}

/* Both leave: the NIC's filter has no group, and a frame to it is
 * dropped and counted. */
static void
leave_group(struct mc *m)
{
	struct droce_tp_stats ts;
	struct ibv_wc wc[2];
	int i;

	for (i = 0; i < 2; i++) {
		CHECK_EQ(droce_port_detach_mcast(m->p, m->r[i], m->grp), 0,
			"detach");
		CHECK_EQ(droce_port_detach_mcast(m->p, m->r[i], m->grp),
			-EINVAL, "detach again");
	}
	CHECK(m->p->mc_filter == DP_MCF_NONE && m->p->mc_macs == 0,
		"no group left in the NIC filter");
	send_group(m->p, m->s, m->cq[0], m->ah, &m->sge);
	for (i = 0; i < 50; i++) {
		droce_port_progress(m->p, 0);
		droce_port_progress(m->p, 1);
		usleep(1000);
	}
	droce_port_lock(m->p, 0);
	droce_tp_queue_stats(droce_dev_queue(m->dev, 0), &ts);
	CHECK_EQ(droce_cq_poll(m->cq[0], wc, 1), 0, "left: nothing for r0");
	droce_port_unlock(m->p, 0);
	CHECK_EQ(ts.rx_drop_mcast, 1, "the frame nobody joined, counted");
}

static void
tear_down(struct mc *m)
{
	int i;

	droce_ah_destroy(m->ah);
	CHECK_EQ(droce_qp_destroy(m->s), 0, "destroy");
	for (i = 0; i < 2; i++) {
		CHECK_EQ(droce_qp_destroy(m->r[i]), 0, "destroy");
		droce_cq_destroy(m->cq[i]);
	}
	droce_mr_dereg(m->mr);
	droce_pd_dealloc(m->pd);
	droce_port_close(m->p);
	free(m->mem);
}

int
main(void)
{
	struct mc m;

	memset(&m, 0, sizeof(m));
	if (open_port(&m) != 0)
		return 1;
	make_qps(&m);
	join_group(&m);
	send_copies(&m);
	leave_group(&m);
	tear_down(&m);
	return check_report("test_dp_mcast");
}
