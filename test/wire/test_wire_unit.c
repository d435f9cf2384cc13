/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * lib/wire units: the opcode table, PSN arithmetic and wrap, MTU enums,
 * rxe's UDP source ports, GIDs, AETH credits, RNR timers, the CRC engines,
 * and build -> parse round trips of every opcode over IPv4, IPv6 and VLAN.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "droce_wire.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
test_table(void)
{
	static const uint8_t must[] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
		0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13,
		0x14, 0x16, 0x17, 0x1c, 0x1d,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29,
		0x2a, 0x2b, 0x64, 0x65, 0x81,
		/* XRC (IBTA 14.6): RC's 0x00-0x17 + 0xa0 */
		0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9,
		0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3,
		0xb4, 0xb6, 0xb7,
	};
	unsigned int i, n = 0, sum;

	for (i = 0; i < sizeof(must); i++)
		CHECK(droce_opcode_info[must[i]].valid, "opcode 0x%02x missing",
			must[i]);
	for (i = 0; i < 256; i++) {
		const struct droce_opcode_info *o = &droce_opcode_info[i];

		if (!o->valid)
			continue;
		n++;
		sum = DROCE_BTH_LEN;
		sum += (o->hdrs & DROCE_HDR_RETH) ? DROCE_RETH_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_AETH) ? DROCE_AETH_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_ATMETH) ? DROCE_ATMETH_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_ATMACK) ? DROCE_ATMACK_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_IMMDT) ? DROCE_IMMDT_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_IETH) ? DROCE_IETH_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_DETH) ? DROCE_DETH_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_CNP) ? 16 : 0;
		sum += (o->hdrs & DROCE_HDR_FETH) ? DROCE_FETH_LEN : 0;
		sum += (o->hdrs & DROCE_HDR_XRCETH) ? DROCE_XRCETH_LEN : 0;
		CHECK_EQ(o->hdr_len, sum, o->name);
		/* XRC: every request names the SRQ, no response does; and
		 * each is its RC twin with the XRCETH added */
		if ((i & 0xe0) == DROCE_TRANSPORT_XRC) {
			const struct droce_opcode_info *rc =
				&droce_opcode_info[i & 0x1f];

			CHECK(!!(o->flags & DROCE_OPF_REQ) ==
				!!(o->hdrs & DROCE_HDR_XRCETH), "%s xrceth",
				o->name);
			CHECK(rc->valid && rc->flags == o->flags &&
				(rc->hdrs | (o->hdrs & DROCE_HDR_XRCETH)) ==
				o->hdrs, "%s like RC", o->name);
		}
		CHECK_EQ(o->off_payload, o->hdr_len, o->name);
		CHECK(!!(o->flags & DROCE_OPF_IMM) ==
			!!(o->hdrs & DROCE_HDR_IMMDT), "%s imm", o->name);
		CHECK(!!(o->flags & DROCE_OPF_INV) ==
			!!(o->hdrs & DROCE_HDR_IETH), "%s inv", o->name);
		if ((i & 0xe0) == DROCE_TRANSPORT_UC && (o->flags & DROCE_OPF_REQ))
			CHECK(!(o->flags & DROCE_OPF_WANT_ACK), "%s acked", o->name);
	}
	CHECK_EQ(n, sizeof(must), "valid opcodes");
	/* Spot checks against IBTA table 38 / protocol-facts. */
	CHECK_EQ(droce_opcode_info[0x0b].off_immdt, 28, "WRITE_ONLY_IMM ImmDt");
	CHECK_EQ(droce_opcode_info[0x12].hdr_len, 24, "ATOMIC_ACK length");
	CHECK_EQ(droce_opcode_info[0x65].off_immdt, 20, "UD SEND_ONLY_IMM ImmDt");
	CHECK_EQ(droce_opcode_info[0x13].hdr_len, 40, "CMP_SWAP length");
	/* XRCETH right after the BTH, before RETH / AtomicETH / ImmDt */
	CHECK_EQ(droce_opcode_info[0xa4].off_xrceth, 12, "XRC SEND_ONLY XRCETH");
	CHECK_EQ(droce_opcode_info[0xa4].hdr_len, 16, "XRC SEND_ONLY length");
	CHECK_EQ(droce_opcode_info[0xab].off_reth, 16, "XRC WRITE_ONLY_IMM RETH");
	CHECK_EQ(droce_opcode_info[0xab].off_immdt, 32, "XRC WRITE_ONLY_IMM ImmDt");
	CHECK_EQ(droce_opcode_info[0xb3].off_atmeth, 16, "XRC CMP_SWAP AtomicETH");
	CHECK_EQ(droce_opcode_info[0xb3].hdr_len, 44, "XRC CMP_SWAP length");
	CHECK_EQ(droce_opcode_info[0xb1].hdr_len, 16, "XRC ACK length");
	CHECK(!droce_opcode_info[0xbd].valid, "no XRC ATOMIC WRITE");
	/* IBTA 1.5 ATOMIC WRITE: BTH + RETH, then the 8-byte payload */
	CHECK_EQ(droce_opcode_info[0x1d].off_reth, 12, "ATOMIC_WRITE RETH");
	CHECK_EQ(droce_opcode_info[0x1d].hdr_len, 28, "ATOMIC_WRITE length");
	CHECK((droce_opcode_info[0x1d].flags & (DROCE_OPF_ATOMIC_WRITE |
		DROCE_OPF_PAYLOAD | DROCE_OPF_START | DROCE_OPF_END |
		DROCE_OPF_WANT_ACK | DROCE_OPF_WRITE | DROCE_OPF_ATOMIC |
		DROCE_OPF_RWR)) == (DROCE_OPF_ATOMIC_WRITE | DROCE_OPF_PAYLOAD |
		DROCE_OPF_START | DROCE_OPF_END | DROCE_OPF_WANT_ACK),
		"ATOMIC_WRITE is its own kind, one packet, acknowledged");
	/* IBTA 1.5 FLUSH: BTH, FETH, RETH, no payload */
	CHECK_EQ(droce_opcode_info[0x1c].off_feth, 12, "FLUSH FETH");
	CHECK_EQ(droce_opcode_info[0x1c].off_reth, 16, "FLUSH RETH");
	CHECK_EQ(droce_opcode_info[0x1c].hdr_len, 32, "FLUSH length");
	CHECK((droce_opcode_info[0x1c].flags & (DROCE_OPF_FLUSH |
		DROCE_OPF_PAYLOAD | DROCE_OPF_START | DROCE_OPF_END |
		DROCE_OPF_WANT_ACK | DROCE_OPF_WRITE | DROCE_OPF_READ |
		DROCE_OPF_RWR)) == (DROCE_OPF_FLUSH | DROCE_OPF_START |
		DROCE_OPF_END | DROCE_OPF_WANT_ACK),
		"FLUSH is its own kind, one packet without payload, acknowledged");
}

