/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_hostile CASE SOCK_A SOCK_B RUN_DIR: one attack on droced A by an
 * application on the channel itself, with a pair of bystanders (one
 * session on each daemon) moving data before and after it, every byte
 * checked, and a new pair served afterwards. daemon-pair.sh then checks
 * that both daemons lived to the end and stopped cleanly. Each case is a
 * hole that once let one application crash, stall or reach past droced
 * (doc/daemon.md, "Security model"); test/daemon/meson.build runs each.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "chan_session.h"
#include "wire_cm_mad.h"

#define CHECK CS_CHECK
#define HUGE (2u << 20)

static const char *path_a, *path_b;

/* REG_MR of one piece of fd (a new segment) at addr: 0 or -errno. */
static int
reg_fd(struct cs *s, uint32_t pd, int fd, uint64_t seg_off, uint64_t addr,
		uint64_t len, struct cs_buf *b)
{
	struct droce_chan_reg_mr_req r = { 0 };
	struct droce_chan_reg_mr_rep p;
	uint64_t first = addr & ~4095ull;
	int rc;

	r.pd = pd;
	r.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	r.addr = addr;
	r.len = len;
	r.iova = addr;
	r.npieces = 1;
	r.pieces[0].seg = s->next_seg++;
	r.pieces[0].flags = DROCE_PIECE_NEW;
	r.pieces[0].seg_off = seg_off;
	r.pieces[0].len = ((addr + len + 4095) & ~4095ull) - first;
	rc = cs_rpc(s, DROCE_OP_REG_MR, &r, &p, &fd, 1, NULL, NULL);
	if (rc == 0 && b != NULL) {
		b->addr = (uint8_t *)(uintptr_t)addr;
		b->len = len;
		b->mr = p.handle;
		b->lkey = p.lkey;
		b->rkey = p.rkey;
	}
	return rc;
}

static int
dereg(struct cs *s, uint32_t mr, uint32_t release_seg)
{
	struct droce_chan_dereg_mr_req r = { .handle = mr, .nrelease = 1 };

	r.release[0] = release_seg;
	return cs_rpc(s, DROCE_OP_DEREG_MR, &r, NULL, NULL, 0, NULL, NULL);
}

/* A WRITE of len bytes from x's buffer to (raddr, rkey), signaled. */
static void
post_write(struct cs_side *x, uint64_t raddr, uint32_t rkey, uint32_t len,
		uint64_t id)
{
	struct droce_chan_swqe w = { 0 };
	struct ibv_sge sge = { (uint64_t)(uintptr_t)x->b.addr, len, x->b.lkey };

	w.wr_id = id;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1;
	w.remote_addr = raddr;
	w.rkey = rkey;
	cs_post_send(&x->s, &x->qp, &w, &sge);
}

/* Whether the session's socket was hung up by the daemon within ms. */
static int
session_ended(struct cs *s, int ms)
{
	struct pollfd p = { .fd = s->sock, .events = POLLIN };
	char c;

	while (poll(&p, 1, ms) == 1) {
		if (p.revents & (POLLHUP | POLLERR))
			return 1;
		if (recv(s->sock, &c, 1, MSG_DONTWAIT) == 0)
			return 1;
	}
	return 0;
}

/* A process's mappings (/proc/PID/maps): n ranges and their files. */
struct maps {
	uint32_t n;
	struct {
		uintptr_t lo, hi;
		char name[64];
	} m[4096];
};

static void
maps_read(pid_t pid, struct maps *out)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	CHECK(f != NULL, "%s: %s", path, strerror(errno));
	out->n = 0;
	while (out->n < 4096 && fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;
		char *slash = strchr(line, '/');

		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		out->m[out->n].lo = lo;
		out->m[out->n].hi = hi;
		snprintf(out->m[out->n].name, sizeof(out->m[out->n].name), "%s",
			slash != NULL ? slash : "");
		out->n++;
	}
	fclose(f);
}

static pid_t
daemon_pid(const char *run, const char *which)
{
	char path[512];
	int pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.pid", run, which);
	f = fopen(path, "r");
	CHECK(f != NULL && fscanf(f, "%d", &pid) == 1, "%s", path);
	fclose(f);
	return (pid_t)pid;
}

/*
 * An 8 KB MR over the last 4 KB page of one huge page and the first of
 * the next, on a hugetlb memfd: droced maps that piece over both huge
 * pages, and its reservation was a huge page short (span + 2 huge pages),
 * so MAP_FIXED replaced up to 2 MB less 8 KB of whatever droced had mapped
 * after it (a CQ's ring in malloc's heap: the next DESTROY_CQ aborted
 * droced). Whether something lay there depends on droced's layout: each
 * round first registers an MR of 2 MB and 1 to 8 pages (its reservation,
 * where the next one lands below it, starts off a huge page boundary:
 * the overrun then reaches into it), and then
 * checks droced's own map (/proc/PID/maps) that no mapping of the hugetlb
 * file covers anything mapped before the registration; and CQs are made
 * and destroyed around it.
 */
static void
huge_overrun(const char *run)
{
	static struct maps before, after;
	pid_t pid = daemon_pid(run, "a");
	int round;

	for (round = 0; round < 8; round++) {
		struct cs_side h;
		struct cs_cq cq[4];
		struct droce_chan_handle d;
		struct cs_buf b, small;
		uint32_t i, k;
		uint8_t *m;
		int fd, rc;

		fd = memfd_create("hostile-huge", MFD_HUGETLB | MFD_ALLOW_SEALING);
		if (fd < 0 || ftruncate(fd, 2 * HUGE) != 0) {
			printf("no hugepages for a hugetlb memfd: skip\n");
			exit(77);
		}
		m = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK(m != MAP_FAILED, "map the hugetlb memfd");
		cs_side_open(&h, path_a);
		for (i = 0; i < 4; i++)
			CHECK(cs_cq(&h.s, 4096, &cq[i]) == 0, "cq");
		CHECK(cs_buf(&h.s, h.pd, HUGE + 4096 * (uint64_t)(round + 1),
			&small) == 0, "an MR of 2 MB and some pages");
		maps_read(pid, &before);
		rc = reg_fd(&h.s, h.pd, fd, HUGE - 4096,
			(uint64_t)(uintptr_t)m + HUGE - 4096, 8192, &b);
		CHECK(rc == 0, "register across two huge pages: %d", rc);
		maps_read(pid, &after);
		for (i = 0; i < after.n; i++) {
			if (strstr(after.m[i].name, "hostile-huge") == NULL)
				continue;
			for (k = 0; k < before.n; k++)
				CHECK(after.m[i].hi <= before.m[k].lo ||
					after.m[i].lo >= before.m[k].hi,
					"round %d: droced mapped the hugetlb file at "
					"%lx-%lx over its own %lx-%lx %s", round,
					(unsigned long)after.m[i].lo,
					(unsigned long)after.m[i].hi,
					(unsigned long)before.m[k].lo,
					(unsigned long)before.m[k].hi, before.m[k].name);
		}
		for (i = 0; i < 4; i++) {
			d.handle = cq[i].handle;
			CHECK(cs_rpc(&h.s, DROCE_OP_DESTROY_CQ, &d, NULL, NULL, 0,
				NULL, NULL) == 0, "destroy a CQ");
		}
		CHECK(dereg(&h.s, b.mr, h.s.next_seg - 1) == 0, "dereg");
		cs_close(&h.s);
		munmap(m, 2 * HUGE);
		munmap(small.addr, small.len);
		close(fd);
	}
	printf("huge-page overrun: 8 rounds\n");
}

