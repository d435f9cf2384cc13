/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rpma_pair server|client ADDR CASE: Debian's librpma (1.2) on droce,
 * run through droce-run by test/rdmacm/cm-pair.sh. Written for droce,
 * not copied: each CASE makes the librpma calls of one of the library's
 * own examples (pmem/rpma examples/, which Debian does not ship), the
 * way they make them, and checks what they only print.
 *
 *   conn      01-connection: connect, exchange private data, disconnect
 *   read      02-read-to-volatile: rpma_read of the server's bytes
 *   write     04-write-to-persistent: rpma_write, then rpma_flush
 *             (visibility): the server finds the bytes
 *   flush     05-flush-to-persistent: the server says direct write to
 *             pmem; rpma_write, then rpma_flush(PERSISTENT)
 *   atomic    07-atomic-write: rpma_atomic_write of 8 bytes, flushed
 *   pingpong  08-messages-ping-pong: rpma_send / rpma_recv, 100 rounds,
 *             the first receive posted with rpma_conn_req_recv
 *   send_imm  10-send-with-imm: rpma_send_with_imm, the immediate and
 *             the payload checked at the receiver (librpma puts the
 *             immediate in network order, its examples ntohl it)
 *   write_imm 11-write-with-imm: rpma_write_with_imm into the server's
 *             region, the immediate in the server's receive completion
 *
 * Every client starts the way librpma's clients do: a synchronous
 * rdma_cm ID (no channel) resolves address and route, and is then
 * migrated onto librpma's own channel (rdma_migrate_id). Exit 0 when
 * every check of both sides holds; each prints "ok: CASE" at the end.
 */

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <librpma.h>

#define PORT "7204"
#define REGION 4096
#define MSG_OFF 0		/* ping-pong and send_imm messages */
#define DATA_OFF 1024		/* what read/write/flush/write_imm move */
#define ATOMIC_OFF 2048		/* 8-byte aligned, as rpma_atomic_write wants */
#define DATA_LEN 64
#define ROUNDS 100
#define IMM 0x5eed1d0eu
/*
 * Completions of IBTA 1.5's FLUSH and ATOMIC WRITE, as rdma-core >= 45
 * numbers them (IBV_WC_FLUSH, IBV_WC_ATOMIC_WRITE): a librpma built
 * against its headers posts them natively (librpma >= 1.3); Debian's
 * 1.2, built against rdma-core 44, flushes with a READ and writes the 8
 * bytes with a WRITE.
 */
#define WC_FLUSH 8
#define WC_ATOMIC_WRITE 9

static const char pattern_read[DATA_LEN] = "droce-rpma: the server's bytes, read";
static const char pattern_write[DATA_LEN] = "droce-rpma: the client's bytes, written";
static const char atomic_value[8] = "atom8byt";

#define FAIL(...) do {							\
	printf("FAIL: " __VA_ARGS__);					\
	printf("\n");							\
	exit(1);							\
} while (0)

/* librpma's calls return 0 or a negative RPMA_E_* */
#define TRY(call) do {							\
	int _r = (call);						\
	if (_r != 0)							\
		FAIL("%s: %s", #call, rpma_err_2str(_r));		\
} while (0)

/* what the server tells the client in the private data of its REP */
struct desc {
	uint8_t mr_size;
	uint8_t pcfg_size;
	uint8_t bytes[64];
};

/*
 * A page of its own, as the examples' malloc_aligned gives; or, where
 * the server's memory is to be persistent (05's pmem file), a shared
 * mapping of a file on disk: a librpma that flushes natively registers
 * it for FLUSH to persistence, which droce takes only over a file it
 * can msync (doc/verbs.md, "FLUSH"), and not once it is unlinked: the
 * file goes when the server is done, or when the process ends.
 */
static char region_path[] = "/var/tmp/droce-rpma.XXXXXX";

static void
region_file_gone(void)
{
	unlink(region_path);
}

static void *
region_new(bool file)
{
	void *p;
	int fd;

	if (file) {
		fd = mkstemp(region_path);
		if (fd < 0 || ftruncate(fd, REGION) != 0)
			FAIL("a file for the region in /var/tmp");
		atexit(region_file_gone);
		p = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			0);
		close(fd);
		if (p == MAP_FAILED)
			FAIL("mmap of the region's file");
		return p;
	}
	if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), REGION) != 0)
		FAIL("posix_memalign");
	memset(p, 0, REGION);
	return p;
}