static void
test_psn(void)
{
	CHECK_EQ(droce_psn_add(0xffffff, 1), 0, "wrap add");
	CHECK_EQ(droce_psn_add(0xfffffe, 5), 3, "wrap add 5");
	CHECK_EQ(droce_psn_diff(0, 0xffffff), 1, "0 is after 0xffffff");
	CHECK_EQ(droce_psn_diff(0xffffff, 0), -1, "0xffffff before 0");
	CHECK_EQ(droce_psn_diff(5, 3), 2, "ahead");
	CHECK_EQ(droce_psn_diff(3, 5), -2, "behind");
	CHECK_EQ(droce_psn_diff(0x7fffff, 0), 0x7fffff, "max ahead");
	CHECK_EQ(droce_psn_diff(0x800000, 0), -0x800000, "half way is behind");
	CHECK_EQ(droce_psn_diff(0x123456, 0x123456), 0, "equal");
}

static void
test_misc(void)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x77, 0x00, 0x12 };
	uint8_t gid[16];
	uint32_t ip;

	CHECK_EQ(droce_mtu_to_bytes(1), 256, "mtu 1");
	CHECK_EQ(droce_mtu_to_bytes(5), 4096, "mtu 5");
	CHECK_EQ(droce_mtu_to_bytes(0), 0, "mtu 0");
	CHECK_EQ(droce_mtu_to_bytes(6), 0, "mtu 6");
	CHECK_EQ(droce_bytes_to_mtu(1024), 3, "1024");
	CHECK_EQ(droce_bytes_to_mtu(1500), 3, "1500");
	CHECK_EQ(droce_eth_mtu_to_path_mtu(1500), 3, "eth 1500");
	CHECK_EQ(droce_eth_mtu_to_path_mtu(9000), 5, "eth 9000");
	CHECK_EQ(droce_eth_mtu_to_path_mtu(4200), 5, "eth 4200");
	CHECK_EQ(droce_eth_mtu_to_path_mtu(4175), 4, "eth 4175");
	/* rxe, verified on the captures (protocol-facts 9). */
	CHECK_EQ(droce_udp_sport_qpn(1), 55410, "QP1 sport");
	CHECK_EQ(droce_udp_sport_flow(0x11, 0x11, 0), 49441, "0x11<->0x11");
	CHECK_EQ(droce_udp_sport_flow(0, 0, 0xc5781), 55216, "rdma_cm flow label");
	droce_gid_from_ipv4(gid, 0x0a4d000c);
	CHECK(droce_gid_is_ipv4(gid, &ip) && ip == 0x0a4d000c, "ipv4 gid");
	CHECK(gid[10] == 0xff && gid[11] == 0xff && gid[0] == 0, "mapped");
	droce_gid_link_local(gid, mac);
	CHECK(!droce_gid_is_ipv4(gid, NULL), "link-local is not ipv4");
	CHECK(gid[0] == 0xfe && gid[1] == 0x80 && gid[8] == 0x50 &&
		gid[11] == 0xff && gid[12] == 0xfe && gid[15] == 0x12,
		"EUI-64 of 52:54:00:77:00:12");
	CHECK_EQ(droce_aeth_credits(0), 0, "credit 0");
	CHECK_EQ(droce_aeth_credits(5), 6, "credit 5");
	CHECK_EQ(droce_aeth_credits(30), 32768, "credit 30");
	CHECK_EQ(droce_aeth_credits(31), -1, "credit 31");
	CHECK_EQ(droce_rnr_timer_us(0), 655360, "rnr 0");
	CHECK_EQ(droce_rnr_timer_us(1), 10, "rnr 1");
	CHECK_EQ(droce_rnr_timer_us(25), 61440, "rnr 25 (not rxe's typo)");
	CHECK_EQ(droce_rnr_timer_us(31), 491520, "rnr 31");
	CHECK_EQ(droce_ack_timeout_ns(0), 0, "timeout 0");
	CHECK_EQ(droce_ack_timeout_ns(19), 2147483648ull, "timeout 19");
	CHECK(droce_wire_strerror(DROCE_WIRE_EICRC) !=
		droce_wire_strerror(DROCE_WIRE_EMTU), "distinct names");
}

