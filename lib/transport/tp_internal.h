/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_INTERNAL_H
#define TP_INTERNAL_H

/* lib/transport internals: cross-file prototypes, grouped by file; the
 * objects' layouts are in tp_objects.h, memory keys and SGEs in tp_mem.h,
 * multicast groups and RAW_PACKET QPs in tp_mcast.h and tp_raw.h. */

#include "tp_objects.h"
#include "tp_mem.h"

/* tp_dev.c */
uint32_t tp_rand(struct droce_dev *dev);
void tp_async(struct droce_dev *dev, enum ibv_event_type type, void *obj);
int tp_queue_add_qp(struct droce_tp_queue *q, struct droce_qp *qp);
int tp_owner_move(struct droce_dev *dev, struct droce_tp_queue **owner,
		const uint32_t *refs, uint32_t q);
void tp_queue_del_qp(struct droce_tp_queue *q, struct droce_qp *qp);

/* tp_cq.c */
int tp_cq_push(struct droce_cq *cq, const struct ibv_wc *wc, int solicited);
/*
 * The CQ's next entry, zeroed, for the caller to fill and tp_cq_commit;
 * NULL when the CQ is full (overflow counted, CQ_ERR raised once). Built
 * in place: a completion built on the stack and copied in makes the copy's
 * wide loads wait on the narrow stores that wrote it.
 */
struct ibv_wc *tp_cq_overflowed(struct droce_cq *cq);
void tp_cq_fire(struct droce_cq *cq, int solicited);

static inline struct ibv_wc *
tp_cq_slot(struct droce_cq *cq)
{
	struct ibv_wc *wc;

	if (__builtin_expect(cq->head - cq->tail >= cq->cqe, 0))
		return tp_cq_overflowed(cq);
	wc = &cq->ring[cq->head & (cq->size - 1)];
	memset(wc, 0, sizeof(*wc));
	return wc;
}

/* The entry tp_cq_slot gave is filled: it counts, and an armed CQ's
 * event is raised (tp_cq_fire) where it is due. */
static inline void
tp_cq_commit(struct droce_cq *cq, int solicited)
{
	const struct ibv_wc *wc = &cq->ring[cq->head & (cq->size - 1)];

	cq->head++;
	if (solicited || wc->status != IBV_WC_SUCCESS)
		cq->solicited_seq++;
	if (__builtin_expect(cq->armed != TP_CQ_UNARMED, 0))
		tp_cq_fire(cq, solicited);
}
/* Drops the completions of QP qpn not yet polled (its destruction). */
void tp_cq_purge_qp(struct droce_cq *cq, uint32_t qpn);

/* tp_qp.c */
/* A QP of type t (its own type, XRC ones included) on queue q with no
 * PD, CQ, SRQ or queues: numbered and listed on q. NULL and errno. */
struct droce_qp *tp_qp_alloc(struct droce_dev *dev, struct droce_tp_queue *q,
		enum ibv_qp_type t);
void tp_qp_to_error(struct droce_qp *qp);
void tp_qp_flush(struct droce_qp *qp);

/* tp_req.c */
int tp_req_progress(struct droce_qp *qp);
/* w's packet at byte off and PSN psn sent again (a READ asks rd_len
 * bytes): 1 sent, 0 no room, -1 a local error. */
int tp_req_resend(struct droce_qp *qp, struct tp_swqe *w, uint64_t off,
		uint32_t psn, uint64_t rd_len);
void tp_req_timers(struct droce_qp *qp, uint64_t now);
void tp_req_rewind(struct droce_qp *qp, uint32_t psn);
void tp_req_loss(struct droce_qp *qp);

/* tp_rto.c: the adaptive retransmission timer */
uint64_t tp_rto_ns(const struct droce_qp *qp);
void tp_rto_sent(struct droce_qp *qp, uint32_t psn, uint64_t now);
void tp_rto_progress(struct droce_qp *qp, uint32_t new_una, uint64_t now);
void tp_rto_resend(struct droce_qp *qp);
int tp_rto_expired(struct droce_qp *qp, uint64_t now);
int tp_rto_nak_charges(struct droce_qp *qp, uint64_t now);
/* About one round trip and its variation, no floor: how long an answer
 * asked again may take before it is asked once more. */
