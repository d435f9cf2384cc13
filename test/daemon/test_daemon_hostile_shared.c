/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_hostile's cases on what droced shares with an application:
 * the rings' indexes scribbled on, the event descriptors made blocking,
 * filled and read dry.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "wire_cm_mad.h"

#include "daemon_hostile.h"

/* Ring a WQ's doorbell for the index its prod says now. */
static void
ring_raw(struct cs *s, struct cs_wq *wq, uint32_t kind, uint32_t handle)
{
	struct droce_chan_region *r = (void *)s->region;
	struct droce_chan_db *db = (void *)(s->region + r->db_off[wq->queue]);
	uint64_t one = 1;

	__atomic_store_n(&wq->sh->rung, 1, __ATOMIC_RELEASE);
	db->ring[db->prod & (DROCE_CHAN_DB_SIZE - 1)] = DROCE_DB(kind, handle);
	__atomic_store_n(&db->prod, db->prod + 1, __ATOMIC_RELEASE);
	if (s->wake_fd >= 0 && write(s->wake_fd, &one, sizeof(one)) < 0)
		perror("wake");
}

static int
error_within(struct cs_wq *wq, int ms)
{
	int i;

	for (i = 0; i < ms / 10; i++) {
		if (__atomic_load_n(&wq->sh->error, __ATOMIC_ACQUIRE))
			return 1;
		usleep(10000);
	}
	return 0;
}

/*
 * A scribbled producer index was refused by one ring consumer, flushed by
 * another and ignored by a third (a GSI proxy's receive queue). Every
 * ring is now read through one accessor (app/droced/ring.c) and its owner
 * refused the same way: a proxy's scribbled RQ, then SQ, put it in the
 * error state like any QP (its receives complete flushed); a RESET makes
 * it new, and a MAD to itself arrives again.
 */
void
ring_scribble(void)
{
	struct droce_chan_modify_qp_req m = { 0 };
	struct cs_side x;
	struct cs_cq cq;
	struct cs_qp g;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t ah, xp;
	int i;

	cs_side_open(&x, path_a);
	CHECK(cs_cq(&x.s, 64, &cq) == 0, "cq");
	CHECK(gsi_proxy(&x.s, x.pd, cq.handle, cq.handle, &g) == 0, "proxy");
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)x.b.addr + 4096, 512,
		x.b.lkey };
	cs_post_recv(&x.s, &g, 41, &sge);
	for (i = 0; i < 500 && __atomic_load_n(&g.rq.sh->cons,
			__ATOMIC_ACQUIRE) != g.rq.prod; i++)
		usleep(10000);
	CHECK(g.rq.sh->cons == g.rq.prod, "the receive taken");
	/* the receive queue's index far past its ring */
	g.rq.sh->prod = g.rq.prod + 0x40000000u;
	ring_raw(&x.s, &g.rq, DROCE_KIND_RQ, g.handle);
	CHECK(error_within(&g.sq, 5000), "a proxy's scribbled RQ index was "
		"not refused");
	CHECK(cs_poll(&cq, &wc, 5000) == 1 && wc.wr_id == 41 &&
		wc.status == IBV_WC_WR_FLUSH_ERR, "its receive flushed: wr_id %lu "
		"status %d", (unsigned long)wc.wr_id, wc.status);
	/* a RESET makes it new: a MAD to itself arrives */
	m.handle = g.handle;
	m.mask = IBV_QP_STATE;
	m.attr.qp_state = IBV_QPS_RESET;
	CHECK(cs_rpc(&x.s, DROCE_OP_MODIFY_QP, &m, NULL, NULL, 0, NULL, NULL) == 0,
		"RESET");
	CHECK(g.sq.sh->error == 0, "the error flag after RESET");
	g.rq.prod = g.rq.sh->cons;
	cs_post_recv(&x.s, &g, 42, &sge);
	ah = ah_to_self(&x);
	xp = (uint32_t)x.s.hello.cm_prefix << 24;
	cm_msg(x.b.addr, CM_ATTR_DREQ, xp | 1, xp | 2);
	CHECK(gsi_send(&x, &g, &cq, ah, 0, CM_MAD_LEN, 1, CM_QKEY) ==
		IBV_WC_SUCCESS, "a MAD after RESET");
	CHECK(cs_poll(&cq, &wc, 10000) == 1 && wc.wr_id == 42 &&
		wc.status == IBV_WC_SUCCESS, "it came back: wr_id %lu status %d",
		(unsigned long)wc.wr_id, wc.status);
	/* and the send queue's index */
	g.sq.sh->prod = g.sq.prod + 0x40000000u;
	ring_raw(&x.s, &g.sq, DROCE_KIND_SQ, g.handle);
	CHECK(error_within(&g.sq, 5000), "a proxy's scribbled SQ index was "
		"not refused");
	cs_close(&x.s);
	printf("scribbled ring indexes: their owner refused\n");
}

