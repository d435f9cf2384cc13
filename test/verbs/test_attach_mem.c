/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Attached mode's registered memory (drivers/ibverbs/attach_mem.c) without
 * a daemon: pages move onto memfd segments at the same addresses with
 * their contents, protections and sharing as documented; overlapping
 * registrations reuse segments; each session gets a segment once (NEW)
 * and releases it with its last MR; SysV shared memory is shared as it
 * is; what cannot move is refused.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>

#include "attach.h"

static int fails;

/*
 * An interposed mremap that loses MREMAP_FIXED's new address, as UCX's
 * memory hooks (libucm) do: moving pages must not depend on libc's
 * mremap (attach_mem.c makes the system call itself).
 */
void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...);
void *
mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	(void)old;
	(void)old_len;
	(void)new_len;
	(void)flags;
	errno = EINVAL;
	return MAP_FAILED;
}

#define CHECK(c, ...) do { \
	if (!(c)) { \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		fails++; \
	} \
} while (0)

static size_t pg;

struct reg {
	struct da_mem_plan plan;
	uint32_t segs[DROCE_CHAN_MR_PIECES], nsegs;
};

static int
acq(struct da_memsess *s, void *addr, size_t len, struct reg *r)
{
	memset(r, 0, sizeof(*r));
	return da_mem_acquire(s, addr, len, 0, &r->plan, r->segs, &r->nsegs);
}

static uint32_t
rel(struct da_memsess *s, struct reg *r, uint32_t *out)
{
	uint32_t n = 0;

	da_mem_release(s, r->segs, r->nsegs, out, &n);
	return n;
}

/* The perms and path of the mapping that holds addr. */
static int
maps_of(const void *addr, char perms[5], char *path, size_t plen)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		unsigned long s, e;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &s, &e, perms,
				&pos) < 3)
			continue;
		if ((uintptr_t)addr >= s && (uintptr_t)addr < e) {
			snprintf(path, plen, "%s", line + pos);
			path[strcspn(path, "\n")] = '\0';
			found = 1;
			break;
		}
	}
	if (f != NULL)
		fclose(f);
	return found;
}

static int
on_segment(const void *addr)
{
	char perms[5], path[256];

	return maps_of(addr, perms, path, sizeof(path)) &&
		strncmp(path, "/memfd:droce-mr", 15) == 0 && perms[3] == 's';
}

