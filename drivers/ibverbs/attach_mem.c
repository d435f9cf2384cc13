/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Attached mode, registered memory: droced reads and writes a registered
 * buffer where it is, so at ibv_reg_mr the pages of the range move onto
 * memfd segments that the daemon maps too. For each part of the range
 * not moved yet: a new memfd gets the old contents, then mremap puts it
 * over the old pages at the same address in one step, and each original
 * mapping's protection is restored. The application sees the same
 * addresses and the same bytes.
 *
 * A process-wide registry (one mutex) keeps the moved ranges, disjoint
 * and sorted: {start, end, segment number, memfd, MRs using it}. A
 * segment's memfd stays open while an MR of any context uses it (another
 * session may need to send it); its number is the lowest free one (the
 * daemon's table of an application's segments is bounded). Each session
 * counts its own MRs per segment: a segment goes to the daemon (NEW) when
 * the session's count leaves 0 and is released when it comes back to 0.
 *
 * Documented limits and refusals:
 *  - at most DROCE_CHAN_MR_PIECES pieces (moved ranges and gaps) per
 *    registration: EINVAL;
 *  - a page of the range not mapped: EFAULT;
 *  - what cannot move (EINVAL): hugetlb mappings (their pages are not
 *    ours to copy into small ones), device files (/dev/... other than
 *    /dev/zero), [vvar], [vdso], [vsyscall], and shared mappings of files
 *    (POSIX shared memory, a mapped file): other mappers would stop
 *    seeing what the daemon writes; and the calling thread's own stack
 *    (the frames the move runs on would move under it);
 *  - SysV shared memory (shmat, hugetlb or not: UCX's memory pools) is
 *    not moved but shared as it is: its file, opened through
 *    /proc/self/map_files (which needs CAP_SYS_ADMIN; without it,
 *    EINVAL as before), goes to the daemon as the segment, at the
 *    mapping's offset. A SysV segment cannot be sealed: droced guards
 *    its mappings of one, and ends the session of an application that
 *    shrinks it (doc/daemon.md);
 *  - fork(): moved pages are MAP_SHARED, so after fork() a child shares
 *    them with its parent instead of getting a copy-on-write copy (as
 *    with ibv_fork_init's MADV_DONTFORK, the child must not use the
 *    parent's registered buffers; here they stay, shared). doc/daemon.md;
 *  - another thread writing the same pages while they move may lose that
 *    write (the copy and the mremap are not one step together).
 *  - a registered range the process has since unmapped or replaced
 *    (munmap, mmap MAP_FIXED, mremap) is forgotten at the next
 *    registration over it, which takes the pages now there; the old
 *    MRs keep the old segment (the daemon's mapping of it stays valid);
 * After deregistration the pages stay on their memfd (harmless).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "attach.h"

#define HUGETLBFS_MAGIC_ 0x958458f6

struct range {
	uintptr_t start, end;
	uint64_t off;		/* the segment's offset at start */
	uint64_t dev, ino;	/* the segment's file, as maps shows it */
	uint32_t seg;
	int fd;
	uint32_t refs;		/* MRs of every session */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range *ranges;	/* sorted by start, disjoint */
static uint32_t nranges, ranges_cap;
/* ranges whose addresses the process has since unmapped or replaced:
 * out of the address map, kept while MRs use their segments */
static struct range *gone;
static uint32_t ngone, gone_cap;
static uint64_t *seg_used;	/* bitmap of segment numbers in use */
static uint32_t seg_words;

/* ---- segment numbers ---- */

static int
seg_alloc(uint32_t *seg)
{
	uint32_t w;

	for (w = 0; w < seg_words; w++)
		if (~seg_used[w] != 0)
			break;
	if (w == seg_words) {
		uint32_t nw = seg_words ? seg_words * 2 : 4;
		uint64_t *n = realloc(seg_used, nw * sizeof(*n));

		if (n == NULL)
			return ENOMEM;
		memset(n + seg_words, 0, (nw - seg_words) * sizeof(*n));
		seg_used = n;
		seg_words = nw;
	}
	*seg = w * 64 + (uint32_t)__builtin_ctzll(~seg_used[w]);
	seg_used[w] |= 1ull << (*seg % 64);
	return 0;
}

static void
seg_free(uint32_t seg)
{
	seg_used[seg / 64] &= ~(1ull << (seg % 64));
}

/* ---- the registry ---- */

/* The first range that ends after addr. */
static uint32_t
range_find(uintptr_t addr)
{
	uint32_t lo = 0, hi = nranges;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (ranges[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct range *
range_by_seg(uint32_t seg)
{
	uint32_t i;

	for (i = 0; i < nranges; i++)
		if (ranges[i].seg == seg)
			return &ranges[i];
	for (i = 0; i < ngone; i++)
		if (gone[i].seg == seg)
			return &gone[i];
	return NULL;
}

static int
range_insert(const struct range *r)
{
	uint32_t i;

	if (nranges == ranges_cap) {
		uint32_t nc = ranges_cap ? ranges_cap * 2 : 16;
		struct range *n = realloc(ranges, nc * sizeof(*n));

		if (n == NULL)
			return ENOMEM;
		ranges = n;
		ranges_cap = nc;
	}
	i = range_find(r->start);
	memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(*ranges));
	ranges[i] = *r;
	nranges++;
	return 0;
}

/* Entry i out of a list of n ranges, the rest moved down. */
static void
list_remove(struct range *list, uint32_t *n, uint32_t i)
{
	memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof(*list));
	(*n)--;
}

/* A range no MR uses: its memfd closes (the pages stay on it). */
static void
range_drop(struct range *r)
{
	close(r->fd);
	seg_free(r->seg);
	if (ngone != 0 && r >= gone && r < gone + ngone)
		list_remove(gone, &ngone, (uint32_t)(r - gone));
	else
		list_remove(ranges, &nranges, (uint32_t)(r - ranges));
}

/* ranges[i] no longer backs its addresses: out of the address map. */
static int
range_forget(uint32_t i)
{
	if (ranges[i].refs == 0) {
		range_drop(&ranges[i]);
		return 0;
	}
	if (ngone == gone_cap) {
		uint32_t nc = gone_cap ? gone_cap * 2 : 8;
		struct range *n = realloc(gone, nc * sizeof(*n));

		if (n == NULL)
			return ENOMEM;
		gone = n;
		gone_cap = nc;
	}
	gone[ngone++] = ranges[i];
	list_remove(ranges, &nranges, i);
	return 0;
}

/* The file a segment's descriptor names, as /proc/self/maps shows it. */
static void
range_file(struct range *r)
{
	struct stat st;

	if (fstat(r->fd, &st) == 0) {
		r->dev = (uint64_t)major(st.st_dev) << 32 | minor(st.st_dev);
		r->ino = st.st_ino;
	}
}

/* ---- the process's mappings ---- */

struct vma {
	uintptr_t start, end;	/* clipped to the gap */
	int prot;
};

/* Whether the mapping [s, e) with perms and path may move: 0 or EINVAL. */
static int
vma_movable(uintptr_t s, uintptr_t e, const char *perms, const char *path)
{
	char mf[64];
	struct statfs st;
	int fd, huge = 0;

	if (perms[3] == 's' && strncmp(path, "/SYSV", 5) == 0)
		return 0;	/* not moved: shared as it is (take_gap) */
	if (strncmp(path, "[vvar", 5) == 0 || strncmp(path, "[vdso", 5) == 0 ||
			strncmp(path, "[vsyscall", 9) == 0)
		return EINVAL;
	if (strncmp(path, "/anon_hugepage", 14) == 0)
		return EINVAL;
	if (strncmp(path, "/dev/", 5) == 0 && strncmp(path, "/dev/zero", 9) != 0)
		return EINVAL;
	if (path[0] != '/')
		return 0;	/* anonymous, [heap], [stack] */
	/* a file: hugetlbfs? (map_files names the very file, deleted
	 * or not) */
	snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx",
		(unsigned long)s, (unsigned long)e);
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		huge = fstatfs(fd, &st) == 0 &&
			(unsigned long)st.f_type == HUGETLBFS_MAGIC_;
		close(fd);
	} else if (statfs(path, &st) == 0) {
		huge = (unsigned long)st.f_type == HUGETLBFS_MAGIC_;
	}
	if (huge)
		return EINVAL;
	if (perms[3] == 's' && strncmp(path, "/dev/zero", 9) != 0 &&
			strncmp(path, "/memfd:droce-mr", 15) != 0)
		return EINVAL;
	return 0;
}

/*
 * The mappings that make up [start, end), clipped to it, into *out (n):
 * 0, EFAULT (a hole), EINVAL (one that cannot move) or ENOMEM.
 */
static int
vmas_of(uintptr_t start, uintptr_t end, struct vma **out, uint32_t *n)
{
	FILE *f = fopen("/proc/self/maps", "re");
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	char *line = NULL;
	size_t cap = 0;
	uintptr_t cur = start;
	uint32_t vcap = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (f == NULL)
		return errno;
	while (cur < end && getline(&line, &cap, f) > 0) {
		unsigned long s, e;
		char perms[5] = "";
		int pos = 0;
		char *path;

		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &s, &e, perms,
				&pos) < 3 || e <= cur)
			continue;
		if (s > cur)
			break;		/* a hole */
		path = line + pos;
		path[strcspn(path, "\n")] = '\0';
		/* our own stack: the frames we run on would move under us */
		rc = sp >= s && sp < e ? EINVAL : vma_movable(s, e, perms, path);
		if (rc != 0)
			break;
		if (*n == vcap) {
			struct vma *nv;

			vcap = vcap ? vcap * 2 : 8;
			nv = realloc(*out, vcap * sizeof(*nv));
			if (nv == NULL) {
				rc = ENOMEM;
				break;
			}
			*out = nv;
		}
		(*out)[*n].start = cur;
		(*out)[*n].end = e < end ? e : end;
		(*out)[*n].prot = (perms[0] == 'r' ? PROT_READ : 0) |
			(perms[1] == 'w' ? PROT_WRITE : 0) |
			(perms[2] == 'x' ? PROT_EXEC : 0);
		(*n)++;
		cur = (*out)[*n - 1].end;
	}
	if (rc == 0 && cur < end)
		rc = EFAULT;
	free(line);
	fclose(f);
	if (rc != 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/*
 * Whether r's addresses are still its segment's pages: every byte mapped
 * from its file at the offsets it had. munmap, mmap MAP_FIXED or mremap
 * over a registered range (UCX's allocators free and reuse addresses,
 * leaving the old MR to its registration cache) put other pages there,
 * which a new registration must take, as a NIC pins the new pages.
 */
static int
range_current(const struct range *r)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;
	uintptr_t cur = r->start;

	if (f == NULL)
		return 1;	/* cannot tell: as before */
	while (cur < r->end && getline(&line, &cap, f) > 0) {
		unsigned long vs, ve, pgoff, ino;
		unsigned int maj, min;

		if (sscanf(line, "%lx-%lx %*4s %lx %x:%x %lu", &vs, &ve, &pgoff,
				&maj, &min, &ino) < 6 || ve <= cur)
			continue;
		if (vs > cur || ((uint64_t)maj << 32 | min) != r->dev ||
				ino != r->ino ||
				pgoff + (cur - vs) != r->off + (cur - r->start))
			break;
		cur = ve;
	}
	free(line);
	fclose(f);
	return cur >= r->end;
}

/* The registry's ranges over [ps, pe) that no longer hold, forgotten. */
static int
forget_replaced(uintptr_t ps, uintptr_t pe)
{
	uint32_t i = range_find(ps);
	int rc;

	while (i < nranges && ranges[i].start < pe) {
		if (range_current(&ranges[i])) {
			i++;
			continue;
		}
		rc = range_forget(i);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- moving ---- */

static void
prot_restore(const struct vma *v, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (v[i].prot != (PROT_READ | PROT_WRITE))
			mprotect((void *)v[i].start, v[i].end - v[i].start,
				v[i].prot);
}

/* [start, end) onto a new segment, contents kept: 0 or an errno. */

/*
 * Whole pages, with whatever lies around the buffer (malloc's own
 * bookkeeping, other objects): a sanitizer's shadow would call reading
 * them an overflow. Word by word through volatile pointers, so that no
 * compiler turns it back into an (intercepted) memcpy.
 */
__attribute__((no_sanitize("address")))
static void
copy_pages(void *dst, const void *src, size_t len)
{
	volatile uint64_t *d = dst;
	const volatile uint64_t *s = src;
	size_t i;

	for (i = 0; i < len / sizeof(uint64_t); i++)
		d[i] = s[i];
}

/*
 * How [start, end) begins: a SysV shared-memory mapping (1: its part in
 * [start, *e), its file opened in *fd, *off the file offset at start),
 * or pages to move (0: up to *e, where the next SysV mapping begins or
 * end). Or an errno: the SysV file would not open (EINVAL), ENOMEM.
 */
static int
gap_split(uintptr_t start, uintptr_t end, uintptr_t *e, uint64_t *off,
		int *fd)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	*e = end;
	if (f == NULL)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long vs, ve, pgoff;
		char perms[5] = "", mf[64];
		int pos = 0;

		if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &vs, &ve, perms,
				&pgoff, &pos) < 4 || ve <= start)
			continue;
		if (vs >= end)
			break;
		if (perms[3] != 's' || strncmp(line + pos, "/SYSV", 5) != 0)
			continue;
		if (vs > start) {
			*e = vs;	/* move up to it */
			break;
		}
		snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx", vs, ve);
		*fd = open(mf, O_RDWR | O_CLOEXEC);
		if (*fd < 0) {
			rc = -EINVAL;
			break;
		}
		*e = ve < end ? ve : end;
		*off = pgoff + (start - vs);
		rc = 1;
		break;
	}
	free(line);
	fclose(f);
	return rc;
}