/*
 * A file that reads like a SysV segment ("/SYSV00000000 (deleted)") but is
 * a tmpfs file on a mount detached from every namespace: it could be
 * truncated under droced's mapping (SIGBUS for every tenant). Refused;
 * were it taken, it is truncated and written to, and the bystanders'
 * traffic after it shows whether droced survived.
 */
static void
fake_sysv(void)
{
	char dir[] = "/tmp/droce-fake-sysv.XXXXXX", file[64];
	struct cs_side h, p;
	struct cs_buf b;
	uint8_t *m;
	int fd, rc;

	CHECK(unshare(CLONE_NEWNS) == 0, "unshare the mount namespace: %s",
		strerror(errno));
	CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0,
		"private mounts");
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	CHECK(mount("none", dir, "tmpfs", 0, NULL) == 0, "mount tmpfs: %s",
		strerror(errno));
	snprintf(file, sizeof(file), "%s/SYSV00000000", dir);
	fd = open(file, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "the fake segment");
	unlink(file);
	CHECK(umount2(dir, MNT_DETACH) == 0, "detach the mount");
	rmdir(dir);
	m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "map it");
	cs_side_open(&h, path_a);
	rc = reg_fd(&h.s, h.pd, fd, 0, (uint64_t)(uintptr_t)m, 1 << 20, &b);
	if (rc == 0) {
		/* taken: shrink it under droced, and have it touched */
		CHECK(ftruncate(fd, 0) == 0, "truncate");
		cs_side_open(&p, path_b);
		cs_pair(&h, &p);
		post_write(&p, (uint64_t)(uintptr_t)m, b.rkey, 65536, 5);
		usleep(500000);
	}
	CHECK(rc == -EINVAL, "a tmpfs file named like a SysV segment: %d, "
		"want -EINVAL", rc);
	cs_close(&h.s);
	munmap(m, 1 << 20);
	close(fd);
	printf("fake SysV segment: refused\n");
}

/*
 * A real SysV segment (shared as it is: it cannot be sealed), registered,
 * then truncated through /proc/self/map_files, then written to by the
 * peer: droced's access to the pages past its new end faults. It maps
 * anonymous pages over them (the access completes on zeroes) and ends
 * that application's session; nobody else notices.
 */
static void
sysv_truncated(void)
{
	const size_t len = 1 << 20;
	char mf[96];
	struct cs_side h, p, *y = &p;
	struct cs_buf b;
	uint8_t *m;
	int id, fd, rc;

	id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	CHECK(id >= 0, "shmget: %s", strerror(errno));
	m = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	CHECK(m != (void *)-1, "shmat");
	snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx",
		(unsigned long)(uintptr_t)m, (unsigned long)(uintptr_t)m + len);
	fd = open(mf, O_RDWR);
	CHECK(fd >= 0, "%s: %s", mf, strerror(errno));
	cs_side_open(&h, path_a);
	rc = reg_fd(&h.s, h.pd, fd, 0, (uint64_t)(uintptr_t)m, len, &b);
	CHECK(rc == 0, "register the SysV segment: %d", rc);
	cs_side_open(&p, path_b);
	cs_pair(&h, y);
	cs_fill(y->b.addr, 65536, 3);
	post_write(y, (uint64_t)(uintptr_t)m, b.rkey, 65536, 6);
	cs_expect_wc(&y->cq, IBV_WC_SUCCESS, "write into the segment");
	CHECK(memcmp(m, y->b.addr, 65536) == 0, "the WRITE landed in it");
	CHECK(ftruncate(fd, 0) == 0, "truncate the segment: %s", strerror(errno));
	post_write(y, (uint64_t)(uintptr_t)m, b.rkey, 65536, 7);
	CHECK(session_ended(&h.s, 10000), "the truncating session was not "
		"ended");
	cs_close(&h.s);
	cs_close(&p.s);
	close(fd);
	shmdt(m);
	printf("SysV segment truncated: its session ended\n");
}

/*
 * MRs deregistered while WRITEs into them and READs from them are on the
 * wire: the responder kept a pointer into the MR from a message's first
 * packet, and droced unmapped the pages at DEREG_MR (a crash). Twenty
 * rounds of 4 x 256 KB each way, deregistered at once.
 */
