/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_INTERNAL_H
#define TP_INTERNAL_H

/* lib/transport internals: object layouts and cross-file prototypes. */

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "droce_transport.h"
#include "tp_dcqcn.h"
#include "wire_build.h"

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
	struct droce_hdr_tmpl htmpl;	/* the same laid out (RC, UC) */
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

/* ---- multicast groups (tp_mcast.c) ---- */

#define TP_MCAST_GRP		64	/* groups per device */
#define TP_MCAST_QP_ATTACH	16	/* QPs per group */

/* A group on the device: how many QPs of all queues are attached. */
struct tp_mcast_grp {
	uint64_t gid[2];
	uint8_t mac[6];
	uint32_t nb_qps;
};

/* A group as one queue sees it: its QPs attached there. */
struct tp_mcast_member {
	uint64_t gid[2];
	uint8_t mac[6];
	uint32_t nb_qps;
	struct droce_qp **qps;	/* max_mcast_qp_attach slots */
};

/* ---- RAW_PACKET QPs (tp_raw.c, tp_raw_tx.c) ---- */

#define TP_FLOW_CMP_MAX		16

/* Where a flow's compare looks: the headers as tp_raw_hdrs finds them. */
enum tp_flow_layer {
	TP_FL_L2 = 0,	/* from the frame's first byte */
	TP_FL_VLAN,	/* the 802.1Q TCI: the frame must have one */
	TP_FL_ETYPE,	/* the EtherType after any VLAN tag */
	TP_FL_L3,
	TP_FL_L4,
};

/* Bytes [off, off + len) of a layer, under a mask. */
struct tp_flow_cmp {
	uint8_t layer;
	uint8_t off;
	uint8_t len;
	uint8_t val[16];
	uint8_t mask[16];
};

struct droce_flow {
	struct droce_qp *qp;
	struct droce_flow *next;	/* the QP's, by priority */
	uint16_t priority;
	uint8_t l3;		/* 0: any, 4 or 6 */
	uint8_t l4;		/* 0: any, else the IP protocol */
	uint32_t ncmp;
	struct tp_flow_cmp cmp[TP_FLOW_CMP_MAX];
};

/* Where a frame's headers are: what flows match on. */
struct tp_raw_hdrs {
	uint32_t l3off, l4off;
	uint16_t etype;
	uint8_t vlan;		/* 1: an 802.1Q tag at byte 12 */
	uint8_t l3;		/* 0, 4 or 6 */
	uint8_t l4;		/* IP protocol; 0: none (or a fragment) */
};

/* A send WQE's TSO fields (its headers are in tp_raw.hdr). */
struct tp_raw_wqe {
	uint16_t hdr_sz;
	uint16_t mss;
};

struct tp_raw {
	uint8_t *hdr;		/* DROCE_RAW_TSO_HDR_MAX per send WQE */
	struct tp_raw_wqe *w;	/* per send WQE */
	struct droce_flow *flows;
	uint32_t nb_flows;
	/* packet pacing (IBV_QP_RATE_LIMIT): 0, or kbit/s and when the
	 * next frame may leave */
	uint32_t rate_kbps;
	uint64_t next_ns;
};

/* tp_raw.c */
int tp_raw_init(struct droce_qp *qp);
void tp_raw_free(struct droce_qp *qp);
/* A frame for the queue's RAW_PACKET QPs: 1 if taken (not RoCEv2). */
int tp_raw_rx(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len);
/* 0 if the headers are Ethernet / IPv4 or IPv6 / at least that long. */
int tp_raw_parse(const uint8_t *f, uint32_t len, struct tp_raw_hdrs *h);

/* tp_raw_tx.c */
/* ibv_post_send's checks for a RAW_PACKET QP's WR: 0 or an errno. */
int tp_raw_check_wr(struct droce_qp *qp, const struct ibv_send_wr *wr,
		uint64_t len);
void tp_raw_fill(struct droce_qp *qp, struct tp_swqe *w,
		const struct ibv_send_wr *wr);
int tp_raw_progress(struct droce_qp *qp);
/* The one's-complement sum of the IPv4 header and the TCP/UDP checksum
 * of a frame are right (IBV_WC_IP_CSUM_OK). */
int tp_raw_csum_ok(const uint8_t *f, uint32_t len,
		const struct tp_raw_hdrs *h);

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

