/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef PERF_H
#define PERF_H

#include <stdint.h>

#include "droce.h"

#define PERF_MAX_QP 64
/* Every UD QP's Q_Key; both sides also say theirs in perf_info. */
#define PERF_UD_QKEY 0x11111111u

/*
 * What each side tells the other over the TCP side channel: once at the
 * start, and again with the ud_ fields filled when the client's first
 * ud_send test makes the UD QPs (PERF_CMD_UD).
 */
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
	uint32_t ud_max_send;	/* the client's largest UD SEND: buffers */
	uint32_t ud_qkey;
	uint32_t ud_qpn[PERF_MAX_QP];	/* 0: not made */
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
	uint64_t received;	/* DONE's answer for ud_send: receives */
	/* QUIT's answer: what the server's transport sent and replayed */
	uint64_t srv_tx, srv_read_replays, srv_nak_seq_tx, srv_dup_rx;
};

/* PERF_CMD_UD: both sides make their UD QPs; the client's perf_info
 * follows it, and the server answers with its own instead of the
 * command. */
enum { PERF_CMD_RUN = 1, PERF_CMD_DONE, PERF_CMD_RAW, PERF_CMD_RAW_DONE,
	PERF_CMD_QUIT, PERF_CMD_UD };

/* The RC ops (--op all), then UD's: tests run in this order. */
enum perf_op { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_READ, OP_FADD, OP_CSWAP,
	OP_UD_SEND, OP_NB };
#define OP_RC_NB OP_UD_SEND

int sc_listen(const char *addr, int port);
int sc_connect(const char *host, int port, int timeout_s);
int sc_send(int fd, const void *b, size_t n);
int sc_recv(int fd, void *b, size_t n);
/* 1 if a full message is ready without blocking, 0 if not, -1 closed */
int sc_ready(int fd);

#endif