static void
dereg_in_flight(void)
{
	const uint32_t len = 256 * 1024;
	int round, i;

	for (round = 0; round < 20; round++) {
		struct cs_side h, p;
		struct droce_chan_swqe w = { 0 };
		struct cs_buf b;
		struct ibv_wc wc;
		struct ibv_sge sge;
		uint8_t *m;
		int fd;

		cs_side_open(&h, path_a);
		cs_side_open(&p, path_b);
		cs_pair(&h, &p);
		fd = memfd_create("hostile-dereg", MFD_ALLOW_SEALING);
		CHECK(fd >= 0 && ftruncate(fd, 4 * len) == 0, "memfd");
		m = mmap(NULL, 4 * len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK(m != MAP_FAILED, "map");
		CHECK(reg_fd(&h.s, h.pd, fd, 0, (uint64_t)(uintptr_t)m, 4 * len,
			&b) == 0, "register");
		for (i = 0; i < 4; i++) {
			if (round & 1) {
				post_write(&p, (uint64_t)(uintptr_t)m + i * len,
					b.rkey, len, (uint64_t)i);
				continue;
			}
			sge = (struct ibv_sge){ (uint64_t)(uintptr_t)p.b.addr,
				len, p.b.lkey };
			w.wr_id = (uint64_t)i;
			w.opcode = IBV_WR_RDMA_READ;
			w.send_flags = IBV_SEND_SIGNALED;
			w.num_sge = 1;
			w.remote_addr = (uint64_t)(uintptr_t)m + i * len;
			w.rkey = b.rkey;
			cs_post_send(&p.s, &p.qp, &w, &sge);
		}
		usleep(round * 500);
		CHECK(dereg(&h.s, b.mr, h.s.next_seg - 1) == 0, "dereg");
		munmap(m, 4 * len);
		close(fd);
		/* success or a remote access error: either, as long as it comes */
		for (i = 0; i < 4; i++)
			CHECK(cs_poll(&p.cq, &wc, 30000) == 1,
				"round %d: completion %d of 4", round, i + 1);
		cs_close(&h.s);
		cs_close(&p.s);
	}
	printf("MRs deregistered in flight: 20 rounds\n");
}

/* A GSI proxy (the application's QP1) on scq and rcq: 0 or -errno. */
static int
gsi_proxy(struct cs *s, uint32_t pd, uint32_t scq, uint32_t rcq,
		struct cs_qp *qp)
{
	struct droce_chan_create_qp_req r = {
		.pd = pd, .qp_type = DROCE_QPT_GSI, .send_cq = scq,
		.recv_cq = rcq, .srq = DROCE_CHAN_NONE,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			.max_recv_sge = 1 },
	};
	struct droce_chan_create_qp_rep p;
	int rc = cs_rpc(s, DROCE_OP_CREATE_QP, &r, &p, NULL, 0, NULL, NULL);

	if (rc != 0)
		return rc;
	memset(qp, 0, sizeof(*qp));
	qp->handle = p.handle;
	qp->qpn = p.qpn;
	qp->sq.sh = (void *)(s->region + p.sq.off);
	qp->sq.slots = s->region + p.sq.off + DROCE_CHAN_WQ_SLOTS;
	qp->sq.size = p.sq.size;
	qp->sq.slot = p.sq.slot;
	qp->sq.queue = qp->sq.sh->queue;
	qp->rq.sh = (void *)(s->region + p.rq.off);
	qp->rq.slots = s->region + p.rq.off + DROCE_CHAN_WQ_SLOTS;
	qp->rq.size = p.rq.size;
	qp->rq.slot = p.rq.slot;
	qp->rq.queue = qp->rq.sh->queue;
	return 0;
}

/*
 * A GSI proxy holds no transport QP, so the transport did not know its
 * CQs were in use: DESTROY_CQ freed a CQ the proxy then completed into
 * (a MAD to itself, a malformed send: SIGSEGV), and a QP created on that
 * CQ and a CQ pinned elsewhere moved it off QP1's queue (two threads
 * producing into one ring). Now the CQ may neither go nor move while
 * the proxy lives; a malformed send still completes into it, with an
 * error; once the proxy is gone the CQ goes.
 */
static void
gsi_cq(void)
{
	struct cs_side h;
	struct cs_cq x, y;
	struct cs_qp g, q;
	struct droce_chan_handle d;
	struct droce_chan_swqe w = { 0 };
	struct droce_chan_create_qp_req r = {
		.pd = 0, .qp_type = IBV_QPT_RC, .srq = DROCE_CHAN_NONE,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			.max_recv_sge = 1 },
	};
	struct droce_chan_create_qp_rep p;
	struct ibv_wc wc;
	int rc, i;

	cs_side_open(&h, path_a);
	CHECK(cs_cq(&h.s, 64, &x) == 0, "cq x");
	{
		/* a proxy sized past any QP's: refused before anything is
		 * sized by it (fuzz_droced found droced calling calloc for
		 * 2^31 receives) */
		struct droce_chan_create_qp_req big = { .pd = h.pd,
			.qp_type = DROCE_QPT_GSI, .send_cq = x.handle,
			.recv_cq = x.handle, .srq = DROCE_CHAN_NONE,
			.cap = { .max_send_wr = 16, .max_recv_wr = 1u << 31,
				.max_send_sge = 1, .max_recv_sge = 1 } };
		struct droce_chan_create_qp_rep bp;

		rc = cs_rpc(&h.s, DROCE_OP_CREATE_QP, &big, &bp, NULL, 0, NULL,
			NULL);
		CHECK(rc == -EINVAL, "a proxy of 2^31 receives: %d", rc);
	}
	CHECK(gsi_proxy(&h.s, h.pd, x.handle, x.handle, &g) == 0, "the proxy");
	d.handle = x.handle;
	rc = cs_rpc(&h.s, DROCE_OP_DESTROY_CQ, &d, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == -EBUSY, "DESTROY_CQ of the proxy's CQ: %d, want -EBUSY", rc);
	/* a malformed send (an opcode QP1 does not take) completes into it */
	w.wr_id = 77;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	cs_post_send(&h.s, &g, &w, NULL);
	CHECK(cs_poll(&x, &wc, 20000) == 1, "the malformed send's completion");
	CHECK(wc.wr_id == 77 && wc.status != IBV_WC_SUCCESS,
		"malformed send: wr_id %lu status %d", (unsigned long)wc.wr_id,
		wc.status);
	/* with queues to spare: a CQ y pinned to another queue by an RC QP,
	 * then a QP on x and y must not take x off QP1's queue */
	if (h.s.hello.nb_queues > 1) {
		for (i = 0; i < 8; i++) {
			CHECK(cs_cq(&h.s, 64, &y) == 0, "cq y");
			if (y.queue != g.sq.queue)
				break;
		}
		CHECK(y.queue != g.sq.queue, "a CQ on another queue than QP1's");
		CHECK(cs_qp(&h.s, h.pd, IBV_QPT_RC, &y, &q) == 0, "a QP on y");
		r.pd = h.pd;
		r.send_cq = x.handle;
		r.recv_cq = y.handle;
		rc = cs_rpc(&h.s, DROCE_OP_CREATE_QP, &r, &p, NULL, 0, NULL, NULL);
		CHECK(rc != 0 || p.queue == g.sq.queue, "a QP moved the proxy's "
			"CQ to queue %u (QP1's is %u)", p.queue, g.sq.queue);
	}
	d.handle = g.handle;
	CHECK(cs_rpc(&h.s, DROCE_OP_DESTROY_QP, &d, NULL, NULL, 0, NULL,
		NULL) == 0, "destroy the proxy");
	d.handle = x.handle;
	rc = cs_rpc(&h.s, DROCE_OP_DESTROY_CQ, &d, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "DESTROY_CQ once the proxy is gone: %d", rc);
	cs_close(&h.s);
	printf("a GSI proxy's CQs: held%s\n", h.s.hello.nb_queues > 1 ?
		", on QP1's queue" : "");
}