uint64_t tp_rto_rtt_ns(const struct droce_qp *qp);
/* ... and how long before something asked again is asked once more. */
uint64_t tp_rto_reask_ns(const struct droce_qp *qp);

/* tp_read.c: READ responses placed by PSN, lost answers asked again */
/* w (READ, atomic, ATOMIC WRITE, FLUSH) goes out for the first time */
void tp_read_start(struct droce_qp *qp, struct tp_swqe *w);
/* w's answers are placed by PSN and asked again alone, not by a rewind */
static inline int
tp_read_tracked(const struct droce_qp *qp, const struct tp_swqe *w)
{
	if (!(w->wr_flags & TP_WRF_READ))
		return 1;	/* one answer, asked again whole */
	return qp->rd_bits != NULL && w->npsn <= TP_RD_TRACK;
}

/* The PSN of w's first missing answer. */
static inline uint32_t
tp_read_missing(const struct droce_qp *qp, const struct tp_swqe *w)
{
	if (w->wr_flags & TP_WRF_READ)
		return droce_psn_add(w->first_psn,
			(uint32_t)(w->read_done / qp->mtu));
	return w->first_psn;
}
/* Responses after w's missing one came: ask again (once per round trip). */
void tp_read_hole(struct droce_qp *qp, struct tp_swqe *w);
/* How long w's hole asked again may take before it is asked once more. */
uint64_t tp_read_reask_ns(const struct droce_qp *qp, const struct tp_swqe *w);
/* w's request goes again (its first hole, for a READ answered in part). */
void tp_read_ask(struct droce_qp *qp, struct tp_swqe *w);
/* A READ response for tracked READ w: 1 placed, 0 duplicate, -1 w
 * failed (status given). */
int tp_read_place(struct droce_qp *qp, struct tp_swqe *w,
		const struct droce_pkt *pkt);
/* An answer's bytes into w's buffer at off (READ data, an atomic's
 * original value): in posting order where buffers overlap. 0, or
 * -EPERM / -EMSGSIZE as tp_sge_copy_in. */
int tp_read_copy(struct droce_qp *qp, struct tp_swqe *w, uint64_t off,
		const uint8_t *src, uint32_t len);
/* w will be sent again whole (a rewind): forget what was asked. */
void tp_read_forget(struct droce_qp *qp, struct tp_swqe *w);
/* Requests asked again (tp_req.c sends them): packets sent. */
int tp_read_resend(struct droce_qp *qp);

/* tp_cc.c: congestion notification */
/* The traffic class a frame leaves with: ECT(0) unless the device says
 * no or tclass names a codepoint. */
uint8_t tp_cc_tclass(const struct droce_dev *dev, uint8_t tclass);
/* A frame of qp came CE-marked. */
void tp_cc_rx_ce(struct droce_qp *qp);
/* The CNP qp owes its peer: 1 sent, 0 not (no room). */
int tp_cc_send_cnp(struct droce_qp *qp);
/* A CNP arrived on queue q. */
void tp_cc_rx_cnp(struct droce_tp_queue *q, const struct droce_pkt *pkt);
/* len bytes of qp's left: the byte counter, and when the next may go */
void tp_cc_tx(struct droce_qp *qp, uint32_t len);

int tp_cc_wait_slow(struct droce_qp *qp);
uint64_t tp_cc_deadline(const struct droce_qp *qp);
/* the delay-based controller's window is full: nothing new leaves */
int tp_cc_window_full(const struct droce_qp *qp);
/* the retransmission timer fired: the rate is cut as for a CNP */
void tp_cc_timeout(struct droce_qp *qp);
/* a round trip measured (tp_rto.c): the delay-based controller's input */
void tp_cc_rtt(struct droce_qp *qp, uint64_t rtt, uint64_t now);

/* qp is paced and its next frame is not due yet */
static inline int
tp_cc_wait(struct droce_qp *qp)
{
	return qp->cc.limited && qp->queue->now < qp->cc_next_tx &&
		tp_cc_wait_slow(qp);
}

