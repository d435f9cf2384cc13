/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "pcapio.h"

int
pcapio_load(const char *path, struct pcap_frame **frames)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	struct pcap_frame *v = NULL;
	int n = 0, cap = 0;
	pcap_t *p;

	p = pcap_open_offline(path, err);
	if (p == NULL) {
		fprintf(stderr, "%s: %s\n", path, err);
		return -1;
	}
	while (pcap_next_ex(p, &h, &d) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, sizeof(*v) * cap);
			if (v == NULL)
				abort();
		}
		v[n].len = h->caplen;
		v[n].data = malloc(h->caplen ? h->caplen : 1);
		if (v[n].data == NULL)
			abort();
		memcpy(v[n].data, d, h->caplen);
		n++;
	}
	pcap_close(p);
	*frames = v;
	return n;
}

void
pcapio_free(struct pcap_frame *frames, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(frames[i].data);
	free(frames);
}

int
pcapio_save(const char *path, const struct pcap_frame *frames, int n)
{
	struct pcap_pkthdr h;
	pcap_dumper_t *dump;
	pcap_t *p;
	int i;

	p = pcap_open_dead(DLT_EN10MB, 65535);
	if (p == NULL)
		return -1;
	dump = pcap_dump_open(p, path);
	if (dump == NULL) {
		fprintf(stderr, "%s: %s\n", path, pcap_geterr(p));
		pcap_close(p);
		return -1;
	}
	for (i = 0; i < n; i++) {
		memset(&h, 0, sizeof(h));
		h.ts.tv_sec = i / 1000;
		h.ts.tv_usec = (i % 1000) * 1000;
		h.caplen = h.len = frames[i].len;
		pcap_dump((u_char *)dump, &h, frames[i].data);
	}
	pcap_dump_close(dump);
	pcap_close(p);
	return 0;
}