static void
test_crc_engine(void)
{
	static uint8_t buf[9000 + 64];
	size_t len, off, i;

	CHECK_EQ(~droce_crc32_update(0xffffffff, "123456789", 9), 0xcbf43926u,
		"CRC-32 check value");
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	printf("crc engine: %s\n", droce_crc32_engine());
	for (i = 0; i < 3000; i++) {
		uint32_t seed = (uint32_t)rnd();

		len = rnd() % 9000;
		off = rnd() % 64;
		CHECK_EQ(droce_crc32_update(seed, buf + off, len),
			droce_crc32_update_sw(seed, buf + off, len), "engines");
	}
	/* Chaining: any split gives the same CRC. */
	for (i = 0; i < 200; i++) {
		size_t cut;

		len = rnd() % 4000 + 1;
		cut = rnd() % len;
		CHECK_EQ(droce_crc32_update(droce_crc32_update(7, buf, cut),
			buf + cut, len - cut), droce_crc32_update(7, buf, len),
			"chained");
	}
	/* droce_icrc (one pass for short frames) against the definition:
	 * eight 0xFF bytes, the masked headers, the rest, table engine */
	for (i = 0; i < 3000; i++) {
		uint8_t f[1200], m[1208];
		uint32_t ip = (i & 1) ? 40 : 20, n, ref;

		n = ip + 8 + 12 + (uint32_t)(rnd() % 1100);
		memcpy(f, buf + rnd() % 64, n);
		f[0] = (i & 1) ? 0x60 | (f[0] & 0x0f) : 0x45;
		memset(m, 0xff, 8);
		memcpy(m + 8, f, n);
		if (ip == 20) {
			m[8 + 1] = m[8 + 8] = m[8 + 10] = m[8 + 11] = 0xff;
		} else {
			m[8] |= 0x0f;
			m[8 + 1] = m[8 + 2] = m[8 + 3] = m[8 + 7] = 0xff;
		}
		m[8 + ip + 6] = m[8 + ip + 7] = m[8 + ip + 8 + 4] = 0xff;
		ref = ~droce_crc32_update_sw(0xffffffffu, m, n + 8);
		CHECK_EQ(droce_icrc(f, n), ref, "ICRC vs definition");
		if (ip == 20)
			CHECK_EQ(droce_icrc_v4(f, n), ref,
				"IPv4 ICRC vs definition");
	}
}

