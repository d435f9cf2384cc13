/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-wire-bench: ICRC throughput (GB/s per core) by frame size, for the
 * engine droce picked and for the portable table engine, and strict parse
 * rate (Mframes/s per core, ICRC verified and not) on real frame shapes.
 * A benchmark, not a test: it prints figures and never fails on them.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "droce_wire.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static double
crc_gbps(crc_fn fn, const uint8_t *buf, size_t len, double secs)
{
	volatile uint32_t sink = 0;
	double t0 = now_s(), t;
	uint64_t bytes = 0;
	int i;

	do {
		for (i = 0; i < 256; i++)
			sink += fn(sink, buf, len);
		bytes += 256 * len;
		t = now_s();
	} while (t - t0 < secs);
	return bytes / (t - t0) / 1e9;
}

static void
make_frame(uint8_t *f, int *len, uint8_t op, uint32_t plen,
		const uint8_t *payload)
{
	struct droce_pkt p;

	memset(&p, 0, sizeof(p));
	p.ip_ver = 4;
	p.ttl = 64;
	p.ip_df = 1;
	droce_gid_from_ipv4(p.sgid, 0x0a000001);
	droce_gid_from_ipv4(p.dgid, 0x0a000002);
	p.udp_sport = 0xc000;
	p.opcode = op;
	p.pkey = 0xffff;
	p.dqpn = 0x11;
	p.psn = 1;
	p.reth_len = plen;
	p.payload = payload;
	p.payload_len = plen;
	*len = droce_wire_build(&p, f, 10000);
}

static double
parse_mfps(const uint8_t *f, int len, int skip_icrc, double secs)
{
	struct droce_parse_opts o = { .skip_icrc = (uint8_t)skip_icrc };
	struct droce_pkt p;
	double t0 = now_s(), t;
	uint64_t n = 0;
	int i, bad = 0;

	do {
		for (i = 0; i < 1024; i++)
			bad |= droce_wire_parse(f, (uint32_t)len, &o, &p);
		n += 1024;
		t = now_s();
	} while (t - t0 < secs);
	if (bad)
		fprintf(stderr, "parse failed: %s\n", droce_wire_strerror(bad));
	return n / (t - t0) / 1e6;
}

int
main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 256, 1024, 4096, 9000 };
	static uint8_t buf[16384], frame[10000];
	double secs = argc > 1 ? atof(argv[1]) : 0.5;
	unsigned int i;
	int len;

	if (argc > 2 && droce_crc32_set_engine(argv[2]) != 0) {
		fprintf(stderr, "no CRC engine %s on this CPU\n", argv[2]);
		return 1;
	}
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	printf("ICRC / CRC-32 throughput, one core (engine: %s)\n",
		droce_crc32_engine());
	printf("%8s %14s %14s\n", "bytes", "GB/s", "table GB/s");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		printf("%8zu %14.2f %14.2f\n", sizes[i],
			crc_gbps(droce_crc32_update, buf, sizes[i], secs),
			crc_gbps(droce_crc32_update_sw, buf, sizes[i], secs));

	printf("\nStrict parse, one core (Mframes/s)\n");
	printf("%-28s %8s %14s %14s\n", "frame", "bytes", "with ICRC",
		"ICRC skipped");
	make_frame(frame, &len, DROCE_OP_RC_ACK, 0, buf);
	printf("%-28s %8d %14.2f %14.2f\n", "RC ACK", len,
		parse_mfps(frame, len, 0, secs), parse_mfps(frame, len, 1, secs));
	make_frame(frame, &len, DROCE_OP_RC_WRITE_ONLY, 64, buf);
	printf("%-28s %8d %14.2f %14.2f\n", "RC WRITE_ONLY 64 B", len,
		parse_mfps(frame, len, 0, secs), parse_mfps(frame, len, 1, secs));
	make_frame(frame, &len, DROCE_OP_RC_SEND_ONLY, 1024, buf);
	printf("%-28s %8d %14.2f %14.2f\n", "RC SEND_ONLY 1024 B", len,
		parse_mfps(frame, len, 0, secs), parse_mfps(frame, len, 1, secs));
	make_frame(frame, &len, DROCE_OP_RC_WRITE_MIDDLE, 4096, buf);
	printf("%-28s %8d %14.2f %14.2f\n", "RC WRITE_MIDDLE 4096 B", len,
		parse_mfps(frame, len, 0, secs), parse_mfps(frame, len, 1, secs));
	return 0;
}
