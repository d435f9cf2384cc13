/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Registered memory. The application moved the pages of each registered
 * range onto memfd segments (same addresses, contents kept) and sends
 * them; the daemon maps the pieces of a registration side by side in a
 * reservation of its own, so that the transport sees one contiguous
 * range at a host address of ours and translates the application's
 * addresses to it (droce_mr_reg_va). Segments are sealed against
 * shrinking before they are mapped: whatever the application does to
 * its own mappings afterwards (munmap, mremap, ftruncate), our mapping
 * stays valid until the MR is deregistered or the application is gone.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "droced.h"

#define HUGETLBFS_MAGIC_ 0x958458f6

/*
 * A SysV segment's file lives on the kernel's internal shm mount (or a
 * hugetlbfs one), outside every namespace: its name reads
 * "/SYSV<key> (deleted)". A file on a mounted tmpfs or hugetlbfs, which
 * could be truncated, has its mount's path in front.
 */
static int
is_sysv_shm(int fd)
{
	char link[64], name[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, name, sizeof(name) - 1);
	if (n <= 0)
		return 0;
	name[n] = '\0';
	return strncmp(name, "/SYSV", 5) == 0 &&
		strspn(name + 5, "0123456789abcdef") == 8 &&
		strcmp(name + 13, " (deleted)") == 0;
}