/* Every engine this CPU has, against the table engine and the ICRC's
 * definition; the default engine is put back afterwards. */
static void
test_crc(void)
{
	static const char *const engines[] = { "table", "pclmul", "vpclmul" };
	const char *def = droce_crc32_engine();
	unsigned int i;

	for (i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		if (droce_crc32_set_engine(engines[i]) != 0) {
			printf("crc engine %s: not on this CPU\n", engines[i]);
			continue;
		}
		test_crc_engine();
	}
	CHECK_EQ(droce_crc32_set_engine(def), 0, "default engine back");
}

static void
fill_pkt(struct droce_pkt *p, uint8_t op, int v6, int vlan, uint32_t plen,
		const uint8_t *payload)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(p->src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	p->has_vlan = (uint8_t)vlan;
	p->vlan_tci = vlan ? 0x2064 : 0;
	p->ip_ver = v6 ? 6 : 4;
	p->tclass = 0x68;
	p->ttl = 64;
	p->ip_df = !v6;
	p->ip_id = v6 ? 0 : 0x1234;
	p->flow_label = v6 ? 0xabcde : 0;
	if (v6) {
		memcpy(p->sgid, "\xfd\x00\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
		memcpy(p->dgid, "\xfd\x00\0\0\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
	} else {
		droce_gid_from_ipv4(p->sgid, 0x0a000001);
		droce_gid_from_ipv4(p->dgid, 0x0a000002);
	}
	p->udp_sport = 0xc123;
	p->udp_dport = 4791;
	p->opcode = op;
	p->se = 1;
	p->pkey = 0xffff;
	p->dqpn = 0x123456;
	p->ackreq = 1;
	p->psn = 0xfffffe;
	p->reth_va = 0x1122334455667788ull;
	p->reth_rkey = 0xdeadbeef;
	p->reth_len = 0x10000;
	p->aeth_syndrome = 0x1f;
	p->aeth_msn = 0xabcdef;
	p->atm_va = 0x1000;
	p->atm_rkey = 0x42;
	p->atm_swap_add = 0x0102030405060708ull;
	p->atm_compare = 0x1112131415161718ull;
	p->atmack_orig = 0x2122232425262728ull;
	p->imm_data = 0x78563412;
	p->ieth_rkey = 0xcafe;
	p->deth_qkey = 0x11111111;
	p->deth_sqpn = 0x654321;
	p->feth_plt = DROCE_FLUSH_GLOBAL | DROCE_FLUSH_PERSISTENT;
	p->feth_sel = DROCE_FLUSH_MR;
	p->xrceth_srqn = 0xabcdef;
	if (droce_opcode_info[op].flags & DROCE_OPF_PAYLOAD) {
		p->payload = payload;
		p->payload_len = plen;
	}
}

static void
test_roundtrip(void)
{
	static uint8_t payload[4096], buf[8192], buf2[8192];
	struct droce_pkt a, b;
	int op, v6, vlan, len, len2, rc;
	uint32_t plen;
	size_t i;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)rnd();
	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = &droce_opcode_info[op];

		if (!oi->valid)
			continue;
		for (v6 = 0; v6 < 2; v6++)
		for (vlan = 0; vlan < 2; vlan++) {
			/* Only packets that end a message may pad. */
			plen = (oi->flags & DROCE_OPF_END) ?
				(uint32_t)(rnd() % 1025) : 1024;
			fill_pkt(&a, (uint8_t)op, v6, vlan, plen, payload);
			len = droce_wire_build(&a, buf, sizeof(buf));
			CHECK(len > 0 && (uint32_t)len == droce_wire_frame_len(&a),
				"%s build %d", oi->name, len);
			if (len <= 0)
				continue;
			memset(&b, 0, sizeof(b));
			rc = droce_wire_parse(buf, (uint32_t)len, NULL, &b);
			CHECK(rc == 0, "%s v6=%d vlan=%d: %s", oi->name, v6, vlan,
				droce_wire_strerror(rc));
			if (rc)
				continue;
			CHECK_EQ(b.opcode, op, "opcode");
			CHECK_EQ(b.payload_len, a.payload_len, oi->name);
			CHECK_EQ(b.padcnt, (0u - a.payload_len) & 3, "padcnt");
			CHECK(a.payload_len == 0 ||
				memcmp(b.payload, payload, a.payload_len) == 0,
				"%s payload", oi->name);
			CHECK_EQ(b.psn, 0xfffffe, "psn");
			CHECK_EQ(b.dqpn, 0x123456, "dqpn");
			CHECK_EQ(b.vlan_tci, vlan ? 0x2064 : 0, "vlan");
			CHECK_EQ(b.flow_label, v6 ? 0xabcde : 0, "flow label");
			CHECK(memcmp(b.dgid, a.dgid, 16) == 0, "dgid");
			if (oi->hdrs & DROCE_HDR_RETH)
				CHECK(b.reth_va == a.reth_va &&
					b.reth_rkey == a.reth_rkey &&
					b.reth_len == a.reth_len, "reth");
			if (oi->hdrs & DROCE_HDR_ATMETH)
				CHECK(b.atm_swap_add == a.atm_swap_add &&
					b.atm_compare == a.atm_compare &&
					b.atm_rkey == a.atm_rkey, "atomiceth");
			if (oi->hdrs & DROCE_HDR_AETH)
				CHECK(b.aeth_msn == 0xabcdef &&
					b.aeth_syndrome == 0x1f, "aeth");
			if (oi->hdrs & DROCE_HDR_ATMACK)
				CHECK_EQ(b.atmack_orig, a.atmack_orig, "atmack");
			if (oi->hdrs & DROCE_HDR_FETH)
				CHECK(b.feth_plt == a.feth_plt &&
					b.feth_sel == a.feth_sel, "feth");
			if (oi->hdrs & DROCE_HDR_IMMDT)
				CHECK_EQ(b.imm_data, a.imm_data, "imm");
			if (oi->hdrs & DROCE_HDR_IETH)
				CHECK_EQ(b.ieth_rkey, 0xcafe, "ieth");
			if (oi->hdrs & DROCE_HDR_DETH)
				CHECK(b.deth_qkey == 0x11111111 &&
					b.deth_sqpn == 0x654321, "deth");
			if (oi->hdrs & DROCE_HDR_XRCETH)
				CHECK_EQ(b.xrceth_srqn, 0xabcdef, "xrceth");
			/* And back again, byte for byte. */
			len2 = droce_wire_build(&b, buf2, sizeof(buf2));
			CHECK(len2 == len && memcmp(buf, buf2, len) == 0,
				"%s re-encode", oi->name);
			/* A computed UDP checksum verifies. */
			a.udp_csum = 1;
			len = droce_wire_build(&a, buf, sizeof(buf));
			{
				struct droce_parse_opts o = { .verify_udp_csum = 1 };

				rc = droce_wire_parse(buf, (uint32_t)len, &o, &b);
				CHECK(rc == 0 && b.udp_csum != 0,
					"%s udp csum: %s", oi->name,
					droce_wire_strerror(rc));
			}
		}
	}
	/* The split build (headers, payload placed by the caller, finish). */
	fill_pkt(&a, DROCE_OP_RC_SEND_ONLY, 0, 0, 777, payload);
	len = droce_wire_build_hdr(&a, buf, sizeof(buf));
	CHECK(len > 0, "build_hdr");
	memcpy(buf + len, payload, 777);
	len2 = (int)droce_wire_finish(buf, (uint32_t)len, 777);
	CHECK_EQ(len2, droce_wire_frame_len(&a), "finish length");
	CHECK_EQ(droce_wire_parse(buf, (uint32_t)len2, NULL, &b), 0, "split parse");
	CHECK_EQ(droce_wire_build(&a, buf, 10), -ENOSPC, "ENOSPC");
	a.opcode = 0x18;
	CHECK_EQ(droce_wire_build(&a, buf, sizeof(buf)), -EINVAL, "EINVAL");
}

