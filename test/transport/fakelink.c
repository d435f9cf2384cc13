/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fakelink.h"

#define FL_CAP 10240

uint32_t fl_rto_min_us;
uint8_t fl_sr;
uint32_t fl_sr_window;
uint8_t fl_no_ecn;
uint8_t fl_cc;
uint32_t fl_line_rate_mbps;
const struct droce_dcqcn_params *fl_dcqcn;

uint64_t
fl_rand(struct fakelink *l)
{
	/* splitmix64: a reproducible fault schedule per seed */
	uint64_t z = (l->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int
chance(struct fakelink *l, uint32_t ppm)
{
	return ppm && fl_rand(l) % 1000000 < ppm;
}

static uint32_t
fl_tx_alloc(void *arg, struct droce_txbuf *bufs, uint32_t n, uint32_t cap)
{
	struct fl_end *e = arg;
	struct fakelink *l = e->link;
	uint32_t i;

	if (cap > FL_CAP)
		return 0;
	/* a NIC whose ring is full takes nothing until the wire drains */
	if (l->rate_bps && l->wire_free[e->side] > l->now + l->nic_queue_ns)
		return 0;
	for (i = 0; i < n; i++) {
		bufs[i].data = malloc(FL_CAP);
		if (bufs[i].data == NULL)
			break;
		bufs[i].cap = FL_CAP;
		bufs[i].len = 0;
		bufs[i].cookie = NULL;
	}
	return i;
}

static void
fl_tx_free(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	uint32_t i;

	(void)arg;
	for (i = 0; i < n; i++)
		free(bufs[i].data);
}

/* A frame to put in flight: its headers (or all of it) in data. */
static struct fl_frame *
frame_new(uint8_t *data, uint32_t len)
{
	struct fl_frame *f = calloc(1, sizeof(*f));

	f->data = data;
	f->len = len;
	return f;
}

/* Another copy of f in flight (duplication): more references. */
static struct fl_frame *
frame_dup(const struct fl_frame *f)
{
	struct fl_frame *c = malloc(sizeof(*c));
	uint32_t i;

	*c = *f;
	c->data = malloc(FL_CAP);
	memcpy(c->data, f->data, f->len);
	for (i = 0; i < c->nspan; i++)
		droce_mr_zc_get(c->span[i].mr);
	return c;
}

/* The NIC reads a zero-copy frame's payload: one contiguous frame. */
static void
frame_linearize(struct fl_frame *f)
{
	uint32_t i;

	for (i = 0; i < f->nspan; i++) {
		memcpy(f->data + f->len, f->span[i].addr, f->span[i].len);
		f->len += f->span[i].len;
		droce_mr_zc_put(f->span[i].mr);
	}
	if (f->nspan) {
		memcpy(f->data + f->len, f->tail, f->tail_len);
		f->len += f->tail_len;
	}
	f->nspan = 0;
}

static void
frame_free(struct fl_frame *f)
{
	uint32_t i;

	for (i = 0; i < f->nspan; i++)
		droce_mr_zc_put(f->span[i].mr);
	free(f->data);
	free(f);
}

static void
insert(struct fakelink *l, int dir, struct fl_frame *f, uint64_t due)
{
	struct fl_frame **pp;

	f->due = due;
	l->ninflight[dir]++;
	pp = &l->inflight[dir];
	while (*pp != NULL && (*pp)->due <= due)
		pp = &(*pp)->next;
	f->next = *pp;
	*pp = f;
}

static void
pcap_write(struct fakelink *l, const uint8_t *d, uint32_t len)
{
	uint32_t h[4];

	if (l->pcap == NULL || l->pcap_count >= l->pcap_max)
		return;
	if ((l->cnt[0].sent + l->cnt[1].sent) % l->pcap_every)
		return;
	h[0] = (uint32_t)(l->now / 1000000000ull);
	h[1] = (uint32_t)(l->now / 1000 % 1000000);
	h[2] = h[3] = len;
	fwrite(h, sizeof(h), 1, l->pcap);
	fwrite(d, len, 1, l->pcap);
	l->pcap_count++;
}

/* When frame f has left the wire of direction dir (FCS, preamble and
 * the gap between frames counted), the wire busy until then. */
static uint64_t
wire_time(struct fakelink *l, int dir, const struct fl_frame *f)
{
	uint64_t len = f->len + 4 + 8 + 12, start;
	uint32_t i;

	for (i = 0; i < f->nspan; i++)
		len += f->span[i].len;
	if (f->nspan)
		len += f->tail_len;
	start = l->wire_free[dir] > l->now ? l->wire_free[dir] : l->now;
	l->wire_free[dir] = start + (len * 8 * 1000000000ull +
		l->rate_bps - 1) / l->rate_bps;
	l->wire_bytes[dir] += len;
	return l->wire_free[dir];
}

int
fl_mark_ce(uint8_t *f, uint32_t len)
{
	return droce_wire_mark_ce(f, len, 1);
}

static void
fl_send(struct fakelink *l, int dir, struct fl_frame *f)
{
	struct fl_faults *fa = &l->faults[dir];
	struct fl_counters *c = &l->cnt[dir];
	uint64_t due = l->now + l->delay_ns;

	if (l->rate_bps)
		due = wire_time(l, dir, f) + l->delay_ns;
	c->sent++;
	pcap_write(l, f->data, f->len);
	if (l->filter != NULL && l->filter(l, dir, f->data, f->len)) {
		c->dropped++;
		frame_free(f);
		return;
	}
	if (l->qcap && l->ninflight[dir] >= l->qcap) {
		c->dropped++;	/* tail drop */
		frame_free(f);
		return;
	}
	if (fa->stalled) {
		c->stalled++;
		frame_free(f);
		return;
	}
	if (chance(l, fa->drop_ppm)) {
		c->dropped++;
		frame_free(f);
		return;
	}
	if (chance(l, fa->dup_ppm)) {
		c->duplicated++;
		insert(l, dir, frame_dup(f), due + fl_rand(l) % 20000);
	}
	if (chance(l, fa->corrupt_ppm)) {
		f->data[fl_rand(l) % f->len] ^=
			(uint8_t)(1u << (fl_rand(l) % 8));
		c->corrupted++;
	}
	if (chance(l, fa->reorder_ppm)) {
		due += 1000 + fl_rand(l) % 30000;
		c->reordered++;
	}
	if (fa->ce_ppm && chance(l, fa->ce_ppm) && fl_mark_ce(f->data, f->len))
		c->ce_marked++;
	insert(l, dir, f, due);
}

/* RFC 1071: the sum of n bytes as big-endian words, folded. */
static uint32_t
sum16(uint32_t s, const uint8_t *p, uint32_t n)
{
	for (; n > 1; p += 2, n -= 2)
		s += (uint32_t)(p[0] << 8 | p[1]);
	if (n)
		s += (uint32_t)p[0] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static void
put_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * A TSO frame (fl_set_tso) cut as a NIC cuts it, the fake's own way: each
 * segment the headers with its IP length, IPv4 ID plus its index,
 * sequence number plus its offset, FIN and PSH on the last only, and
 * both sums.
 */
static void
cut_tso(struct fakelink *l, int dir, struct droce_txbuf *b)
{
	uint32_t hs = b->tso_hlen, l3 = b->tso_l3off, l4 = b->tso_l4off;
	uint32_t total = 0, off = 0, plen, k, i, seq, s, tl;
	int v4 = (b->data[l3] >> 4) == 4;
	uint8_t *pay, *f;

	for (i = 0; i < b->nspan; i++)
		total += b->span[i].len;
	pay = malloc(total);
	for (i = 0; i < b->nspan; i++) {
		memcpy(pay + off, b->span[i].addr, b->span[i].len);
		off += b->span[i].len;
		droce_mr_zc_put(b->span[i].mr);
	}
	seq = (uint32_t)b->data[l4 + 4] << 24 | (uint32_t)b->data[l4 + 5] << 16 |
		(uint32_t)b->data[l4 + 6] << 8 | b->data[l4 + 7];
	l->tso_frames[dir]++;
	for (off = 0, k = 0; off < total; off += plen, k++) {
		plen = total - off < b->tso_mss ? total - off : b->tso_mss;
		f = malloc(FL_CAP);
		memcpy(f, b->data, hs);
		memcpy(f + hs, pay + off, plen);
		if (v4) {
			put_be16(f + l3 + 2, hs - l3 + plen);
			put_be16(f + l3 + 4, (uint32_t)(b->data[l3 + 4] << 8 |
				b->data[l3 + 5]) + k);
			f[l3 + 10] = f[l3 + 11] = 0;
			put_be16(f + l3 + 10, ~sum16(0, f + l3, l4 - l3));
		} else {
			put_be16(f + l3 + 4, hs - l4 + plen);
		}
		put_be16(f + l4 + 4, (seq + off) >> 16);
		put_be16(f + l4 + 6, seq + off);
		if (off + plen < total)
			f[l4 + 13] &= (uint8_t)~0x09;	/* FIN, PSH */
		tl = hs - l4 + plen;
		f[l4 + 16] = f[l4 + 17] = 0;
		s = v4 ? sum16(0, f + l3 + 12, 8) : sum16(0, f + l3 + 8, 32);
		s = sum16(s + 6 + (tl >> 16) + (tl & 0xffff), f + l4, tl);
		put_be16(f + l4 + 16, ~s);
		fl_send(l, dir, frame_new(f, hs + plen));
	}
	l->tso_segments[dir] += k;
	free(pay);
	free(b->data);
}

static void
fl_tx_submit(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	struct fl_end *e = arg;
	struct fakelink *l = e->link;
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct fl_frame *f;

		if (bufs[i].tso_mss) {
			cut_tso(l, e->side, &bufs[i]);
			continue;
		}
		f = frame_new(bufs[i].data, bufs[i].len);
		if (bufs[i].nspan) {
			f->nspan = bufs[i].nspan;
			memcpy(f->span, bufs[i].span, sizeof(f->span));
			memcpy(f->tail, bufs[i].tail, sizeof(f->tail));
			f->tail_len = bufs[i].tail_len;
			/* a capture needs the whole frame now (the filters
			 * read headers only) */
			if (l->pcap != NULL)
				frame_linearize(f);
		}
		fl_send(l, e->side, f);
	}
}

int
fl_init(struct fakelink *l, uint64_t seed, uint32_t eth_mtu)
{
	int s;

	memset(l, 0, sizeof(*l));
	l->rng = seed;
	l->delay_ns = 2000;
	l->eth_mtu = eth_mtu;
	for (s = 0; s < 2; s++) {
		struct fl_end *e = &l->end[s];
		struct droce_dev_conf conf;

		e->link = l;
		e->side = s;
		memcpy(e->mac, "\x02\x00\x00\x00\x00\x01", 6);
		e->mac[5] = (uint8_t)(s + 1);
		e->ip = 0x0a000001 + (uint32_t)s;
		memset(&conf, 0, sizeof(conf));
		memcpy(conf.mac, e->mac, 6);
		conf.eth_mtu = eth_mtu;
		conf.nb_queues = 1;
		droce_gid_link_local(conf.gids[0].gid, e->mac);
		conf.gids[0].valid = 1;
		droce_gid_from_ipv4(conf.gids[1].gid, e->ip);
		conf.gids[1].valid = 1;
		conf.seed = seed * 2 + (uint64_t)s + 1;
		conf.rto_min_us = fl_rto_min_us;
		conf.selective_repeat = fl_sr;
		conf.sr_window = fl_sr_window;
		conf.no_ecn = fl_no_ecn;
		conf.cc = fl_cc;
		conf.line_rate_mbps = fl_line_rate_mbps;
		if (fl_dcqcn != NULL) {
			conf.dcqcn = *fl_dcqcn;
			conf.dcqcn_set = 1;
		}
		e->dev = droce_dev_create(&conf);
		if (e->dev == NULL)
			return -errno;
		e->q = droce_dev_queue(e->dev, 0);
		e->pd = droce_pd_alloc(e->dev);
	}
	fl_set_zero_copy(l, 0);
	return 0;
}

static void
set_io(struct fakelink *l)
{
	int s;

	for (s = 0; s < 2; s++) {
		struct droce_tp_io io = {
			.tx_alloc = fl_tx_alloc,
			.tx_submit = fl_tx_submit,
			.tx_free = fl_tx_free,
			.arg = &l->end[s],
			.zc_min = l->zc_min,
			.tso_segs = l->tso_segs,
			.tso_seg_max = l->eth_mtu + 18,
			.tso_ipv6 = 1,
		};

		droce_tp_queue_set_io(l->end[s].q, &io);
	}
}

void
fl_set_zero_copy(struct fakelink *l, uint32_t min)
{
	l->zc_min = min;
	set_io(l);
}

void
fl_set_tso(struct fakelink *l, uint32_t segs)
{
	l->tso_segs = segs;
	set_io(l);
}

void
fl_set_rate(struct fakelink *l, uint64_t rate_bps, uint64_t nic_queue_ns)
{
	l->rate_bps = rate_bps;
	l->nic_queue_ns = nic_queue_ns;
}

void
fl_fini(struct fakelink *l)
{
	int s;

	for (s = 0; s < 2; s++) {
		while (l->inflight[s]) {
			struct fl_frame *f = l->inflight[s];

			l->inflight[s] = f->next;
			frame_free(f);
		}
	}
	if (l->pcap)
		fclose(l->pcap);
	l->pcap = NULL;
	/* the tests destroy their QPs, CQs and MRs; a PD or device still in
	 * use (soak keeps its objects to the end) is left to exit */
	for (s = 0; s < 2; s++) {
		if (l->end[s].pd != NULL && droce_pd_dealloc(l->end[s].pd) == 0) {
			l->end[s].pd = NULL;
			droce_dev_destroy(l->end[s].dev);
			l->end[s].dev = NULL;
		}
	}
}

void
fl_step(struct fakelink *l, uint64_t dt)
{
	const uint8_t *frames[64];
	uint32_t lens[64];
	struct fl_frame *done[64];
	int s;

	l->now += dt;
	for (s = 0; s < 2; s++) {
		struct fl_end *dst = &l->end[1 - s];
		uint32_t n = 0, i, max = l->rx_burst && l->rx_burst < 64 ?
			l->rx_burst : 64;

		while (l->inflight[s] && l->inflight[s]->due <= l->now &&
				n < max) {
			struct fl_frame *f = l->inflight[s];

			l->inflight[s] = f->next;
			l->ninflight[s]--;
			frame_linearize(f);
			frames[n] = f->data;
			lens[n] = f->len;
			done[n++] = f;
		}
		if (n)
			droce_tp_rx_burst(dst->q, frames, lens, n, l->now);
		for (i = 0; i < n; i++) {
			free(done[i]->data);
			free(done[i]);
		}
		l->cnt[s].delivered += n;
	}
	for (s = 0; s < 2; s++)
		droce_tp_progress(l->end[s].q, l->now, 64);
}

int
fl_run_idle(struct fakelink *l, uint64_t max_ns)
{
	uint64_t end = l->now + max_ns;

	while (l->now < end) {
		fl_step(l, 1000);
		if (!l->inflight[0] && !l->inflight[1] &&
				!droce_tp_queue_busy(l->end[0].q) &&
				!droce_tp_queue_busy(l->end[1].q) &&
				droce_tp_next_deadline(l->end[0].q) == UINT64_MAX &&
				droce_tp_next_deadline(l->end[1].q) == UINT64_MAX)
			return 0;
	}
	return -ETIMEDOUT;
}

int
fl_capture(struct fakelink *l, const char *path, uint32_t every, uint32_t max)
{
	static const uint32_t hdr[6] = {
		0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1
	};

	l->pcap = fopen(path, "wb");
	if (l->pcap == NULL)
		return -errno;
	fwrite(hdr, sizeof(hdr), 1, l->pcap);
	l->pcap_every = every ? every : 1;
	l->pcap_max = max;
	return 0;
}

void
fl_qp_opts_default(struct fl_qp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout = 10;	/* 4.2 ms of virtual time */
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->min_rnr_timer = 1;	/* 10 us */
	o->max_rd_atomic = 16;
	o->max_dest_rd_atomic = 16;
	o->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	o->mtu = IBV_MTU_1024;
	o->qkey = 0x11111111;
}

void
fl_av_to(struct fakelink *l, int from, struct droce_av *av)
{
	struct fl_end *peer = &l->end[1 - from];

	memset(av, 0, sizeof(*av));
	memcpy(av->dmac, peer->mac, 6);
	droce_gid_from_ipv4(av->dgid, peer->ip);
	av->sgid_index = 1;
	av->hop_limit = 64;
}

int
fl_qp_up(struct droce_qp *qp, const struct droce_av *to, uint32_t dqpn,
		uint32_t rq_psn, uint32_t sq_psn, const struct fl_qp_opts *o)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	struct droce_av av = *to;
	int rc, mask;

	droce_qp_query(qp, &a, 0, &init);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = o->qkey;
	a.qp_access_flags = o->access;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		(init.qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	rc = droce_qp_modify(qp, &a, mask, NULL);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	av.tclass = o->tclass;
	if (init.qp_type != IBV_QPT_UD) {
		a.path_mtu = o->mtu;
		a.dest_qp_num = dqpn;
		a.rq_psn = rq_psn;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		/* XRC's halves take RC's whole set (tp_qp.c) */
		if (init.qp_type == IBV_QPT_RC ||
				init.qp_type == IBV_QPT_XRC_SEND ||
				init.qp_type == IBV_QPT_XRC_RECV) {
			a.max_dest_rd_atomic = o->max_dest_rd_atomic;
			a.min_rnr_timer = o->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	rc = droce_qp_modify(qp, &a, mask, &av);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (init.qp_type == IBV_QPT_RC || init.qp_type == IBV_QPT_XRC_SEND ||
			init.qp_type == IBV_QPT_XRC_RECV) {
		a.timeout = o->timeout;
		a.retry_cnt = o->retry_cnt;
		a.rnr_retry = o->rnr_retry;
		a.max_rd_atomic = o->max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return droce_qp_modify(qp, &a, mask, NULL);
}

int
fl_connect(struct fakelink *l, struct droce_qp *a, struct droce_qp *b,
		const struct fl_qp_opts *o)
{
	/* PSNs near the 24-bit wrap, to exercise it in every test */
	uint32_t pa = (uint32_t)(0xffff00 + fl_rand(l) % 0x100);
	uint32_t pb = (uint32_t)(fl_rand(l) & 0xffffff);
	struct droce_av av;
	int rc;

	fl_av_to(l, 0, &av);
	rc = fl_qp_up(a, &av, droce_qp_num(b), pb, pa, o);
	fl_av_to(l, 1, &av);
	if (rc == 0)
		rc = fl_qp_up(b, &av, droce_qp_num(a), pa, pb, o);
	return rc;
}
