/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rsockets' options: the defaults (rdma-core's, overridden by the same
 * files in /etc/rdma/rsocket), rsetsockopt, rgetsockopt and rfcntl. The
 * TCP and socket options programs set are taken (and reported back) even
 * where they mean nothing on an RC connection, as rdma-core takes them.
 */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_rsocket.h"

#define RS_CONF_DIR "/etc/rdma/rsocket"

static struct {
	uint16_t inline_size, sqsize, rqsize, iomap_size;
	uint32_t mem, wmem;
	uint32_t polling_time;		/* us a wait polls before it sleeps */
} def = {
	RS_DEF_INLINE, RS_DEF_SQSIZE, RS_DEF_RQSIZE, 0,
	RS_DEF_MEM, RS_DEF_WMEM, RS_DEF_POLLING_US,
};
static pthread_once_t def_once = PTHREAD_ONCE_INIT;

static void
rs_conf_u32(const char *name, uint32_t *v)
{
	char path[128];
	unsigned int x;
	FILE *f;

	snprintf(path, sizeof(path), RS_CONF_DIR "/%s", name);
	f = fopen(path, "r");
	if (f == NULL)
		return;
	if (fscanf(f, "%u", &x) == 1)
		*v = x;
	fclose(f);
}

static void
rs_conf_u16(const char *name, uint16_t *v)
{
	uint32_t x = *v;

	rs_conf_u32(name, &x);
	*v = x > 0xFFFF ? 0xFFFF : (uint16_t)x;
}

static void
rs_conf_load(void)
{
	rs_conf_u16("inline_default", &def.inline_size);
	rs_conf_u16("sqsize_default", &def.sqsize);
	rs_conf_u16("rqsize_default", &def.rqsize);
	rs_conf_u32("mem_default", &def.mem);
	rs_conf_u32("wmem_default", &def.wmem);
	rs_conf_u16("iomap_size", &def.iomap_size);
	rs_conf_u32("polling_time", &def.polling_time);
	if (def.mem < 1)
		def.mem = 1;
	if (def.wmem < RS_SNDLOWAT)
		def.wmem = RS_SNDLOWAT << 1;
	/* only the values the 8-bit scale carries */
	def.iomap_size = rs_scale_to_value(rs_value_to_scale(def.iomap_size));
}

void
rs_opts_default(struct rs_socket *rs)
{
	pthread_once(&def_once, rs_conf_load);
	rs->sbuf_size = def.wmem;
	rs->rbuf_size = def.mem;
	rs->sq_inline = def.inline_size;
	rs->sq_size = def.sqsize;
	rs->rq_size = def.rqsize;
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	rs->target_iomap_size = def.iomap_size;
}

uint64_t
rs_spin_us(void)
{
	pthread_once(&def_once, rs_conf_load);
	return def.polling_time;
}

/* an accepted socket takes its listener's sizes */
void
rs_opts_inherit(struct rs_socket *rs, const struct rs_socket *from)
{
	rs->sbuf_size = from->sbuf_size;
	rs->rbuf_size = from->rbuf_size;
	rs->sq_inline = from->sq_inline;
	rs->sq_size = from->sq_size;
	rs->rq_size = from->rq_size;
	rs->ctrl_max_seqno = from->ctrl_max_seqno;
	rs->target_iomap_size = from->target_iomap_size;
	rs->so_opts = from->so_opts;
	rs->tcp_opts = from->tcp_opts;
	rs->keepalive_time = from->keepalive_time;
}

static void
rs_opt_bit(uint64_t *opts, int name, bool on)
{
	if (name < 0 || name >= 64)
		return;
	if (on)
		*opts |= 1ull << name;
	else
		*opts &= ~(1ull << name);
}

static int
rs_int(const void *v, socklen_t len)
{
	return len >= sizeof(int) ? *(const int *)v : 0;
}

static int
rs_set_sol_socket(struct rs_socket *rs, int name, const void *v, socklen_t len)
{
	int on = rs_int(v, len);

	switch (name) {
	case SO_REUSEADDR:
		/* the CM takes it where it can; a bound port stays */
		if (rdma_set_option(rs->id, RDMA_OPTION_ID,
				RDMA_OPTION_ID_REUSEADDR, (void *)v, len) != 0 &&
				errno != ENOSYS && rs->phase == RS_INIT)
			return -1;
		break;
	case SO_RCVBUF:
		if (rs->rbuf == NULL && on > 0)
			rs->rbuf_size = (uint32_t)on << 1;
		return 0;
	case SO_SNDBUF:
		if (rs->sbuf == NULL && on > 0)
			rs->sbuf_size = (uint32_t)on << 1;
		if (rs->sbuf_size < RS_SNDLOWAT)
			rs->sbuf_size = RS_SNDLOWAT << 1;
		return 0;
	case SO_LINGER:
		/* kept inverted: the default (0) is on, as rdma-core has it */
		on = len >= sizeof(struct linger) &&
			!((const struct linger *)v)->l_onoff;
		break;
	case SO_KEEPALIVE:
	case SO_OOBINLINE:
	case SO_REUSEPORT:
		break;
	default:
		errno = ENOTSUP;
		return -1;
	}
	rs_opt_bit(&rs->so_opts, name, on != 0);
	return 0;
}

