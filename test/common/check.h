/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef CHECK_H
#define CHECK_H

/* Minimal assertions for droce's C tests: count failures, keep going. */

#include <stdio.h>

/* a program of several files defines CHECK_SHARED in each, and
 * check_failures and check_count in one: they count for all of them */
#ifdef CHECK_SHARED
extern int check_failures;
extern int check_count;
#else
static int check_failures;
static int check_count;
#endif

#define CHECK(cond, ...) do { \
	check_count++; \
	if (!(cond)) { \
		check_failures++; \
		fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, \
			__LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

#define CHECK_EQ(a, b, what) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	CHECK(_a == _b, "%s: got %lld, want %lld", (what), _a, _b); \
} while (0)

static inline int
check_report(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