/* A UD QP ready to receive and send (qkey). */
static void
ud_ready(struct cs *s, struct cs_qp *qp, uint32_t qkey)
{
	struct droce_chan_modify_qp_req r = { .handle = qp->handle };

	r.attr.qp_state = IBV_QPS_INIT;
	r.attr.port_num = 1;
	r.attr.qkey = qkey;
	r.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	CHECK(cs_rpc(s, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0, NULL, NULL) == 0,
		"UD INIT");
	memset(&r.attr, 0, sizeof(r.attr));
	r.attr.qp_state = IBV_QPS_RTR;
	r.mask = IBV_QP_STATE;
	CHECK(cs_rpc(s, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0, NULL, NULL) == 0,
		"UD RTR");
	r.attr.qp_state = IBV_QPS_RTS;
	r.mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	CHECK(cs_rpc(s, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0, NULL, NULL) == 0,
		"UD RTS");
}

/* An AH to the session's own port address (QP1 traffic loops back). */
static uint32_t
ah_to_self(struct cs_side *x)
{
	struct droce_chan_create_ah_req r = { .pd = x->pd };
	struct droce_chan_handle h;

	r.attr.is_global = 1;
	r.attr.port_num = 1;
	r.attr.grh.sgid_index = 1;
	r.attr.grh.hop_limit = 64;
	memcpy(r.attr.grh.dgid.raw, x->s.hello.gids[1].gid, 16);
	CHECK(cs_rpc(&x->s, DROCE_OP_CREATE_AH, &r, &h, NULL, 0, NULL, NULL) == 0,
		"an AH to itself");
	return h.handle;
}

/* A send of len bytes at off in x's buffer, on QP g, to (qpn, qkey)
 * through AH ah; its completion's status. */
static enum ibv_wc_status
gsi_send(struct cs_side *x, struct cs_qp *g, struct cs_cq *cq, uint32_t ah,
		uint32_t off, uint32_t len, uint32_t qpn, uint32_t qkey)
{
	struct droce_chan_swqe w = { 0 };
	struct ibv_sge sge = { (uint64_t)(uintptr_t)x->b.addr + off, len,
		x->b.lkey };
	struct ibv_wc wc;

	w.wr_id = off;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1;
	w.ah = ah;
	w.remote_qpn = qpn;
	w.remote_qkey = qkey;
	cs_post_send(&x->s, g, &w, &sge);
	CHECK(cs_poll(cq, &wc, 20000) == 1, "a QP1 send's completion");
	return wc.status;
}

/* A CM message into buf: attr, the sender's ID and the target's. */
static void
cm_msg(uint8_t *buf, uint16_t attr, uint32_t local, uint32_t remote)
{
	struct cm_simple m = { .local_comm_id = local, .remote_comm_id = remote };
	struct cm_rej r = { .local_comm_id = local, .remote_comm_id = remote,
		.reason = CM_REJ_CONSUMER_DEFINED };

	cm_mad_put_hdr(buf, attr, 0x1234);
	if (attr == CM_ATTR_REJ)
		cm_rej_pack(buf + CM_MAD_HDR, &r);
	else
		cm_simple_pack(buf + CM_MAD_HDR, attr, &m);
}

/*
 * MADs posted on QP1 were not checked: an application could send CM
 * messages (DREQ, REJ) claiming another's communication IDs, MADs of any
 * class, and plain datagrams to any QP, which arrived with source QP 1.
 * Now only CM messages naming the sender's own ID (its prefix) leave, to
 * a QP1 under the CM's Q_Key; the victim's QP1 and UD QP receive nothing.
 */
static void
cm_forge(void)
{
	struct cs_side v, x;
	struct cs_cq vcq, xcq;
	struct cs_qp vg, xg, vud;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t ah, vp, xp, i;
	enum ibv_wc_status st;

	cs_side_open(&v, path_a);
	cs_side_open(&x, path_a);
	vp = (uint32_t)v.s.hello.cm_prefix << 24;
	xp = (uint32_t)x.s.hello.cm_prefix << 24;
	CHECK(vp != 0 && xp != 0 && vp != xp, "CM prefixes %x %x", vp, xp);
	CHECK(cs_cq(&v.s, 64, &vcq) == 0 && cs_cq(&x.s, 64, &xcq) == 0, "cqs");
	CHECK(gsi_proxy(&v.s, v.pd, vcq.handle, vcq.handle, &vg) == 0 &&
		gsi_proxy(&x.s, x.pd, xcq.handle, xcq.handle, &xg) == 0,
		"proxies");
	CHECK(cs_qp(&v.s, v.pd, IBV_QPT_UD, &vcq, &vud) == 0, "the victim's UD QP");
	ud_ready(&v.s, &vud, 0x11111111);
	for (i = 0; i < 4; i++) {
		sge = (struct ibv_sge){ (uint64_t)(uintptr_t)v.b.addr + i * 512,
			512, v.b.lkey };
		cs_post_recv(&v.s, &vg, 100 + i, &sge);
		cs_post_recv(&v.s, &vud, 200 + i, &sge);
	}
	ah = ah_to_self(&x);
	/* forged: the victim's IDs as the sender's own */
	cm_msg(x.b.addr, CM_ATTR_DREQ, vp | 0x123456, vp | 0x654321);
	cm_msg(x.b.addr + 512, CM_ATTR_REJ, vp | 0x123456, vp | 0x654321);
	/* another class (subnet administration), same IDs */
	memcpy(x.b.addr + 1024, x.b.addr, CM_MAD_LEN);
	x.b.addr[1024 + 1] = 0x03;
	memset(x.b.addr + 1536, 0x5a, 64);
	st = gsi_send(&x, &xg, &xcq, ah, 0, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st != IBV_WC_SUCCESS, "a DREQ with the victim's ID went");
	st = gsi_send(&x, &xg, &xcq, ah, 512, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st != IBV_WC_SUCCESS, "a REJ with the victim's ID went");
	st = gsi_send(&x, &xg, &xcq, ah, 1024, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st != IBV_WC_SUCCESS, "a MAD of another class went");
	st = gsi_send(&x, &xg, &xcq, ah, 1536, 64, vud.qpn, 0x11111111);
	CHECK(st != IBV_WC_SUCCESS, "a datagram from QP1 to a UD QP went");
	CHECK(cs_poll(&vcq, &wc, 1000) == 0, "the victim received something: "
		"wr_id %lu status %d src_qp %u", (unsigned long)wc.wr_id,
		wc.status, wc.src_qp);
	/* and its own IDs go: a DREQ to itself comes back to its QP1 */
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)x.b.addr + 4096, 512,
		x.b.lkey };
	cs_post_recv(&x.s, &xg, 300, &sge);
	cm_msg(x.b.addr + 2048, CM_ATTR_DREQ, xp | 1, xp | 2);
	st = gsi_send(&x, &xg, &xcq, ah, 2048, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st == IBV_WC_SUCCESS, "a DREQ with its own IDs: status %d", st);
	CHECK(cs_poll(&xcq, &wc, 10000) == 1 && wc.wr_id == 300 &&
		wc.status == IBV_WC_SUCCESS, "its own DREQ came back");
	cs_close(&v.s);
	cs_close(&x.s);
	printf("forged CM messages, other classes, datagrams: refused\n");
}