static void
fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static int
same(const uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

/* malloc'd memory: moved with its neighbours' bytes; the segment holds
 * what the application sees (the daemon's view), and later writes too. */
static void
test_malloc(struct da_memsess *s)
{
	size_t len = 3 * pg + 100;
	uint8_t *before = malloc(64), *buf = malloc(len), *after = malloc(64);
	uint8_t *copy;
	struct reg r;
	uint32_t out[16];
	uint8_t b[64];
	uintptr_t ps = (uintptr_t)buf & ~(pg - 1);
	int rc;

	fill(before, 64, 1);
	fill(buf, len, 2);
	fill(after, 64, 3);
	rc = acq(s, buf, len, &r);
	CHECK(rc == 0, "malloc: %s", strerror(rc));
	CHECK(r.plan.npieces == 1 && r.plan.nfds == 1 &&
		r.plan.pieces[0].flags == DROCE_PIECE_NEW &&
		r.plan.pieces[0].seg_off == 0 &&
		r.plan.pieces[0].len == (((uintptr_t)buf + len + pg - 1) &
			~(pg - 1)) - ps, "malloc: one new piece of the pages");
	CHECK(same(before, 64, 1) && same(buf, len, 2) && same(after, 64, 3),
		"malloc: contents kept");
	CHECK(on_segment(buf) && on_segment(buf + len - 1), "malloc: on a segment");
	/* the daemon's view: the memfd at the piece's offset */
	CHECK(pread(r.plan.fds[0], b, 64, (off_t)((uintptr_t)buf - ps)) == 64 &&
		memcmp(b, buf, 64) == 0, "malloc: segment = memory");
	buf[10] = 0xab;
	CHECK(pread(r.plan.fds[0], b, 64, (off_t)((uintptr_t)buf - ps)) == 64 &&
		b[10] == 0xab, "malloc: one page, not a copy");
	/* the daemon seals it against shrinking */
	CHECK(fcntl(r.plan.fds[0], F_ADD_SEALS, F_SEAL_SHRINK) == 0,
		"malloc: segment cannot be sealed: %s", strerror(errno));
	copy = malloc(len);
	memcpy(copy, buf, len);
	CHECK(rel(s, &r, out) == 1 && out[0] == r.segs[0],
		"malloc: released with its MR");
	CHECK(memcmp(copy, buf, len) == 0 && on_segment(buf),
		"malloc: pages stay after release");
	free(copy);
	free(before);
	free(after);
	free(buf);
}

/* Overlaps: a range inside one moved reuses its segment; one beyond it
 * moves only the gap; a session sends a segment once. */
static void
test_overlap(struct da_memsess *s, struct da_memsess *s2)
{
	uint8_t *m = mmap(NULL, 8 * pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct reg a, b, c, d;
	uint32_t out[16];
	int rc;

	fill(m, 8 * pg, 9);
	CHECK(acq(s, m + 2 * pg, 2 * pg, &a) == 0, "overlap: first");
	rc = acq(s, m + 2 * pg + 10, pg, &b);
	CHECK(rc == 0 && b.plan.npieces == 1 && b.plan.nfds == 0 &&
		b.plan.pieces[0].seg == a.plan.pieces[0].seg &&
		b.plan.pieces[0].seg_off == 0 && b.plan.pieces[0].flags == 0,
		"overlap: inside reuses the segment, not new to the session");
	rc = acq(s, m + pg, 5 * pg, &c);
	CHECK(rc == 0 && c.plan.npieces == 3 && c.plan.nfds == 2 &&
		c.plan.pieces[1].seg == a.plan.pieces[0].seg &&
		c.plan.pieces[1].flags == 0 &&
		c.plan.pieces[0].flags == DROCE_PIECE_NEW &&
		c.plan.pieces[2].flags == DROCE_PIECE_NEW &&
		c.plan.pieces[0].len == pg && c.plan.pieces[1].len == 2 * pg &&
		c.plan.pieces[2].len == 2 * pg, "overlap: gaps around a moved range");
	CHECK(same(m, 8 * pg, 9), "overlap: contents kept");
	/* another session: the same segments, each new to it */
	rc = acq(s2, m + 2 * pg, pg, &d);
	CHECK(rc == 0 && d.plan.npieces == 1 &&
		d.plan.pieces[0].seg == a.plan.pieces[0].seg &&
		d.plan.pieces[0].flags == DROCE_PIECE_NEW && d.plan.nfds == 1,
		"overlap: new to another session");
	CHECK(rel(s, &a, out) == 0, "overlap: b and c still use a's segment");
	CHECK(rel(s, &b, out) == 0, "overlap: c still uses it");
	CHECK(rel(s, &c, out) == 3, "overlap: c was the last of s");
	CHECK(rel(s2, &d, out) == 1, "overlap: d was the last of s2");
	munmap(m, 8 * pg);
}

/* Protections kept per original mapping; a hole refused before anything
 * moves. */
static void
test_prot_and_holes(struct da_memsess *s)
{
	uint8_t *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char perms[5], path[256];
	struct reg r;
	uint32_t out[16];
	int rc;

	fill(m, 4 * pg, 5);
	mprotect(m + pg, pg, PROT_READ);
	mprotect(m + 2 * pg, pg, PROT_NONE);
	rc = da_mem_acquire(s, m, 4 * pg, 1, &r.plan, r.segs, &r.nsegs);
	CHECK(rc == EFAULT, "prot: writable over read-only: %s", strerror(rc));
	CHECK(!on_segment(m), "prot: nothing moved for it");
	rc = acq(s, m, 4 * pg, &r);
	CHECK(rc == 0, "prot: %s", strerror(rc));
	CHECK(maps_of(m, perms, path, sizeof(path)) && strcmp(perms, "rw-s") == 0,
		"prot: rw page is %s", perms);
	CHECK(maps_of(m + pg, perms, path, sizeof(path)) &&
		strcmp(perms, "r--s") == 0, "prot: r page is %s", perms);
	CHECK(maps_of(m + 2 * pg, perms, path, sizeof(path)) &&
		strcmp(perms, "---s") == 0, "prot: none page is %s", perms);
	mprotect(m + 2 * pg, pg, PROT_READ);
	CHECK(same(m, 4 * pg, 5), "prot: contents kept (unreadable page too)");
	rel(s, &r, out);
	munmap(m, 4 * pg);

	m = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(m + pg, pg);
	rc = acq(s, m, 3 * pg, &r);
	CHECK(rc == EFAULT, "hole: %s", strerror(rc));
	CHECK(!on_segment(m), "hole: nothing moved");
	munmap(m, 3 * pg);
}

static void
test_refusals(struct da_memsess *s)
{
	char tmpl[] = "/tmp/droce-attach-mem.XXXXXX";
	void *vdso = (void *)getauxval(AT_SYSINFO_EHDR);
	struct reg r;
	uint8_t *m;
	int fd, rc;

	if (vdso != NULL) {
		rc = acq(s, vdso, 16, &r);
		CHECK(rc == EINVAL, "vdso: %s", strerror(rc));
	}
	fd = mkstemp(tmpl);
	unlink(tmpl);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)pg) == 0, "tmp file");
	m = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rc = acq(s, m, pg, &r);
	CHECK(rc == EINVAL, "shared file: %s", strerror(rc));
	munmap(m, pg);
	/* a private mapping of a file is a copy already: it moves */
	m = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	m[0] = 42;
	rc = acq(s, m, pg, &r);
	CHECK(rc == 0 && m[0] == 42, "private file: %s", strerror(rc));
	if (rc == 0)
		rel(s, &r, NULL);
	munmap(m, pg);
	close(fd);
	m = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (m != MAP_FAILED) {
		rc = acq(s, m, 4096, &r);
		CHECK(rc == EINVAL, "hugetlb: %s", strerror(rc));
		munmap(m, 2 << 20);
	} else {
		printf("no hugepage free: hugetlb refusal not tried\n");
	}
	rc = acq(s, NULL, 0, &r);
	CHECK(rc == EINVAL, "empty: %s", strerror(rc));
	rc = acq(s, tmpl, sizeof(tmpl), &r);
	CHECK(rc == EINVAL, "own stack: %s", strerror(rc));
}

