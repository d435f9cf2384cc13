/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef CM_RSOCKET_H
#define CM_RSOCKET_H

/*
 * rsockets: stream sockets over an RC QP, wire-compatible with rdma-core's
 * librdmacm (doc/rdmacm.md, "rsockets"). Each side exposes a receive
 * buffer; the sender places data in it with RDMA WRITE WITH IMMEDIATE,
 * the immediate saying what the write was (data and its length, a buffer
 * or credit update, a control message). The receiver hands back half of
 * its buffer at a time by writing its address into the sender's target
 * SGL, and receive credits with the same message.
 *
 * An rsocket's number is the descriptor of its own rdma_cm event channel
 * (an eventfd here), so it never collides with the process's other
 * descriptors, which librspreload needs: it passes rsocket numbers and
 * real descriptors to rpoll side by side.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

/* protocol facts shared with rdma-core's rsockets */
#define RS_OLAP_START_SIZE 2048		/* first chunk of a large send */
#define RS_MAX_TRANSFER 65536		/* the largest chunk */
#define RS_SNDLOWAT 2048		/* room a send needs to go */
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xFFFE
#define RS_QP_CTRL_SIZE 4		/* control messages in flight */
#define RS_CONN_RETRIES 6
#define RS_SGL_SIZE 2			/* target SGL entries */
#define RS_DEF_INLINE 64
#define RS_DEF_SQSIZE 384
#define RS_DEF_RQSIZE 384
#define RS_DEF_MEM (1u << 17)
#define RS_DEF_WMEM (1u << 17)
#define RS_DEF_POLLING_US 10

/* the immediate: 3 bits of operation, 29 of data */
enum rs_op {
	RS_OP_DATA = 0,
	RS_OP_RSVD_DATA_MORE = 1,
	RS_OP_WRITE = 2,		/* local only: riowrite's completions */
	RS_OP_RSVD_DRA_MORE = 3,
	RS_OP_SGL = 4,
	RS_OP_RSVD = 5,
	RS_OP_IOMAP_SGL = 6,
	RS_OP_CTRL = 7,
};

enum rs_ctrl {
	RS_CTRL_DISCONNECT = 0,
	RS_CTRL_KEEPALIVE = 1,
	RS_CTRL_SHUTDOWN = 2,
};

static inline uint32_t
rs_msg(uint32_t op, uint32_t data)
{
	return (op << 29) | data;
}

static inline uint32_t
rs_msg_op(uint32_t msg)
{
	return msg >> 29;
}

static inline uint32_t
rs_msg_data(uint32_t msg)
{
	return msg & 0x1FFFFFFF;
}

#define RS_WR_RECV (1ull << 63)		/* a receive's wr_id */

/* a remote buffer, in the sender's byte order (RS_CONN_FLAG_NET) */
struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};

#define RS_CONN_FLAG_NET (1 << 0)	/* the sender is big-endian */
#define RS_CONN_FLAG_IOMAP (1 << 1)
#define RS_CONN_VERSION 1

/* the connection's private data, both ways; big-endian fields */
struct rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t target_iomap_size;	/* scaled: rs_scale_to_value */
	struct rs_sge target_sgl;
	struct rs_sge data_buf;
};

_Static_assert(sizeof(struct rs_conn_data) == 40, "rs_conn_data is 40 bytes");

enum rs_phase {
	RS_INIT,
	RS_BOUND,
	RS_LISTENING,
	RS_ADDR_QUERY,
	RS_ROUTE_QUERY,
	RS_CONNECTING,
	RS_CONNECTED,
	RS_CONNECT_ERROR,
	RS_DISCONNECTED,
	RS_ERROR,
};

struct rs_rmsg {
	uint32_t op;
	uint32_t data;
};

/* a region mapped for the peer's riowrite (riomap) */
struct rs_iomap_mr {
	struct rs_iomap_mr *next;
	struct ibv_mr *mr;
	uint64_t offset;
	int index;			/* its slot in the peer's table, -1: none */
	bool sent;			/* its slot is written at the peer */
};

struct rs_socket {
	int index;			/* the event channel's descriptor */
	int refs;			/* the table's, and rs_get's callers' */
	int type;
	pthread_mutex_t lock;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	enum rs_phase phase;
	bool rd, wr;			/* connected: which ways are open */
	int err;			/* SO_ERROR */
	int retries;
	int fs_flags;			/* O_NONBLOCK */
	int fd_flags;			/* FD_CLOEXEC */
	bool cm_down;			/* the CM said DISCONNECTED */
	struct sockaddr_storage dst;

	/* options */
	uint64_t so_opts, tcp_opts, ipv6_opts;
	int keepalive_time;
	int tos;
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline;
	uint16_t target_iomap_size;
	void *route;			/* RDMA_ROUTE, kept for rgetsockopt */
	socklen_t route_len;