/* [start, end) of a SysV mapping into the registry, its file fd. */
static int
share_gap(uintptr_t start, uintptr_t end, uint64_t off, int fd)
{
	struct range r = { .start = start, .end = end, .off = off, .fd = fd };
	int rc = seg_alloc(&r.seg);

	range_file(&r);
	if (rc == 0 && (rc = range_insert(&r)) != 0)
		seg_free(r.seg);
	if (rc != 0)
		close(fd);
	return rc;
}

static int move_gap(uintptr_t start, uintptr_t end);

/* A gap of the registry: its SysV parts shared, the rest moved. */
static int
take_gap(uintptr_t start, uintptr_t end)
{
	while (start < end) {
		uintptr_t e;
		uint64_t off = 0;
		int fd = -1, rc = gap_split(start, end, &e, &off, &fd);

		if (rc < 0)
			return -rc;
		rc = rc == 1 ? share_gap(start, e, off, fd) : move_gap(start, e);
		if (rc != 0)
			return rc;
		start = e;
	}
	return 0;
}

static int
move_gap(uintptr_t start, uintptr_t end)
{
	size_t len = end - start;
	struct range r = { .start = start, .end = end, .fd = -1 };
	struct vma *v;
	uint32_t nv, i;
	void *tmp = MAP_FAILED;
	int rc;

	rc = vmas_of(start, end, &v, &nv);
	if (rc != 0)
		return rc;
	r.fd = memfd_create("droce-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r.fd < 0 || ftruncate(r.fd, (off_t)len) != 0)
		goto sys;
	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
	if (tmp == MAP_FAILED)
		goto sys;
	/* the old pages are read once; one we may not read we may now */
	for (i = 0; i < nv; i++)
		if (!(v[i].prot & PROT_READ) && mprotect((void *)v[i].start,
				v[i].end - v[i].start, v[i].prot | PROT_READ) != 0)
			goto sys_prot;
	copy_pages(tmp, (const void *)start, len);
	/*
	 * The system call itself, not libc's mremap: a program may
	 * interpose mremap (UCX's memory hooks do, and its hook drops
	 * MREMAP_FIXED's new address: EINVAL), and the move is none of its
	 * business (same addresses, same bytes).
	 */
	if ((void *)syscall(SYS_mremap, tmp, len, len,
			MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) == MAP_FAILED)
		goto sys_prot;
	tmp = MAP_FAILED;
	prot_restore(v, nv);
	free(v);
	range_file(&r);
	rc = seg_alloc(&r.seg);
	if (rc == 0 && (rc = range_insert(&r)) != 0)
		seg_free(r.seg);
	if (rc != 0)
		close(r.fd);	/* moved anyway: harmless */
	return rc;
sys_prot:
	rc = errno;
	for (i = 0; i < nv; i++)
		if (!(v[i].prot & PROT_READ))
			mprotect((void *)v[i].start, v[i].end - v[i].start,
				v[i].prot);
	goto out;
sys:
	rc = errno;
out:
	if (tmp != MAP_FAILED)
		munmap(tmp, len);
	if (r.fd >= 0)
		close(r.fd);
	free(v);
	return rc;
}

/* ---- sessions ---- */

static int
sess_room(struct da_memsess *s, uint32_t seg)
{
	uint32_t nc;
	uint32_t *n;

	if (seg < s->cap)
		return 0;
	nc = s->cap ? s->cap : 64;
	while (nc <= seg)
		nc *= 2;
	n = realloc(s->refs, nc * sizeof(*n));
	if (n == NULL)
		return ENOMEM;
	memset(n + s->cap, 0, (nc - s->cap) * sizeof(*n));
	s->refs = n;
	s->cap = nc;
	return 0;
}

/*
 * The gaps of [ps, pe) the registry lacks (at most DROCE_CHAN_MR_PIECES
 * pieces in all): 0 or EINVAL.
 */
static int
plan_gaps(uintptr_t ps, uintptr_t pe, uintptr_t gap[][2], uint32_t *ngap)
{
	uint32_t i = range_find(ps), pieces = 0;
	uintptr_t cur = ps;

	*ngap = 0;
	while (cur < pe) {
		if (++pieces > DROCE_CHAN_MR_PIECES)
			return EINVAL;
		if (i < nranges && ranges[i].start <= cur) {
			cur = ranges[i].end < pe ? ranges[i].end : pe;
			i++;
			continue;
		}
		gap[*ngap][0] = cur;
		cur = i < nranges && ranges[i].start < pe ? ranges[i].start : pe;
		gap[(*ngap)++][1] = cur;
	}
	return 0;
}

/* The pieces of [ps, pe), all moved by now; each range's MRs counted. */
static int
plan_pieces(struct da_memsess *s, uintptr_t ps, uintptr_t pe,
		struct da_mem_plan *plan, uint32_t *segs, uint32_t *nsegs)
{
	uint32_t i = range_find(ps), k;
	uintptr_t cur = ps;

	memset(plan, 0, sizeof(*plan));
	*nsegs = 0;
	for (k = 0; cur < pe; k++, i++) {
		struct droce_chan_piece *p = &plan->pieces[k];
		struct range *r;
		uintptr_t e;

		if (i >= nranges || k >= DROCE_CHAN_MR_PIECES)
			break;
		r = &ranges[i];
		if (r->start > cur || sess_room(s, r->seg) != 0)
			break;
		e = r->end < pe ? r->end : pe;
		p->seg = r->seg;
		p->seg_off = r->off + (cur - r->start);
		p->len = e - cur;
		segs[(*nsegs)++] = r->seg;
		cur = e;
	}
	if (cur < pe)
		return ENOMEM;
	plan->npieces = k;
	for (k = 0; k < plan->npieces; k++) {
		struct range *r = range_by_seg(plan->pieces[k].seg);

		if (s->refs[r->seg]++ == 0) {
			plan->pieces[k].flags = DROCE_PIECE_NEW;
			plan->fds[plan->nfds++] = r->fd;
		}
		r->refs++;
	}
	return 0;
}

/* Ranges moved for a registration that then failed and no MR uses. */
static void
drop_unused(uintptr_t gap[][2], uint32_t ngap)
{
	uint32_t g, i;

	for (g = 0; g < ngap; g++) {
		i = range_find(gap[g][0]);
		while (i < nranges && ranges[i].start < gap[g][1]) {
			if (ranges[i].refs == 0)
				range_drop(&ranges[i]);
			else
				i++;
		}
	}
}

/* A writable MR needs writable pages, moved or not (as the kernel's
 * pinning): 0 or EFAULT. */
static int
check_writable(uintptr_t ps, uintptr_t pe)
{
	struct vma *v;
	uint32_t n, i;
	int rc = vmas_of(ps, pe, &v, &n);

	for (i = 0; rc == 0 && i < n; i++)
		if (!(v[i].prot & PROT_WRITE))
			rc = EFAULT;
	free(v);
	return rc;
}

/*
 * Make the pages of [addr, addr+len) shared segments and say how the
 * daemon finds them: plan's pieces (new segments flagged, their memfds
 * in plan->fds in order), and the segments the MR holds (segs, nsegs:
 * for da_mem_release). Counts the MR in the registry and the session.
 * writable: the MR may be written (its pages must be writable).
 * 0, EINVAL, EFAULT or ENOMEM (or another errno of the moving).
 */
int
da_mem_acquire(struct da_memsess *s, void *addr, size_t len, int writable,
		struct da_mem_plan *plan, uint32_t *segs, uint32_t *nsegs)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr, ps, pe;
	uintptr_t gap[DROCE_CHAN_MR_PIECES][2];
	uint32_t ngap, g;
	int rc;

	if (len == 0 || a + len < a || a + len > UINTPTR_MAX - page)
		return EINVAL;
	ps = a & ~(page - 1);
	pe = (a + len + page - 1) & ~(page - 1);
	pthread_mutex_lock(&reg_lock);
	rc = writable ? check_writable(ps, pe) : 0;
	if (rc == 0)
		rc = forget_replaced(ps, pe);
	if (rc == 0)
		rc = plan_gaps(ps, pe, gap, &ngap);
	else
		ngap = 0;
	for (g = 0; rc == 0 && g < ngap; g++)
		rc = take_gap(gap[g][0], gap[g][1]);
	if (rc == 0)
		rc = plan_pieces(s, ps, pe, plan, segs, nsegs);
	if (rc != 0)
		drop_unused(gap, g);
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

/* The segments of segs the session would release with the MR (its
 * last MR that uses them), without releasing them. */
void
da_mem_peek(struct da_memsess *s, const uint32_t *segs, uint32_t nsegs,
		uint32_t *release, uint32_t *nrelease)
{
	uint32_t i;

	*nrelease = 0;
	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < nsegs; i++)
		if (segs[i] < s->cap && s->refs[segs[i]] == 1)
			release[(*nrelease)++] = segs[i];
	pthread_mutex_unlock(&reg_lock);
}