/* tp_dev.c */
uint32_t tp_rand(struct droce_dev *dev);
void tp_async(struct droce_dev *dev, enum ibv_event_type type, void *obj);
int tp_queue_add_qp(struct droce_tp_queue *q, struct droce_qp *qp);
int tp_owner_move(struct droce_dev *dev, struct droce_tp_queue **owner,
		const uint32_t *refs, uint32_t q);
void tp_queue_del_qp(struct droce_tp_queue *q, struct droce_qp *qp);

/* tp_mcast.c */
/* A frame to a multicast MAC on a queue with groups (tp_recv.c). */
void tp_mcast_rx(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len);
void tp_mcast_free(struct droce_dev *dev);

/* tp_flush.c */
/* [addr, addr+len) wholly in shared mappings of files with storage
 * behind them (what a FLUSH to persistence can reach): 0 or an errno. */
int tp_range_durable(const void *addr, size_t len);
/* Write [p, p+len) back to its file (msync MS_SYNC): 0 or -errno. */
int tp_flush_persist(void *p, uint64_t len);

/* tp_mr.c */
/* The MR or MW a key names now (its slot, and the key byte that says
 * which registration of the slot): inline, once or twice per message. */
static inline struct tp_key *
tp_key_find(struct droce_dev *dev, uint32_t key)
{
	uint32_t s = key >> 8;
	struct tp_key *k;

	if (s == 0 || s >= TP_KEY_SLOTS)
		return NULL;
	k = &dev->keys[s];
	if (k->kind == TP_KEY_FREE || k->key != key)
		return NULL;
	return k;
}

static inline struct droce_mr *
tp_lkey_lookup(struct droce_dev *dev, struct droce_pd *pd, uint32_t lkey)
{
	struct tp_key *k = tp_key_find(dev, lkey);
	struct droce_mr *mr;

	if (k == NULL || k->kind != TP_KEY_MR)
		return NULL;
	mr = k->obj;
	return mr->pd == pd ? mr : NULL;
}
/* What rkey names for qp if it grants access: the MR (or the window's
 * MR) in *mrp, where its bytes are in this process, its iova and length
 * (neither range check nor page fault). 0, or -1. */
int tp_rkey_object(struct droce_qp *qp, uint32_t rkey, unsigned int access,
		struct droce_mr **mrp, uint8_t **base, uint64_t *iova,
		uint64_t *len);
/* tp_rkey_resolve for what the inline case leaves: windows, on-demand
 * MRs, keys that name nothing. */
uint8_t *tp_rkey_resolve_any(struct droce_qp *qp, uint32_t rkey, uint64_t va,
		uint64_t len, uint64_t span, unsigned int access,
		struct droce_mr **mrp);

/* Resolve [va, va+len) under rkey with access; NULL if not allowed. An
 * rkey naming a pinned MR, the case of nearly every request, inline.
 * span: how far from va the caller goes on in this transport call (the
 * rest of a message): an on-demand MR faults that in with the piece
 * where it can (tp_odp_fault_ahead). */
static inline uint8_t *
tp_rkey_resolve_ahead(struct droce_qp *qp, uint32_t rkey, uint64_t va,
		uint64_t len, uint64_t span, unsigned int access,
		struct droce_mr **mrp)
{
	struct tp_key *k = tp_key_find(qp->dev, rkey);
	struct droce_mr *mr = k != NULL ? k->obj : NULL;

	if (k == NULL || k->kind != TP_KEY_MR ||
			(mr->access & IBV_ACCESS_ON_DEMAND))
		return tp_rkey_resolve_any(qp, rkey, va, len, span, access,
			mrp);
	if (mr->pd != qp->pd || (mr->access & access) != access)
		return NULL;
	/* [va, va+len) inside [iova, iova+len), without overflow */
	if (va < mr->iova || len > mr->len || va - mr->iova > mr->len - len)
		return NULL;
	if (mrp != NULL)
		*mrp = mr;
	return (uint8_t *)((uintptr_t)mr->base + (va - mr->iova));
}

static inline uint8_t *
tp_rkey_resolve(struct droce_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
		unsigned int access, struct droce_mr **mrp)
{
	return tp_rkey_resolve_ahead(qp, rkey, va, len, len, access, mrp);
}
/* Invalidate the type-2 MW rkey names (check_only: only say whether it
 * could be): 0 or -EINVAL. */
int tp_invalidate_rkey(struct droce_qp *qp, uint32_t rkey, int check_only);
int tp_bind_mw(struct droce_qp *qp, struct droce_mw *mw,
		const struct ibv_mw_bind_info *b, uint32_t new_rkey);
