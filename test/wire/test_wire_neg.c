/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Negative tests: each parser defect, made by mutating a real rxe frame,
 * gives its own error; every truncation fails without reading past the
 * frame (the ASan build runs this too).
 */

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frame_fix.h"
#include "droce_wire.h"
#include "parse_rx_same.h"
#include "pcapio.h"

static uint8_t f[16384];
static uint32_t flen;

/* First frame of a capture with the given opcode. */
static int
pick(const char *path, uint8_t opcode)
{
	struct pcap_frame *fr;
	struct droce_pkt pkt;
	int i, n, found = 0;

	n = pcapio_load(path, &fr);
	for (i = 0; i < n && !found; i++) {
		if (droce_wire_parse(fr[i].data, fr[i].len, NULL, &pkt) == 0 &&
				pkt.opcode == opcode) {
			memcpy(f, fr[i].data, fr[i].len);
			flen = fr[i].len;
			found = 1;
		}
	}
	if (n > 0)
		pcapio_free(fr, n);
	return found;
}

/*
 * The full parse's verdict; the transport's (droce_wire_parse_rx, which
 * fills fewer fields) must give the same, and where the packet is
 * filled (accepted, or a length defect) the same fields.
 */
static int
parse(const uint8_t *b, uint32_t len, const struct droce_parse_opts *o)
{
	/* and the fast receive of the QP the pristine frame is for */
	if (o == NULL)
		parse_rx_fast_same(b, len, f, flen);
	return parse_rx_same(b, len, o);
}

/*
 * Every header byte of the pristine frame changed a few ways, the IPv4
 * sum and the ICRC made good again (so that only the change is judged)
 * and not: the fast receive never takes a frame the full receive would
 * not (parse checks it), and it takes the frames it should.
 */
static void
sweep(void)
{
	static const uint8_t flips[] = { 0x01, 0x10, 0x80, 0xff };
	uint8_t m[sizeof(f)];
	uint32_t i, k, fix, hdr = flen < 74 ? flen : 74, took = 0;

	for (i = 0; i < hdr; i++) {
		for (k = 0; k < sizeof(flips); k++) {
			for (fix = 0; fix < 2; fix++) {
				memcpy(m, f, flen);
				m[i] ^= flips[k];
				if (fix) {
					frame_fix_ipv4_csum(m);
					frame_fix_icrc(m, flen);
				}
				parse(m, flen, NULL);
			}
		}
	}
	/* the pristine frame and masked fields changed: taken */
	memcpy(m, f, flen);
	took += parse_rx_fast_same(m, flen, f, flen);
	m[22] = 1;		/* TTL */
	m[15] ^= 0x03;		/* ECN */
	m[46] ^= 0xc0;		/* FECN, BECN */
	frame_fix_ipv4_csum(m);
	took += parse_rx_fast_same(m, flen, f, flen);
	/* and fields the ICRC covers, made good */
	m[18] ^= 0x5a;		/* IP id */
	m[34] ^= 0x11;		/* UDP source port */
	m[53] ^= 0x01;		/* PSN */
	frame_fix_ipv4_csum(m);
	frame_fix_icrc(m, flen);
	took += parse_rx_fast_same(m, flen, f, flen);
	CHECK_EQ(took, 3u, "fast receive of the pristine frame");
}

/* A UD QP's template takes its frames from any source address (RC's
 * take only their peer's: sweep's flips of those bytes). */
static void
ud_from_anyone(void)
{
	uint8_t m[sizeof(f)];

	memcpy(m, f, flen);
	m[26] ^= 0x40;		/* the IPv4 source address */
	m[29] ^= 0x07;
	frame_fix_ipv4_csum(m);
	frame_fix_icrc(m, flen);
	CHECK_EQ(parse(m, flen, NULL), 0, "UD frame from elsewhere");
	CHECK_EQ(parse_rx_fast_same(m, flen, f, flen), 1,
		"UD template takes a frame from elsewhere");
}

#define MUT(expect, what, stmt) do { \
	uint8_t m[sizeof(f)]; \
	memcpy(m, f, flen); \
	{ uint8_t *b = m; stmt; (void)b; } \
	int _rc = parse(m, flen, NULL); \
	CHECK(_rc == (expect), "%s: got %d (%s), want %d (%s)", what, _rc, \
		droce_wire_strerror(_rc), expect, droce_wire_strerror(expect)); \
} while (0)

