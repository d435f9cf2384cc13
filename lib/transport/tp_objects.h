/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_OBJECTS_H
#define TP_OBJECTS_H

/* lib/transport internals: the objects' layouts and their small accessors. */

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "droce_transport.h"
#include "tp_dcqcn.h"
#include "wire_build.h"

struct tp_raw;
struct tp_mcast_grp;
struct tp_mcast_member;

#define TP_MIN_QPN		0x11	/* as rxe: 0 SMI, 1 GSI, 2-16 reserved */
#define TP_GSI_QPN		1
#define TP_MAX_UNACKED_PSNS	128	/* requester window, as rxe */
#define TP_MAX_PKT_PER_ACK	64	/* AckReq on every 64th middle packet */
#define TP_ACK_HOLD_NS	20000	/* a ping-pong's ACK waits for the answer */
#define TP_TX_BATCH		32
#define TP_TX_FIRST		4	/* buffers asked for first in a batch */
#define TP_MAX_RD_ATOMIC	128	/* as rxe: perftest uses the peer's */
#define TP_RNR_RETRY_FOREVER	7	/* IBTA: rnr_retry 7 never gives up */
#define TP_KEY_SLOTS		(1u << 16)
#define TP_SGE_PIECES		32	/* SGEs a receive resolves in one pass */
/* READ responses placed by PSN (tp_read.c): a bit per PSN, by psn % this;
 * READs of up to TP_RD_TRACK PSNs, all within the window of them */
#define TP_RD_BITS		16384
#define TP_RD_TRACK		8192

#define TP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- memory keys ---- */

enum tp_key_kind { TP_KEY_FREE = 0, TP_KEY_MR, TP_KEY_MW };

/*
 * An MR or MW. The verbs object comes first so that the verbs driver and
 * embedding applications use it as their ibv_mr / ibv_mw.
 */
struct droce_mr {
	struct ibv_mr ibv;
	struct droce_pd *pd;
	uint8_t *base;		/* host address of iova */
	uint64_t local_va;	/* the owner's address of base (local SGEs) */
	uint64_t iova;
	uint64_t len;
	unsigned int access;
	uint32_t nb_mw;		/* windows bound to it */
	/* 1 while registered + one per zero-copy span still queued */
	uint32_t zc_refs;
	/* called as the last reference goes (droce_mr_on_release) */
	void (*release)(void *arg);
	void *release_arg;
};

struct droce_mw {
	struct ibv_mw ibv;
	struct droce_pd *pd;
	enum ibv_mw_type type;
	uint32_t key_index;
	struct droce_mr *mr;	/* bound to, NULL when unbound */
	uint8_t *base;
	uint64_t iova;
	uint64_t len;
	unsigned int access;
	struct droce_qp *qp;	/* type 2: the QP it is bound through */
};

struct tp_key {
	enum tp_key_kind kind;
	uint32_t key;		/* full current key: index << 8 | key byte */
	void *obj;
};

struct droce_pd {
	struct droce_dev *dev;
	uint32_t refs;
};

struct droce_ah {
	struct ibv_ah ibv;
	struct droce_pd *pd;
	struct droce_av av;
};

/* ---- completion queue ---- */

/* What the next completion must be to call the notify callback. */
enum tp_cq_arm {
	TP_CQ_UNARMED = 0,
	TP_CQ_ARMED_ANY,
	TP_CQ_ARMED_SOLICITED,	/* solicited, or an error */
};

struct droce_cq {
	struct droce_dev *dev;
	void *user;
	struct droce_tp_queue *queue;
	struct ibv_wc *ring;
	uint32_t size;		/* power of 2 */
	uint32_t cqe;		/* what the user asked, rounded up */
	uint32_t head, tail;	/* free-running */
	uint32_t refs;
	int overflow;
	uint32_t solicited_seq;	/* solicited or error completions so far */
	enum tp_cq_arm armed;
	bool awaited;		/* an arm means a consumer asleep on it */
	droce_cq_notify_cb notify;
	void *notify_arg;
};

/* ---- receive queues ---- */

struct tp_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ibv_sge *sge;	/* points into the queue's sge array */
};

