/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The simulated fabric (fabric.h). Time moves in steps; within a step the
 * switch takes the frames that reached it in the order they arrived, so
 * queue depths, marks and drops are what they would be at that instant.
 * Each egress queue is a FIFO whose frames carry the time their last bit
 * leaves: the depth at any moment is the bytes not yet sent.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"

#define FAB_CAP 10240
/* preamble, start delimiter and the gap between frames, and the FCS */
#define FAB_WIRE_EXTRA (8 + 12 + 4)

static uint64_t
fab_rand(struct fabric *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void
fifo_push(struct fab_fifo *q, struct fab_frame *fr)
{
	fr->next = NULL;
	if (q->tail)
		q->tail->next = fr;
	else
		q->head = fr;
	q->tail = fr;
}

static struct fab_frame *
fifo_pop(struct fab_fifo *q)
{
	struct fab_frame *fr = q->head;

	q->head = fr->next;
	if (q->head == NULL)
		q->tail = NULL;
	return fr;
}

static uint64_t
wire_ns(const struct fabric *f, uint32_t wire)
{
	return ((uint64_t)wire * 8 * 1000000000ull + f->c.rate_bps - 1) /
		f->c.rate_bps;
}

static uint32_t
fab_tx_alloc(void *arg, struct droce_txbuf *bufs, uint32_t n, uint32_t cap)
{
	struct fab_host *h = arg;
	uint32_t i;

	if (cap > FAB_CAP || h->nic_free > h->fab->now + h->fab->c.nic_queue_ns)
		return 0;	/* the NIC's ring is full */
	for (i = 0; i < n; i++) {
		bufs[i].data = malloc(FAB_CAP);
		if (bufs[i].data == NULL)
			break;
		bufs[i].cap = FAB_CAP;
		bufs[i].len = 0;
		bufs[i].cookie = NULL;
	}
	return i;
}

static void
fab_tx_free(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	uint32_t i;

	(void)arg;
	for (i = 0; i < n; i++)
		free(bufs[i].data);
}

/* The host the frame's destination MAC names; hosts when none. */
static uint32_t
host_of_mac(const struct fabric *f, const uint8_t *mac)
{
	uint32_t i = (uint32_t)mac[4] << 8 | mac[5];

	if (i == 0 || i > f->c.hosts || memcmp(mac, f->h[i - 1].mac, 6) != 0)
		return f->c.hosts;
	return i - 1;
}

/* The NIC puts the host's frames on its uplink, one after another. */
static void
fab_tx_submit(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	struct fab_host *h = arg;
	struct fabric *f = h->fab;
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct fab_frame *fr = calloc(1, sizeof(*fr));
		uint64_t start;

		fr->data = bufs[i].data;
		fr->len = bufs[i].len;
		fr->wire = fr->len + FAB_WIRE_EXTRA;
		fr->src = h->idx;
		fr->dst = host_of_mac(f, fr->data);
		start = h->nic_free > f->now ? h->nic_free : f->now;
		h->nic_free = start + wire_ns(f, fr->wire);
		fr->due = h->nic_free + f->c.delay_ns;
		fifo_push(&h->up, fr);
	}
}

static void
frame_free(struct fab_frame *fr)
{
	free(fr->data);
	free(fr);
}

/* Frames of port p whose last bit has left by t go on toward its host. */
static void
port_drain(struct fabric *f, uint32_t i, uint64_t t)
{
	struct fab_port *p = &f->p[i];

	while (p->q.head && p->q.head->due <= t) {
		struct fab_frame *fr = fifo_pop(&p->q);

		p->qbytes -= fr->wire;
		fr->due += f->c.delay_ns;
		fifo_push(&f->h[i].down, fr);
	}
}

/* RED: no mark below kmin, probability rising to pmax at kmax, all above. */
static int
red_mark(struct fabric *f, uint64_t q)
{
	uint64_t span;

	if (f->c.no_mark || q <= f->c.kmin)
		return 0;
	if (q >= f->c.kmax)
		return 1;
	span = f->c.kmax - f->c.kmin;
	return fab_rand(f) % (span * 1000000) <
		(q - f->c.kmin) * (uint64_t)f->c.pmax_ppm;
}

/* A frame reaches the switch at fr->due: queued, marked or dropped. */
static void
switch_in(struct fabric *f, struct fab_frame *fr)
{
	struct fab_port *p;
	uint64_t start;

	if (fr->dst >= f->c.hosts) {
		frame_free(fr);		/* no such host */
		return;
	}
	port_drain(f, fr->dst, fr->due);
	p = &f->p[fr->dst];
	if (p->qbytes + fr->wire > f->c.buffer) {
		p->dropped++;
		frame_free(fr);
		return;
	}
	if (red_mark(f, p->qbytes) && fl_mark_ce(fr->data, fr->len))
		p->marked++;
	start = p->last_finish > fr->due ? p->last_finish : fr->due;
	p->last_finish = start + wire_ns(f, fr->wire);
	p->qbytes += fr->wire;
	if (p->qbytes > p->qmax)
		p->qmax = p->qbytes;
	p->enq++;
	p->tx_bytes += fr->wire;
	p->src_bytes[fr->src] += fr->wire;
	fr->due = p->last_finish;
	fifo_push(&p->q, fr);
}