/* The first frame of dir/name with the opcode into f: 0, or -1 (said)
 * without one. */
static int
load(const char *dir, const char *name, uint8_t opcode, const char *what)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!pick(path, opcode)) {
		fprintf(stderr, "no %s frame in %s\n", what, path);
		return -1;
	}
	return 0;
}

/* A trailer after the IP datagram (the IP length says where it ends) is
 * ignored, whatever the frame's size. */
static void
trailer(void)
{
	uint8_t m[sizeof(f)];
	struct droce_pkt pk;

	memcpy(m, f, flen);
	memset(m + flen, 0xa5, 16);
	CHECK_EQ(droce_wire_parse(m, flen + 16, NULL, &pk), 0,
		"16-byte trailer");
	CHECK_EQ(pk.payload_len, 1024u, "payload with a trailer");
}

/* Every truncation fails, and with "truncated". */
static void
truncations(void)
{
	uint32_t len;
	int rc;

	for (len = 0; len < flen; len++) {
		uint8_t *t = malloc(len ? len : 1);

		memcpy(t, f, len);
		rc = parse(t, len, NULL);
		CHECK(rc == DROCE_WIRE_ETRUNC, "truncated to %u: %s", len,
			droce_wire_strerror(rc));
		free(t);
	}
}

/* Each defect of the SEND_ONLY its own error. */
static void
send_only_defects(void)
{
	MUT(DROCE_WIRE_EETHERTYPE, "ARP ethertype", b[12] = 0x08; b[13] = 0x06);
	MUT(DROCE_WIRE_EIPVER, "IP version 6 in IPv4", b[14] = 0x65);
	MUT(DROCE_WIRE_EIPPROTO, "TCP protocol", b[23] = 6);
	MUT(DROCE_WIRE_EIPPROTO, "IPv4 options", b[14] = 0x46);
	MUT(DROCE_WIRE_EIPPROTO, "fragment", b[20] |= 0x20; frame_fix_ipv4_csum(b));
	MUT(DROCE_WIRE_EUDPPORT, "UDP port 4792", b[36] = 0x12; b[37] = 0xb8);
	MUT(DROCE_WIRE_EIPLEN, "UDP length short", b[39] -= 4);
	/* IP and UDP lengths 4 short: the last 4 bytes are a trailer now,
	 * and the ICRC is looked for 4 bytes early */
	MUT(DROCE_WIRE_EICRC, "IP length short",
		b[17] -= 4; b[39] -= 4; frame_fix_ipv4_csum(b));
	MUT(DROCE_WIRE_EIPCSUM, "IPv4 checksum", b[25] ^= 1);
	MUT(DROCE_WIRE_ETVER, "TVer 1", b[43] |= 1);
	MUT(DROCE_WIRE_EOPCODE, "opcode 0x1f", b[42] = 0x1f);
	MUT(DROCE_WIRE_EOPCODE, "opcode 0x18", b[42] = 0x18);
	MUT(DROCE_WIRE_EICRC, "payload byte", b[60] ^= 0x40);
	MUT(DROCE_WIRE_EICRC, "ICRC byte", b[flen - 1] ^= 1);
	MUT(DROCE_WIRE_EICRC, "BTH PSN", b[53] ^= 1);
	/* A masked field does not change the ICRC: FECN/BECN and TTL. */
	MUT(0, "BTH byte 4 is masked", b[46] ^= 0xc0);
	MUT(0, "TTL is masked", b[22] = 1; frame_fix_ipv4_csum(b));
	/* One payload byte as pad: 1023 payload + 1 pad is consistent. */
	MUT(DROCE_WIRE_EICRC, "PadCnt 1 on SEND_ONLY", b[43] |= 0x10);
}

/* The parse options: transports, path MTU, skip_icrc, UDP checksum. */
static void
parse_options(void)
{
	struct droce_parse_opts o;
	uint8_t m[sizeof(f)];

	memset(&o, 0, sizeof(o));
	o.transports = 1u << (DROCE_TRANSPORT_UD >> 5);
	CHECK_EQ(parse(f, flen, &o), DROCE_WIRE_ETRANSPORT, "RC frame, UD only");
	memset(&o, 0, sizeof(o));
	o.path_mtu = 512;
	CHECK_EQ(parse(f, flen, &o), DROCE_WIRE_EMTU, "1024 payload, MTU 512");
	memset(&o, 0, sizeof(o));
	o.skip_icrc = 1;
	memcpy(m, f, flen);
	m[60] ^= 1;
	CHECK_EQ(parse(m, flen, &o), 0, "skip_icrc");
	m[34 + 6] = 0x12;	/* a UDP checksum that cannot verify */
	m[34 + 7] = 0x34;
	o.verify_udp_csum = 1;
	CHECK_EQ(parse(m, flen, &o), DROCE_WIRE_EUDPCSUM, "UDP checksum");
}