static int
set_sr(struct cs *s, uint32_t handle, uint32_t on)
{
	struct droce_chan_set_sr_req r = { .handle = handle, .on = on };

	return cs_rpc(s, DROCE_OP_SET_SR, &r, NULL, NULL, 0, NULL, NULL);
}

/*
 * SET_SR (both daemons' ports in DROCE_SELECTIVE_REPEAT=cm): selective
 * repeat changes what a responder acknowledges, so the daemon takes it
 * for the application's own RC QPs only, and only before they connect;
 * a QP pair that both set it then moves checked data.
 */
static void
sr_abuse(void)
{
	struct cs_side v, w;
	struct cs_cq gcq;
	struct cs_qp g, ud;

	cs_side_open(&v, path_a);
	cs_side_open(&w, path_b);
	CHECK(v.s.hello.sr_mode == 2, "HELLO says mode %u (not cm)",
		v.s.hello.sr_mode);
	CHECK(cs_cq(&v.s, 16, &gcq) == 0, "cq");
	CHECK(gsi_proxy(&v.s, v.pd, gcq.handle, gcq.handle, &g) == 0, "proxy");
	CHECK(cs_qp(&v.s, v.pd, IBV_QPT_UD, &gcq, &ud) == 0, "UD QP");
	CHECK(set_sr(&v.s, 0x0fffffff, 1) == -EINVAL, "no such QP");
	CHECK(set_sr(&v.s, g.handle, 1) == -EINVAL, "a GSI proxy");
	CHECK(set_sr(&v.s, ud.handle, 1) == -EINVAL, "a UD QP");
	CHECK(set_sr(&v.s, v.qp.handle, 2) == -EINVAL, "on = 2");
	CHECK(set_sr(&v.s, v.qp.handle, UINT32_MAX) == -EINVAL, "on = ~0");
	CHECK(set_sr(&v.s, v.qp.handle, 1) == 0, "an RC QP in RESET");
	CHECK(set_sr(&w.s, w.qp.handle, 1) == 0, "its peer");
	cs_pair(&v, &w);
	CHECK(set_sr(&v.s, v.qp.handle, 0) == -EINVAL, "a connected QP");
	cs_traffic(&v, &w, 21);
	cs_close(&v.s);
	cs_close(&w.s);
	printf("SET_SR refused but for its own RC QPs before they connect; "
		"a pair with it moved checked data\n");
}

/* Ring a WQ's doorbell for the index its prod says now. */
static void
ring_raw(struct cs *s, struct cs_wq *wq, uint32_t kind, uint32_t handle)
{
	struct droce_chan_region *r = (void *)s->region;
	struct droce_chan_db *db = (void *)(s->region + r->db_off[wq->queue]);
	uint64_t one = 1;

	__atomic_store_n(&wq->sh->rung, 1, __ATOMIC_RELEASE);
	db->ring[db->prod & (DROCE_CHAN_DB_SIZE - 1)] = DROCE_DB(kind, handle);
	__atomic_store_n(&db->prod, db->prod + 1, __ATOMIC_RELEASE);
	if (s->wake_fd >= 0 && write(s->wake_fd, &one, sizeof(one)) < 0)
		perror("wake");
}

static int
error_within(struct cs_wq *wq, int ms)
{
	int i;

	for (i = 0; i < ms / 10; i++) {
		if (__atomic_load_n(&wq->sh->error, __ATOMIC_ACQUIRE))
			return 1;
		usleep(10000);
	}
	return 0;
}

/*
 * A scribbled producer index was refused by one ring consumer, flushed by
 * another and ignored by a third (a GSI proxy's receive queue). Every
 * ring is now read through one accessor (app/droced/ring.c) and its owner
 * refused the same way: a proxy's scribbled RQ, then SQ, put it in the
 * error state like any QP (its receives complete flushed); a RESET makes
 * it new, and a MAD to itself arrives again.
 */
