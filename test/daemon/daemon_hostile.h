/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */


#ifndef DAEMON_HOSTILE_H
#define DAEMON_HOSTILE_H

/*
 * test_daemon_hostile's pieces shared by its files: the two daemons'
 * sockets and the requests the cases share (test_daemon_hostile.c), QP1's
 * (test_daemon_hostile_qp1.c), and the cases, one file per kind of
 * hostility.
 */

#include <stdint.h>

#include "chan_session.h"

#define CHECK CS_CHECK

/* droced A's socket (under attack) and droced B's */
extern const char *path_a, *path_b;

/* REG_MR of one piece of fd (a new segment) at addr: 0 or -errno. */
int reg_fd(struct cs *s, uint32_t pd, int fd, uint64_t seg_off,
	uint64_t addr, uint64_t len, struct cs_buf *b);
int dereg(struct cs *s, uint32_t mr, uint32_t release_seg);
/* A WRITE of len bytes from x's buffer to (raddr, rkey), signaled. */
void post_write(struct cs_side *x, uint64_t raddr, uint32_t rkey,
	uint32_t len, uint64_t id);

/* test_daemon_hostile_qp1.c: a GSI proxy (the application's QP1) on scq
 * and rcq (0 or -errno), an AH to the session's own port address, a
 * send on QP1 (its completion's status), a CM message into buf */
int gsi_proxy(struct cs *s, uint32_t pd, uint32_t scq, uint32_t rcq,
	struct cs_qp *qp);
uint32_t ah_to_self(struct cs_side *x);
enum ibv_wc_status gsi_send(struct cs_side *x, struct cs_qp *g,
	struct cs_cq *cq, uint32_t ah, uint32_t off, uint32_t len,
	uint32_t qpn, uint32_t qkey);
void cm_msg(uint8_t *buf, uint16_t attr, uint32_t local, uint32_t remote);

/* test_daemon_hostile_mem.c: memory handed to droced */
void huge_overrun(const char *run);
void fake_sysv(void);
void sysv_truncated(void);
void dereg_in_flight(void);

/* test_daemon_hostile_qp1.c: QP1, the CM's */
void gsi_cq(void);
void cm_forge(void);

/* test_daemon_hostile_shared.c: the rings and descriptors droced shares
 * with the application */
void ring_scribble(void);
void event_fds(void);

/* test_daemon_hostile_misuse.c: requests an application may not make */
void misc_abuse(struct cs_side *y);
void sr_abuse(void);

/* test_daemon_hostile_session.c: the socket, its sessions and their
 * number */
void unread_replies(void);
void hello_nameless(void);
void session_flood(const char *run);

#endif /* DAEMON_HOSTILE_H */