static void *
read_forever(void *arg)
{
	int fd = *(int *)arg;
	uint64_t v;

	while (read(fd, &v, sizeof(v)) >= 0 || errno == EINTR ||
			errno == EAGAIN)
		;
	return NULL;	/* not readable: a pipe's write end */
}

/* fd made blocking, and as full as it will get (8 bytes at a time: an
 * eventfd's counter to its top, a pipe to its capacity). */
static void
fill_blocking(int fd)
{
	uint64_t big = 0xfffffffffffffffeull;
	int fl = fcntl(fd, F_GETFL);
	int i;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (write(fd, &big, sizeof(big)) != sizeof(big))
		return;		/* not writable, or the eventfd is full */
	for (i = 0; i < 100000 && write(fd, &big, 1) == 1; i++)
		;
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/*
 * The descriptors droced handed out for events were eventfds whose open
 * file it shared with the application: flags (O_NONBLOCK) are the open
 * file's, so the application could make droced's read or write of them
 * block, and it could fill them or read them dry. A session that makes
 * its channel, async and wake descriptors blocking, fills them and reads
 * the wake one in a loop, then has a completion fire on its channel and
 * an async event raised (a malformed WQE): droced's data path and main
 * thread blocked in write() or read(), and every session stalled. Each
 * is now a pipe whose ends are one side's alone.
 */
void
event_fds(void)
{
	struct droce_chan_create_cq_req cr = { .cqe = 64 };
	struct droce_chan_create_cq_rep cp;
	struct droce_chan_handle ch;
	struct droce_chan_swqe w = { 0 };
	struct cs_side h, p;
	struct cs_cq cq;
	pthread_t t;
	int fds[DROCE_CHAN_MAX_FDS], nfds = 0, i;
	static int wake;

	cs_side_open(&h, path_a);
	cs_side_open(&p, path_b);
	cs_pair(&h, &p);
	if (h.s.wake_fd >= 0) {
		wake = h.s.wake_fd;
		fcntl(wake, F_SETFL, fcntl(wake, F_GETFL) & ~O_NONBLOCK);
		CHECK(pthread_create(&t, NULL, read_forever, &wake) == 0,
			"a thread reading the wake descriptor");
		pthread_detach(t);
	}
	fill_blocking(h.s.async_fd);
	CHECK(cs_rpc(&h.s, DROCE_OP_CREATE_CHANNEL, NULL, &ch, NULL, 0, fds,
		&nfds) == 0 && nfds >= 1, "a completion channel");
	for (i = 0; i < nfds; i++)
		fill_blocking(fds[i]);
	cr.channel = ch.handle;
	CHECK(cs_rpc(&h.s, DROCE_OP_CREATE_CQ, &cr, &cp, NULL, 0, NULL,
		NULL) == 0, "a CQ on the channel");
	cq.handle = cp.handle;
	cq.size = cp.size;
	cq.sh = (void *)(h.s.region + cp.off);
	cq.wc = (void *)(h.s.region + cp.off + DROCE_CHAN_CQ_WC);
	cq.cons = 0;
	/* h's QP completes into its own CQ: point it there by a new QP */
	CHECK(cs_qp(&h.s, h.pd, IBV_QPT_RC, &cq, &h.qp) == 0, "a QP on it");
	CHECK(cs_connect(&h.s, &h.qp, p.s.hello.gids[1].gid, p.qp.qpn) == 0,
		"connect it");
	__atomic_store_n(&cq.sh->arm, DROCE_ARM_ANY, __ATOMIC_SEQ_CST);
	/* a malformed WQE: an async event, and a completion that fires */
	w.wr_id = 5;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1000;
	cs_post_send(&h.s, &h.qp, &w, NULL);
	usleep(500000);
	printf("event descriptors blocking, full, read dry: others served\n");
	/* the bystanders' traffic after this case shows whether droced
	 * went on; h keeps its descriptors (and the reader) until exit */
}