/* More pieces than a request holds: EINVAL, and nothing new moved. */
static void
test_pieces(struct da_memsess *s)
{
	uint8_t *m = mmap(NULL, 40 * pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct reg r[17], big;
	int i, rc;

	for (i = 0; i < 17; i++)
		CHECK(acq(s, m + (size_t)(2 * i + 1) * pg, pg, &r[i]) == 0,
			"pieces: page %d", i);
	rc = acq(s, m, 35 * pg, &big);
	CHECK(rc == EINVAL, "pieces: 35 > 16: %s", strerror(rc));
	CHECK(!on_segment(m), "pieces: the gaps did not move");
	rc = acq(s, m + pg, 15 * pg, &big);
	CHECK(rc == 0 && big.plan.npieces == 15, "pieces: 15 fit: %s",
		strerror(rc));
	if (rc == 0)
		rel(s, &big, NULL);
	for (i = 0; i < 17; i++)
		rel(s, &r[i], NULL);
	munmap(m, 40 * pg);
}

/* Documented: after fork() the child shares moved pages with its
 * parent (MAP_SHARED), no copy-on-write. */
static void
test_fork(struct da_memsess *s)
{
	uint8_t *m = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct reg r;
	pid_t pid;
	int st;

	m[0] = 1;
	CHECK(acq(s, m, pg, &r) == 0, "fork: register");
	pid = fork();
	if (pid == 0) {
		m[0] = 2;
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK(m[0] == 2, "fork: the child's write is the parent's");
	rel(s, &r, NULL);
	munmap(m, pg);
}

/*
 * SysV shared memory (UCX's memory pools take it, hugetlb when they can)
 * is not moved but shared as it is: the segment is the SysV file, at the
 * mapping's offset; the pages stay where and what they are. Opening its
 * file needs CAP_SYS_ADMIN (/proc/self/map_files): without, EINVAL.
 */
static void
test_sysv_one(struct da_memsess *s, int huge)
{
	size_t len = huge ? 2u << 20 : 4 * pg;
	int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600 |
		(huge ? SHM_HUGETLB : 0));
	struct reg r, r2;
	uint8_t *m;
	int rc;

	if (id < 0) {
		printf("sysv%s: shmget: %s: not tried\n", huge ? " hugetlb" : "",
			strerror(errno));
		return;
	}
	m = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);	/* gone with its last detach */
	CHECK(m != (void *)-1, "sysv: shmat");
	if (m == (void *)-1)
		return;
	m[pg + 5] = 7;
	rc = acq(s, m + pg + 5, 10, &r);
	if (rc == EINVAL && geteuid() != 0) {
		printf("sysv: EINVAL without CAP_SYS_ADMIN, as documented\n");
		shmdt(m);
		return;
	}
	CHECK(rc == 0, "sysv%s: register: %s", huge ? " hugetlb" : "",
		strerror(rc));
	if (rc == 0) {
		CHECK(r.plan.npieces == 1 && r.plan.nfds == 1 &&
			r.plan.pieces[0].flags == DROCE_PIECE_NEW &&
			r.plan.pieces[0].seg_off == pg,
			"sysv: one new piece at the mapping's offset (%u, %lu)",
			r.plan.npieces,
			(unsigned long)r.plan.pieces[0].seg_off);
		CHECK(!on_segment(m) && m[pg + 5] == 7,
			"sysv: not moved, contents kept");
		/* the segment is the SysV memory itself */
		if (r.plan.nfds == 1) {
			uint8_t b = 0;

			CHECK(pread(r.plan.fds[0], &b, 1, (off_t)pg + 5) == 1 &&
				b == 7, "sysv: the fd reads the mapping");
		}
		/* the whole mapping later: the page before and the rest
		 * new, each at its own offset; the middle one reused */
		rc = acq(s, m, len, &r2);
		CHECK(rc == 0 && r2.plan.npieces == 3 && r2.plan.nfds == 2 &&
			r2.plan.pieces[0].seg_off == 0 &&
			r2.plan.pieces[1].seg == r.plan.pieces[0].seg &&
			r2.plan.pieces[1].flags == 0 &&
			r2.plan.pieces[2].seg_off == 2 * pg,
			"sysv: the whole mapping: %s, %u pieces, %u fds",
			strerror(rc), r2.plan.npieces, r2.plan.nfds);
		if (rc == 0)
			rel(s, &r2, NULL);
		rel(s, &r, NULL);
	}
	shmdt(m);
}