static int
rs_set_tcp(struct rs_socket *rs, int name, const void *v, socklen_t len)
{
	int on = rs_int(v, len);

	switch (name) {
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
	case TCP_MAXSEG:
	case TCP_CONGESTION:
		return 0;	/* an RC connection has its own */
	case TCP_KEEPIDLE:
		if (on <= 0) {
			errno = EINVAL;
			return -1;
		}
		rs->keepalive_time = on;
		return 0;
	case TCP_NODELAY:
		rs_opt_bit(&rs->tcp_opts, name, on != 0);
		return 0;
	default:
		errno = ENOTSUP;
		return -1;
	}
}

static int
rs_set_rdma(struct rs_socket *rs, int name, const void *v, socklen_t len)
{
	uint32_t x = len >= sizeof(uint32_t) ? *(const uint32_t *)v : 0;

	/* sizes are fixed once the QP exists */
	if (rs->rmsg != NULL || rs_opening(rs)) {
		errno = EINVAL;
		return -1;
	}
	if (x > RS_QP_MAX_SIZE)
		x = RS_QP_MAX_SIZE;
	switch (name) {
	case RDMA_SQSIZE:
		rs->sq_size = (uint16_t)x;
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = (uint16_t)x;
		return 0;
	case RDMA_INLINE:
		rs->sq_inline = (uint16_t)x;
		return 0;
	case RDMA_IOMAPSIZE:
		rs->target_iomap_size = rs_scale_to_value(
			rs_value_to_scale((uint16_t)x));
		return 0;
	case RDMA_ROUTE:
		/* paths come from droce's own resolution; kept to report */
		free(rs->route);
		rs->route = malloc(len);
		if (rs->route == NULL && len > 0) {
			errno = ENOMEM;
			return -1;
		}
		memcpy(rs->route, v, len);
		rs->route_len = len;
		return 0;
	default:
		errno = ENOTSUP;
		return -1;
	}
}

int
rsetsockopt(int s, int level, int name, const void *v, socklen_t len)
{
	struct rs_socket *rs = rs_get(s);
	int rc = -1, on;

	if (rs == NULL)
		return -1;
	if (v == NULL && len > 0) {
		errno = EFAULT;
		goto out;
	}
	on = rs_int(v, len);
	switch (level) {
	case SOL_SOCKET:
		rc = rs_set_sol_socket(rs, name, v, len);
		break;
	case IPPROTO_TCP:
		rc = rs_set_tcp(rs, name, v, len);
		break;
	case IPPROTO_IP:
		errno = ENOTSUP;
		if (name == IP_TOS) {
			rs->tos = on;
			rc = rdma_set_option(rs->id, RDMA_OPTION_ID,
				RDMA_OPTION_ID_TOS, (void *)v, len);
		}
		break;
	case IPPROTO_IPV6:
		errno = ENOTSUP;
		if (name == IPV6_V6ONLY) {
			rc = rdma_set_option(rs->id, RDMA_OPTION_ID,
				RDMA_OPTION_ID_AFONLY, (void *)v, len);
			if (rc == 0)
				rs_opt_bit(&rs->ipv6_opts, name, on != 0);
		}
		break;
	case SOL_RDMA:
		rc = rs_set_rdma(rs, name, v, len);
		break;
	default:
		errno = ENOTSUP;
		break;
	}
out:
	rs_put(rs);
	return rc;
}

static int
rs_get_sol_socket(struct rs_socket *rs, int name, int *out,
		struct linger *lg)
{
	switch (name) {
	case SO_REUSEADDR:
	case SO_KEEPALIVE:
	case SO_OOBINLINE:
	case SO_REUSEPORT:
		*out = !!(rs->so_opts & (1ull << name));
		return 0;
	case SO_RCVBUF:
		*out = (int)rs->rbuf_size;
		return 0;
	case SO_SNDBUF:
		*out = (int)rs->sbuf_size;
		return 0;
	case SO_LINGER:
		lg->l_onoff = !(rs->so_opts & (1ull << name));
		lg->l_linger = 0;
		return 1;
	case SO_ERROR:
		*out = rs->err;
		rs->err = 0;
		return 0;
	case SO_TYPE:
		*out = rs->type;
		return 0;
	case SO_PROTOCOL:
		*out = IPPROTO_TCP;
		return 0;
	case SO_DOMAIN:
		*out = rdma_get_local_addr(rs->id)->sa_family;
		return 0;
	case SO_ACCEPTCONN:
		*out = rs->phase == RS_LISTENING;
		return 0;
	default:
		errno = ENOTSUP;
		return -1;
	}
}