static void
ring_scribble(void)
{
	struct droce_chan_modify_qp_req m = { 0 };
	struct cs_side x;
	struct cs_cq cq;
	struct cs_qp g;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t ah, xp;
	int i;

	cs_side_open(&x, path_a);
	CHECK(cs_cq(&x.s, 64, &cq) == 0, "cq");
	CHECK(gsi_proxy(&x.s, x.pd, cq.handle, cq.handle, &g) == 0, "proxy");
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)x.b.addr + 4096, 512,
		x.b.lkey };
	cs_post_recv(&x.s, &g, 41, &sge);
	for (i = 0; i < 500 && __atomic_load_n(&g.rq.sh->cons,
			__ATOMIC_ACQUIRE) != g.rq.prod; i++)
		usleep(10000);
	CHECK(g.rq.sh->cons == g.rq.prod, "the receive taken");
	/* the receive queue's index far past its ring */
	g.rq.sh->prod = g.rq.prod + 0x40000000u;
	ring_raw(&x.s, &g.rq, DROCE_KIND_RQ, g.handle);
	CHECK(error_within(&g.sq, 5000), "a proxy's scribbled RQ index was "
		"not refused");
	CHECK(cs_poll(&cq, &wc, 5000) == 1 && wc.wr_id == 41 &&
		wc.status == IBV_WC_WR_FLUSH_ERR, "its receive flushed: wr_id %lu "
		"status %d", (unsigned long)wc.wr_id, wc.status);
	/* a RESET makes it new: a MAD to itself arrives */
	m.handle = g.handle;
	m.mask = IBV_QP_STATE;
	m.attr.qp_state = IBV_QPS_RESET;
	CHECK(cs_rpc(&x.s, DROCE_OP_MODIFY_QP, &m, NULL, NULL, 0, NULL, NULL) == 0,
		"RESET");
	CHECK(g.sq.sh->error == 0, "the error flag after RESET");
	g.rq.prod = g.rq.sh->cons;
	cs_post_recv(&x.s, &g, 42, &sge);
	ah = ah_to_self(&x);
	xp = (uint32_t)x.s.hello.cm_prefix << 24;
	cm_msg(x.b.addr, CM_ATTR_DREQ, xp | 1, xp | 2);
	CHECK(gsi_send(&x, &g, &cq, ah, 0, CM_MAD_LEN, 1, CM_QKEY) ==
		IBV_WC_SUCCESS, "a MAD after RESET");
	CHECK(cs_poll(&cq, &wc, 10000) == 1 && wc.wr_id == 42 &&
		wc.status == IBV_WC_SUCCESS, "it came back: wr_id %lu status %d",
		(unsigned long)wc.wr_id, wc.status);
	/* and the send queue's index */
	g.sq.sh->prod = g.sq.prod + 0x40000000u;
	ring_raw(&x.s, &g.sq, DROCE_KIND_SQ, g.handle);
	CHECK(error_within(&g.sq, 5000), "a proxy's scribbled SQ index was "
		"not refused");
	cs_close(&x.s);
	printf("scribbled ring indexes: their owner refused\n");
}

static void *
read_forever(void *arg)
{
	int fd = *(int *)arg;
	uint64_t v;

	while (read(fd, &v, sizeof(v)) >= 0 || errno == EINTR ||
			errno == EAGAIN)
		;
	return NULL;	/* not readable: a pipe's write end */
}

/* fd made blocking, and as full as it will get (8 bytes at a time: an
 * eventfd's counter to its top, a pipe to its capacity). */