struct tp_rq {
	struct tp_rwqe *wqe;
	struct ibv_sge *sges;
	uint32_t size;		/* power of 2 */
	uint32_t max_sge;
	uint32_t head, tail;	/* free-running: post at head, consume at tail */
};

struct droce_srq {
	struct droce_pd *pd;
	void *user;
	struct droce_tp_queue *queue;
	struct tp_rq rq;
	uint32_t limit;
	uint32_t refs;
	uint32_t max_wr;
	/* XRC: its domain, CQ and number (dev->srq_tab); NULL, 0 otherwise */
	struct droce_xrcd *xrcd;
	struct droce_cq *cq;
	uint32_t srqn;
};

struct droce_xrcd {
	struct droce_dev *dev;
	uint32_t refs;		/* XRC SRQs and XRC_RECV QPs */
};

/* ---- send queue ---- */

enum tp_wqe_state {
	TP_WQE_POSTED = 0,	/* not started */
	TP_WQE_SENDING,		/* some packets sent */
	TP_WQE_SENT,		/* all packets sent, awaiting ACK/response */
	TP_WQE_DONE,		/* completion status decided */
};

struct tp_swqe {
	/* what posting writes and every packet reads: the first cache line */
	uint64_t wr_id;
	struct ibv_sge *sge;	/* into the SQ's sge array */
	uint64_t length;	/* total message bytes */
	uint64_t remote_addr;
	uint8_t *inline_data;	/* into the SQ's inline buffer, or NULL */
	uint8_t opcode;		/* enum ibv_wr_opcode */
	uint16_t wr_flags;	/* its enum tp_wr_flag, kept off the table */
	unsigned int flags;
	uint32_t imm_or_inv;	/* imm_data (network order) or invalidate rkey */
	uint32_t rkey;
	uint32_t num_sge;
	uint32_t first_psn;
	/* the second: progress through the message */
	uint32_t npsn;		/* PSNs the message takes (READ: responses) */
	enum tp_wqe_state state;
	enum ibv_wc_status status;
	int signaled;
	int rd_counted;		/* holds a READ/atomic credit */
	int rd_inflight;	/* its request is out since the last rewind */
	uint64_t read_done;	/* READ: bytes received in a row from 0 */
	uint32_t rd_got;	/* READ: response PSNs placed (tp_read.c) */
	uint32_t rr_psn, rr_end;	/* the hole asked for again, [psn, end) */
	uint64_t rr_at;		/* and when; 0: never */
	uint8_t rr_need;	/* READ/atomic: its request goes again */
	uint8_t rr_tries;	/* times the same hole was asked again */
	uint64_t compare_add;
	uint64_t swap;
	uint64_t atomic_orig;
	uint32_t remote_qpn;	/* UD */
	uint32_t remote_qkey;
	/* the rest: UD's address (copied at post, as a NIC reads it with
	 * the WQE: the AH may be destroyed before the send leaves), BIND_MW */
	struct droce_av av;
	struct droce_mw *mw;
	struct ibv_mw_bind_info bind;
	uint32_t bind_rkey;
};

/* Posting writes and every packet reads the first 64 bytes, one line's
 * worth; progress through the message starts the second. */
static_assert(offsetof(struct tp_swqe, npsn) == 64,
	"the send WQE's posted part is not one cache line");

struct tp_sq {
	struct tp_swqe *wqe;
	struct ibv_sge *sges;
	uint8_t *inline_buf;
	uint32_t size;		/* power of 2 */
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t head;		/* next to post */
	uint32_t tail;		/* oldest not completed */
	uint32_t cur;		/* next to transmit */
};

/* ---- work-request opcodes (tp_wr_opcode.c) ---- */

