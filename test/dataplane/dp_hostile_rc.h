/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */


#ifndef DP_HOSTILE_RC_H
#define DP_HOSTILE_RC_H

/*
 * test_dp_hostile's RC cases, in the files that include this: what they
 * share besides dp_hostile.h (test_dp_hostile.c), and each file's cases.
 * Their checks count into one total, test_dp_hostile.c's; the XRC cases'
 * file counts its own, which main adds (its report line is its own).
 */

#include <stdint.h>

#define CHECK_SHARED
#include "dp_hostile.h"

/* RESET, then INIT/RTR/RTS towards the fake peer, receives posted. */
void qp_connect(void);
/* A WRITE-like request at the expected PSN to off in the MR. */
void write_pkt(struct droce_pkt *p, uint8_t opcode, uint64_t off,
	uint32_t dma_len, const uint8_t *payload, uint32_t plen);
/* The answer must be an ACK/NAK of this syndrome for this PSN. */
void expect_aeth(const char *what, uint8_t syndrome, uint32_t psn);
void expect_state(const char *what, enum ibv_qp_state want);
/* p, changed by mutate() if not NULL, answered with NAK nak, the QP in
 * ERR, not one byte placed. */
void case_nak(const char *what, struct droce_pkt *p, uint8_t nak,
	void (*mutate)(uint8_t *f, uint32_t *len));

/* test_dp_hostile_addr.c: a valid WRITE; frames for another host, from
 * another peer, under another P_Key or damaged, dropped in silence */
void case_control(const char *what, uint32_t trailer);
void case_refused(const char *what, const uint8_t *dmac, uint32_t dip,
	uint32_t sip, uint16_t pkey, size_t counter);
void case_icrc(void);

/* test_dp_hostile_nak.c: lengths and padding, the NAK classes */
void cases_length(void);
void case_send_middle_pad(void);
void cases_classes(void);

/* test_dp_hostile_ibta15.c: IBTA 1.5 ATOMIC WRITE and FLUSH */
void cases_atomic_write(void);
void cases_flush(void);

#endif /* DP_HOSTILE_RC_H */
