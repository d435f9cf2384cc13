/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rsockets are not part of droce's librdmacm (doc/rdmacm.md): the
 * symbols exist so that programs linking them (rdmacm-utils) load, and
 * every call fails with ENOSYS.
 */

#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define RS_NOSYS(ret)		\
	do {			\
		errno = ENOSYS;	\
		return ret;	\
	} while (0)

/* prototypes as <rdma/rsocket.h> has them, all failing */
int rsocket(int d, int t, int p);
int rbind(int s, const struct sockaddr *a, socklen_t l);
int rlisten(int s, int b);
int raccept(int s, struct sockaddr *a, socklen_t *l);
int rconnect(int s, const struct sockaddr *a, socklen_t l);
int rshutdown(int s, int how);
int rclose(int s);
ssize_t rrecv(int s, void *b, size_t l, int f);
ssize_t rrecvfrom(int s, void *b, size_t l, int f, struct sockaddr *a,
		socklen_t *al);
ssize_t rrecvmsg(int s, struct msghdr *m, int f);
ssize_t rsend(int s, const void *b, size_t l, int f);
ssize_t rsendto(int s, const void *b, size_t l, int f,
		const struct sockaddr *a, socklen_t al);
ssize_t rsendmsg(int s, const struct msghdr *m, int f);
ssize_t rread(int s, void *b, size_t l);
ssize_t rreadv(int s, const struct iovec *v, int n);
ssize_t rwrite(int s, const void *b, size_t l);
ssize_t rwritev(int s, const struct iovec *v, int n);
int rpoll(struct pollfd *f, nfds_t n, int t);
int rselect(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t);
int rgetpeername(int s, struct sockaddr *a, socklen_t *l);
int rgetsockname(int s, struct sockaddr *a, socklen_t *l);
int rsetsockopt(int s, int lv, int o, const void *v, socklen_t l);
int rgetsockopt(int s, int lv, int o, void *v, socklen_t *l);
int rfcntl(int s, int c, ...);
off_t riomap(int s, void *b, size_t l, int p, int f, off_t o);
int riounmap(int s, void *b, size_t l);
size_t riowrite(int s, const void *b, size_t c, off_t o, int f);

int rsocket(int d, int t, int p) { (void)d; (void)t; (void)p; RS_NOSYS(-1); }
int rbind(int s, const struct sockaddr *a, socklen_t l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
int rlisten(int s, int b) { (void)s; (void)b; RS_NOSYS(-1); }
int raccept(int s, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
int rconnect(int s, const struct sockaddr *a, socklen_t l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
int rshutdown(int s, int how) { (void)s; (void)how; RS_NOSYS(-1); }
int rclose(int s) { (void)s; RS_NOSYS(-1); }
ssize_t rrecv(int s, void *b, size_t l, int f)
{ (void)s; (void)b; (void)l; (void)f; RS_NOSYS(-1); }
ssize_t rrecvfrom(int s, void *b, size_t l, int f, struct sockaddr *a,
		socklen_t *al)
{ (void)s; (void)b; (void)l; (void)f; (void)a; (void)al; RS_NOSYS(-1); }
ssize_t rrecvmsg(int s, struct msghdr *m, int f)
{ (void)s; (void)m; (void)f; RS_NOSYS(-1); }
ssize_t rsend(int s, const void *b, size_t l, int f)
{ (void)s; (void)b; (void)l; (void)f; RS_NOSYS(-1); }
ssize_t rsendto(int s, const void *b, size_t l, int f,
		const struct sockaddr *a, socklen_t al)
{ (void)s; (void)b; (void)l; (void)f; (void)a; (void)al; RS_NOSYS(-1); }
ssize_t rsendmsg(int s, const struct msghdr *m, int f)
{ (void)s; (void)m; (void)f; RS_NOSYS(-1); }
ssize_t rread(int s, void *b, size_t l) { (void)s; (void)b; (void)l; RS_NOSYS(-1); }
ssize_t rreadv(int s, const struct iovec *v, int n)
{ (void)s; (void)v; (void)n; RS_NOSYS(-1); }
ssize_t rwrite(int s, const void *b, size_t l)
{ (void)s; (void)b; (void)l; RS_NOSYS(-1); }
ssize_t rwritev(int s, const struct iovec *v, int n)
{ (void)s; (void)v; (void)n; RS_NOSYS(-1); }
int rpoll(struct pollfd *f, nfds_t n, int t)
{ (void)f; (void)n; (void)t; RS_NOSYS(-1); }
int rselect(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{ (void)n; (void)r; (void)w; (void)e; (void)t; RS_NOSYS(-1); }
int rgetpeername(int s, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
int rgetsockname(int s, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
int rsetsockopt(int s, int lv, int o, const void *v, socklen_t l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; RS_NOSYS(-1); }
int rgetsockopt(int s, int lv, int o, void *v, socklen_t *l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; RS_NOSYS(-1); }
int rfcntl(int s, int c, ...) { (void)s; (void)c; RS_NOSYS(-1); }
off_t riomap(int s, void *b, size_t l, int p, int f, off_t o)
{ (void)s; (void)b; (void)l; (void)p; (void)f; (void)o; RS_NOSYS(-1); }
int riounmap(int s, void *b, size_t l) { (void)s; (void)b; (void)l; RS_NOSYS(-1); }
size_t riowrite(int s, const void *b, size_t c, off_t o, int f)
{ (void)s; (void)b; (void)c; (void)o; (void)f; RS_NOSYS(0); }