/* An ACK: too short for the RETH of a WRITE_ONLY; pad without payload. */
static void
ack_defects(void)
{
	uint8_t m[sizeof(f)];

	MUT(DROCE_WIRE_EEXTHDR, "ACK as WRITE_ONLY", b[42] = DROCE_OP_RC_WRITE_ONLY);
	MUT(DROCE_WIRE_EEXTHDR, "ACK as CMP_SWAP", b[42] = DROCE_OP_RC_CMP_SWAP);
	MUT(DROCE_WIRE_EPADCNT, "ACK with PadCnt 2", b[43] |= 0x20);
	/* An ACK with 4 bytes of payload: whole words, authentic, but an
	 * ACK carries none. */
	memcpy(m, f, flen);
	m[17] += 4;
	m[39] += 4;
	frame_fix_ipv4_csum(m);
	memmove(m + flen, m + flen - 4, 4);
	memset(m + flen - 4, 0, 4);
	frame_fix_icrc(m, flen + 4);
	CHECK_EQ(parse(m, flen + 4, NULL), DROCE_WIRE_ELENGTH,
		"payload on an ACK");
	MUT(DROCE_WIRE_EEXTHDR, "ACK as ATOMIC_ACK",
		b[42] = DROCE_OP_RC_ATOMIC_ACK);
}

/* A SEND_FIRST: only the last packet may pad. */
static void
send_first_defects(void)
{
	uint8_t m[sizeof(f)];
	int rc;

	/* Length defects come after the ICRC: a bad ICRC hides them (a
	 * silent drop), a good one lets the responder NAK them. */
	MUT(DROCE_WIRE_EICRC, "PadCnt on SEND_FIRST, old ICRC", b[43] |= 0x30);
	MUT(DROCE_WIRE_ELENGTH, "PadCnt on SEND_FIRST",
		b[43] |= 0x30; frame_fix_icrc(b, flen));
	/* Drop one payload byte: payload + pad no longer whole words. */
	memcpy(m, f, flen);
	memmove(m + 100, m + 101, flen - 101);
	m[39] -= 1;
	m[17] -= 1;
	frame_fix_ipv4_csum(m);
	rc = parse(m, flen - 1, NULL);
	CHECK_EQ(rc, DROCE_WIRE_EPADCNT, "payload not whole words");
}

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "test/data";

	/* An RC SEND_ONLY with 1024 bytes (ibv_rc_pingpong -s 1024). */
	if (load(dir, "rxe-rc-pingpong.pcap", DROCE_OP_RC_SEND_ONLY,
			"SEND_ONLY") != 0)
		return 1;
	CHECK_EQ(parse(f, flen, NULL), 0, "pristine frame");
	sweep();
	trailer();
	truncations();
	send_only_defects();
	parse_options();

	if (load(dir, "rxe-rc-pingpong.pcap", DROCE_OP_RC_ACK, "ACK") != 0)
		return 1;
	CHECK_EQ(parse(f, flen, NULL), 0, "pristine ACK");
	sweep();
	ack_defects();

	/* ib_send_bw 4 KB */
	if (load(dir, "rxe-ib-send_bw.pcap", DROCE_OP_RC_SEND_FIRST,
			"SEND_FIRST") != 0)
		return 1;
	CHECK_EQ(parse(f, flen, NULL), 0, "pristine SEND_FIRST");
	sweep();
	send_first_defects();

	/* a UD SEND_ONLY: a CM MAD to QP1 (rping's connection) */
	if (load(dir, "rxe-rping.pcap", DROCE_OP_UD_SEND_ONLY,
			"UD SEND_ONLY") != 0)
		return 1;
	CHECK_EQ(parse(f, flen, NULL), 0, "pristine UD SEND_ONLY");
	sweep();
	ud_from_anyone();

	return check_report("test_wire_neg");
}
