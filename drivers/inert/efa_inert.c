/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An inert libefa.so.1: perftest links AWS EFA's direct verbs for SRD.
 * A droce device is not an EFA device: both calls fail with EOPNOTSUPP.
 */

#include <errno.h>
#include <stddef.h>

void *efadv_create_qp_ex(void *context, void *attr_ex, void *efa_attr,
		unsigned int inlen);
int efadv_query_device(void *context, void *attr, unsigned int inlen);

void *
efadv_create_qp_ex(void *context, void *attr_ex, void *efa_attr,
		unsigned int inlen)
{
	(void)context; (void)attr_ex; (void)efa_attr; (void)inlen;
	errno = EOPNOTSUPP;
	return NULL;
}

int
efadv_query_device(void *context, void *attr, unsigned int inlen)
{
	(void)context; (void)attr; (void)inlen;
	return EOPNOTSUPP;
}