/* Copy between an SGE list (at byte offset off) and a flat buffer. */
int tp_sge_copy_out(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		uint8_t *dst, uint32_t len);
/* The same checks alone: could len bytes go at off. */
int tp_sge_room(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off, uint32_t len);
/* On-demand paging: [addr, addr+len)'s pages faulted in (writable if
 * write) before the data path touches them; 0 or -1 (not mapped). */
int tp_odp_fault(uintptr_t addr, uint64_t len, unsigned int write);
/* The same for a piece of a longer range, [addr, addr+span) (the rest of
 * an SGE): faulted with it where it can be, and then pieces of it in the
 * same transport call need no system call. */
int tp_odp_fault_ahead(uintptr_t addr, uint64_t len, uint64_t span,
		unsigned int write);
/* A transport call (receive burst, progress) begins on this thread. */
void tp_odp_new_call(void);

/* The memory of one SGE, checked against its lkey for need, where the
 * caller touches len bytes at off (checked against the SGE before): NULL
 * if refused. Inline: a one-SGE WR's check and scatter run per message. */
static inline __attribute__((always_inline)) uint8_t *
tp_sge_piece(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *s, unsigned int need, uint64_t off,
		uint64_t len, struct droce_mr **mrp)
{
	struct droce_mr *mr = tp_lkey_lookup(dev, pd, s->lkey);
	uint64_t lo, a;

	if (mr == NULL || (mr->access & need) != need)
		return NULL;
	*mrp = mr;
	/* ZERO_BASED MRs take addresses as offsets; others the owner's
	 * virtual addresses (local_va), which need not be ours */
	lo = (mr->access & IBV_ACCESS_ZERO_BASED) ? 0 : mr->local_va;
	if (s->addr < lo)
		return NULL;
	a = s->addr - lo;
	if (s->length > mr->len || a > mr->len - s->length)
		return NULL;
	/* on demand: the pages of the piece about to be touched, as a
	 * NIC's fault takes them, and the rest of the SGE with them for
	 * the next frames of this call (a 64 KB SGE sent in 1 KB frames
	 * faulted whole for each cost 64 times the page walks) */
	if ((mr->access & IBV_ACCESS_ON_DEMAND) && len != 0 &&
			tp_odp_fault_ahead((uintptr_t)mr->base + a + off, len,
			s->length - off, need & IBV_ACCESS_LOCAL_WRITE) != 0)
		return NULL;
	return (uint8_t *)((uintptr_t)mr->base + a);
}

/* The same for the whole SGE. */
static inline __attribute__((always_inline)) uint8_t *
tp_sge_addr(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *s, unsigned int need, struct droce_mr **mrp)
{
	return tp_sge_piece(dev, pd, s, need, 0, s->length, mrp);
}

int tp_sge_check_list(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, unsigned int need_access);
int tp_sge_copy_in_list(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		const uint8_t *src, uint32_t len);

/* Check every SGE of a list against its lkey: 0 or -EPERM. */
static inline int
tp_sge_check(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, unsigned int need_access)
{
	struct droce_mr *mr;

	if (n == 1)
		return sge->length == 0 ||
			tp_sge_addr(dev, pd, sge, need_access, &mr) != NULL ?
			0 : -EPERM;
	return tp_sge_check_list(dev, pd, sge, n, need_access);
}

/* Scatter into an SGE list at byte offset off; every piece checked before
 * one is written: -EPERM or -EMSGSIZE, nothing copied. */
static inline int
tp_sge_copy_in(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		const uint8_t *src, uint32_t len)
{
	struct droce_mr *mr;
	uint8_t *d;

	if (n != 1)
		return tp_sge_copy_in_list(dev, pd, sge, n, off, src, len);
	if (off > sge->length || len > sge->length - off)
		return -EMSGSIZE;
	d = tp_sge_piece(dev, pd, sge, IBV_ACCESS_LOCAL_WRITE, off, len, &mr);
	if (d == NULL)
		return -EPERM;
	memcpy(d + off, src, len);
	return 0;
}
static inline uint64_t
tp_sge_total(const struct ibv_sge *sge, uint32_t n)
{
	uint64_t t = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		t += sge[i].length;
	return t;
}
/* The registered memory behind len bytes at off of an SGE list, as at most
 * max spans: their count, 0 if more are needed, -EPERM on a bad lkey. */
int tp_sge_spans(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		uint32_t len, struct droce_txspan *sp, uint32_t max);

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
/* For UD: the template comes from the WR's address handle. */
void tp_ud_template(struct droce_qp *qp, struct droce_pkt *p,
		const struct droce_av *av);
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
