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
 * A SysV shared-memory segment cannot be sealed: its mappings are
 * guarded instead (guard.c).
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

/* The kernel's own mounts of SysV segments: shmem's (memfds live there
 * too) and hugetlbfs's, one per huge page size (-1: none). */
static int sysv_mnt[3] = { -1, -1, -1 };

/* The mount a descriptor's file is on (/proc/self/fdinfo), or -1. */
static int
fd_mnt_id(int fd)
{
	char path[64], line[128];
	int id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "mnt_id: %d", &id) == 1)
			break;
	fclose(f);
	return id;
}

/* The kernel makes SysV segments where it makes memfds (shmem's internal
 * mount, hugetlbfs's for each page size): learn them from memfds of our
 * own. */
void
dd_mem_init(void)
{
	/* MFD_HUGE_1GB: memfd's page size encoding is mmap's */
	static const unsigned int flags[3] = { 0, MFD_HUGETLB,
		MFD_HUGETLB | (30u << MAP_HUGE_SHIFT) };
	uint32_t i;

	for (i = 0; i < 3; i++) {
		int fd = memfd_create("droced-probe", MFD_CLOEXEC | flags[i]);

		if (fd < 0)
			continue;
		sysv_mnt[i] = fd_mnt_id(fd);
		close(fd);
	}
}

/*
 * A SysV segment's file reads "/SYSV<key> (deleted)" and lives on one of
 * the kernel's internal mounts, outside every namespace, where only SysV
 * names files so (a memfd's name starts "memfd:"). A file of that name
 * on a mounted tmpfs, even one detached from every namespace, is on
 * another mount: refused.
 */
static int
is_sysv_shm(int fd)
{
	char link[64], name[64];
	ssize_t n;
	int mnt, i;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, name, sizeof(name) - 1);
	if (n <= 0)
		return 0;
	name[n] = '\0';
	if (strncmp(name, "/SYSV", 5) != 0 ||
			strspn(name + 5, "0123456789abcdef") != 8 ||
			strcmp(name + 13, " (deleted)") != 0)
		return 0;
	mnt = fd_mnt_id(fd);
	for (i = 0; i < 3; i++)
		if (mnt >= 0 && mnt == sysv_mnt[i])
			return 1;
	return 0;
}

static int
seg_add(struct dd_app *a, uint32_t id, int fd)
{
	struct dd_seg *s;
	struct statfs sf;
	struct stat st;
	int seals, sealed;

	if (id >= a->segs.cap || dd_table_get(&a->segs, id) != NULL)
		return -EINVAL;
	/* a memfd that may be sealed: then it cannot shrink under us
	 * (SIGBUS in the data path otherwise); or a SysV shared-memory
	 * segment, whose mappings are guarded (guard.c). Nothing else: no
	 * call here reaches the file's filesystem before that is known
	 * (a FUSE file's server could hold up the main thread). */
	seals = fcntl(fd, F_GET_SEALS);
	sealed = seals >= 0 && ((seals & F_SEAL_SHRINK) ||
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
	if (!sealed && !is_sysv_shm(fd))
		return -EINVAL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->fd = fd;
	s->size = (uint64_t)st.st_size;
	s->guarded = !sealed;
	if (fstatfs(fd, &sf) == 0 &&
			(unsigned long)sf.f_type == HUGETLBFS_MAGIC_)
		s->huge = (uint64_t)sf.f_bsize;
	/* the table is indexed by the application's own numbers */
	a->segs.slot[id] = s;
	a->segs.n++;
	return 0;
}

/* The MR's pages, once nothing reaches them: the transport's last
 * reference went (droce_mr_on_release), or it never had one. */
static void
mr_release(void *arg)
{
	struct dd_mr *mr = arg;
	uint32_t i;

	if (mr->map != NULL)
		munmap(mr->map, mr->map_len);
	for (i = 0; i < mr->nguard; i++)
		dd_guard_del(mr->guard[i]);
	free(mr);
}

/*
 * An MR off the table goes: its keys first, with every queue held, so
 * that once they are let go no pass holds what a lookup returned; its
 * pages when the transport's last reference (a zero-copy frame's) goes.
 * 0, or -EBUSY (windows bound to it: nothing changed).
 */
static int
mr_retire(struct dd_mr *mr, struct dd_app *a, uint32_t handle)
{
	int rc;

	if (mr->tmr == NULL) {
		mr_release(mr);
		return 0;
	}
	droce_mr_on_release(mr->tmr, mr_release, mr);
	dd_lock_all();
	rc = droce_mr_dereg_start(mr->tmr);
	if (rc == 0 && a != NULL)
		dd_table_del(&a->mrs, handle);
	dd_unlock_all();
	if (rc != 0)
		return rc;
	/* the registration's reference: no wait for zero-copy frames (the
	 * main thread waits for nobody), the pages go with the last one */
	droce_mr_zc_put(mr->tmr);
	return 0;
}

void
dd_mr_free(struct dd_mr *mr)
{
	if (mr_retire(mr, NULL, 0) != 0)	/* its pages stay mapped */
		DD_LOG(WARNING, "an MR with windows bound would not go");
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
 * mapping is), and such a piece is mapped over the huge pages around it.
 * *base lies between one and two huge pages into the reservation, a
 * piece reaches at most a huge page less 4 KB before its first byte and
 * after its last: span + 3 huge pages hold every mapping, and each is
 * checked to lie inside before it is made (MAP_FIXED replaces whatever
 * is there). A piece of a guarded segment is guarded where it is mapped.
 * Returns the reservation (*res_len bytes) or NULL.
 */
static void *
map_pieces(struct dd_app *a, const struct droce_chan_reg_mr_req *r,
		uint64_t span, struct dd_mr *mr, uint8_t **base)
{
	uint64_t off = 0, huge = 0, app = r->addr & ~(uint64_t)(DD_PAGE - 1);
	uint8_t *map, *b;
	uint32_t i;

	for (i = 0; i < r->npieces; i++) {
		struct dd_seg *s = dd_table_get(&a->segs, r->pieces[i].seg);

		if (s->huge > huge)
			huge = s->huge;
	}
	mr->map_len = span + 3 * huge;
	map = mmap(NULL, mr->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	mr->map = map;
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
		int g;

		if (s->huge) {
			uintptr_t lead = at & (s->huge - 1);

			/* the application's mapping keeps offset and address
			 * congruent: anything else cannot map */
			if ((foff & (s->huge - 1)) != lead)
				return NULL;
			at -= lead;
			foff -= lead;
			len = (len + lead + s->huge - 1) & ~(uintptr_t)(s->huge - 1);
			if (foff + len > s->size)
				return NULL;
		}
		if (at < (uintptr_t)map ||
				at + len > (uintptr_t)map + mr->map_len)
			return NULL;
		if (mmap((void *)at, len, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_FIXED, s->fd,
				(off_t)foff) == MAP_FAILED)
			return NULL;
		if (s->guarded) {
			g = dd_guard_add((void *)at, len, s->huge ? s->huge :
				DD_PAGE, a->id);
			if (g < 0)
				return NULL;
			mr->guard[mr->nguard++] = g;
		}
		off += p->len;
	}
	*base = b;
	return map;
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
	if (err == 0 && map_pieces(a, r, span, mr, &base) == NULL)
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
	/* off the data path before its pages go: a pass may be copying
	 * into them, and the GSI proxy looks MRs up in the table */
	a->st.mr_bytes -= mr->len;
	rc = mr_retire(mr, a, r->handle);
	if (rc != 0) {
		a->st.mr_bytes += mr->len;
		return rc;
	}
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