/*
 * The template builder (droce_wire_build_hdr_tmpl) gives the same bytes as
 * the generic one for every opcode, IP version, VLAN and pad, and reads
 * none of the fields it documents as ignored.
 */
static void
test_tmpl(void)
{
	static uint8_t payload[1024], buf[2048], buf2[2048];
	struct droce_hdr_tmpl t;
	struct droce_pkt a, g;
	int op, v6, vlan, len, len2, n;
	uint32_t plen;

	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = &droce_opcode_info[op];

		if (!oi->valid)
			continue;
		for (v6 = 0; v6 < 2; v6++)
		for (vlan = 0; vlan < 2; vlan++)
		for (n = 0; n < 4; n++) {
			plen = (oi->flags & DROCE_OPF_END) ?
				(uint32_t)(rnd() % 1025) : 1024;
			fill_pkt(&a, (uint8_t)op, v6, vlan, plen, payload);
			a.ip_id = 0;	/* the template keeps one ID */
			a.psn = (uint32_t)rnd() & 0xffffff;
			a.ackreq = n & 1;
			a.se = (n >> 1) & 1;
			CHECK_EQ(droce_wire_tmpl_init(&t, &a), 0, "tmpl init");
			len = droce_wire_build_hdr(&a, buf, sizeof(buf));
			/* what the template path ignores: garbage in g */
			g = a;
			memset(g.src_mac, 0xa5, 6);
			memset(g.dgid, 0x5a, 16);
			g.udp_sport = 1;
			g.ttl = 3;
			g.pkey = 7;
			g.migreq = g.fecn = g.becn = 0;
			g.tver = g.bth_resv6 = g.bth_resv7 = 0;
			memset(buf2, 0xee, sizeof(buf2));
			len2 = droce_wire_build_hdr_tmpl(&t, &g, buf2);
			CHECK(len == len2 && len > 0 &&
				memcmp(buf, buf2, (size_t)len) == 0,
				"%s v6=%d vlan=%d tmpl header", oi->name, v6,
				vlan);
			/* and it finishes into a frame the parser accepts */
			memcpy(buf2 + len2, payload, a.payload_len);
			len2 = (int)droce_wire_finish(buf2, (uint32_t)len2,
				a.payload_len);
			CHECK_EQ(droce_wire_parse(buf2, (uint32_t)len2, NULL, &g),
				0, "tmpl frame parses");
		}
	}
	fill_pkt(&a, DROCE_OP_RC_SEND_ONLY, 0, 0, 0, payload);
	a.ip_ver = 5;
	CHECK_EQ(droce_wire_tmpl_init(&t, &a), -EINVAL, "tmpl bad IP");
	a.ip_ver = 4;
	droce_wire_tmpl_init(&t, &a);
	a.opcode = 0x18;
	CHECK_EQ(droce_wire_build_hdr_tmpl(&t, &a, buf), -EINVAL,
		"tmpl bad opcode");
}