/* What kind of request a work-request opcode is. */
enum tp_wr_flag {
	TP_WRF_SEND = 1u << 0,
	TP_WRF_WRITE = 1u << 1,		/* RETH on the first packet */
	TP_WRF_READ = 1u << 2,
	TP_WRF_ATOMIC = 1u << 3,
	TP_WRF_LOCAL = 1u << 4,		/* executed here, nothing sent */
	TP_WRF_PAYLOAD = 1u << 5,	/* the packets carry the message */
	TP_WRF_RWR = 1u << 6,		/* consumes a receive WR at the peer */
	TP_WRF_INV = 1u << 7,		/* names an rkey to invalidate */
	TP_WRF_ATOMIC_WRITE = 1u << 8,	/* IBTA 1.5: RETH + 8 bytes stored */
	TP_WRF_FLUSH = 1u << 9,		/* IBTA 1.5: FETH + RETH, no payload */
};

/* READ and atomics: their SGEs receive the answer (never inline) */
#define TP_WRF_RD_ATOMIC (TP_WRF_READ | TP_WRF_ATOMIC)
/* Answered by a response of their own (a later ACK does not complete
 * them) and each holds a READ/atomic credit: IBTA 1.5 counts an ATOMIC
 * WRITE against max_rd_atomic as rxe does (check_init_depth) */
#define TP_WRF_CREDIT (TP_WRF_RD_ATOMIC | TP_WRF_EMPTY_RESP)
/* IBTA 1.5's one-packet requests answered by a READ response ONLY without
 * payload (rxe's send_read_response_ack) */
#define TP_WRF_EMPTY_RESP (TP_WRF_ATOMIC_WRITE | TP_WRF_FLUSH)

/* Where a packet lies in its message: first | last << 1. */
enum tp_seg {
	TP_SEG_MIDDLE = 0,
	TP_SEG_FIRST = 1,
	TP_SEG_LAST = 2,
	TP_SEG_ONLY = 3,
	TP_SEG_NUM
};

struct tp_wr_opcode_info {
	uint32_t send_op;	/* IBV_QP_EX_WITH_*: its ibv_wr_* builder */
	uint16_t qp_types;	/* bit per enum ibv_qp_type that accepts it */
	uint16_t flags;		/* enum tp_wr_flag */
	uint8_t wc_opcode;	/* enum ibv_wc_opcode of its completion */
	uint8_t pkt[TP_SEG_NUM];	/* RC's BTH opcodes by enum tp_seg */
};

#define TP_WR_OPCODE_NUM (IBV_WR_ATOMIC_WRITE + 1)

extern const struct tp_wr_opcode_info tp_wr_opcode_info[TP_WR_OPCODE_NUM];

/* The row of op if a QP of type t accepts it, else NULL. t: a QP's type,
 * below 16 (qp_types' width). */
static inline const struct tp_wr_opcode_info *
tp_wr_opcode(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	const struct tp_wr_opcode_info *wi;

	if ((unsigned int)op >= TP_WR_OPCODE_NUM)
		return NULL;
	wi = &tp_wr_opcode_info[op];
	return (wi->qp_types >> t) & 1 ? wi : NULL;
}

/* ---- responder resources (READ, atomic) ---- */

struct tp_res {
	int valid;
	int is_atomic;
	int is_empty_resp;	/* ATOMIC WRITE, FLUSH: a zero-length READ */
	uint32_t first_psn;
	uint32_t last_psn;
	/* READ */
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint32_t cur_psn;	/* next response to send */
	uint32_t sent;		/* bytes already sent */
	uint32_t end;		/* where this sending stops: len, or the end
				 * of the range a duplicate asked for */
	int pending;		/* responses still to send */
	/* atomic */
	uint64_t orig;
	uint32_t msn;
};

/* ---- the queue pair ---- */

/* The responder's open message: what a MIDDLE or LAST must continue. */
enum tp_rx_msg {
	TP_RX_NONE = 0,
	TP_RX_SEND,
	TP_RX_WRITE,
};

struct droce_qp {
	struct droce_dev *dev;
	void *user;
	struct droce_pd *pd;
	struct droce_tp_queue *queue;
	enum ibv_qp_type type;
	uint32_t qpn;
	enum ibv_qp_state state;
	struct droce_cq *scq, *rcq;
	struct droce_srq *srq;
	int sq_sig_all;
	int post_rc;	/* RC, not XRC: common WRs post fast */
	int post_ud;	/* UD: SENDs of one SGE post fast */
	struct ibv_qp_cap cap;

