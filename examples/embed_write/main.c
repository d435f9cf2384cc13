/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * embed_write: the smallest DPDK application that embeds droce and does
 * RDMA WRITEs to a peer. Progress runs in droce's background thread, so the
 * server does nothing while the client writes into its memory; a final SEND
 * tells it to look. The two sides find each other through files in a
 * directory (a real application would use its own control channel), and
 * the server closes only once the client says its SEND completed.
 *
 *   embed_write server DIR 10.0.0.1 net_memif0,role=server,socket=S -- EAL..
 *   embed_write client DIR 10.0.0.2 net_memif0,role=client,socket=S -- EAL..
 *
 * Read main() first: open a port, register memory, connect the QPs, then
 * the client writes while the server waits, and both close.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_launch.h>
#include <rte_lcore.h>

#include <droce.h>

#define BUF (1 << 20)
#define WRITES 1000

/* What one side tells the other to reach its QP and memory. */
struct info {
	uint32_t qpn, psn, rkey, ipv4;
	uint64_t addr;
};

/* One side of the test: its droce objects and the peer's info. */
struct side {
	const char *role;	/* argv[1]: "server" or "client" */
	const char *dir;	/* where the two sides meet */
	int server;
	struct droce_port_conf pc;
	char eal[512];
	struct droce_port *port;
	struct droce_pd *pd;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *buf;
	struct info mine, peer;
};

/* Leave a mark in DIR that the peer is waiting for. */
static void
mark(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f != NULL)
		fclose(f);
}