static int
seg_add(struct dd_app *a, uint32_t id, int fd)
{
	struct dd_seg *s;
	struct statfs sf;
	struct stat st;
	int seals;

	if (id >= a->segs.cap || dd_table_get(&a->segs, id) != NULL)
		return -EINVAL;
	/* a memfd that may be sealed: then it cannot shrink under us
	 * (SIGBUS in the data path otherwise); or a SysV shared-memory
	 * segment, which never changes size */
	if (!is_sysv_shm(fd)) {
		seals = fcntl(fd, F_GET_SEALS);
		if (seals < 0 || ((seals & F_SEAL_SHRINK) == 0 &&
				fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0))
			return -EINVAL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->fd = fd;
	s->size = (uint64_t)st.st_size;
	if (fstatfs(fd, &sf) == 0 &&
			(unsigned long)sf.f_type == HUGETLBFS_MAGIC_)
		s->huge = (uint64_t)sf.f_bsize;
	/* the table is indexed by the application's own numbers */
	a->segs.slot[id] = s;
	a->segs.n++;
	return 0;
}

void
dd_mr_free(struct dd_mr *mr)
{
	if (mr->tmr != NULL && droce_mr_dereg(mr->tmr) != 0)
		DD_LOG(WARNING, "an MR would not deregister");
	if (mr->map != NULL)
		munmap(mr->map, mr->map_len);
	free(mr);
}

static void
seg_del(struct dd_app *a, uint32_t id)
{
	struct dd_seg *s = dd_table_get(&a->segs, id);

	if (s == NULL)
		return;
	close(s->fd);
	dd_table_del(&a->segs, id);
	free(s);
}

/* The segments a registration brought (new ones). */
struct seg_added {
	uint32_t id[DROCE_CHAN_MR_PIECES];
	uint32_t n;
};

/* A registration that fails takes back the segments it brought: the
 * application sends them again with its next one. */
static void
segs_undo(struct dd_app *a, const struct seg_added *added)
{
	uint32_t i;

	for (i = 0; i < added->n; i++)
		seg_del(a, added->id[i]);
}

/* Check the pieces and add the new segments. */
static int
check_pieces(struct dd_app *a, const struct droce_chan_reg_mr_req *r,
		int *fds, int nfds, uint64_t span, struct seg_added *added)
{
	uint64_t off = 0;
	uint32_t i;
	int next_fd = 0, err;

	for (i = 0; i < r->npieces; i++) {
		const struct droce_chan_piece *p = &r->pieces[i];
		struct dd_seg *s;

		if (p->flags & DROCE_PIECE_NEW) {
			if (next_fd >= nfds)
				return -EINVAL;
			err = seg_add(a, p->seg, fds[next_fd]);
			if (err != 0)
				return err;
			fds[next_fd++] = -1;	/* the segment's now */
			added->id[added->n++] = p->seg;
		}
		s = dd_table_get(&a->segs, p->seg);
		if (s == NULL || p->len == 0 || p->len % DD_PAGE ||
				p->seg_off % DD_PAGE || p->seg_off > s->size ||
				p->len > s->size - p->seg_off || p->len > span - off)
			return -EINVAL;
		off += p->len;
	}
	return off != span || next_fd != nfds ? -EINVAL : 0;
}

/*
 * The pieces side by side in a reservation of ours, from *base (the
 * MR's first page). A hugetlbfs segment maps only in whole huge pages at
 * huge-page-aligned addresses: *base is then placed congruent to the
 * application's address modulo the huge page (as the application's own
 * mapping is), and such a piece is mapped over the huge pages around it,
 * which lie within the application's hugetlb mapping and so clobber no
 * other piece; the reservation has a huge page to spare on each side.
 * Returns the reservation (*res_len bytes) or NULL.
 */
static void *
map_pieces(struct dd_app *a, const struct droce_chan_reg_mr_req *r,
		uint64_t span, uint8_t **base, size_t *res_len)
{
	uint64_t off = 0, huge = 0, app = r->addr & ~(uint64_t)(DD_PAGE - 1);
	uint8_t *map, *b;
	uint32_t i;

	for (i = 0; i < r->npieces; i++) {
		struct dd_seg *s = dd_table_get(&a->segs, r->pieces[i].seg);

		if (s->huge > huge)
			huge = s->huge;
	}
	*res_len = span + 2 * huge;
	map = mmap(NULL, *res_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	b = map;
	if (huge) {
		uintptr_t want = (uintptr_t)map + huge;

		want = (want & ~(uintptr_t)(huge - 1)) + (app & (huge - 1));
		if (want < (uintptr_t)map + huge)
			want += huge;
		b = (uint8_t *)want;
	}
	for (i = 0; i < r->npieces; i++) {
		const struct droce_chan_piece *p = &r->pieces[i];
		struct dd_seg *s = dd_table_get(&a->segs, p->seg);
		uintptr_t at = (uintptr_t)b + off, len = p->len;
		uint64_t foff = p->seg_off;

		if (s->huge) {
			uintptr_t lead = at & (s->huge - 1);

			/* the application's mapping keeps offset and address
			 * congruent: anything else cannot map */
			if ((foff & (s->huge - 1)) != lead)
				goto fail;
			at -= lead;
			foff -= lead;
			len = (len + lead + s->huge - 1) & ~(uintptr_t)(s->huge - 1);
			if (foff + len > s->size)
				goto fail;
		}
		if (mmap((void *)at, len, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_FIXED, s->fd,
				(off_t)foff) == MAP_FAILED)
			goto fail;
		off += p->len;
	}
	*base = b;
	return map;
fail:
	munmap(map, *res_len);
	return NULL;
}

int
dd_reg_mr(struct dd_app *a, const struct droce_chan_reg_mr_req *r,
		int *fds, int nfds, struct droce_chan_reg_mr_rep *rep)
{
	struct dd_pd *pd = dd_table_get(&a->pds, r->pd);
	uint64_t start = r->addr & ~(uint64_t)(DD_PAGE - 1), span;
	struct seg_added added = { .n = 0 };
	uint8_t *base = NULL;
	struct dd_mr *mr;
	uint32_t h;
	int err = 0;

	if (pd == NULL || r->len == 0 || r->addr + r->len < r->addr ||
			r->npieces == 0 || r->npieces > DROCE_CHAN_MR_PIECES)
		return -EINVAL;
	span = ((r->addr + r->len + DD_PAGE - 1) & ~(uint64_t)(DD_PAGE - 1)) - start;
	if (a->st.mr_bytes + r->len > dd.lim.max_mr_bytes ||
			a->mrs.n >= a->mrs.cap)
		return -ENOMEM;
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return -ENOMEM;
	err = check_pieces(a, r, fds, nfds, span, &added);
	if (err == 0 && (mr->map = map_pieces(a, r, span, &base,
			&mr->map_len)) == NULL)
		err = -EINVAL;
	if (err == 0) {
		mr->len = r->len;
		mr->va = r->addr;
		mr->host = base + (r->addr - start);
		mr->access = r->access;
		mr->tmr = droce_mr_reg_va(pd->tpd, mr->host, r->addr, r->len,
			r->iova, r->access);
		if (mr->tmr == NULL)
			err = errno ? -errno : -EINVAL;
	}
	if (err == 0 && dd_table_add(&a->mrs, mr, &h) != 0)
		err = -ENOMEM;
	if (err != 0) {
		segs_undo(a, &added);
		dd_mr_free(mr);
		return err;
	}
	a->st.mr_bytes += r->len;
	rep->handle = h;
	mr->lkey = droce_mr_lkey(mr->tmr);
	rep->lkey = droce_mr_lkey(mr->tmr);
	rep->rkey = droce_mr_rkey(mr->tmr);
	return 0;
}

int
dd_dereg_mr(struct dd_app *a, const struct droce_chan_dereg_mr_req *r)
{
	struct dd_mr *mr = dd_table_get(&a->mrs, r->handle);
	uint32_t i;
	int rc;

	if (mr == NULL || r->nrelease > DROCE_CHAN_MR_PIECES)
		return -EINVAL;
	rc = droce_mr_dereg(mr->tmr);
	if (rc != 0)
		return rc;
	mr->tmr = NULL;
	a->st.mr_bytes -= mr->len;
	dd_table_del(&a->mrs, r->handle);
	dd_mr_free(mr);
	/* segments no MR of the application will name again: our
	 * mappings of them (other MRs') stay */
	for (i = 0; i < r->nrelease; i++)
		seg_del(a, r->release[i]);
	return 0;
}

uint8_t *
dd_app_mem(struct dd_app *a, uint32_t lkey, uint64_t addr, uint32_t len,
		unsigned int access)
{
	uint32_t h;

	for (h = 0; h < a->mrs.cap; h++) {
		struct dd_mr *mr = dd_table_get(&a->mrs, h);

		if (mr == NULL || mr->lkey != lkey)
			continue;
		if ((mr->access & access) != access || addr < mr->va ||
				len > mr->len || addr - mr->va > mr->len - len)
			return NULL;
		return mr->host + (addr - mr->va);
	}
	return NULL;
}