	/* attributes */
	uint32_t dest_qpn;
	uint32_t qkey;
	unsigned int access;
	uint32_t mtu;		/* path MTU bytes */
	enum ibv_mtu mtu_enum;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint16_t pkey_index;
	uint8_t port_num;
	int sq_draining;
	struct droce_av av;
	struct droce_pkt tmpl;	/* header template from the AV */
	struct droce_hdr_tmpl htmpl;	/* the same laid out */
	/* UD: the AV tmpl and htmpl were last made for (ud_tmpl_ok: they
	 * were); the next WR to the same address reuses them */
	struct droce_av ud_av;
	int ud_tmpl_ok;
	/* what the peer's frames fix (RC, UC over IPv4 without VLAN): the
	 * receive's wide check instead of the full parse (tp_recv.c) */
	struct droce_rx_tmpl rx_tmpl;
	uint8_t rx_fast;

	/* requester */
	struct tp_sq sq;
	uint32_t sq_psn;	/* initial send PSN */
	uint32_t psn;		/* next PSN to send */
	uint32_t psn_hw;	/* highest next-PSN ever sent */
	uint32_t una;		/* oldest unacknowledged PSN */
	uint32_t acked;		/* every request before it executed, as an
				 * ACK or a response said (una stops short
				 * of an answer still missing) */
	uint64_t cur_off;	/* bytes of sq.cur already sent */
	uint32_t noack_pkts;
	uint32_t rd_atomic_out;	/* READ/atomic WQEs outstanding */
	uint32_t rd_in_flight;	/* of them, requested since the last rewind */
	uint32_t rd_cwnd;	/* at most this many in flight (tp_req_loss) */
	uint8_t retries_left;
	uint8_t rnr_left;
	uint64_t ack_deadline;	/* retransmit timer, 0 = off */
	/* the adaptive timer (tp_rto.c): smoothed round trip and its
	 * variation, the PSN being timed (Karn: never a resent one) and
	 * since when, since when the retry budget has not been charged
	 * (IBTA counts local ACK timeouts), and the backoff: timeouts
	 * since a sample or an ACK past psn_hw at the last one (rto_hw) */
	uint64_t srtt_ns, rttvar_ns, rtt_sent, retry_mark;
	uint64_t rtt_min_ns;	/* the shortest round trip sampled */
	uint32_t rtt_psn;
	uint32_t rto_hw;	/* psn_hw at the last timeout */
	uint8_t rtt_timing;
	uint8_t rto_backoff;
	uint64_t rnr_deadline;	/* RNR wait, 0 = none */
	/* selective repeat's probe: the last PSN sent again if nothing was
	 * acknowledged for a round trip since probe_una (tp_req_probe);
	 * and when a READ or atomic asked again is next due to be asked
	 * once more (tp_req_reask); 0 = none */
	uint64_t probe_deadline, reask_deadline;
	uint32_t probe_una;	/* una when the probe was set */
	uint32_t last_acked_psn; /* READ gap already asked for */
	uint32_t nak_psn;	/* the last sequence NAK acted on, and when */
	uint64_t nak_at;
	uint64_t *rd_bits;	/* READ response PSNs placed (TP_RD_BITS) */
	uint32_t rr_pending;	/* WQEs whose rr_need is set */
	/* the newest WQE (free-running index) whose answer placed data,
	 * valid if rd_newest_set (tp_read_copy) */
	uint32_t rd_newest;
	uint8_t rd_newest_set;

	/* selective repeat (tp_sr.c): on, and its window (PSNs, a power
	 * of 2); the requester's resend time of each PSN in it (by psn %
	 * sr_win, 0: never resent) and the PSNs to send again */
	uint8_t sr;
	uint32_t sr_win;
	uint64_t *sr_at;
	uint64_t *sr_need;
	uint32_t sr_nneed;
	uint32_t sr_hi;		/* after the highest PSN a SACK said held */
	/* the responder's requests held out of order (by psn % sr_win),
	 * how many, and a selective acknowledgement is due */
	struct tp_sr_slot *sr_slot;
	uint32_t sr_held;