/* Wait up to secs seconds for the peer's mark; 0 once it is there. */
static int
await_mark(const char *dir, const char *name, int secs)
{
	char path[512];
	int i;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (i = 0; i < secs * 100; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return -1;
}

static int
exchange(const char *dir, const char *me, const char *peer,
		const struct info *mine, struct info *theirs)
{
	char path[512], tmp[520];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s.info", dir, me);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL || fwrite(mine, sizeof(*mine), 1, f) != 1)
		return -1;
	fclose(f);
	rename(tmp, path);	/* the peer never sees half a file */
	snprintf(path, sizeof(path), "%s.info", peer);
	if (await_mark(dir, path, 60) != 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s/%s", dir, path);
	f = fopen(tmp, "r");
	if (f == NULL)
		return -1;
	ok = fread(theirs, sizeof(*theirs), 1, f) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

static int
wait_wc(struct droce_port *port, struct droce_cq *cq, struct ibv_wc *wc)
{
	int i, n;

	for (i = 0; i < 1000000; i++) {
		droce_port_lock(port, 0);
		n = droce_cq_poll(cq, wc, 1);
		droce_port_unlock(port, 0);
		if (n == 1) {
			if (wc->status == IBV_WC_SUCCESS)
				return 0;
			fprintf(stderr, "completion error: %s\n",
				droce_wc_status_str(wc->status));
			return -1;
		}
		usleep(10);
	}
	fprintf(stderr, "no completion\n");
	return -1;
}

/*
 * Open a droce port on DEVARGS, with the EAL arguments after "--". droce
 * progresses by itself: in its own thread, or (EMBED_LCORES=1) on an lcore
 * this application gives it.
 */
static int
port_open(struct side *s, int argc, char **argv)
{
	struct droce_port_conf *pc = &s->pc;
	struct in_addr ip;
	int i, lcores;

	s->role = argv[1];
	s->dir = argv[2];
	s->server = strcmp(argv[1], "server") == 0;
	for (i = 6; i < argc; i++) {
		strncat(s->eal, argv[i], sizeof(s->eal) - strlen(s->eal) - 2);
		strcat(s->eal, " ");
	}
	droce_port_conf_init(pc);
	pc->devargs = argv[4];
	pc->eal_args = s->eal;
	inet_pton(AF_INET, argv[3], &ip);
	pc->ipv4 = ntohl(ip.s_addr);
	lcores = getenv("EMBED_LCORES") != NULL;
	pc->mode = lcores ? DROCE_PROGRESS_LCORES : DROCE_PROGRESS_THREAD;
	/* EMBED_IP_CSUM=1: the PMD fills IPv4 header sums in wherever it can
	 * (droce's default is to offload them only to NICs that DMA) */
	if (getenv("EMBED_IP_CSUM") != NULL)
		pc->tx_ip_csum = DROCE_OFFLOAD_ON;
	s->port = droce_port_open(pc);
	if (s->port == NULL) {
		fprintf(stderr, "droce_port_open: %s\n", strerror(errno));
		return -1;
	}
	if (lcores) {
		unsigned int w = rte_get_next_lcore(-1, 1, 0);

		if (w >= RTE_MAX_LCORE || rte_eal_remote_launch(droce_port_run,
				s->port, w) != 0) {
			fprintf(stderr, "no worker lcore for droce (EAL -l)\n");
			return -1;
		}
		printf("%s: droce runs on lcore %u\n", s->role, w);
	}
	return 0;
}

/* A PD, one CQ, an RC QP and a buffer the peer may write into. */
static void
register_memory(struct side *s)
{
	struct droce_dev *dev = droce_port_dev(s->port);
	struct ibv_qp_init_attr ia;

	s->pd = droce_pd_alloc(dev);
	s->cq = droce_cq_create(dev, 0, 64);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	/* the progress thread runs already: hold the queue it walks */
	droce_port_lock(s->port, 0);
	s->qp = droce_qp_create(s->pd, &ia, s->cq, s->cq, NULL);
	droce_port_unlock(s->port, 0);
	s->buf = aligned_alloc(4096, BUF);
	memset(s->buf, 0, BUF);
	s->mr = droce_mr_reg(s->pd, s->buf, BUF, (uint64_t)(uintptr_t)s->buf,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

/* INIT -> RTR -> RTS towards the peer at av; the caller holds the queue's
 * lock. 0, or nonzero if a step failed. */
static int
qp_to_rts(struct side *s, struct droce_av *av)
{
	struct ibv_qp_attr a;
	int rc = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	rc |= droce_qp_modify(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, NULL);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = s->peer.qpn;
	a.rq_psn = s->peer.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	rc |= droce_qp_modify(s->qp, &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, av);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->mine.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc |= droce_qp_modify(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC, NULL);
	return rc;
}

/* The server's receive for the client's final SEND. */
static int
post_done_recv(struct side *s)
{
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rb;

	sge.addr = (uint64_t)(uintptr_t)(s->buf + BUF - 64);
	sge.length = 64;
	sge.lkey = droce_mr_lkey(s->mr);
	return droce_qp_post_recv(s->qp, &rwr, &rb);
}

/*
 * Exchange QP numbers and keys with the peer, resolve its MAC with ARP,
 * bring the QP to RTS and start together with the peer.
 */
static int
connect_peer(struct side *s)
{
	struct droce_av av;
	int rc;

	s->mine.qpn = droce_qp_num(s->qp);
	s->mine.psn = (uint32_t)getpid() & 0xffffff;
	s->mine.rkey = droce_mr_rkey(s->mr);
	s->mine.addr = (uint64_t)(uintptr_t)s->buf;
	s->mine.ipv4 = s->pc.ipv4;
	if (exchange(s->dir, s->server ? "server" : "client",
			s->server ? "client" : "server", &s->mine,
			&s->peer) != 0) {
		fprintf(stderr, "no peer\n");
		return -1;
	}
	memset(&av, 0, sizeof(av));
	droce_gid_from_ipv4(av.dgid, s->peer.ipv4);
	av.sgid_index = 1;
	if (droce_port_resolve(s->port, av.dgid, av.dmac, 10000) != 0) {
		fprintf(stderr, "ARP: no answer from the peer\n");
		return -1;
	}
	droce_port_lock(s->port, 0);
	rc = qp_to_rts(s, &av);
	if (s->server)
		rc |= post_done_recv(s);
	droce_port_unlock(s->port, 0);
	if (rc) {
		fprintf(stderr, "QP setup failed\n");
		return -1;
	}
	/* the peer drops what reaches its QP before RTR: start together */
	mark(s->dir, s->server ? "server.ready" : "client.ready");
	if (await_mark(s->dir, s->server ? "client.ready" : "server.ready",
			60) != 0) {
		fprintf(stderr, "the peer's QP never got ready\n");
		return -1;
	}
	return 0;
}

/* Passive: droce's thread places the WRITEs; wait for "done", check. */
static int
server_wait(struct side *s)
{
	struct ibv_wc wc;
	int i, rc = 0;

	if (wait_wc(s->port, s->cq, &wc) != 0) {
		fprintf(stderr, "server: no done message\n");
		rc = 1;
	}
	for (i = 0; i < WRITES && rc == 0; i++)
		if (s->buf[(size_t)i * 1024] != (uint8_t)(i + 1) ||
				s->buf[(size_t)i * 1024 + 1023] !=
				(uint8_t)(i * 7)) {
			fprintf(stderr, "server: write %d missing\n", i);
			rc = 1;
		}
	if (rc == 0)
		printf("server: %d RDMA WRITEs arrived intact\n", WRITES);
	/*
	 * Stay until the client has its SEND's completion. Our ACK may still
	 * be in flight, or lost and due again for the client's retry; close
	 * now and the client retries into a closed port until its retry
	 * count runs out.
	 */
	if (await_mark(s->dir, "client.done", 60) != 0)
		fprintf(stderr, "server: the client never finished\n");
	return rc;
}

/* WR i: WRITE 1 KB at offset i * 1 KB; after the WRITEs, a SEND. */
static int
post_one(struct side *s, int i)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	int rc;

	memset(&wr, 0, sizeof(wr));
	sge.addr = (uint64_t)(uintptr_t)(s->buf + (size_t)i * 1024);
	sge.length = i < WRITES ? 1024 : 4;
	sge.lkey = droce_mr_lkey(s->mr);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.opcode = i < WRITES ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
	wr.wr.rdma.remote_addr = s->peer.addr + (uint64_t)i * 1024;
	wr.wr.rdma.rkey = s->peer.rkey;
	droce_port_lock(s->port, 0);
	rc = droce_qp_post_send(s->qp, &wr, &bad);
	droce_port_unlock(s->port, 0);
	/* hand the queue to droce's thread, waking it if it naps */
	droce_port_kick(s->port, 0);
	return rc;
}

/* The WRITEs, one at a time, each waited for, then the SEND. */
static int
client_write(struct side *s)
{
	struct ibv_wc wc;
	int i, rc = 0;

	for (i = 0; i < WRITES; i++) {
		s->buf[(size_t)i * 1024] = (uint8_t)(i + 1);
		s->buf[(size_t)i * 1024 + 1023] = (uint8_t)(i * 7);
	}
	for (i = 0; i <= WRITES && rc == 0; i++) {
		rc = post_one(s, i);
		if (rc == 0 && wait_wc(s->port, s->cq, &wc) != 0)
			rc = 1;
	}
	printf("client: %d RDMA WRITEs and a SEND %s\n", WRITES,
		rc ? "FAILED" : "completed");
	if (s->pc.tx_ip_csum == DROCE_OFFLOAD_ON) {
		struct droce_port_queue_stats qs;

		droce_port_queue_stats(s->port, 0, &qs);
		printf("client: %llu frames sent with the IPv4 checksum "
			"offloaded\n",
			(unsigned long long)qs.tx_ip_csum_offloaded);
	}
	mark(s->dir, "client.done");	/* the server may go now */
	return rc;
}

int
main(int argc, char **argv)
{
	static struct side s;
	int rc;

	if (argc < 5) {
		fprintf(stderr, "usage: %s server|client DIR IP DEVARGS [-- EAL]\n",
			argv[0]);
		return 2;
	}
	if (port_open(&s, argc, argv) != 0)
		return 1;
	register_memory(&s);
	if (connect_peer(&s) != 0)
		return 1;
	rc = s.server ? server_wait(&s) : client_write(&s);
	droce_port_close(s.port);
	return rc ? 1 : 0;
}
