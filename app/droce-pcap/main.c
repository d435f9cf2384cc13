/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-pcap: decode and verify the RoCEv2 frames of pcap files with
 * lib/wire. For every UDP 4791 frame: parse strictly, verify the ICRC,
 * re-encode the parsed headers and payload and compare byte for byte.
 * Other frames (the tools' TCP side channel, ARP) are skipped.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "droce_wire.h"

static int opt_dump;

static void
dump(unsigned long n, const struct droce_pkt *p)
{
	const struct droce_opcode_info *oi = &droce_opcode_info[p->opcode];

	printf("%6lu %-34s qp 0x%06x psn %8u%s len %5u", n, oi->name, p->dqpn,
		p->psn, p->ackreq ? " A" : "  ", p->payload_len);
	if (oi->hdrs & DROCE_HDR_RETH)
		printf(" va 0x%llx rkey 0x%x dma %u",
			(unsigned long long)p->reth_va, p->reth_rkey, p->reth_len);
	if (oi->hdrs & DROCE_HDR_AETH)
		printf(" syn 0x%02x msn %u", p->aeth_syndrome, p->aeth_msn);
	if (oi->hdrs & DROCE_HDR_DETH)
		printf(" qkey 0x%x sqp 0x%x", p->deth_qkey, p->deth_sqpn);
	printf("\n");
}

static int
verify_file(const char *path, unsigned long *bad_total)
{
	static uint8_t buf[65536];
	unsigned long frames = 0, roce = 0, bad = 0, rxe_flush = 0;
	unsigned long per_op[256] = { 0 };
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *pc;
	int i;

	pc = pcap_open_offline(path, err);
	if (pc == NULL) {
		fprintf(stderr, "droce-pcap: %s: %s\n", path, err);
		return -1;
	}
	while (pcap_next_ex(pc, &h, &d) == 1) {
		struct droce_pkt pkt;
		int rc, blen;

		frames++;
		if (droce_wire_peek_dqpn(d, h->caplen) < 0)
			continue;
		roce++;
		memset(&pkt, 0, sizeof(pkt));
		rc = droce_wire_parse(d, h->caplen, NULL, &pkt);
		if (rc != 0) {
			printf("%s: frame %lu: %s\n", path, frames,
				droce_wire_strerror(rc));
			bad++;
			continue;
		}
		per_op[pkt.opcode]++;
		if (opt_dump)
			dump(frames, &pkt);
		blen = droce_wire_build(&pkt, buf, sizeof(buf));
		/* Linux rxe's FLUSH ICRC (droce_icrc_rxe_flush): the same
		 * frame but for the ICRC the builder computes the spec's way */
		if (pkt.icrc_rxe_flush && blen == (int)h->caplen) {
			droce_wire_set_icrc_rxe_flush(buf, (uint32_t)blen);
			rxe_flush++;
		}
		if (blen != (int)h->caplen || memcmp(buf, d, h->caplen) != 0) {
			printf("%s: frame %lu: re-encoding differs\n", path,
				frames);
			bad++;
		}
	}
	pcap_close(pc);
	printf("%s: %lu frames, %lu RoCEv2, %lu bad\n", path, frames, roce, bad);
	if (rxe_flush)
		printf("    %lu FLUSH with Linux rxe's ICRC, not the spec's\n",
			rxe_flush);
	for (i = 0; i < 256; i++)
		if (per_op[i])
			printf("    %-36s %lu\n", droce_opcode_info[i].name,
				per_op[i]);
	*bad_total += bad;
	return roce ? 0 : -1;
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: droce-pcap [--verify] [--dump] FILE.pcap...\n"
		"  Parse every RoCEv2 (UDP 4791) frame strictly, verify its ICRC\n"
		"  and re-encode it byte for byte. Exit 1 on any failure.\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verify", no_argument, NULL, 'v' },
		{ "dump", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long bad = 0;
	int c, i, rc = 0;

	while ((c = getopt_long(argc, argv, "vdh", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			break;	/* verifying is what droce-pcap always does */
		case 'd':
			opt_dump = 1;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		usage();
		return 2;
	}
	for (i = optind; i < argc; i++)
		if (verify_file(argv[i], &bad) < 0)
			rc = 1;
	printf("droce-pcap: %s (%lu bad frames)\n",
		rc == 0 && bad == 0 ? "all RoCEv2 frames verified" : "FAILED", bad);
	return rc || bad ? 1 : 0;
}
