/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * A queue's two entry points: received frames in (parse, validate, find
 * the QP, hand to the responder or the completer) and progress (timers,
 * responses and ACKs, then requests, up to a frame budget).
 */

#include <string.h>

#include "tp_internal.h"
#include "tp_mcast.h"
#include "tp_raw.h"
#include "wire_parse.h"

static int
transport_matches(const struct droce_qp *qp, uint8_t opcode)
{
	switch (opcode & DROCE_TRANSPORT_MASK) {
	case DROCE_TRANSPORT_RC:	/* an XRC QP is RC to the transport */
		return qp->type == IBV_QPT_RC && !qp->xrc;
	case DROCE_TRANSPORT_UC:
		return qp->type == IBV_QPT_UC;
	case DROCE_TRANSPORT_UD:
		return qp->type == IBV_QPT_UD;
	case DROCE_TRANSPORT_XRC:
		return qp->xrc != 0;
	default:
		return 0;
	}
}

/*
 * Is the frame addressed to this device's MAC? A port that sees other
 * hosts' frames (promiscuous, a bridge, a shared segment) must not let a
 * peer reach our QPs with frames meant for someone else. The MAC is
 * checked before the parse (and its ICRC). A multicast frame goes to the
 * queue's groups (tp_mcast.c) where its QPs joined any: only frames that
 * miss the device's MAC pay for that test.
 */
static int
mac_ours(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len)
{
	const uint8_t *mac = q->dev->conf.mac;
	uint32_t a, b;
	uint16_t c, d;

	/* two loads each way, not a call to memcmp: once per frame */
	memcpy(&a, frame, 4);
	memcpy(&b, mac, 4);
	memcpy(&c, frame + 4, 2);
	memcpy(&d, mac + 4, 2);
	if (a == b && c == d)
		return 1;
	if (!(frame[0] & 1))
		q->st.rx_drop_mac++;
	else if (q->nb_mc)
		tp_mcast_rx(q, frame, len);
	else
		q->st.rx_drop_mcast++;
	return 0;
}

static int
gid_ours(struct droce_tp_queue *q, const uint8_t gid[16])
{
	const struct droce_dev *dev = q->dev;
	uint64_t hi, lo;
	uint32_t i, ip4;

	memcpy(&hi, gid, 8);
	memcpy(&lo, gid + 8, 8);
	/* the GID the last frame was for first: one compare per frame */
	i = q->gid_hit;
	if (i < dev->nb_gids && dev->gid_words[i][0] == hi &&
			dev->gid_words[i][1] == lo)
		return 1;
	for (i = 0; i < dev->nb_gids; i++) {
		if (dev->gid_words[i][0] == hi && dev->gid_words[i][1] == lo) {
			q->gid_hit = i;
			return 1;
		}
	}
	/* ff00::/8, or ::ffff:224.0.0.0/4 */
	if (gid[0] == 0xff || (droce_gid_is_ipv4(gid, &ip4) && ip4 >> 28 == 0xe))
		q->st.rx_drop_mcast++;
	else
		q->st.rx_drop_ip++;
	return 0;
}

/* A selective acknowledgement (tp_sr.c): an ACK with a payload, taken
 * only by a QP with selective repeat on. */
static inline int
sack_ok(const struct droce_qp *qp, const struct droce_pkt *pkt, int rc)
{
	return qp->sr && rc == DROCE_WIRE_ELENGTH &&
		pkt->opcode == DROCE_OP_RC_ACK && pkt->padcnt == 0 &&
		pkt->payload_len <= TP_SACK_MAX;
}

/* A frame for qp, checked: to the responder or the completer. */
static inline __attribute__((always_inline)) void
rx_deliver(struct droce_qp *qp, const struct droce_pkt *pkt,
		const uint8_t *frame, uint32_t len, int len_bad)
{
	qp->st.rx_pkts++;
	qp->st.rx_bytes += len;
	/* a switch on the way was congested: the sender should slow down */
	if ((pkt->tclass & DROCE_ECN_MASK) == DROCE_ECN_CE)
		tp_cc_rx_ce(qp);
	if (droce_opcode_info[pkt->opcode].flags & DROCE_OPF_RESP)
		tp_comp_rx(qp, pkt);
	else
		tp_resp_rx_frame(qp, pkt, frame, len_bad);
}

