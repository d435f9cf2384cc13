/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef PCAPIO_H
#define PCAPIO_H

/* Test helper: whole pcap files in and out of memory, through libpcap. */

#include <stddef.h>
#include <stdint.h>

struct pcap_frame {
	uint8_t *data;
	uint32_t len;
};

/* Load every frame of path; returns the count or -1 (message printed). */
int pcapio_load(const char *path, struct pcap_frame **frames);
void pcapio_free(struct pcap_frame *frames, int n);

/* Write frames as an Ethernet pcap; 0 or -1. */
int pcapio_save(const char *path, const struct pcap_frame *frames, int n);

#endif