static int
cmp_due(const void *a, const void *b)
{
	const struct fab_frame *x = *(struct fab_frame *const *)a;
	const struct fab_frame *y = *(struct fab_frame *const *)b;

	if (x->due != y->due)
		return x->due < y->due ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

void
fab_step(struct fabric *f, uint64_t dt)
{
	const uint8_t *frames[64];
	struct fab_frame *got[64];
	uint32_t lens[64];
	uint32_t i, k, n = 0;

	f->now += dt;
	/* what reached the switch, in the order it arrived */
	for (i = 0; i < f->c.hosts; i++) {
		struct fab_host *h = &f->h[i];

		while (h->up.head && h->up.head->due <= f->now) {
			if (n == f->nscratch) {
				f->nscratch = f->nscratch ? 2 * f->nscratch : 256;
				f->scratch = realloc(f->scratch, f->nscratch *
					sizeof(*f->scratch));
			}
			f->scratch[n++] = fifo_pop(&h->up);
		}
	}
	if (n > 1)
		qsort(f->scratch, n, sizeof(*f->scratch), cmp_due);
	for (k = 0; k < n; k++)
		switch_in(f, f->scratch[k]);
	for (i = 0; i < f->c.hosts; i++) {
		struct fab_host *h = &f->h[i];

		port_drain(f, i, f->now);
		while (h->down.head && h->down.head->due <= f->now) {
			for (n = 0; n < 64 && h->down.head &&
					h->down.head->due <= f->now; n++) {
				got[n] = fifo_pop(&h->down);
				frames[n] = got[n]->data;
				lens[n] = got[n]->len;
				h->rx_bytes += got[n]->len;
			}
			droce_tp_rx_burst(h->q, frames, lens, n, f->now);
			for (k = 0; k < n; k++)
				frame_free(got[k]);
		}
	}
	for (i = 0; i < f->c.hosts; i++)
		droce_tp_progress(f->h[i].q, f->now, 64);
}

int
fab_idle(const struct fabric *f)
{
	uint32_t i;

	for (i = 0; i < f->c.hosts; i++)
		if (f->h[i].up.head || f->h[i].down.head || f->p[i].q.head)
			return 0;
	return 1;
}

void
fab_av(struct fabric *f, uint32_t from, uint32_t to, struct droce_av *av)
{
	(void)from;
	memset(av, 0, sizeof(*av));
	memcpy(av->dmac, f->h[to].mac, 6);
	droce_gid_from_ipv4(av->dgid, f->h[to].ip);
	av->sgid_index = 1;
	av->hop_limit = 64;
}

int
fab_connect(struct fabric *f, uint32_t a, struct droce_qp *qa, uint32_t b,
		struct droce_qp *qb, const struct fl_qp_opts *o)
{
	uint32_t pa = (uint32_t)(fab_rand(f) & 0xffffff);
	uint32_t pb = (uint32_t)(fab_rand(f) & 0xffffff);
	struct droce_av av;
	int rc;

	fab_av(f, a, b, &av);
	rc = fl_qp_up(qa, &av, droce_qp_num(qb), pb, pa, o);
	fab_av(f, b, a, &av);
	if (rc == 0)
		rc = fl_qp_up(qb, &av, droce_qp_num(qa), pa, pb, o);
	return rc;
}

int
fab_init(struct fabric *f, const struct fab_conf *c)
{
	uint32_t i;

	memset(f, 0, sizeof(*f));
	f->c = *c;
	f->rng = c->seed ? c->seed : 1;
	f->h = calloc(c->hosts, sizeof(*f->h));
	f->p = calloc(c->hosts, sizeof(*f->p));
	if (f->h == NULL || f->p == NULL)
		return -ENOMEM;
	for (i = 0; i < c->hosts; i++) {
		struct fab_host *h = &f->h[i];
		struct droce_dev_conf dc = c->dev;
		struct droce_tp_io io = {
			.tx_alloc = fab_tx_alloc,
			.tx_submit = fab_tx_submit,
			.tx_free = fab_tx_free,
			.arg = h,
		};

		f->p[i].src_bytes = calloc(c->hosts, sizeof(uint64_t));
		h->fab = f;
		h->idx = i;
		memcpy(h->mac, "\x02\x00\x00\x00\x00\x00", 6);
		h->mac[4] = (uint8_t)((i + 1) >> 8);
		h->mac[5] = (uint8_t)(i + 1);
		h->ip = 0x0a010000 + i + 1;
		memcpy(dc.mac, h->mac, 6);
		dc.eth_mtu = c->eth_mtu;
		dc.nb_queues = 1;
		memset(dc.gids, 0, sizeof(dc.gids));
		droce_gid_link_local(dc.gids[0].gid, h->mac);
		dc.gids[0].valid = 1;
		droce_gid_from_ipv4(dc.gids[1].gid, h->ip);
		dc.gids[1].valid = 1;
		dc.seed = f->rng + i * 7919 + 1;
		if (dc.line_rate_mbps == 0)
			dc.line_rate_mbps = (uint32_t)(c->rate_bps / 1000000);
		h->dev = droce_dev_create(&dc);
		if (h->dev == NULL || f->p[i].src_bytes == NULL)
			return -ENOMEM;
		h->q = droce_dev_queue(h->dev, 0);
		h->pd = droce_pd_alloc(h->dev);
		droce_tp_queue_set_io(h->q, &io);
	}
	return 0;
}

static void
fifo_free(struct fab_fifo *q)
{
	while (q->head)
		frame_free(fifo_pop(q));
}

void
fab_fini(struct fabric *f)
{
	uint32_t i;

	for (i = 0; i < f->c.hosts; i++) {
		fifo_free(&f->h[i].up);
		fifo_free(&f->h[i].down);
		fifo_free(&f->p[i].q);
		free(f->p[i].src_bytes);
		/* the caller destroyed its QPs, CQs and MRs */
		if (f->h[i].pd && droce_pd_dealloc(f->h[i].pd) == 0)
			droce_dev_destroy(f->h[i].dev);
	}
	free(f->scratch);
	free(f->h);
	free(f->p);
}