/*
 * A connected QP's frame from its peer (a UD QP's from anyone), checked
 * against the QP's receive template (droce_wire_parse_rx_fast): what the
 * full receive below would find (our MAC and GID, the peer's GID, P_Key,
 * the QP, its transport, a whole and authentic packet within the QP's
 * MTU) in fewer steps. 1 if it was delivered; 0 sends it the full way.
 */
static inline __attribute__((always_inline)) int
rx_connected(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len)
{
	struct droce_pkt pkt;
	struct droce_qp *qp;

	if (len < DROCE_RX_FAST_MIN_LEN)
		return 0;
	qp = tp_qp_by_qpn(q->dev, droce_wire_rx_fast_qpn(frame));
	if (qp == NULL || !qp->rx_fast || qp->queue != q ||
			droce_wire_parse_rx_fast(frame, len, &qp->rx_tmpl,
			&pkt) != 0 || pkt.payload_len > qp->mtu)
		return 0;
	rx_deliver(qp, &pkt, frame, len, 0);
	return 1;
}

static void
rx_one(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len)
{
	static const struct droce_parse_opts opts = {
		.path_mtu = 4096,
		.transports = 1u << (DROCE_TRANSPORT_RC >> 5) |
			1u << (DROCE_TRANSPORT_UC >> 5) |
			1u << (DROCE_TRANSPORT_UD >> 5) |
			1u << (DROCE_TRANSPORT_CNP >> 5) |
			1u << (DROCE_TRANSPORT_XRC >> 5),
	};
	struct droce_dev *dev = q->dev;
	struct droce_pkt pkt;
	struct droce_qp *qp;
	int rc, len_bad;

	/* a frame the dataplane passed for the queue's flows */
	if (q->nb_raw_flows != 0 && tp_raw_rx(q, frame, len))
		return;
	q->st.rx_pkts++;
	q->st.rx_bytes += len;
	if (rx_connected(q, frame, len))
		return;
	if (len < 6 || !mac_ours(q, frame, len))
		return;
	rc = droce_wire_parse_rx(frame, len, &opts, &pkt);
	len_bad = 0;
	if (rc != 0) {
		/* length defects of an authentic packet: answered below */
		if (rc != DROCE_WIRE_EMTU && rc != DROCE_WIRE_ELENGTH) {
			q->st.rx_drop_parse[-rc]++;
			return;
		}
		len_bad = 1;
	}
	if (!gid_ours(q, pkt.dgid))
		return;
	if (pkt.opcode == DROCE_OP_CNP) {
		if (len_bad)
			q->st.rx_drop_parse[-rc]++;
		else
			tp_cc_rx_cnp(q, &pkt);
		return;
	}
	if (pkt.pkey != 0xffff) {
		q->st.rx_drop_noqp++;
		return;
	}
	qp = tp_qp_by_qpn(dev, pkt.dqpn);
	if (qp == NULL || qp->queue != q || !transport_matches(qp, pkt.opcode)) {
		q->st.rx_drop_noqp++;
		return;
	}
	if (qp->xrc) {
		/* requests go to the XRC_RECV half, responses to the
		 * XRC_SEND half; from here on they are RC's opcodes (the
		 * XRCETH stays in pkt for the responder) */
		if (!!(droce_opcode_info[pkt.opcode].flags & DROCE_OPF_REQ) !=
				(qp->xrc == IBV_QPT_XRC_RECV)) {
			q->st.rx_drop_noqp++;
			return;
		}
		pkt.opcode &= (uint8_t)~DROCE_TRANSPORT_MASK;
	}
	/* Connected QPs take frames only from their peer. */
	if (qp->type != IBV_QPT_UD && memcmp(pkt.sgid, qp->av.dgid, 16) != 0) {
		q->st.rx_drop_src++;
		return;
	}
	if (qp->type != IBV_QPT_UD && pkt.payload_len > qp->mtu)
		len_bad = 1;
	if (len_bad && !sack_ok(qp, &pkt, rc)) {
		/* Only an RC responder has a way to say so (C9-92). */
		if (qp->type != IBV_QPT_RC ||
				(droce_opcode_info[pkt.opcode].flags & DROCE_OPF_RESP)) {
			if (rc != 0)
				q->st.rx_drop_parse[-rc]++;
			else
				qp->st.rx_drop_len++;
			return;
		}
	}
	rx_deliver(qp, &pkt, frame, len, len_bad);
}