/* tp_sr.c: selective repeat */
#define TP_SACK_MAGIC	0x44525341u	/* "DRSA" */
#define TP_SACK_MAX	(8 + 4096 / 8)	/* payload bytes at most */
int tp_sr_init(struct droce_qp *qp);
void tp_sr_free(struct droce_qp *qp);
void tp_sr_reset(struct droce_qp *qp);
/* Responder: a request ahead of epsn: held (1) or dropped (0). */
int tp_sr_hold(struct droce_qp *qp, const struct droce_pkt *pkt);
/* The held request at epsn, taken (its pkt valid until the next call),
 * or NULL. */
const struct droce_pkt *tp_sr_take(struct droce_qp *qp);
/* The selective acknowledgement's payload into p (TP_SACK_MAX): its
 * length, 0 when nothing is held. */
uint32_t tp_sr_sack_fill(const struct droce_qp *qp, uint8_t *p);
/* Requester: a selective acknowledgement came (after its ACK part). */
void tp_sr_sack_rx(struct droce_qp *qp, const struct droce_pkt *pkt);
/* A PSN to send again alone (force: even if resent within a round
 * trip). */
void tp_sr_need(struct droce_qp *qp, uint32_t psn, int force);
/* A new PSN leaves. */
static inline void
tp_sr_sent(struct droce_qp *qp, uint32_t psn)
{
	qp->sr_at[psn & (qp->sr_win - 1)] = 0;
}
/* The PSNs asked for go again: packets sent. */
int tp_sr_resend(struct droce_qp *qp);
/* The retransmission timer fired. */
void tp_sr_timeout(struct droce_qp *qp);

/* tp_comp.c */
/* Mark a WQE done with status; completions go out in order later
 * (tp_comp_retire). */
static inline void
tp_wqe_done(struct droce_qp *qp, struct tp_swqe *w, enum ibv_wc_status st)
{
	if (w->state == TP_WQE_DONE)
		return;
	if (w->rd_inflight) {
		w->rd_inflight = 0;
		qp->rd_in_flight--;
		/* answered: open the window again, one per answer */
		if (st == IBV_WC_SUCCESS && qp->rd_cwnd < qp->max_rd_atomic)
			qp->rd_cwnd++;
	}
	if (w->rr_need)
		tp_read_forget(qp, w);
	w->state = TP_WQE_DONE;
	w->status = st;
}
void tp_comp_retire(struct droce_qp *qp);
void tp_comp_rx(struct droce_qp *qp, const struct droce_pkt *pkt);
void tp_comp_error(struct droce_qp *qp, enum ibv_wc_status st);

/* The slot of QPN qpn (dev->qp_tab's comment). */
static inline uint32_t
tp_qpn_slot(const struct droce_dev *dev, uint32_t qpn)
{
	return dev->qpn_mask ? qpn & dev->qpn_mask : qpn % dev->qpn_stride;
}

/* The QP whose number is qpn, or NULL. */
static inline struct droce_qp *
tp_qp_by_qpn(const struct droce_dev *dev, uint32_t qpn)
{
	uint32_t slot = tp_qpn_slot(dev, qpn);
	struct droce_qp *qp;

	if (slot >= dev->qp_tab_size)
		return NULL;
	qp = dev->qp_tab[slot];
	return qp != NULL && qp->qpn == qpn ? qp : NULL;
}

/* tp_resp.c */
/* A request for qp; len_bad: the packet breaks the length rules of C9-92. */
void tp_resp_rx_frame(struct droce_qp *qp, const struct droce_pkt *pkt,
		const uint8_t *frame, int len_bad);
/* A NAK at psn from the transmit side; the QP errors once it is out. */
void tp_resp_nak(struct droce_qp *qp, uint32_t psn, uint8_t syndrome);
/* Responder-side fatal error: NAK (RC), the receive completed, QP to ERR. */
void tp_resp_error(struct droce_qp *qp, const struct droce_pkt *pkt,
		uint8_t nak, enum ibv_wc_status st);

/* tp_resp_res.c: executed at the expected PSN, 0, or -1 refused (the
 * error sent) */