/*
 * rpma_utils_get_ibv_context resolves ADDR with a fixed 1 s timeout: on
 * a loaded machine the first ARP may take longer, so ask again (the
 * examples give up at once; a second ask finds the answer cached).
 */
static struct rpma_peer *
peer_for(const char *addr, enum rpma_util_ibv_context_type type,
	bool *persistent)
{
	struct ibv_device_attr_ex ax;
	struct ibv_context *ctx = NULL;
	struct rpma_peer *peer = NULL;
	int i, r = RPMA_E_UNKNOWN;

	for (i = 0; i < 10 && r != 0; i++)
		r = rpma_utils_get_ibv_context(addr, type, &ctx);
	if (r != 0)
		FAIL("rpma_utils_get_ibv_context(%s): %s", addr, rpma_err_2str(r));
	/* IB_UVERBS_DEVICE_FLUSH_PERSISTENT (kernel >= 6.2): droce in
	 * process; attached, droced maps no file and refuses it */
	memset(&ax, 0, sizeof(ax));
	*persistent = ibv_query_device_ex(ctx, NULL, &ax) == 0 &&
		(ax.device_cap_flags_ex & (1ULL << 39));
	TRY(rpma_peer_new(ctx, &peer));
	return peer;
}

static void
expect_event(struct rpma_conn *conn, enum rpma_conn_event want)
{
	enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;

	TRY(rpma_conn_next_event(conn, &ev));
	if (ev != want)
		FAIL("connection event %s, want %s",
			rpma_utils_conn_event_2str(ev),
			rpma_utils_conn_event_2str(want));
}

/* the next completion on the connection's CQ, which must be a success */
static void
next_wc(struct rpma_conn *conn, struct ibv_wc *wc)
{
	struct rpma_cq *cq = NULL;
	int got = 0, r;

	TRY(rpma_conn_get_cq(conn, &cq));
	for (;;) {
		r = rpma_cq_get_wc(cq, 1, wc, &got);
		if (r == 0 && got == 1)
			break;
		if (r != 0 && r != RPMA_E_NO_COMPLETION)
			FAIL("rpma_cq_get_wc: %s", rpma_err_2str(r));
		TRY(rpma_cq_wait(cq));
	}
	if (wc->status != IBV_WC_SUCCESS)
		FAIL("completion wr_id %" PRIu64 " opcode %d: %s", wc->wr_id,
			wc->opcode, ibv_wc_status_str(wc->status));
}

static void
want_wc(struct rpma_conn *conn, enum ibv_wc_opcode op, uint64_t wr_id,
	struct ibv_wc *wc)
{
	next_wc(conn, wc);
	if (wc->opcode != op || wc->wr_id != wr_id)
		FAIL("completion opcode %d wr_id %" PRIu64 ", want %d %" PRIu64,
			wc->opcode, wc->wr_id, op, wr_id);
}

/* a flush's completion: native, or the READ that stands for one */
static void
flush_wc(struct rpma_conn *conn)
{
	struct ibv_wc wc;

	next_wc(conn, &wc);
	if (wc.wr_id != 4 || ((int)wc.opcode != WC_FLUSH &&
			wc.opcode != IBV_WC_RDMA_READ))
		FAIL("flush: wr_id %" PRIu64 " opcode %d", wc.wr_id, wc.opcode);
	printf("ok: flush %s\n", (int)wc.opcode == WC_FLUSH ?
		"native (IBV_WC_FLUSH)" : "by a READ");
}