/*
 * An MR of the session is gone: its segments' counts drop. release
 * (nrelease) gets the segments the session no longer uses (DEREG_MR
 * tells the daemon); a range no MR uses leaves the registry.
 */
void
da_mem_release(struct da_memsess *s, const uint32_t *segs, uint32_t nsegs,
		uint32_t *release, uint32_t *nrelease)
{
	uint32_t i;

	if (nrelease != NULL)
		*nrelease = 0;
	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < nsegs; i++) {
		struct range *r = range_by_seg(segs[i]);

		if (segs[i] < s->cap && s->refs[segs[i]] > 0 &&
				--s->refs[segs[i]] == 0 && release != NULL)
			release[(*nrelease)++] = segs[i];
		if (r != NULL && r->refs > 0 && --r->refs == 0)
			range_drop(r);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* A session ends with MRs still registered: the registry forgets them. */
void
da_mem_sess_fini(struct da_memsess *s)
{
	uint32_t seg;

	pthread_mutex_lock(&reg_lock);
	for (seg = 0; seg < s->cap; seg++) {
		struct range *r;

		if (s->refs[seg] == 0 || (r = range_by_seg(seg)) == NULL)
			continue;
		r->refs = r->refs > s->refs[seg] ? r->refs - s->refs[seg] : 0;
		if (r->refs == 0)
			range_drop(r);
	}
	pthread_mutex_unlock(&reg_lock);
	free(s->refs);
	s->refs = NULL;
	s->cap = 0;
}
