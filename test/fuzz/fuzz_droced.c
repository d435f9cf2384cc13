/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * libFuzzer target for droced's request handlers and ring consumers: the
 * daemon's own code (droced_core) serving one session per input, on a
 * net_ring port of this process whose passes run when the target says
 * (DROCE_PROGRESS_INLINE). An input is the session's life, a list of
 * steps:
 *  - a control request: its op, its body (the input's bytes), and maybe
 *    a descriptor (a sealable memfd, a hugetlb one, a pipe), served as
 *    the main thread serves one (dd_serve_msg);
 *  - input bytes written anywhere into the session's region (rings,
 *    indexes, doorbells, CQ heads);
 *  - WQEs of input bytes written into one of its work queues at its
 *    producer index, some SGEs pointed at its own MRs, and rung;
 *  - passes over the queue: the doorbells, the rings, the transport, the
 *    completions and QP1 (the ring consumers).
 * Then the session ends as a killed application's does. Under ASan,
 * UBSan and LeakSanitizer, besides "no crash": everything the session
 * held is reclaimed (no leak, no session left, every descriptor it had
 * closed: the process's descriptors the same before and after).
 */

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "droced.h"
#include "eal_dir.h"
#include "fuzz_input.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STEPS_MAX 64

static struct dd_port *dp;
/* the descriptors before the input: sanitizers start a symbolizer with
 * pipes of its own between inputs, so each input is held to its own */
static char fds_before[8192];
/* what the input did, told when it leaves something behind */
static char trace[4096];
static size_t trace_len;

static void
tell(const char *what, uint32_t a, int b)
{
	if (trace_len < sizeof(trace) - 32)
		trace_len += (size_t)snprintf(trace + trace_len,
			sizeof(trace) - trace_len, "%s %u %d; ", what, a, b);
}

/* The process's descriptors and what each is ("3 pipe:[123]"), in out
 * (a line each, sorted by the directory's order): their count. */
static int
fds_snapshot(char *out, size_t cap)
{
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	size_t len = 0;
	int n = 0;

	if (d == NULL)
		abort();
	out[0] = '\0';
	while ((e = readdir(d)) != NULL) {
		char path[300], target[128];
		ssize_t k;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, target, sizeof(target) - 1);
		target[k > 0 ? k : 0] = '\0';
		if (len < cap)
			len += (size_t)snprintf(out + len, cap - len, "%s %s\n",
				e->d_name, target);
	}
	closedir(d);
	return n;
}

/* droced's port 0, as its main.c opens one, but passes on demand. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct droce_port_hooks hooks = { .poll = dd_poll_hook,
		.sleep = dd_sleep_hook };
	struct droce_port_conf pc;
	static char eal[256];

	(void)argc;
	(void)argv;
	dp = &dd.ports[0];
	dd.lim = (struct dd_limits){ .max_apps = 8, .apps_per_user = 8,
		.apps_per_proc = 8, .max_qp = 16, .max_cq = 16, .max_mr = 16,
		.max_srq = 8, .max_ah = 16, .max_pd = 8, .max_chan = 8,
		.max_mr_bytes = 64u << 20, .region_bytes = 2u << 20 };
	snprintf(eal, sizeof(eal), "--no-huge -m 512 --no-pci --file-prefix %s "
		"--log-level=lib.eal:4 --log-level=droced:1 --log-level=droce:1",
		eal_dir_prefix("fzdd"));
	droce_port_conf_init(&pc);
	pc.eal_args = eal;
	pc.devargs = "net_ring0";
	pc.name = "droce0";
	pc.nb_queues = 1;
	pc.mode = DROCE_PROGRESS_INLINE;
	pc.ipv4 = 0x0a090001;
	dp->port = droce_port_open(&pc);
	if (dp->port == NULL)
		abort();
	snprintf(dp->conf.name, sizeof(dp->conf.name), "droce0");
	dp->conf.ipv4 = pc.ipv4;
	dp->conf.mtu = 1500;
	dp->dev = droce_port_dev(dp->port);
	dp->nb_queues = 1;
	dp->wake_ep = -1;
	dd.nb_ports = 1;
	hooks.arg = dp;
	droce_dev_set_async_cb(dp->dev, dd_async_cb, &dd);
	droce_port_set_hooks(dp->port, &hooks);
	/* as droced: a pipe whose reader went is EPIPE, not a signal */
	signal(SIGPIPE, SIG_IGN);
	dd.ep = epoll_create1(EPOLL_CLOEXEC);
	if (dd.ep < 0 || dd_ctl_check() != 0 || dd_guard_init() != 0 ||
			dd_gsi_init(dp) != 0)
		abort();
	dd_mem_init();
	return 0;
}