static void
fill_blocking(int fd)
{
	uint64_t big = 0xfffffffffffffffeull;
	int fl = fcntl(fd, F_GETFL);
	int i;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (write(fd, &big, sizeof(big)) != sizeof(big))
		return;		/* not writable, or the eventfd is full */
	for (i = 0; i < 100000 && write(fd, &big, 1) == 1; i++)
		;
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/*
 * The descriptors droced handed out for events were eventfds whose open
 * file it shared with the application: flags (O_NONBLOCK) are the open
 * file's, so the application could make droced's read or write of them
 * block, and it could fill them or read them dry. A session that makes
 * its channel, async and wake descriptors blocking, fills them and reads
 * the wake one in a loop, then has a completion fire on its channel and
 * an async event raised (a malformed WQE): droced's data path and main
 * thread blocked in write() or read(), and every session stalled. Each
 * is now a pipe whose ends are one side's alone.
 */
static void
event_fds(void)
{
	struct droce_chan_create_cq_req cr = { .cqe = 64 };
	struct droce_chan_create_cq_rep cp;
	struct droce_chan_handle ch;
	struct droce_chan_swqe w = { 0 };
	struct cs_side h, p;
	struct cs_cq cq;
	pthread_t t;
	int fds[DROCE_CHAN_MAX_FDS], nfds = 0, i;
	static int wake;

	cs_side_open(&h, path_a);
	cs_side_open(&p, path_b);
	cs_pair(&h, &p);
	if (h.s.wake_fd >= 0) {
		wake = h.s.wake_fd;
		fcntl(wake, F_SETFL, fcntl(wake, F_GETFL) & ~O_NONBLOCK);
		CHECK(pthread_create(&t, NULL, read_forever, &wake) == 0,
			"a thread reading the wake descriptor");
		pthread_detach(t);
	}
	fill_blocking(h.s.async_fd);
	CHECK(cs_rpc(&h.s, DROCE_OP_CREATE_CHANNEL, NULL, &ch, NULL, 0, fds,
		&nfds) == 0 && nfds >= 1, "a completion channel");
	for (i = 0; i < nfds; i++)
		fill_blocking(fds[i]);
	cr.channel = ch.handle;
	CHECK(cs_rpc(&h.s, DROCE_OP_CREATE_CQ, &cr, &cp, NULL, 0, NULL,
		NULL) == 0, "a CQ on the channel");
	cq.handle = cp.handle;
	cq.size = cp.size;
	cq.sh = (void *)(h.s.region + cp.off);
	cq.wc = (void *)(h.s.region + cp.off + DROCE_CHAN_CQ_WC);
	cq.cons = 0;
	/* h's QP completes into its own CQ: point it there by a new QP */
	CHECK(cs_qp(&h.s, h.pd, IBV_QPT_RC, &cq, &h.qp) == 0, "a QP on it");
	CHECK(cs_connect(&h.s, &h.qp, p.s.hello.gids[1].gid, p.qp.qpn) == 0,
		"connect it");
	__atomic_store_n(&cq.sh->arm, DROCE_ARM_ANY, __ATOMIC_SEQ_CST);
	/* a malformed WQE: an async event, and a completion that fires */
	w.wr_id = 5;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1000;
	cs_post_send(&h.s, &h.qp, &w, NULL);
	usleep(500000);
	printf("event descriptors blocking, full, read dry: others served\n");
	/* the bystanders' traffic after this case shows whether droced
	 * went on; h keeps its descriptors (and the reader) until exit */
}

/*
 * What an ordinary buggy or nosy application may also try, each refused
 * and each harming nobody else: shrinking a memfd it registered (sealed:
 * EPERM; growing it is harmless, and the MR still takes a WRITE), a WRITE
 * with another application's rkey (y's, the bystander on B: a remote
 * access error, y's memory untouched), an inline length past its QP's
 * and its slot (its QP errors), and a request whose sender closes its
 * socket before the reply.
 */
static void
misc_abuse(struct cs_side *y)
{
	struct droce_chan_create_cq_req cr = { .cqe = 16,
		.channel = DROCE_CHAN_NONE };
	struct droce_chan_hdr hdr = { .op = DROCE_OP_CREATE_CQ, .seq = 9 };
	struct droce_chan_swqe w = { 0 };
	struct cs_side h, p, z, q;
	struct ibv_wc wc;
	struct cs_buf b;
	struct cs t;
	uint8_t *m, before[4096];
	int fd;

	/* a registered memfd shrunk and grown */
	cs_side_open(&h, path_a);
	cs_side_open(&p, path_b);
	cs_pair(&h, &p);
	fd = memfd_create("misc", MFD_ALLOW_SEALING);
	CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "memfd");
	m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "map");
	CHECK(reg_fd(&h.s, h.pd, fd, 0, (uint64_t)(uintptr_t)m, 1 << 20, &b) == 0,
		"register");
	CHECK(ftruncate(fd, 4096) != 0 && errno == EPERM, "a registered memfd "
		"shrank (%s)", strerror(errno));
	CHECK(ftruncate(fd, 2 << 20) == 0, "growing it");
	cs_fill(p.b.addr, 65536, 11);
	post_write(&p, (uint64_t)(uintptr_t)m + 4096, b.rkey, 65536, 1);
	cs_expect_wc(&p.cq, IBV_WC_SUCCESS, "a WRITE into the grown MR");
	CHECK(memcmp(m + 4096, p.b.addr, 65536) == 0, "it landed");
	/* another application's rkey: y's buffer, from z's QP to q on B */
	cs_side_open(&z, path_a);
	cs_side_open(&q, path_b);
	cs_pair(&z, &q);
	memcpy(before, y->b.addr, sizeof(before));
	cs_fill(z.b.addr, 4096, 12);
	post_write(&z, (uint64_t)(uintptr_t)y->b.addr, y->b.rkey, 4096, 2);
	cs_expect_wc(&z.cq, IBV_WC_REM_ACCESS_ERR, "a WRITE with another's rkey");
	CHECK(memcmp(before, y->b.addr, sizeof(before)) == 0,
		"another's rkey reached its memory");
	/* an inline length past the QP's and the slot's */
	w.wr_id = 3;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	w.inline_len = 100000;
	cs_post_send(&h.s, &h.qp, &w, NULL);
	CHECK(cs_poll(&h.cq, &wc, 20000) == 1 && wc.wr_id == 3 &&
		wc.status == IBV_WC_LOC_QP_OP_ERR, "an inline length of 100000: "
		"wr_id %lu status %d", (unsigned long)wc.wr_id, wc.status);
	CHECK(h.qp.sq.sh->error == 1, "its QP is not in error");
	/* selective repeat on a port that does not offer it */
	CHECK(set_sr(&z.s, z.qp.handle, 1) == -EPERM, "SET_SR on a port in "
		"DROCE_SELECTIVE_REPEAT=0");
	/* a request, and the socket closed before its reply */
	CHECK(cs_open(&t, path_a) == 0, "a session");
	CHECK(droce_chan_send(t.sock, &hdr, &cr, sizeof(cr), NULL, 0) == 0,
		"CREATE_CQ sent");
	cs_close(&t);
	usleep(200000);
	cs_close(&h.s);
	cs_close(&p.s);
	cs_close(&z.s);
	cs_close(&q.s);
	munmap(m, 1 << 20);
	close(fd);
	printf("a registered memfd shrunk, another's rkey, a huge inline "
		"length, a socket closed mid-request: refused\n");
}

/* A connected socket to path, no HELLO yet; -1 when refused. */
static int
connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(s);
		s = -1;
	}
	return s;
}

/* A new session on A answers ALLOC_PD within ms (a HELLO and a PD). */
static int
served_within(int ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct droce_chan_hello_req hr = { .version = DROCE_CHAN_VERSION };
	struct droce_chan_hdr h = { .op = DROCE_OP_HELLO, .seq = 1 };
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} in;
	int fds[DROCE_CHAN_MAX_FDS], nfds, i, ok = 0, s;
	struct pollfd p;

	(void)sa;
	s = connect_to(path_a);
	if (s < 0)
		return 0;
	snprintf(hr.comm, sizeof(hr.comm), "bystander");
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	if (droce_chan_send(s, &h, &hr, sizeof(hr), NULL, 0) == 0 &&
			poll(&p, 1, ms) == 1 &&
			droce_chan_recv(s, in.buf, sizeof(in.buf), 1, fds, &nfds) >= 0 &&
			in.h.status == 0) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		h.op = DROCE_OP_ALLOC_PD;
		h.seq = 2;
		p.revents = 0;
		ok = droce_chan_send(s, &h, NULL, 0, NULL, 0) == 0 &&
			poll(&p, 1, ms) == 1 &&
			droce_chan_recv(s, in.buf, sizeof(in.buf), 1, fds,
				&nfds) >= 0 && in.h.seq == 2 && in.h.status == 0;
	}
	close(s);
	return ok;
}

/*
 * A session that sends requests and never reads the replies: droced's
 * main thread, which serves every session, blocked in sendmsg once that
 * session's socket filled (another client's ibv_devinfo went unanswered
 * for as long as it liked). Now its replies wait in the session, which
 * is not read meanwhile, and everyone else is served.
 */
static void
unread_replies(void)
{
	struct droce_chan_hdr h = { .op = DROCE_OP_QUERY_PORT };
	struct cs t;
	int sent = 0, ok;

	CHECK(cs_open(&t, path_a) == 0, "the flooding session");
	for (;;) {
		h.seq = (uint32_t)sent + 100;
		h.len = 0;
		if (send(t.sock, &h, sizeof(h), MSG_DONTWAIT) != sizeof(h))
			break;
		if (++sent == 100000)
			break;
	}
	CHECK(sent > 100, "only %d requests went", sent);
	usleep(300000);
	ok = served_within(5000);
	CHECK(ok, "another session was not served while one of %d unread "
		"requests' replies waited", sent);
	cs_close(&t);
	printf("%d requests whose replies were never read: others served\n",
		sent);
}