uint32_t
droce_tp_rx_burst(struct droce_tp_queue *q, const uint8_t *const *frames,
		const uint32_t *lens, uint32_t n, uint64_t now_ns)
{
	uint32_t i;

	q->now = now_ns;
	if (__atomic_load_n(&q->dev->odp_seen, __ATOMIC_ACQUIRE))
		tp_odp_new_call();
	for (i = 0; i < n; i++)
		rx_one(q, frames[i], lens[i]);
	return n;
}

/*
 * Frames one QP may send in a turn. Turns go round the queue's QPs from
 * where the last ended, until the call's budget is spent: a QP that always
 * has window to fill (its ACKs keep arriving) must not keep the others off
 * the wire. With turns in a fixed order and unbounded, 8 QPs over 2 queues
 * under 5% loss starved the last QPs of each queue past their ACK timeout,
 * again and again, until the retry count ran out.
 */
#define TP_TURN_FRAMES 16

/*
 * Turns at fn (responding or requesting) for the queue's QPs, from *next.
 * Another round only if some QP used its whole turn: one that sent less
 * ran out of work or of window, and asking it again finds the same.
 */
static uint32_t
take_turns(struct droce_tp_queue *q, uint32_t *next,
		int (*fn)(struct droce_qp *qp))
{
	uint32_t n = q->nb_qps, sent = 0, k, i, budget, turn, used;
	int again;

	if (*next >= n)
		*next = 0;
	do {
		again = 0;
		for (k = 0; k < n && q->tx_budget; k++) {
			i = *next;
			*next = i + 1 < n ? i + 1 : 0;
			budget = q->tx_budget;
			turn = budget < TP_TURN_FRAMES ? budget : TP_TURN_FRAMES;
			q->tx_budget = turn;
			sent += (uint32_t)fn(q->qps[i]);
			used = turn - q->tx_budget;
			q->tx_budget = budget - used;
			again |= used == turn;
		}
	} while (again && q->tx_budget);
	return sent;
}

uint32_t
droce_tp_progress(struct droce_tp_queue *q, uint64_t now_ns, uint32_t budget)
{
	uint32_t i, sent;

	q->now = now_ns;
	q->tx_budget = budget;
	if (__atomic_load_n(&q->dev->odp_seen, __ATOMIC_ACQUIRE))
		tp_odp_new_call();
	for (i = 0; i < q->nb_qps; i++)
		tp_req_timers(q->qps[i], now_ns);
	/* responses (READ/atomic data, ACKs) first, then requests */
	sent = take_turns(q, &q->resp_next, tp_resp_progress);
	sent += take_turns(q, &q->req_next, tp_req_progress);
	tp_tx_flush(q);
	return sent;
}

bool
droce_tp_queue_busy(const struct droce_tp_queue *q)
{
	uint32_t i;

	for (i = 0; i < q->nb_qps; i++) {
		const struct droce_qp *qp = q->qps[i];

		if (tp_resp_busy(qp))
			return true;
		if ((qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD) &&
				(qp->sq.cur != qp->sq.head || qp->sr_nneed ||
				qp->rr_pending) && !qp->rnr_deadline &&
				!(qp->cc.limited &&
				q->now < qp->cc_next_tx))
			return true;
	}
	return false;
}

uint64_t
droce_tp_next_deadline(const struct droce_tp_queue *q)
{
	uint64_t t = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < q->nb_qps; i++) {
		const struct droce_qp *qp = q->qps[i];

		if (qp->ack_deadline && qp->ack_deadline < t)
			t = qp->ack_deadline;
		if (qp->rnr_deadline && qp->rnr_deadline < t)
			t = qp->rnr_deadline;
		if (qp->probe_deadline && qp->probe_deadline < t)
			t = qp->probe_deadline;
		if (qp->reask_deadline && qp->reask_deadline < t)
			t = qp->reask_deadline;
		if (qp->ack_pending && qp->ack_hold && qp->ack_hold < t)
			t = qp->ack_hold;
		/* paced, with something to send when due */
		if (qp->cc.limited && tp_cc_deadline(qp) < t &&
				(qp->sq.cur != qp->sq.head || qp->sr_nneed ||
				qp->rr_pending || qp->res_pending))
			t = tp_cc_deadline(qp);
	}
	return t;
}
