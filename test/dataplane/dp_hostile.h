/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DP_HOSTILE_H
#define DP_HOSTILE_H

/*
 * test_dp_hostile's pieces shared by its files: the port, the RC QP's
 * objects and memory, and the frame helpers (test_dp_hostile.c); the XRC
 * cases (test_dp_hostile_xrc.c).
 */

#include <stdint.h>

#include "check.h"
#include "frame_fix.h"
#include "droce.h"
#include "droce_wire.h"

#define MR_LEN		16384
#define RECV_LEN	4096
#define NRECV		4
#define PEER_QPN	0x99
#define DROCE_IP	0x0a4d0101u	/* 10.77.1.1 */
#define PEER_IP		0x0a4d0102u	/* 10.77.1.2 */
#define OTHER_IP	0x0a4d0163u	/* 10.77.1.99: another host */
#define RQ_PSN		0x1000
#define MTU		256		/* the QP's path MTU */
#define NO_ANSWER_NS	300000000ull	/* how long silence is waited for */

extern struct droce_port *port;
extern struct droce_dev *dev;
extern struct droce_pd *pd;
extern struct droce_cq *cq;
extern struct droce_qp *qp;
extern struct droce_mr *mr, *rmr;
extern uint8_t *mem, *rmem;
extern uint8_t shadow[MR_LEN], rshadow[RECV_LEN * NRECV];
extern uint8_t droce_mac[6], peer_mac[6];
extern uint32_t epsn;

void gid4(uint8_t gid[16], uint32_t ip);
/* A request from the peer to the RC QP, as a well-behaved peer builds it. */
void pkt_init(struct droce_pkt *p, uint8_t opcode, uint32_t psn);
void inject(const uint8_t *f, uint32_t len);
int build(struct droce_pkt *p, uint8_t *f, uint32_t cap);
/* droce's next answer on the wire (1), or none within quiet_ns (0). */
int answer(struct droce_pkt *ans, uint64_t quiet_ns);
struct droce_tp_stats stats(void);
void snapshot(void);
void expect_unchanged(const char *what);
void expect_silence(const char *what);

/* test_dp_hostile_xrc.c: the XRC cases; adds its checks to *checks and
 * returns how many failed (its file counts its own checks; the RC
 * cases' files count theirs together, dp_hostile_rc.h) */
int cases_xrc(int *checks);

#endif