static void
test_sysv(struct da_memsess *s)
{
	test_sysv_one(s, 0);
	test_sysv_one(s, 1);
}

/*
 * A registered range unmapped and mapped anew at the same address (an
 * allocator reusing it while the old MR lives on in a registration
 * cache): the next registration takes the new pages, on a new segment,
 * and the old MR keeps the old one.
 */
static void
test_replaced(struct da_memsess *s)
{
	uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *n;
	struct reg r, r2;
	uint32_t old;

	m[0] = 1;
	CHECK(acq(s, m, pg, &r) == 0, "replaced: first registration");
	old = r.plan.pieces[0].seg;
	munmap(m, 2 * pg);
	n = mmap(m, 2 * pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(n == m, "replaced: the same address again");
	n[0] = 2;
	CHECK(acq(s, n, pg, &r2) == 0 && r2.plan.npieces == 1 &&
		r2.plan.pieces[0].seg != old &&
		r2.plan.pieces[0].flags == DROCE_PIECE_NEW && r2.plan.nfds == 1,
		"replaced: a new segment for the new pages (seg %u, was %u)",
		r2.plan.pieces[0].seg, old);
	CHECK(n[0] == 2 && on_segment(n), "replaced: the new pages moved, "
		"contents kept");
	if (r2.plan.nfds == 1) {
		uint8_t b = 0;

		CHECK(pread(r2.plan.fds[0], &b, 1, 0) == 1 && b == 2,
			"replaced: the new segment holds the new bytes");
	}
	rel(s, &r2, NULL);
	rel(s, &r, NULL);
	munmap(n, 2 * pg);
}

/* Everything released: segment numbers start again from 0. */
static void
test_numbers(struct da_memsess *s)
{
	uint8_t *m = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct reg r;

	CHECK(acq(s, m, pg, &r) == 0 && r.plan.pieces[0].seg == 0 &&
		r.plan.pieces[0].flags == DROCE_PIECE_NEW,
		"numbers: the lowest free one (got %u)", r.plan.pieces[0].seg);
	rel(s, &r, NULL);
	munmap(m, pg);
}

int
main(void)
{
	struct da_memsess s = { 0 }, s2 = { 0 };

	pg = (size_t)sysconf(_SC_PAGESIZE);
	test_malloc(&s);
	test_overlap(&s, &s2);
	test_prot_and_holes(&s);
	test_refusals(&s);
	test_pieces(&s);
	test_fork(&s);
	test_sysv(&s);
	test_replaced(&s);
	test_numbers(&s);
	da_mem_sess_fini(&s);
	da_mem_sess_fini(&s2);
	if (fails) {
		printf("%d check(s) failed\n", fails);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