static int
server(const char *addr, const char *test)
{
	bool persistent;
	struct rpma_peer *peer = peer_for(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
		&persistent);
	struct rpma_peer_cfg *pcfg = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn_private_data pd;
	struct rpma_conn *conn = NULL;
	struct rpma_ep *ep = NULL;
	bool pmem = strcmp(test, "flush") == 0;
	/* a file where the device can make it persistent */
	bool file = pmem && persistent;
	char *buf = region_new(file);
	struct desc d;
	size_t n;
	struct ibv_wc wc;
	uint64_t v;
	int i;
	int usage = RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_WRITE_DST |
		RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV |
		(pmem ? RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT :
		 RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);

	memcpy(buf + DATA_OFF, pattern_read, DATA_LEN);
	TRY(rpma_mr_reg(peer, buf, REGION, usage, &mr));
	TRY(rpma_peer_cfg_new(&pcfg));
	/* 05-flush-to-persistent's server says so where its memory is pmem */
	TRY(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, pmem));
	memset(&d, 0, sizeof(d));
	TRY(rpma_mr_get_descriptor_size(mr, &n));
	d.mr_size = (uint8_t)n;
	TRY(rpma_peer_cfg_get_descriptor_size(pcfg, &n));
	d.pcfg_size = (uint8_t)n;
	if (d.mr_size + d.pcfg_size > sizeof(d.bytes))
		FAIL("descriptors of %u + %u bytes", d.mr_size, d.pcfg_size);
	TRY(rpma_mr_get_descriptor(mr, d.bytes));
	TRY(rpma_peer_cfg_get_descriptor(pcfg, d.bytes + d.mr_size));

	TRY(rpma_ep_listen(peer, addr, PORT, &ep));
	printf("listening on %s:%s\n", addr, PORT);
	fflush(stdout);
	TRY(rpma_ep_next_conn_req(ep, NULL, &req));
	/* a receive before the REP, as 08 and 10 and 11 post theirs */
	if (strcmp(test, "pingpong") == 0 || strcmp(test, "send_imm") == 0 ||
			strcmp(test, "write_imm") == 0)
		TRY(rpma_conn_req_recv(req, mr, MSG_OFF, DATA_LEN, (void *)1));
	pd.ptr = &d;
	pd.len = (uint8_t)sizeof(d);
	TRY(rpma_conn_req_connect(&req, &pd, &conn));
	expect_event(conn, RPMA_CONN_ESTABLISHED);

	if (strcmp(test, "pingpong") == 0) {
		/* answer each number with the next one */
		for (i = 0; i < ROUNDS; i++) {
			want_wc(conn, IBV_WC_RECV, 1, &wc);
			memcpy(&v, buf + MSG_OFF, sizeof(v));
			if (v != (uint64_t)i * 2)
				FAIL("round %d: got %" PRIu64, i, v);
			v++;
			memcpy(buf + MSG_OFF + 8, &v, sizeof(v));
			if (i + 1 < ROUNDS)
				TRY(rpma_recv(conn, mr, MSG_OFF, DATA_LEN, (void *)1));
			TRY(rpma_send(conn, mr, MSG_OFF + 8, sizeof(v),
				RPMA_F_COMPLETION_ALWAYS, (void *)2));
			want_wc(conn, IBV_WC_SEND, 2, &wc);
		}
		printf("ok: %d rounds answered\n", ROUNDS);
	} else if (strcmp(test, "send_imm") == 0) {
		want_wc(conn, IBV_WC_RECV, 1, &wc);
		if (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != IMM)
			FAIL("send_imm: flags %#x imm %#x", wc.wc_flags,
				wc.imm_data);
		if (wc.byte_len != DATA_LEN ||
				memcmp(buf + MSG_OFF, pattern_write, DATA_LEN) != 0)
			FAIL("send_imm: %u bytes, not the client's", wc.byte_len);
		printf("ok: immediate %#x with the payload\n", ntohl(wc.imm_data));
	} else if (strcmp(test, "write_imm") == 0) {
		want_wc(conn, IBV_WC_RECV_RDMA_WITH_IMM, 1, &wc);
		if (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != IMM)
			FAIL("write_imm: flags %#x imm %#x", wc.wc_flags,
				wc.imm_data);
		/* the WRITE's bytes are placed before its completion shows */
		if (memcmp(buf + DATA_OFF, pattern_write, DATA_LEN) != 0)
			FAIL("write_imm: the region lacks the client's bytes");
		printf("ok: immediate %#x, the bytes in place\n",
			ntohl(wc.imm_data));
	}

	/* the client disconnects when its work is done */
	expect_event(conn, RPMA_CONN_CLOSED);
	TRY(rpma_conn_disconnect(conn));
	TRY(rpma_conn_delete(&conn));

	if (strcmp(test, "write") == 0 || strcmp(test, "flush") == 0) {
		if (memcmp(buf + DATA_OFF, pattern_write, DATA_LEN) != 0)
			FAIL("%s: the region lacks the client's bytes", test);
		printf("ok: the client's bytes in the region\n");
	} else if (strcmp(test, "atomic") == 0) {
		if (memcmp(buf + ATOMIC_OFF, atomic_value, 8) != 0)
			FAIL("atomic: the 8 bytes are not the client's");
		printf("ok: the 8 bytes in the region\n");
	}

	TRY(rpma_ep_shutdown(&ep));
	TRY(rpma_mr_dereg(&mr));
	TRY(rpma_peer_cfg_delete(&pcfg));
	TRY(rpma_peer_delete(&peer));
	if (file)
		munmap(buf, REGION);
	else
		free(buf);
	printf("ok: %s (server)\n", test);
	return 0;
}

