/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef VERBS_CHECK_H
#define VERBS_CHECK_H

/* The verbs tests' checks: an "ok:" or "FAIL" line each, counted. */

#include <stdio.h>

/* a program of several files defines VERBS_CHECK_SHARED in each, and
 * passed and failed in one: they count for all of them */
#ifdef VERBS_CHECK_SHARED
extern int passed, failed;
#else
static int passed, failed;
#endif

#define CHECK(cond, ...) do { \
	if (cond) { \
		passed++; \
		printf("ok: "); \
	} else { \
		failed++; \
		printf("FAIL (%s:%d): ", __FILE__, __LINE__); \
	} \
	printf(__VA_ARGS__); \
	printf("\n"); \
} while (0)

#endif /* VERBS_CHECK_H */
