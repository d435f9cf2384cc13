/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * libFuzzer target for the wire parser. Besides "no crash, no sanitizer
 * report", it checks a property: a frame the parser accepts re-encodes to
 * a frame that parses to the same fields and the same bytes; and the
 * transport's receive parse (droce_wire_parse_rx) gives every input the
 * same verdict and the same fields it reads; the fast receive of a
 * connected QP (droce_wire_parse_rx_fast) takes nothing the full parse
 * would not.
 */

#include <stdlib.h>
#include <string.h>

#include "droce_wire.h"
#include "parse_rx_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[70000], buf2[70000];
	struct droce_parse_opts opts = { 0 };
	struct droce_pkt a, b;
	uint8_t *copy;
	int len, len2;

	if (size > 65536)
		return 0;
	/* An exact-size heap copy, so ASan sees any read past the end. */
	copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	if (size > 0)
		opts.path_mtu = 256u << (data[0] % 5);
	check_failures = 0;
	parse_rx_same(copy, (uint32_t)size, &opts);
	/* the fast receive by the template of the frame's own QP */
	parse_rx_fast_same(copy, (uint32_t)size, copy, (uint32_t)size);
	if (check_failures)
		abort();
	if (droce_wire_parse(copy, (uint32_t)size, &opts, &a) == 0) {
		len = droce_wire_build(&a, buf, sizeof(buf));
		if (len <= 0)
			abort();
		if (droce_wire_parse(buf, (uint32_t)len, &opts, &b) != 0)
			abort();
		if (b.opcode != a.opcode || b.psn != a.psn ||
				b.payload_len != a.payload_len ||
				memcmp(b.payload, a.payload, a.payload_len) != 0)
			abort();
		len2 = droce_wire_build(&b, buf2, sizeof(buf2));
		if (len2 != len || memcmp(buf, buf2, len) != 0)
			abort();
	}
	free(copy);
	return 0;
}