/* The client's side of a connection, and what the server described. */
struct client {
	struct rpma_peer *peer;
	struct rpma_mr_local *mr;
	struct rpma_conn_cfg *cfg;
	struct rpma_conn *conn;
	struct rpma_mr_remote *dst;	/* the server's region */
	char *buf;
	bool pmem;			/* the server's direct write to pmem */
};

/* Connected the way librpma's clients connect, the server's region and
 * peer configuration taken from its private data. */
static void
client_open(struct client *c, const char *addr, const char *test)
{
	bool persistent;
	struct rpma_peer_cfg *pcfg = NULL;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn_private_data pd;
	const struct desc *d;
	size_t size;
	int usage = RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC |
		RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV;

	memset(c, 0, sizeof(*c));
	c->peer = peer_for(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &persistent);
	c->buf = region_new(false);
	TRY(rpma_mr_reg(c->peer, c->buf, REGION, usage, &c->mr));
	/* generous: address and route resolution on a slow, busy machine */
	TRY(rpma_conn_cfg_new(&c->cfg));
	TRY(rpma_conn_cfg_set_timeout(c->cfg, 30000));
	TRY(rpma_conn_req_new(c->peer, addr, PORT, c->cfg, &req));
	if (strcmp(test, "pingpong") == 0)
		TRY(rpma_conn_req_recv(req, c->mr, MSG_OFF + 8, 8, (void *)1));
	TRY(rpma_conn_req_connect(&req, NULL, &c->conn));
	expect_event(c->conn, RPMA_CONN_ESTABLISHED);

	TRY(rpma_conn_get_private_data(c->conn, &pd));
	if (pd.ptr == NULL || pd.len < sizeof(*d))
		FAIL("private data of %u bytes", pd.len);
	d = pd.ptr;
	TRY(rpma_peer_cfg_from_descriptor(d->bytes + d->mr_size, d->pcfg_size,
		&pcfg));
	TRY(rpma_peer_cfg_get_direct_write_to_pmem(pcfg, &c->pmem));
	TRY(rpma_conn_apply_remote_peer_cfg(c->conn, pcfg));
	TRY(rpma_peer_cfg_delete(&pcfg));
	TRY(rpma_mr_remote_from_descriptor(d->bytes, d->mr_size, &c->dst));
	TRY(rpma_mr_remote_get_size(c->dst, &size));
	if (size != REGION)
		FAIL("remote region of %zu bytes, want %d", size, REGION);
}

/* 02: the server's bytes read. */
static void
client_read(struct client *c)
{
	struct ibv_wc wc;

	memset(c->buf + DATA_OFF, 0, DATA_LEN);
	TRY(rpma_read(c->conn, c->mr, DATA_OFF, c->dst, DATA_OFF, DATA_LEN,
		RPMA_F_COMPLETION_ALWAYS, (void *)3));
	want_wc(c->conn, IBV_WC_RDMA_READ, 3, &wc);
	if (memcmp(c->buf + DATA_OFF, pattern_read, DATA_LEN) != 0)
		FAIL("read: not the server's bytes");
	printf("ok: read the server's bytes\n");
}

/* 04 and 05: written, then flushed to the server's persistence where it
 * has some (which 05 must find). */
static void
client_write(struct client *c, const char *test)
{
	enum rpma_flush_type ft;

	if (strcmp(test, "flush") == 0 && !c->pmem)
		FAIL("flush: the server's direct write to pmem is lost");
	ft = c->pmem ? RPMA_FLUSH_TYPE_PERSISTENT : RPMA_FLUSH_TYPE_VISIBILITY;
	TRY(rpma_write(c->conn, c->dst, DATA_OFF, c->mr, DATA_OFF, DATA_LEN,
		RPMA_F_COMPLETION_ON_ERROR, NULL));
	TRY(rpma_flush(c->conn, c->dst, DATA_OFF, DATA_LEN, ft,
		RPMA_F_COMPLETION_ALWAYS, (void *)4));
	flush_wc(c->conn);
	printf("ok: written and flushed (%s)\n",
		c->pmem ? "persistent" : "visibility");
}