	/* congestion notification (tp_cc.c): a CNP to send, the last sent */
	uint8_t cnp_pending;
	uint64_t cnp_sent_at;
	/* the reaction point (tp_dcqcn.c) and its pacing: the next frame
	 * may leave at cc_next_tx while cc.limited */
	struct tp_dcqcn cc;
	uint64_t cc_next_tx;
	uint64_t cc_last_tx;	/* the last frame paced left then, */
	uint32_t cc_last_len;	/* this long */

	/* responder */
	struct tp_rq rq;
	uint32_t epsn;
	uint32_t msn;
	int nak_sent;		/* one sequence NAK per gap */
	int uc_drop;		/* UC: drop until next First/Only */
	/* message in progress (multi-packet SEND or WRITE) */
	enum tp_rx_msg rx_msg;	/* multi-packet message in progress */
	int rx_have_wqe;
	struct tp_rwqe rx_wqe;	/* its sge points to rx_sges, not the queue */
	struct ibv_sge *rx_sges;	/* room for the largest WQE it takes */
	uint32_t rx_max_sge;
	uint64_t rx_off;
	int rx_err;		/* a fatal NAK is queued: ERR once it is sent */
	uint8_t *rx_write_base;	/* WRITE target, as its first packet found it */
	uint64_t rx_write_va;	/* and its RETH: each later packet's target is */
	uint32_t rx_write_rkey;	/* looked up again (the MR may have gone) */
	uint64_t rx_write_left;
	/* ACK to send */
	int ack_pending;
	uint32_t ack_psn;
	uint8_t ack_syndrome;
	int ack_is_nak;
	/* a ping-pong (tp_resp.c): each request answered by one posted
	 * here; the ACK then waits for the answer until ack_hold (ns) */
	uint8_t posted;		/* a send WR posted since the last request */
	uint8_t pingpong;	/* requests in a row answered so, up to 2 */
	uint64_t ack_hold;	/* 0: the ACK goes in the next pass */
	struct tp_res res[TP_MAX_RD_ATOMIC];
	uint32_t res_pending;	/* resources with responses to send */
	uint32_t res_next;	/* ring position: the next to allocate */
	/* Oldest pending resource. New requests make resources pending in
	 * PSN order, so the pending ones are [res_send, res_next) on the
	 * ring; a replay breaks that until nothing is pending. */
	uint32_t res_send;
	int res_replayed;

	struct droce_tp_stats st;
	uint32_t nb_mcast;	/* groups attached to: destroy says EBUSY */
	/* XRC (tp_xrc.c): 0, or IBV_QPT_XRC_SEND / IBV_QPT_XRC_RECV for an
	 * RC QP that is that half of an XRC connection; an XRC_RECV QP's
	 * domain (its pd, rcq and srq come from each request's XRCETH) */
	enum ibv_qp_type xrc;
	struct droce_xrcd *xrcd;
	struct tp_raw *raw;	/* RAW_PACKET QPs only */
};

/* The transport bits of an XRC QP's packets, 0 for RC's. */
static inline uint8_t
tp_xrc_bits(const struct droce_qp *qp)
{
	return qp->xrc ? DROCE_TRANSPORT_XRC : 0;
}

/* The send WQE at free-running index i. */
static inline struct tp_swqe *
tp_sq_wqe(struct droce_qp *qp, uint32_t i)
{
	return &qp->sq.wqe[i & (qp->sq.size - 1)];
}

/* The WQE that holds psn, or NULL. */
static inline struct tp_swqe *
tp_wqe_of_psn(struct droce_qp *qp, uint32_t psn)
{
	uint32_t i;

	for (i = qp->sq.tail; i != qp->sq.head; i++) {
		struct tp_swqe *w = tp_sq_wqe(qp, i);
		int32_t d;

		if (w->state == TP_WQE_POSTED)
			return NULL;
		if (w->npsn == 0)
			continue;
		d = droce_psn_diff(psn, w->first_psn);
		if (d >= 0 && (uint32_t)d < w->npsn)
			return w;
	}
	return NULL;
}