/* A descriptor of the kind k for a REG_MR, or -1. */
static int
make_fd(uint32_t k, uint32_t size)
{
	int fd = -1, p[2];

	switch (k % 4) {
	case 1:
		fd = memfd_create("fz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0 && ftruncate(fd, (off_t)((size % 16 + 1) * 4096)) != 0) {
			close(fd);
			fd = -1;
		}
		break;
	case 2:
		if (pipe2(p, O_CLOEXEC) == 0) {
			close(p[1]);
			fd = p[0];
		}
		break;
	case 3:
		fd = memfd_create("fzh", MFD_CLOEXEC | MFD_HUGETLB |
			MFD_ALLOW_SEALING);
		if (fd >= 0 && ftruncate(fd, 2 << 20) != 0) {
			close(fd);
			fd = -1;
		}
		break;
	default:
		break;
	}
	return fd;
}

/* Replies (and their descriptors) read and dropped. */
static void
drain_replies(int s)
{
	uint8_t buf[DROCE_CHAN_MSG_MAX];
	int fds[DROCE_CHAN_MAX_FDS], nfds, i, rc;

	for (;;) {
		rc = droce_chan_recv(s, buf, sizeof(buf), 1, fds, &nfds);
		if (rc < 0 && rc != -EBADMSG)
			break;
		for (i = 0; rc >= 0 && i < nfds; i++)
			close(fds[i]);
	}
}

/* One control request: 0, or -1 when the session must end. */
static int
request(struct dd_app *a, struct in *in, int peer)
{
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} msg;
	uint32_t op = take(in, 1) % DROCE_OP_COUNT, k = take(in, 1);
	int len = droce_chan_body_len(op ? op : 1, 0), fd, rc;

	op = op ? op : 1;
	memset(&msg, 0, sizeof(msg));
	msg.h.op = op;
	msg.h.seq = k;
	msg.h.len = (uint32_t)len;
	take_bytes(in, msg.buf + sizeof(msg.h), (size_t)len);
	if (op == DROCE_OP_HELLO)	/* the one version there is */
		((struct droce_chan_hello_req *)(msg.buf + sizeof(msg.h)))->version =
			DROCE_CHAN_VERSION;
	if (op == DROCE_OP_MODIFY_QP) {
		/* a destination QPN 0 is the QP itself: loopback traffic */
		struct droce_chan_modify_qp_req *m = (void *)(msg.buf +
			sizeof(msg.h));
		struct dd_qp *qp = a->qps.slot != NULL ?
			dd_table_get(&a->qps, m->handle) : NULL;

		if (m->attr.dest_qp_num == 0 && qp != NULL && qp->tqp != NULL)
			m->attr.dest_qp_num = droce_qp_num(qp->tqp);
	}
	fd = op == DROCE_OP_REG_MR ? make_fd(k, take(in, 1)) : -1;
	rc = dd_serve_msg(a, msg.buf, &fd, fd >= 0 ? 1 : 0, 0);
	tell(droce_chan_op_name(op), k, rc);
	drain_replies(peer);
	return rc;
}

static void
scribble(struct dd_app *a, struct in *in)
{
	uint32_t off = take(in, 4), n = take(in, 1) % 64;

	if (a->region == NULL)
		return;
	off %= (uint32_t)a->region_size;
	if (n > a->region_size - off)
		n = (uint32_t)(a->region_size - off);
	take_bytes(in, (uint8_t *)a->region + off, n);
}