/*
 * Linux rxe's FLUSH ICRC (kernel 6.12, captured from its requester): the
 * headers a second time after the masked ones. The parser takes it for a
 * FLUSH only, marked; droce_wire_set_icrc_rxe_flush writes it.
 */
static void
test_rxe_flush_icrc(void)
{
	static const uint8_t rxe[78] = {
		0x02, 0xd0, 0xce, 0x4e, 0x18, 0x03, 0x52, 0x54, 0x00, 0x4e,
		0x18, 0x02, 0x08, 0x00, 0x45, 0x00, 0x00, 0x40, 0xfa, 0xc9,
		0x40, 0x00, 0x40, 0x11, 0xfb, 0x42, 0x0a, 0x4e, 0x18, 0x02,
		0x0a, 0x4e, 0x18, 0x03, 0xc1, 0x21, 0x12, 0xb7, 0x00, 0x2c,
		0x00, 0x00, 0x1c, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
		0x80, 0x73, 0x1a, 0x14, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
		0x7f, 0x33, 0x6a, 0xeb, 0x70, 0x00, 0x00, 0x00, 0x02, 0x01,
		0x00, 0x00, 0x20, 0x00, 0x6a, 0x26, 0x4a, 0xbe,
	};
	uint8_t f[sizeof(rxe)], buf[256];
	struct droce_pkt p;
	int len, rc, v6, vlan;

	memset(&p, 0, sizeof(p));
	CHECK_EQ(droce_wire_parse(rxe, sizeof(rxe), NULL, &p), 0,
		"rxe's FLUSH parses");
	CHECK_EQ(p.icrc_rxe_flush, 1, "marked as rxe's ICRC");
	CHECK(p.feth_plt == DROCE_FLUSH_GLOBAL && p.feth_sel ==
		DROCE_FLUSH_RANGE && p.reth_len == 8192 && p.reth_rkey == 0x201,
		"rxe's FETH and RETH");
	/* re-encoded: the spec's ICRC, then rxe's again */
	len = droce_wire_build(&p, f, sizeof(f));
	CHECK_EQ(len, (int)sizeof(rxe), "re-encoded length");
	CHECK(memcmp(f, rxe, sizeof(rxe) - 4) == 0 &&
		memcmp(f + 74, rxe + 74, 4) != 0, "the spec's ICRC differs");
	memset(&p, 0, sizeof(p));
	CHECK_EQ(droce_wire_parse(f, sizeof(f), NULL, &p), 0, "spec's parses");
	CHECK_EQ(p.icrc_rxe_flush, 0, "not marked");
	droce_wire_set_icrc_rxe_flush(f, sizeof(f));
	CHECK(memcmp(f, rxe, sizeof(rxe)) == 0, "rxe's ICRC rewritten exactly");
	/* another byte changed: neither ICRC matches */
	f[60] ^= 1;
	CHECK_EQ(droce_wire_parse(f, sizeof(f), NULL, &p), DROCE_WIRE_EICRC,
		"a damaged rxe FLUSH");
	/* only a FLUSH may carry it: an ATOMIC WRITE with that ICRC kind */
	for (v6 = 0; v6 < 2; v6++)
	for (vlan = 0; vlan < 2; vlan++) {
		fill_pkt(&p, DROCE_OP_RC_FLUSH, v6, vlan, 0, NULL);
		len = droce_wire_build(&p, buf, sizeof(buf));
		droce_wire_set_icrc_rxe_flush(buf, (uint32_t)len);
		memset(&p, 0, sizeof(p));
		rc = droce_wire_parse(buf, (uint32_t)len, NULL, &p);
		CHECK(rc == 0 && p.icrc_rxe_flush, "v6 %d vlan %d: rxe's taken",
			v6, vlan);
		fill_pkt(&p, DROCE_OP_RC_READ_REQ, v6, vlan, 0, NULL);
		len = droce_wire_build(&p, buf, sizeof(buf));
		droce_wire_set_icrc_rxe_flush(buf, (uint32_t)len);
		CHECK_EQ(droce_wire_parse(buf, (uint32_t)len, NULL, &p),
			DROCE_WIRE_EICRC, "a READ with that ICRC: refused");
	}
}

int
main(void)
{
	test_table();
	test_psn();
	test_misc();
	test_crc();
	test_roundtrip();
	test_tmpl();
	test_rxe_flush_icrc();
	return check_report("test_wire_unit");
}