int tp_resp_read(struct droce_qp *qp, const struct droce_pkt *pkt);
int tp_resp_atomic(struct droce_qp *qp, const struct droce_pkt *pkt);
int tp_resp_atomic_write(struct droce_qp *qp, const struct droce_pkt *pkt);
int tp_resp_flush(struct droce_qp *qp, const struct droce_pkt *pkt);
/* A duplicate READ, atomic, ATOMIC WRITE or FLUSH: replayed from its
 * resource, or dropped. */
void tp_resp_replay(struct droce_qp *qp, const struct droce_pkt *pkt,
		unsigned int f);

/* tp_resp_tx.c */
void tp_resp_last_ack(struct droce_qp *qp);
void tp_resp_ack_before_error(struct droce_qp *qp);
int tp_resp_progress(struct droce_qp *qp);
void tp_resp_res_resized(struct droce_qp *qp);
/*
 * The answer to a one-packet READ (its data at src, found by the request's
 * key lookup) or an atomic, sent from the receive that executed it: no
 * second lookup, no turn over the resources. Only when no answer is
 * pending before it, the queue has a frame to give, the QP is not paced
 * and the payload is copied (not sent by reference); else 0, and the
 * progress turn answers it as any other.
 */
int tp_resp_answer_now(struct droce_qp *qp, struct tp_res *r,
		const uint8_t *src);
int tp_resp_busy(const struct droce_qp *qp);

/* tp_req_small.c */
/* Whether qp's one-packet requests may take the small-request path:
 * inline, asked on every pass. */
static inline int
tp_req_small_qp(const struct droce_qp *qp)
{
	return qp->type == IBV_QPT_RC && qp->state == IBV_QPS_RTS &&
		!qp->xrc && !qp->sr && !qp->cc.limited &&
		qp->dev->conf.cc != DROCE_CC_DELAY;
}
/* The one-packet requests at sq.cur, while the window, the credits and
 * the call's budget allow: how many went; *failed set: the WQE at sq.cur
 * could not be sent (local protection), for the caller to complete so. */
int tp_req_small(struct droce_qp *qp, int *failed);
/* The same for a UD QP (its SENDs are one packet each). */
static inline int
tp_req_small_ud_qp(const struct droce_qp *qp)
{
	return qp->type == IBV_QPT_UD && qp->state == IBV_QPS_RTS &&
		!qp->cc.limited;
}
/* ... its SENDs at sq.cur while the call's budget allows, each completed
 * once sent (the caller retires them); as tp_req_small otherwise. */
int tp_req_small_ud(struct droce_qp *qp, int *failed);
/* An atomic's AtomicETH: CMP_AND_SWP carries swap and compare, FETCH_ADD
 * the addend. */
static inline void
tp_atomic_eth(struct droce_pkt *p, const struct tp_swqe *w)
{
	p->atm_va = w->remote_addr;
	p->atm_rkey = w->rkey;
	p->atm_swap_add = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
		w->swap : w->compare_add;
	p->atm_compare = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
		w->compare_add : 0;
}

/* tp_tx.c */
/* More buffers from the environment for tp_tx_get. */
uint8_t *tp_tx_get_more(struct droce_tp_queue *q, uint32_t cap,
		struct droce_txbuf **b);

/* A buffer of cap bytes for the next frame (NULL: none, or the call's
 * budget is spent); inline for the buffers already in hand. */
static inline uint8_t *
tp_tx_get(struct droce_tp_queue *q, uint32_t cap, struct droce_txbuf **b)
{
	struct droce_txbuf *x;

	if (__builtin_expect(q->tx_used == q->tx_n || q->tx_budget == 0, 0))
		return tp_tx_get_more(q, cap, b);
	x = &q->tx[q->tx_used];
	if (x->cap < cap)
		return NULL;
	x->nspan = 0;
	x->tso_mss = 0;
	*b = x;
	return x->data;
}

/* A frame of qp's is built in b: it leaves with the queue's next burst;
 * counted on the queue and on the QP. */
static inline void
tp_tx_done(struct droce_qp *qp, struct droce_txbuf *b, uint32_t len)
{
	struct droce_tp_queue *q = qp->queue;

	b->len = len;
	q->tx_used++;
	q->tx_budget--;
	q->st.tx_pkts++;
	q->st.tx_bytes += len;
	qp->st.tx_pkts++;
	qp->st.tx_bytes += len;
	if (__builtin_expect(qp->cc.limited, 0))
		tp_cc_tx(qp, len);
}
/* Zero-copy transmit (droce_tp_io.zc_min): whether a payload of plen bytes
 * in a frame of IP version ip_ver goes by reference. */