/* WQEs of input bytes into a WQ of one of its QPs or SRQs, rung. */
static void
post_slots(struct dd_app *a, struct in *in)
{
	uint32_t which = take(in, 1), kind = take(in, 1) % 3, n, i;
	struct dd_wq *wq = NULL;
	uint32_t handle = which, dbkind;
	struct dd_mr *mr = NULL;
	struct droce_chan_db *db;

	if (a->dp == NULL || a->qps.slot == NULL)
		return;
	for (i = 0; i < a->mrs.cap && mr == NULL; i++)
		mr = dd_table_get(&a->mrs, i);
	if (kind == 2) {
		struct dd_srq *s = dd_table_get(&a->srqs, which % a->srqs.cap);

		wq = s != NULL ? &s->rq : NULL;
		handle = which % a->srqs.cap;
		dbkind = DROCE_KIND_SRQ;
	} else {
		struct dd_qp *qp = dd_table_get(&a->qps, which % a->qps.cap);

		wq = qp == NULL ? NULL : kind ? &qp->rq : &qp->sq;
		handle = which % a->qps.cap;
		dbkind = kind ? DROCE_KIND_RQ : DROCE_KIND_SQ;
	}
	if (wq == NULL || wq->sh == NULL)
		return;
	n = take(in, 1) % 4 + 1;
	for (i = 0; i < n; i++) {
		uint32_t prod = wq->sh->prod;
		uint8_t *slot = wq->slots + (size_t)(prod & (wq->size - 1)) *
			wq->slot;
		uint32_t hdr = kind ? sizeof(struct droce_chan_rwqe) :
			sizeof(struct droce_chan_swqe);
		uint8_t wqe[256];

		/* 256 input bytes a slot, whatever the slot's size */
		take_bytes(in, wqe, sizeof(wqe));
		memcpy(slot, wqe, wq->slot < sizeof(wqe) ? wq->slot : sizeof(wqe));
		/* some SGEs on its own memory, so that data moves */
		if (mr != NULL && wq->slot >= hdr + sizeof(struct ibv_sge) &&
				(slot[0] & 1)) {
			struct ibv_sge *sge = (struct ibv_sge *)(slot + hdr);

			sge->lkey = mr->lkey;
			sge->addr = mr->va + (sge->addr % (mr->len + 1));
			sge->length %= (uint32_t)(mr->len + 1);
		}
		wq->sh->prod = prod + 1;
	}
	wq->sh->rung = 1;
	db = a->db[wq->sh->queue < dp->nb_queues ? wq->sh->queue : 0];
	db->ring[db->prod & (DROCE_CHAN_DB_SIZE - 1)] = DROCE_DB(dbkind, handle);
	db->prod++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char fds_now[8192];
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct in in = { data, size };
	struct dd_app *a;
	uint32_t steps = 0, i;
	int sv[2], end = 0;

	fds_snapshot(fds_before, sizeof(fds_before));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0, sv) != 0)
		abort();
	a = dd_app_new(sv[0]);
	if (a == NULL)
		abort();
	trace_len = 0;
	trace[0] = '\0';
	a->id = ++dd.next_id;
	a->pid = getpid();
	dd_lock_all();
	dd.apps[dd.nb_apps++] = a;
	dd_unlock_all();
	ev.data.ptr = a;
	epoll_ctl(dd.ep, EPOLL_CTL_ADD, sv[0], &ev);
	while (!end && in.n > 0 && steps++ < STEPS_MAX) {
		switch (take(&in, 1) % 5) {
		case 0:
			end = request(a, &in, sv[1]) != 0;
			break;
		case 1:
			scribble(a, &in);
			break;
		case 2:
			post_slots(a, &in);
			break;
		default:
			for (i = take(&in, 1) % 4 + 1; i > 0; i--)
				droce_port_progress(dp->port, 0);
			break;
		}
	}
	for (i = 0; i < 4; i++)
		droce_port_progress(dp->port, 0);
	dd_app_detach(a);	/* as a killed application's session goes */
	close(sv[1]);
	fds_snapshot(fds_now, sizeof(fds_now));
	if (dd.nb_apps != 0 || strcmp(fds_now, fds_before) != 0) {
		fprintf(stderr, "a session left %u sessions, and these "
			"descriptors:\n%s(before it:\n%s) after: %s\n", dd.nb_apps,
			fds_now, fds_before, trace);
		abort();
	}
	return 0;
}