/* Responder resources in use: max_dest_rd_atomic of them (at least one). */
static inline unsigned int
tp_res_count(const struct droce_qp *qp)
{
	uint32_t n = qp->max_dest_rd_atomic ? qp->max_dest_rd_atomic : 1;

	return n > TP_MAX_RD_ATOMIC ? TP_MAX_RD_ATOMIC : n;
}

/* r has responses to send (again); qp->res_pending counts such. */
static inline void
tp_res_set_pending(struct droce_qp *qp, struct tp_res *r)
{
	if (!r->pending)
		qp->res_pending++;
	r->pending = 1;
}

static inline void
tp_res_clear_pending(struct droce_qp *qp, struct tp_res *r)
{
	if (r->pending)
		qp->res_pending--;
	r->pending = 0;
}


/* ---- owner context ---- */

struct droce_tp_queue {
	struct droce_dev *dev;
	uint32_t index;
	struct droce_tp_io io;
	struct droce_tp_stats st;
	struct droce_qp **qps;	/* this queue's QPs */
	uint32_t nb_qps, cap_qps;
	uint64_t now;
	/* tx batch of the current progress call */
	struct droce_txbuf tx[TP_TX_BATCH];
	uint32_t tx_n, tx_used;
	uint32_t tx_budget;
	/* where the next turns at responding and requesting start */
	uint32_t resp_next, req_next;
	uint32_t gid_hit;	/* the device GID the last frame was for */
	/* the groups this queue's QPs are attached to; nb_mc is also read
	 * (atomically) by other queues' threads to fan frames out */
	struct tp_mcast_member *mc;
	uint32_t nb_mc;
	struct droce_qp **mc_qps;	/* the members' slots, one allocation */
	/* flows to this queue's RAW_PACKET QPs; read (atomically) by other
	 * queues' threads to hand non-RoCE frames over */
	uint32_t nb_raw_flows;
	/* awaited CQs armed and not yet fired; firings of awaited CQs */
	uint32_t cqs_awaited;
	uint64_t cq_wakeups;
};

struct droce_dev {
	struct droce_dev_conf conf;
	struct tp_dcqcn_conf dcqcn;	/* conf's, in the machine's units */
	struct tp_delay_conf delay;
	struct droce_dev_limits lim;
	pthread_mutex_t lock;
	struct tp_key *keys;	/* MR/MW by key index */
	uint32_t key_hint;
	/*
	 * QPs by slot. A QPN is its slot plus a generation times the
	 * stride (a multiple of the queues, so QPN % queues stays the
	 * owner's), and each slot's generation moves on when its QP goes:
	 * a number comes back only after every slot of its queue was
	 * taken in turn and the generations went round, as NICs and rxe
	 * hand numbers out cyclically. A frame still in flight for a QP
	 * destroyed, or from a peer that has not noticed, names nobody.
	 */
	struct droce_qp **qp_tab;
	uint32_t qp_tab_size;
	uint32_t qpn_stride, qpn_mask;	/* mask: stride - 1 if a power of 2 */
	uint32_t qpn_gens;		/* generations that fit in 24 bits */
	uint32_t *qpn_gen;		/* each slot's */
	uint32_t *qpn_next;		/* each queue's next slot to try */
	uint32_t nb_qp, nb_cq, nb_pd, nb_mr, nb_mw, nb_srq, nb_ah;
	/* an on-demand MR was ever registered: the transport's calls start
	 * a new ODP window (tp_odp_new_call); others skip it */
	int odp_seen;
	struct droce_tp_queue *queues;
	/* the valid entries of conf.gids, packed, as two words each:
	 * receive filtering */
	uint64_t gid_words[DROCE_MAX_GIDS][2];
	uint32_t nb_gids;
	struct droce_srq **srq_tab;	/* XRC SRQs by number, under lock */
	struct tp_mcast_grp *mc;	/* under lock */
	uint32_t nb_mc, nb_mc_attach;
	droce_async_cb async_cb;
	void *async_arg;
	uint64_t rng;
};


#endif /* TP_OBJECTS_H */
