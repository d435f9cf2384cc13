/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef CHAN_SESSION_H
#define CHAN_SESSION_H

/*
 * A test's own session with droced, on the channel itself (no verbs
 * library in between): what a well-behaved application does, and the
 * means to misbehave.
 */

#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>

#include "droce_chan.h"

/* A failed check ends the test program. */
#define CS_CHECK(c, ...) do { \
	if (!(c)) { \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		exit(1); \
	} \
} while (0)

struct cs {
	int sock;
	uint32_t seq;
	struct droce_chan_hello_rep hello;
	uint8_t *region;
	int async_fd, wake_fd;
	uint32_t next_seg;
};

struct cs_buf {
	uint8_t *addr;
	uint64_t len;
	uint32_t mr, lkey, rkey;
};

struct cs_cq {
	uint32_t handle, size, queue;
	struct droce_chan_cq *sh;
	struct ibv_wc *wc;
	uint32_t cons;
};

struct cs_wq {
	struct droce_chan_wq *sh;
	uint8_t *slots;
	uint32_t size, slot, prod, queue;
};

struct cs_qp {
	uint32_t handle, qpn;
	struct cs_wq sq, rq;
	struct ibv_qp_cap cap;
};

/* 0 or a negative errno (the daemon's refusal). */
int cs_open(struct cs *s, const char *path);
void cs_close(struct cs *s);
int cs_rpc(struct cs *s, uint32_t op, const void *req, void *rep,
		const int *fds, int nfds, int *rfds, int *nrfds);
int cs_pd(struct cs *s, uint32_t *pd);
/* a buffer on a memfd of its own (already "moved"), registered */
int cs_buf(struct cs *s, uint32_t pd, uint64_t len, struct cs_buf *b);
int cs_cq(struct cs *s, uint32_t cqe, struct cs_cq *cq);
int cs_qp(struct cs *s, uint32_t pd, uint32_t type, struct cs_cq *cq,
		struct cs_qp *qp);
/* RC: INIT, RTR to (dgid, dqpn), RTS */
int cs_connect(struct cs *s, struct cs_qp *qp, const uint8_t dgid[16],
		uint32_t dqpn);
void cs_post_send(struct cs *s, struct cs_qp *qp, const struct droce_chan_swqe *w,
		const struct ibv_sge *sge);
void cs_post_recv(struct cs *s, struct cs_qp *qp, uint64_t wr_id,
		const struct ibv_sge *sge);
/* wait up to ms for one completion: 1, or 0 on timeout */
int cs_poll(struct cs_cq *cq, struct ibv_wc *wc, int ms);

/* A session with a PD, a 1 MB registered buffer, a CQ and an RC QP. */
struct cs_side {
	struct cs s;
	uint32_t pd;
	struct cs_buf b;
	struct cs_cq cq;
	struct cs_qp qp;
};

void cs_side_open(struct cs_side *x, const char *path);
/* connect a's and b's QPs to each other */
void cs_pair(struct cs_side *a, struct cs_side *b);
void cs_expect_wc(struct cs_cq *cq, enum ibv_wc_status st, const char *what);
void cs_fill(uint8_t *p, size_t n, unsigned int seed);
/* WRITE a -> b, SEND b -> a, READ a <- b of 64 KB each; every byte checked */
void cs_traffic(struct cs_side *a, struct cs_side *b, unsigned int seed);

#endif
