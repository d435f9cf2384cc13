/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An inert libefa.so.1: perftest and libfabric link AWS EFA's direct
 * verbs (SRD). A droce device is not an EFA device: every call fails
 * with EOPNOTSUPP, and libfabric's efa provider, finding no EFA device
 * among droce's, reports none. Every symbol of rdma-core 44's libefa is
 * here, in its version node, so that whatever imports one loads.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

void *efadv_create_driver_qp(void *pd, void *attr, uint32_t driver_qp_type);
void *efadv_create_qp_ex(void *context, void *attr_ex, void *efa_attr,
		unsigned int inlen);
int efadv_query_device(void *context, void *attr, unsigned int inlen);
int efadv_query_ah(void *ah, void *attr, uint32_t inlen);
void *efadv_create_cq(void *context, void *attr_ex, void *efa_attr,
		uint32_t inlen);
void *efadv_cq_from_ibv_cq_ex(void *cq_ex);

void *
efadv_create_driver_qp(void *pd, void *attr, uint32_t driver_qp_type)
{
	(void)pd; (void)attr; (void)driver_qp_type;
	errno = EOPNOTSUPP;
	return NULL;
}

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

int
efadv_query_ah(void *ah, void *attr, uint32_t inlen)
{
	(void)ah; (void)attr; (void)inlen;
	return EOPNOTSUPP;
}

void *
efadv_create_cq(void *context, void *attr_ex, void *efa_attr, uint32_t inlen)
{
	(void)context; (void)attr_ex; (void)efa_attr; (void)inlen;
	errno = EOPNOTSUPP;
	return NULL;
}

/* no CQ of droce's was made by efadv_create_cq */
void *
efadv_cq_from_ibv_cq_ex(void *cq_ex)
{
	(void)cq_ex;
	return NULL;
}