static inline int
tp_tx_zc_wanted(const struct droce_tp_queue *q, uint8_t ip_ver, uint32_t plen)
{
	return q->io.zc_min && plen >= q->io.zc_min && ip_ver == 4;
}
/* The tp_tx_done of a frame sent by reference (headers in buf, payload
 * b->span[0, n)); -1: copy it. */
int tp_tx_spans_done(struct droce_qp *qp, struct droce_txbuf *b,
		const uint8_t *buf, uint32_t hlen, uint32_t n, uint32_t plen);
void tp_tx_flush(struct droce_tp_queue *q);
/* Room left in this progress call's budget. */
static inline int
tp_tx_room(const struct droce_tp_queue *q)
{
	return q->tx_budget > 0;
}
void tp_qp_set_template(struct droce_qp *qp);
/* UD: qp->tmpl and qp->htmpl made for av (a WR's address handle). */
void tp_ud_template_build(struct droce_qp *qp, const struct droce_av *av);
/* ... unless they are already: a UD QP mostly sends to few addresses. The
 * AV's bytes compared (a WQE's AV is a copy of its AH's, padding too):
 * unequal padding only builds again. */
static inline void
tp_ud_template(struct droce_qp *qp, const struct droce_av *av)
{
	if (!qp->ud_tmpl_ok || memcmp(&qp->ud_av, av, sizeof(*av)) != 0)
		tp_ud_template_build(qp, av);
}
/* Finish a frame whose payload is in place: pad, ICRC (IPv6: UDP csum). */
static inline uint32_t
tp_finish(struct droce_pkt *pkt, uint8_t *buf, uint32_t hlen)
{
	return droce_wire_finish_inline(buf, hlen, pkt->payload_len);
}

/* A header from the QP's template, inline (lib/wire/wire_build.h). */
static inline int
tp_build_hdr(const struct droce_qp *qp, const struct droce_pkt *p,
		uint8_t *buf)
{
	return droce_wire_build_hdr_tmpl_inline(&qp->htmpl, p, buf);
}

/* tp_xrc.c */
/* An XRC_RECV QP's request: its SRQ, CQ and PD from the XRCETH; 0 or
 * the NAK syndrome. */
uint8_t tp_xrc_rx_srq(struct droce_qp *qp, const struct droce_pkt *pkt);
/* droce_srq_destroy of an XRC SRQ: 0 or -EBUSY. */
int tp_xrc_srq_release(struct droce_srq *srq);

/* tp_rq.c */
int tp_rq_init(struct tp_rq *rq, uint32_t wr, uint32_t sge);
void tp_rq_free(struct tp_rq *rq);
int tp_rq_post(struct tp_rq *rq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr);
int tp_rq_pop(struct tp_rq *rq, struct tp_rwqe *out);
static inline uint32_t
tp_rq_count(const struct tp_rq *rq)
{
	return rq->head - rq->tail;
}

/* Take a receive WQE from the QP's RQ or its SRQ (SRQ limit event). */
static inline int
tp_take_rwqe(struct droce_qp *qp, struct tp_rwqe *rw)
{
	struct droce_srq *srq = qp->srq;

	if (srq == NULL)
		return tp_rq_pop(&qp->rq, rw);
	if (tp_rq_pop(&srq->rq, rw) != 0)
		return -1;
	if (srq->limit && tp_rq_count(&srq->rq) < srq->limit) {
		srq->limit = 0;	/* one event per arming */
		tp_async(qp->dev, IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	}
	return 0;
}

/* ---- helpers ---- */

/* PSNs a message of len bytes takes: one per path MTU, at least one. */
static inline uint32_t
tp_msg_npsn(const struct droce_qp *qp, uint64_t len)
{
	uint64_t n = (len + qp->mtu - 1) / qp->mtu;

	return n ? (uint32_t)n : 1;
}

static inline uint32_t
tp_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

#endif /* TP_INTERNAL_H */
