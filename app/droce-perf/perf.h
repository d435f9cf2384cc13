/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef PERF_H
#define PERF_H

#include <stdint.h>

#include "droce.h"

#define PERF_MAX_QP 64

/* What each side tells the other over the TCP side channel. */
struct perf_info {
	uint32_t nqp;
	uint32_t qpn[PERF_MAX_QP];
	uint32_t psn[PERF_MAX_QP];
	uint64_t addr;
	uint32_t rkey;
	uint32_t ipv4;
	uint32_t max_send;	/* the client's largest SEND: receive buffers */
	uint8_t ipv6[16];
	uint8_t mac[6];
	uint8_t pad[2];
};

/* A test the client asks the server to take part in. */
struct perf_cmd {
	uint32_t kind;		/* PERF_CMD_* */
	uint32_t op;		/* enum perf_op */
	uint32_t size;
	uint32_t iters;
	uint32_t seed;
	uint32_t flags;
	uint64_t value;		/* result (frames counted, check result) */
	uint64_t handoffs;	/* QUIT's answer: the server's hand-offs */
	/* QUIT's answer: what the server's transport sent and replayed */
	uint64_t srv_tx, srv_read_replays, srv_nak_seq_tx, srv_dup_rx;
};

enum { PERF_CMD_RUN = 1, PERF_CMD_DONE, PERF_CMD_RAW, PERF_CMD_RAW_DONE,
	PERF_CMD_QUIT };

enum perf_op { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_READ, OP_FADD, OP_CSWAP,
	OP_NB };

int sc_listen(const char *addr, int port);
int sc_connect(const char *host, int port, int timeout_s);
int sc_send(int fd, const void *b, size_t n);
int sc_recv(int fd, void *b, size_t n);
/* 1 if a full message is ready without blocking, 0 if not, -1 closed */
int sc_ready(int fd);

#endif
