/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The requester's retransmission timer. IBTA's local ACK timeout
 * (4.096 us * 2^timeout) is a ceiling set for the worst path a
 * connection may take; waiting it out on every lost retransmission or
 * tail loss costs a fabric with a 10 us round trip thousands of round
 * trips (doc/transport.md). So the timer follows the measured round trip
 * as TCP's does (RFC 6298: smoothed RTT plus four times its variation,
 * samples only from PSNs sent once, doubling per timeout until the next
 * sample), between the device's floor and the QP's local ACK timeout.
 * The retry budget still counts local ACK timeouts as IBTA defines them:
 * an early retransmission charges it only once a whole local ACK timeout
 * has passed without progress, so a dead peer fails the QP no sooner
 * than with the fixed timer.
 */

#include "tp_internal.h"

#define TP_RTO_MIN_DEFAULT_US 1000

static uint64_t
rto_floor(const struct droce_qp *qp)
{
	uint32_t us = qp->dev->conf.rto_min_us;

	return (uint64_t)(us ? us : TP_RTO_MIN_DEFAULT_US) * 1000;
}

uint64_t
tp_rto_ns(const struct droce_qp *qp)
{
	uint64_t ceil = droce_ack_timeout_ns(qp->timeout), rto;

	/* nothing measured yet: the local ACK timeout, but a droce peer
	 * (selective repeat) answers within the floor, and a window lost
	 * whole before the first sample (an incast's first burst) must not
	 * wait the ceiling out */
	if (qp->srtt_ns == 0)
		return qp->sr && rto_floor(qp) < ceil ?
			rto_floor(qp) << qp->rto_backoff : ceil;
	rto = qp->srtt_ns + 4 * qp->rttvar_ns;
	if (rto < rto_floor(qp))
		rto = rto_floor(qp);
	rto <<= qp->rto_backoff;
	return rto < ceil ? rto : ceil;
}

/* A new PSN leaves: time it if nothing is being timed. */
void
tp_rto_sent(struct droce_qp *qp, uint32_t psn, uint64_t now)
{
	if (qp->rtt_timing || droce_psn_diff(psn, qp->psn_hw) < 0)
		return;
	qp->rtt_timing = 1;
	qp->rtt_psn = psn;
	qp->rtt_sent = now;
}

/*
 * una moved to new_una: the retry budget's period starts again, and a
 * sample if it covers the timed PSN. The backoff is undone by a sample
 * or by an acknowledgement of a PSN first sent after the last timeout,
 * not by progress alone (Karn): that may be the late answer to what the
 * timer took for lost, and with a peer that slow (rxe in an emulated
 * guest: milliseconds per 64 KB) each timeout would resend the window
 * again.
 */
void
tp_rto_progress(struct droce_qp *qp, uint32_t new_una, uint64_t now)
{
	qp->retry_mark = now;
	if (droce_psn_diff(new_una, qp->rto_hw) > 0)
		qp->rto_backoff = 0;
	if (!qp->rtt_timing || droce_psn_diff(new_una, qp->rtt_psn) <= 0)
		return;
	qp->rtt_timing = 0;
	if (now <= qp->rtt_sent)
		return;
	qp->rto_backoff = 0;
	if (qp->rtt_min_ns == 0 || now - qp->rtt_sent < qp->rtt_min_ns)
		qp->rtt_min_ns = now - qp->rtt_sent;
	if (qp->srtt_ns == 0) {
		qp->srtt_ns = now - qp->rtt_sent;
		qp->rttvar_ns = qp->srtt_ns / 2;
	} else {
		uint64_t r = now - qp->rtt_sent;
		uint64_t d = r > qp->srtt_ns ? r - qp->srtt_ns :
			qp->srtt_ns - r;

		qp->rttvar_ns = (3 * qp->rttvar_ns + d) / 4;
		qp->srtt_ns = (7 * qp->srtt_ns + r) / 8;
	}
	tp_cc_rtt(qp, now - qp->rtt_sent, now);
}

/* Something is resent: the PSN being timed may come back twice. */
void
tp_rto_resend(struct droce_qp *qp)
{
	qp->rtt_timing = 0;
}

/* The timer fired at now: 1 if a local ACK timeout has passed without
 * progress since the budget was last charged (the caller charges it). */
int
tp_rto_expired(struct droce_qp *qp, uint64_t now)
{
	if (qp->rto_backoff < 16)
		qp->rto_backoff++;
	qp->rto_hw = qp->psn_hw;
	if (now - qp->retry_mark < droce_ack_timeout_ns(qp->timeout))
		return 0;
	qp->retry_mark = now;
	return 1;
}

/*
 * A sequence NAK without progress charges the retry budget as a timeout
 * does: once a whole local ACK timeout has passed since the budget was
 * last charged or the acknowledgements last moved. Under reordering and
 * delay a burst of NAKs for the same hole, each answered by a rewind,
 * is one event: counted one by one, eight of them within a millisecond
 * failed a QP whose peer was answering (dpdk_memif_fault_injection).
 * With no timeout (0: infinite), each counts, as before. 1 if charged.
 */
int
tp_rto_nak_charges(struct droce_qp *qp, uint64_t now)
{
	if (qp->timeout &&
			now - qp->retry_mark < droce_ack_timeout_ns(qp->timeout))
		return 0;
	qp->retry_mark = now;
	return 1;
}

uint64_t
tp_rto_rtt_ns(const struct droce_qp *qp)
{
	if (qp->srtt_ns == 0)
		return tp_rto_ns(qp);
	return qp->srtt_ns + 4 * qp->rttvar_ns;
}

/*
 * How long a packet or a READ's hole asked again may take to be answered
 * before it is asked once more: a few of the shortest round trips. What
 * goes again is sent ahead of what waits in the requester's window and
 * answered ahead of other responses (tp_resp_tx.c), so the queues that
 * make the smoothed round trip long (responses of every READ in flight,
 * milliseconds at 16 x 64 KB) do not delay it.
 */
uint64_t
tp_rto_reask_ns(const struct droce_qp *qp)
{
	uint64_t t = 3 * qp->rtt_min_ns, r;

	/* nothing measured (a window lost whole, resent ever since: no
	 * PSN was sent once to time): the floor, not the timer's backoff,
	 * or each hole a SACK shows would wait out seconds */
	if (qp->srtt_ns == 0)
		return rto_floor(qp);
	r = tp_rto_rtt_ns(qp);
	return qp->rtt_min_ns && t < r ? t : r;
}
