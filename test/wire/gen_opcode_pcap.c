/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Writes one frame from droce's builder for every opcode, over IPv4 and
 * IPv6, with payload sizes that need every PadCnt, to a pcap; and a
 * manifest line per frame (index, opcode, name) for the checker scripts.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_wire.h"
#include "pcapio.h"

int
main(int argc, char **argv)
{
	static uint8_t payload[1024];
	struct pcap_frame fr[1024];
	struct droce_pkt p;
	FILE *man;
	int op, v6, n = 0, len, i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s OUT.pcap MANIFEST\n", argv[0]);
		return 2;
	}
	for (i = 0; i < (int)sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	man = fopen(argv[2], "w");
	if (man == NULL) {
		perror(argv[2]);
		return 1;
	}
	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = &droce_opcode_info[op];

		if (!oi->valid)
			continue;
		for (v6 = 0; v6 < 2; v6++) {
			memset(&p, 0, sizeof(p));
			memcpy(p.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
			memcpy(p.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
			p.ip_ver = v6 ? 6 : 4;
			p.ttl = 64;
			p.ip_df = !v6;
			if (v6) {
				memcpy(p.sgid, "\xfd\x00\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
				memcpy(p.dgid, "\xfd\x00\0\0\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
			} else {
				droce_gid_from_ipv4(p.sgid, 0x0a4d0001);
				droce_gid_from_ipv4(p.dgid, 0x0a4d0002);
			}
			p.udp_sport = droce_udp_sport_flow(0x11, 0x12, 0);
			p.opcode = (uint8_t)op;
			p.pkey = 0xffff;
			p.dqpn = op == DROCE_OP_CNP ? 0xd2 : 0x12;
			p.becn = op == DROCE_OP_CNP;
			p.ackreq = (oi->flags & DROCE_OPF_WANT_ACK) &&
				(oi->flags & DROCE_OPF_END);
			p.psn = op == DROCE_OP_CNP ? 0 : 0x100 + (uint32_t)n;
			p.reth_va = 0x7f0000001000ull;
			p.reth_rkey = 0x1234;
			p.reth_len = 4096;
			p.aeth_syndrome = DROCE_AETH_ACK_NOCREDIT;
			p.aeth_msn = 7;
			p.atm_va = 0x7f0000002000ull;
			p.atm_rkey = 0x1234;
			p.atm_swap_add = 1;
			p.atmack_orig = 41;
			p.imm_data = 0x44332211;
			p.ieth_rkey = 0x5678;
			p.deth_qkey = 0x11111111;
			p.deth_sqpn = 0x11;
			p.xrceth_srqn = 0x2a;
			if (oi->flags & DROCE_OPF_PAYLOAD) {
				p.payload = payload;
				/* non-final packets carry a full MTU, final
				 * ones an odd size that needs padding */
				p.payload_len = (oi->flags & DROCE_OPF_END) ?
					(uint32_t)(1021 + (n % 3)) : 1024;
			}
			/* a FLUSH of a range to global visibility */
			p.feth_plt = DROCE_FLUSH_GLOBAL;
			p.feth_sel = DROCE_FLUSH_RANGE;
			if (op == DROCE_OP_RC_ATOMIC_WRITE) {
				/* one aligned 64-bit word, as a requester
				 * sends it */
				p.reth_len = DROCE_ATOMIC_WRITE_LEN;
				p.payload_len = DROCE_ATOMIC_WRITE_LEN;
			}
			len = (int)droce_wire_frame_len(&p);
			fr[n].data = malloc(len);
			fr[n].len = (uint32_t)droce_wire_build(&p, fr[n].data,
				(uint32_t)len);
			if ((int)fr[n].len != len) {
				fprintf(stderr, "build %s failed\n", oi->name);
				return 1;
			}
			fprintf(man, "%d 0x%02x %s %d\n", n + 1, op, oi->name,
				v6 ? 6 : 4);
			n++;
		}
	}
	fclose(man);
	if (pcapio_save(argv[1], fr, n) != 0)
		return 1;
	for (i = 0; i < n; i++)
		free(fr[i].data);
	printf("wrote %d frames\n", n);
	return 0;
}