/*
 * A HELLO with an empty program name, then a RESOLVE of an address that
 * never answers: the name was how droced told a session that may be
 * parked, so the neighbour's wait (seconds) ran on the main thread and
 * held every session. Now it waits aside, as any session's does.
 */
static void
hello_nameless(void)
{
	struct droce_chan_hello_req hr = { .version = DROCE_CHAN_VERSION };
	struct droce_chan_resolve_req r = { .timeout_ms = 5000 };
	struct droce_chan_hdr h = { .op = DROCE_OP_HELLO, .seq = 1 };
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} in;
	int fds[DROCE_CHAN_MAX_FDS], nfds, i, s = connect_to(path_a);
	struct pollfd p = { .fd = s, .events = POLLIN };

	CHECK(s >= 0, "connect");
	CHECK(droce_chan_send(s, &h, &hr, sizeof(hr), NULL, 0) == 0 &&
		poll(&p, 1, 10000) == 1 &&
		droce_chan_recv(s, in.buf, sizeof(in.buf), 1, fds, &nfds) >= 0 &&
		in.h.status == 0, "a nameless HELLO");
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	r.gid[10] = r.gid[11] = 0xff;
	r.gid[12] = 10;
	r.gid[13] = 9;
	r.gid[15] = 77;		/* nobody */
	h.op = DROCE_OP_RESOLVE;
	h.seq = 2;
	CHECK(droce_chan_send(s, &h, &r, sizeof(r), NULL, 0) == 0, "RESOLVE");
	usleep(200000);
	CHECK(served_within(2000), "another session waited for the nameless "
		"session's neighbour");
	close(s);
	printf("a nameless session's neighbour: waited for aside\n");
}

/*
 * Connections that never say HELLO (300 of them, as root), then sessions
 * of an ordinary user in three processes, 30 each: the 64 connections
 * without HELLO filled every slot droced had, and nothing limited a user.
 * Now a connection without HELLO is closed after a few seconds, or at
 * once to make room for a new one, and a user other than root holds at
 * most DROCE_APPS_PER_USER sessions (64): a new program is served.
 */
static void
session_flood(const char *run)
{
	int i, k, pipefd[2], taken = 0;
	pid_t flood, kids[3];
	uint8_t n;

	/* the connections from another process (a process holds few) */
	CHECK(pipe(pipefd) == 0, "pipe");
	flood = fork();
	CHECK(flood >= 0, "fork");
	if (flood == 0) {
		/* gone with the test, whichever way it ends */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pipefd[0]);
		for (i = 0; i < 300; i++)
			if (connect_to(path_a) < 0)
				break;
		n = 1;
		if (write(pipefd[1], &n, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	CHECK(read(pipefd[0], &n, 1) == 1, "the flood");
	close(pipefd[0]);
	CHECK(served_within(5000), "a program after 300 connections without "
		"HELLO");
	kill(flood, SIGKILL);
	waitpid(flood, NULL, 0);
	/* an ordinary user: the run directory must let it reach the socket */
	CHECK(chmod(run, 0711) == 0, "chmod %s", run);
	CHECK(pipe(pipefd) == 0, "pipe");
	for (k = 0; k < 3; k++) {
		kids[k] = fork();
		CHECK(kids[k] >= 0, "fork");
		if (kids[k] == 0) {
			static struct cs s[30];

			n = 0;
			close(pipefd[0]);
			if (setgid(65534) != 0 || setuid(65534) != 0)
				_exit(2);
			/* after setuid, which clears it: gone with the test */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (i = 0; i < 30; i++)
				n += cs_open(&s[i], path_a) == 0;
			if (write(pipefd[1], &n, 1) != 1)
				_exit(3);
			pause();	/* holding them, until killed */
			_exit(0);
		}
	}
	close(pipefd[1]);
	for (k = 0; k < 3; k++) {
		n = 0;
		CHECK(read(pipefd[0], &n, 1) == 1, "a child's count");
		taken += n;
	}
	close(pipefd[0]);
	CHECK(taken > 0 && taken <= 64, "an ordinary user holds %d sessions "
		"(at most 64)", taken);
	CHECK(served_within(5000), "a program beside the user's %d sessions",
		taken);
	for (k = 0; k < 3; k++) {
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
	}
	printf("300 connections without HELLO, a user's %d sessions: others "
		"served\n", taken);
}

int
main(int argc, char **argv)
{
	struct cs_side x, y, u, v;
	const char *c;

	if (argc != 5) {
		fprintf(stderr, "usage: %s CASE SOCK_A SOCK_B RUN_DIR\n", argv[0]);
		return 2;
	}
	c = argv[1];
	path_a = argv[2];
	path_b = argv[3];
	/* the bystanders: a pair across the two daemons */
	cs_side_open(&x, path_a);
	cs_side_open(&y, path_b);
	cs_pair(&x, &y);
	cs_traffic(&x, &y, 1);
	if (strcmp(c, "huge_overrun") == 0)
		huge_overrun(argv[4]);
	else if (strcmp(c, "fake_sysv") == 0)
		fake_sysv();
	else if (strcmp(c, "sysv_truncated") == 0)
		sysv_truncated();
	else if (strcmp(c, "dereg_in_flight") == 0)
		dereg_in_flight();
	else if (strcmp(c, "gsi_cq") == 0)
		gsi_cq();
	else if (strcmp(c, "cm_forge") == 0)
		cm_forge();
	else if (strcmp(c, "ring_scribble") == 0)
		ring_scribble();
	else if (strcmp(c, "event_fds") == 0)
		event_fds();
	else if (strcmp(c, "misc_abuse") == 0)
		misc_abuse(&y);
	else if (strcmp(c, "sr_abuse") == 0)
		sr_abuse();
	else if (strcmp(c, "unread_replies") == 0)
		unread_replies();
	else if (strcmp(c, "hello_nameless") == 0)
		hello_nameless();
	else if (strcmp(c, "session_flood") == 0)
		session_flood(argv[4]);
	else {
		fprintf(stderr, "%s: no such case\n", c);
		return 2;
	}
	/* they are unharmed, and a new pair is served */
	cs_traffic(&x, &y, 2);
	cs_side_open(&u, path_a);
	cs_side_open(&v, path_b);
	cs_pair(&u, &v);
	cs_traffic(&u, &v, 3);
	printf("PASS\n");
	return 0;
}
