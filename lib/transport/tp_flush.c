/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * What an IBTA 1.5 FLUSH to persistence means for a software NIC: the
 * registered range lies in shared mappings of files, and msync(MS_SYNC)
 * writes it back to the file's storage before the answer leaves. rxe
 * refuses IB_ACCESS_FLUSH_PERSISTENT over pages that are not pmem; droce
 * refuses it over memory with no storage behind it (anonymous, private,
 * tmpfs, hugetlbfs, memfd, SysV), where "persistent" would be a lie.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "tp_internal.h"

/* filesystems whose files live in memory only (linux/magic.h) */
#define FS_TMPFS 0x01021994
#define FS_RAMFS 0x858458f6
#define FS_HUGETLBFS 0x958458f6

/* One line of /proc/self/maps: a shared mapping of a file that has
 * storage behind it? */
static int
line_durable(const char *perms, unsigned long inode, const char *path)
{
	struct statfs sf;
	size_t n = strlen(path);

	if (perms[3] != 's' || inode == 0 || path[0] != '/')
		return 0;
	/* memfd, SysV and unlinked files show as "... (deleted)" */
	if (n >= 10 && strcmp(path + n - 10, " (deleted)") == 0)
		return 0;
	if (statfs(path, &sf) != 0)
		return 0;
	return sf.f_type != FS_TMPFS && sf.f_type != FS_RAMFS &&
		sf.f_type != FS_HUGETLBFS;
}

int
tp_range_durable(const void *addr, size_t len)
{
	uintptr_t at = (uintptr_t)addr, end = at + len;
	char line[4352], perms[8], path[4096];
	unsigned long lo, hi, off, inode;
	unsigned int maj, min;
	FILE *f;

	if (len == 0 || end < at)
		return EINVAL;
	f = fopen("/proc/self/maps", "re");
	if (f == NULL)
		return errno;
	while (at < end && fgets(line, sizeof(line), f) != NULL) {
		path[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %4095[^\n]", &lo,
				&hi, perms, &off, &maj, &min, &inode, path) < 7)
			continue;
		if (hi <= at)
			continue;
		if (lo > at || !line_durable(perms, inode, path))
			break;	/* a hole, or memory without storage */
		at = hi;
	}
	fclose(f);
	return at >= end ? 0 : EINVAL;
}

int
tp_flush_persist(void *p, uint64_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)p & ~(pg - 1);
	uintptr_t end = ((uintptr_t)p + len + pg - 1) & ~(pg - 1);

	if (len == 0)
		return 0;
	return msync((void *)start, end - start, MS_SYNC) == 0 ? 0 : -errno;
}
