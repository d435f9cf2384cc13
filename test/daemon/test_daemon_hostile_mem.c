/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_hostile's cases on memory handed to droced: a registration
 * across huge pages, files that pass for SysV segments or are cut short
 * under it, MRs deregistered while the wire still uses them.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/shm.h>
#include <sys/socket.h>

#include "daemon_hostile.h"

#define HUGE (2u << 20)

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
void
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
void
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
void
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
void
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