/* 07: 8 bytes written atomically (natively or not), then flushed. */
static void
client_atomic(struct client *c)
{
	struct ibv_wc wc;

	TRY(rpma_atomic_write(c->conn, c->dst, ATOMIC_OFF, atomic_value,
		RPMA_F_COMPLETION_ALWAYS, (void *)5));
	next_wc(c->conn, &wc);
	if (wc.wr_id != 5 || ((int)wc.opcode != WC_ATOMIC_WRITE &&
			wc.opcode != IBV_WC_RDMA_WRITE))
		FAIL("atomic: wr_id %" PRIu64 " opcode %d", wc.wr_id,
			wc.opcode);
	printf("ok: atomic write %s\n",
		(int)wc.opcode == WC_ATOMIC_WRITE ?
		"native (IBV_WC_ATOMIC_WRITE)" : "by an 8-byte WRITE");
	TRY(rpma_flush(c->conn, c->dst, ATOMIC_OFF, 8,
		RPMA_FLUSH_TYPE_VISIBILITY, RPMA_F_COMPLETION_ALWAYS,
		(void *)4));
	flush_wc(c->conn);
	printf("ok: atomic write done and flushed\n");
}

/* 08: each round a number sent, the next one the answer. */
static void
client_pingpong(struct client *c)
{
	struct ibv_wc wc;
	uint64_t v;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		v = (uint64_t)i * 2;
		memcpy(c->buf + MSG_OFF, &v, sizeof(v));
		TRY(rpma_send(c->conn, c->mr, MSG_OFF, sizeof(v),
			RPMA_F_COMPLETION_ALWAYS, (void *)2));
		/* the send's and the answer's completions, either first */
		next_wc(c->conn, &wc);
		if (wc.opcode == IBV_WC_SEND)
			want_wc(c->conn, IBV_WC_RECV, 1, &wc);
		else if (wc.opcode == IBV_WC_RECV)
			want_wc(c->conn, IBV_WC_SEND, 2, &wc);
		else
			FAIL("pingpong: completion opcode %d", wc.opcode);
		memcpy(&v, c->buf + MSG_OFF + 8, sizeof(v));
		if (v != (uint64_t)i * 2 + 1)
			FAIL("round %d: answer %" PRIu64, i, v);
		if (i + 1 < ROUNDS)
			TRY(rpma_recv(c->conn, c->mr, MSG_OFF + 8, 8,
				(void *)1));
	}
	printf("ok: %d rounds of ping-pong\n", ROUNDS);
}

static int
client(const char *addr, const char *test)
{
	struct client c;
	struct ibv_wc wc;

	client_open(&c, addr, test);
	memcpy(c.buf + DATA_OFF, pattern_write, DATA_LEN);
	if (strcmp(test, "conn") == 0) {
		printf("ok: connected, the server's region described\n");
	} else if (strcmp(test, "read") == 0) {
		client_read(&c);
	} else if (strcmp(test, "write") == 0 || strcmp(test, "flush") == 0) {
		client_write(&c, test);
	} else if (strcmp(test, "atomic") == 0) {
		client_atomic(&c);
	} else if (strcmp(test, "pingpong") == 0) {
		client_pingpong(&c);
	} else if (strcmp(test, "send_imm") == 0) {
		memcpy(c.buf + MSG_OFF, pattern_write, DATA_LEN);
		TRY(rpma_send_with_imm(c.conn, c.mr, MSG_OFF, DATA_LEN,
			RPMA_F_COMPLETION_ALWAYS, IMM, (void *)6));
		want_wc(c.conn, IBV_WC_SEND, 6, &wc);
		printf("ok: sent with immediate\n");
	} else if (strcmp(test, "write_imm") == 0) {
		TRY(rpma_write_with_imm(c.conn, c.dst, DATA_OFF, c.mr,
			DATA_OFF, DATA_LEN, RPMA_F_COMPLETION_ALWAYS, IMM,
			(void *)7));
		want_wc(c.conn, IBV_WC_RDMA_WRITE, 7, &wc);
		printf("ok: written with immediate\n");
	} else {
		FAIL("unknown case %s", test);
	}

	TRY(rpma_mr_remote_delete(&c.dst));
	TRY(rpma_conn_disconnect(c.conn));
	expect_event(c.conn, RPMA_CONN_CLOSED);
	TRY(rpma_conn_delete(&c.conn));
	TRY(rpma_conn_cfg_delete(&c.cfg));
	TRY(rpma_mr_dereg(&c.mr));
	TRY(rpma_peer_delete(&c.peer));
	free(c.buf);
	printf("ok: %s (client)\n", test);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s server|client ADDR CASE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* librpma's own account of what fails, on stderr */
	rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_WARNING);
	rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_LEVEL_WARNING);
	if (strcmp(argv[1], "server") == 0)
		return server(argv[2], argv[3]);
	if (strcmp(argv[1], "client") == 0)
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: %s server|client ADDR CASE\n", argv[0]);
	return 2;
}