static int
rs_get_other(struct rs_socket *rs, int level, int name, int *out)
{
	if (level == IPPROTO_TCP) {
		switch (name) {
		case TCP_NODELAY:
			*out = !!(rs->tcp_opts & (1ull << name));
			return 0;
		case TCP_KEEPIDLE:
			*out = rs->keepalive_time;
			return 0;
		case TCP_MAXSEG:
			*out = 2048;	/* a RoCE MTU's payload, near enough */
			return 0;
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			*out = 0;
			return 0;
		}
	} else if (level == IPPROTO_IP && name == IP_TOS) {
		*out = rs->tos;
		return 0;
	} else if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) {
		*out = !!(rs->ipv6_opts & (1ull << name));
		return 0;
	} else if (level == SOL_RDMA) {
		switch (name) {
		case RDMA_SQSIZE:
			*out = rs->sq_size;
			return 0;
		case RDMA_RQSIZE:
			*out = rs->rq_size;
			return 0;
		case RDMA_INLINE:
			*out = rs->sq_inline;
			return 0;
		case RDMA_IOMAPSIZE:
			*out = rs->target_iomap_size;
			return 0;
		}
	}
	errno = ENOTSUP;
	return -1;
}

/* The options that are not an int: what a program asks of TCP. */
static int
rs_get_tcp_blob(struct rs_socket *rs, int name, void *v, socklen_t *len)
{
	static const char cc[] = "rdma";	/* RC's own, not TCP's */
	struct tcp_info ti;

	if (name == TCP_CONGESTION) {
		memset(v, 0, *len);
		memcpy(v, cc, *len < sizeof(cc) ? *len : sizeof(cc));
		*len = *len < sizeof(cc) ? *len : sizeof(cc);
		return 0;
	}
	memset(&ti, 0, sizeof(ti));
	ti.tcpi_state = rs_connected(rs) ? 1 /* ESTABLISHED */ : 7 /* CLOSE */;
	ti.tcpi_snd_cwnd = rs->sq_size;
	ti.tcpi_snd_mss = 2048;
	ti.tcpi_rcv_mss = 2048;
	memcpy(v, &ti, *len < sizeof(ti) ? *len : sizeof(ti));
	*len = *len < sizeof(ti) ? *len : sizeof(ti);
	return 0;
}

int
rgetsockopt(int s, int level, int name, void *v, socklen_t *len)
{
	struct rs_socket *rs = rs_get(s);
	struct linger lg;
	int out = 0, rc;

	if (rs == NULL)
		return -1;
	if (v == NULL || len == NULL) {
		rs_put(rs);
		errno = EFAULT;
		return -1;
	}
	if (level == IPPROTO_TCP && (name == TCP_INFO ||
			name == TCP_CONGESTION)) {
		rc = rs_get_tcp_blob(rs, name, v, len);
		rs_put(rs);
		return rc;
	}
	if (level == SOL_SOCKET)
		rc = rs_get_sol_socket(rs, name, &out, &lg);
	else
		rc = rs_get_other(rs, level, name, &out);
	rs_put(rs);
	if (rc == 1) {
		memcpy(v, &lg, *len < sizeof(lg) ? *len : sizeof(lg));
		*len = sizeof(lg);
		return 0;
	}
	if (rc == 0) {
		memcpy(v, &out, *len < sizeof(out) ? *len : sizeof(out));
		*len = sizeof(out);
	}
	return rc;
}

int
rfcntl(int s, int cmd, ...)
{
	struct rs_socket *rs = rs_get(s);
	va_list ap;
	int rc = 0;

	if (rs == NULL)
		return -1;
	va_start(ap, cmd);
	switch (cmd) {
	case F_GETFL:
		rc = rs->fs_flags;
		break;
	case F_SETFL:
		/* every descriptor underneath is non-blocking already:
		 * the flag only says whether calls wait */
		rs->fs_flags = va_arg(ap, int) & ~O_ACCMODE;
		break;
	case F_GETFD:
		rc = rs->fd_flags;
		break;
	case F_SETFD:
		rs->fd_flags = va_arg(ap, int);
		break;
	default:
		errno = ENOTSUP;
		rc = -1;
		break;
	}
	va_end(ap);
	rs_put(rs);
	return rc;
}
