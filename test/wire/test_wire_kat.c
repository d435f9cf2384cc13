/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Known answers from real traffic: every UDP 4791 frame of the rxe
 * captures parses, its ICRC verifies, and re-encoding the parsed headers
 * and payload reproduces the frame byte for byte.
 */

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "droce_wire.h"
#include "parse_rx_same.h"
#include "pcapio.h"

/* Independent of the parser: IPv4/IPv6 + UDP to port 4791. */
static int
is_roce(const uint8_t *f, uint32_t len)
{
	uint32_t l3 = 14, l4;
	uint16_t et;

	if (len < 14)
		return 0;
	et = (uint16_t)(f[12] << 8 | f[13]);
	if (et == 0x8100) {
		l3 = 18;
		if (len < 18)
			return 0;
		et = (uint16_t)(f[16] << 8 | f[17]);
	}
	if (et == 0x0800 && len >= l3 + 28 && f[l3 + 9] == 17)
		l4 = l3 + (f[l3] & 0xf) * 4u;
	else if (et == 0x86dd && len >= l3 + 48 && f[l3 + 6] == 17)
		l4 = l3 + 40;
	else
		return 0;
	return len >= l4 + 4 && (f[l4 + 2] << 8 | f[l4 + 3]) == 4791;
}

int
main(int argc, char **argv)
{
	static uint8_t buf[16384];
	unsigned int per_op[256] = { 0 };
	int total = 0, fast = 0, want_fast = 0, i, a, n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PCAP...\n", argv[0]);
		return 2;
	}
	for (a = 1; a < argc; a++) {
		struct pcap_frame *fr;
		int roce = 0;

		n = pcapio_load(argv[a], &fr);
		CHECK(n > 0, "%s: no frames", argv[a]);
		for (i = 0; i < n; i++) {
			struct droce_pkt pkt;
			int rc, blen;

			if (!is_roce(fr[i].data, fr[i].len))
				continue;
			roce++;
			memset(&pkt, 0, sizeof(pkt));
			rc = droce_wire_parse(fr[i].data, fr[i].len, NULL, &pkt);
			CHECK(rc == 0, "%s frame %d: %s", argv[a], i + 1,
				droce_wire_strerror(rc));
			if (rc)
				continue;
			parse_rx_same(fr[i].data, fr[i].len, NULL);
			/* every whole RC, UC or UD frame over IPv4 takes
			 * the fast receive of its QP (but a FLUSH with rxe's
			 * ICRC: the full one marks it) */
			fast += parse_rx_fast_same(fr[i].data, fr[i].len,
				fr[i].data, fr[i].len);
			if (pkt.ip_ver == 4 && !pkt.has_vlan &&
					!pkt.icrc_rxe_flush &&
					((pkt.opcode & DROCE_TRANSPORT_MASK) <=
					DROCE_TRANSPORT_UC ||
					(pkt.opcode & DROCE_TRANSPORT_MASK) ==
					DROCE_TRANSPORT_UD))
				want_fast++;
			per_op[pkt.opcode]++;
			blen = droce_wire_build(&pkt, buf, sizeof(buf));
			CHECK(blen == (int)fr[i].len,
				"%s frame %d: rebuilt %d bytes, want %u",
				argv[a], i + 1, blen, fr[i].len);
			if (blen == (int)fr[i].len)
				CHECK(memcmp(buf, fr[i].data, fr[i].len) == 0,
					"%s frame %d: rebuilt bytes differ",
					argv[a], i + 1);
		}
		CHECK(roce > 0, "%s: no RoCEv2 frames", argv[a]);
		printf("%s: %d RoCEv2 frames\n", argv[a], roce);
		total += roce;
		pcapio_free(fr, n);
	}
	for (i = 0; i < 256; i++)
		if (per_op[i])
			printf("  %-40s %u\n", droce_opcode_info[i].name,
				per_op[i]);
	printf("total %d RoCEv2 frames, %d by the fast receive\n", total,
		fast);
	CHECK(fast == want_fast && fast > 0,
		"fast receive took %d frames, want %d", fast, want_fast);
	return check_report("test_wire_kat");
}