	/* queues */
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	bool cq_armed;

	/* control messages and credits */
	uint32_t ctrl_seqno, ctrl_max_seqno;
	uint16_t sseq_no, sseq_comp, rseq_no, rseq_comp;
	bool swap_sgl;			/* the peer's byte order is not ours */

	/* where this side writes: the peer's SGL table and iomap table */
	int remote_sge;
	struct rs_sge remote_sgl, remote_iomap;

	/* what the peer writes here: its buffers, and its iomaps */
	struct ibv_mr *target_mr;
	void *target_buf;
	volatile struct rs_sge *target_sgl;
	volatile struct rs_iomap *target_iomap;
	/*
	 * What this side uses of them: each entry copied once the
	 * immediate that follows its write has completed, never read while
	 * the peer's write may still be landing (droce places a write with
	 * memcpy, so a new length can be seen beside an old address)
	 */
	struct rs_sge sgl[RS_SGL_SIZE];
	int sgl_next;			/* the entry the peer writes next */
	int target_sge;			/* the entry sends go to */
	struct rs_iomap *iomap;		/* target_iomap_size */

	/* receiving */
	struct ibv_mr *rmr;
	uint8_t *rbuf;
	uint32_t rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
	struct rs_rmsg *rmsg;		/* rq_size + 1 */
	int rmsg_head, rmsg_tail;

	/* sending */
	struct ibv_mr *smr;
	uint8_t *sbuf;			/* sbuf_size, then the control area */
	uint32_t sbuf_bytes_avail;
	struct ibv_sge ssgl[2];
	int sqe_avail;

	/* riomap */
	struct rs_iomap_mr *iomaps;	/* every mapping */
	struct rs_iomap_mr **remote_slots; /* remote_iomap.length */
	bool iomap_pending;
};

/* cm_rsocket.c: the table of sockets */
struct rs_socket *rs_get(int index);	/* locked, or NULL and EBADF */
bool rs_is_socket(int index);
void rs_put(struct rs_socket *rs);
int rs_cm_progress(struct rs_socket *rs);
void rs_cm_events(struct rs_socket *rs);

/* cm_rsocket_io.c: the data path */
int rs_create_ep(struct rs_socket *rs);
void rs_free_ep(struct rs_socket *rs);
void rs_format_conn_data(struct rs_socket *rs, struct rs_conn_data *c);
void rs_save_conn_data(struct rs_socket *rs, const struct rs_conn_data *c);
int rs_process_cq(struct rs_socket *rs);
int rs_wait(struct rs_socket *rs, bool nonblock,
		bool (*test)(struct rs_socket *rs));
bool rs_can_send(struct rs_socket *rs);
bool rs_have_rdata(struct rs_socket *rs);
bool rs_conn_have_rdata(struct rs_socket *rs);
bool rs_conn_can_send(struct rs_socket *rs);
bool rs_ctrl_avail(struct rs_socket *rs);
bool rs_ctrl_avail_or_down(struct rs_socket *rs);
bool rs_all_sends_done(struct rs_socket *rs);
int rs_post_ctrl(struct rs_socket *rs, uint32_t ctrl);
void rs_cq_event(struct rs_socket *rs);
uint16_t rs_scale_to_value(uint8_t v);
uint8_t rs_value_to_scale(uint16_t v);

/* cm_rsocket_rw.c: sending and receiving */
struct rs_iov {				/* a cursor over an iovec array */
	const struct iovec *iov;
	int cnt;
	size_t off;
};

struct rs_dst {				/* where a chunk goes */
	uint32_t msg;			/* the immediate, and the wr_id */
	uint64_t addr;
	uint32_t rkey;
	bool imm;			/* RDMA WRITE WITH IMMEDIATE */
};

void rs_iov_copy(struct rs_iov *c, uint8_t *dst, size_t len);
bool rs_nonblock(const struct rs_socket *rs, int flags);
int rs_send_chunk(struct rs_socket *rs, struct rs_iov *c, uint32_t len,
		const struct rs_dst *d);
uint32_t rs_chunk(struct rs_socket *rs, size_t left, uint32_t *olen);
int rs_wait_send(struct rs_socket *rs, int flags);

/* cm_rsocket_iomap.c */
int rs_send_iomaps(struct rs_socket *rs, int flags);

/* cm_rsocket_opt.c: options */
void rs_opts_inherit(struct rs_socket *rs, const struct rs_socket *from);
void rs_opts_default(struct rs_socket *rs);
uint64_t rs_spin_us(void);

static inline bool
rs_connected(const struct rs_socket *rs)
{
	return rs->phase == RS_CONNECTED;
}

static inline bool
rs_opening(const struct rs_socket *rs)
{
	return rs->phase == RS_ADDR_QUERY || rs->phase == RS_ROUTE_QUERY ||
		rs->phase == RS_CONNECTING;
}

#endif
