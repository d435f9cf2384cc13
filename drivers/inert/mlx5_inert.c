/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An inert libmlx5.so.1: perftest links Mellanox's direct-verbs library
 * for DC transport, AES-XTS and the like. A droce device is never an mlx5
 * device, so every call fails cleanly (EOPNOTSUPP) and the program takes
 * its plain-verbs path. Only the symbols Debian's perftest and UCX
 * (libuct_ib, which asks mlx5dv_is_supported first) import exist.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* Opaque here: nothing is ever dereferenced. */
void *mlx5dv_create_qp(void *context, void *qp_attr, void *mlx5_qp_attr);
void *mlx5dv_open_device(void *device, void *attr);
int mlx5dv_devx_general_cmd(void *context, const void *in, size_t inlen,
		void *out, size_t outlen);
void *mlx5dv_create_mkey(void *attr);
int mlx5dv_destroy_mkey(void *mkey);
void *mlx5dv_qp_ex_from_ibv_qp_ex(void *qp);
int mlx5dv_crypto_login(void *context, void *login_attr);
void *mlx5dv_dek_create(void *context, void *init_attr);
int mlx5dv_dek_destroy(void *dek);

void *
mlx5dv_create_qp(void *context, void *qp_attr, void *mlx5_qp_attr)
{
	(void)context; (void)qp_attr; (void)mlx5_qp_attr;
	errno = EOPNOTSUPP;
	return NULL;
}

void *
mlx5dv_open_device(void *device, void *attr)
{
	(void)device; (void)attr;
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_devx_general_cmd(void *context, const void *in, size_t inlen,
		void *out, size_t outlen)
{
	(void)context; (void)in; (void)inlen; (void)out; (void)outlen;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

void *
mlx5dv_create_mkey(void *attr)
{
	(void)attr;
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_destroy_mkey(void *mkey)
{
	(void)mkey;
	return EOPNOTSUPP;
}

void *
mlx5dv_qp_ex_from_ibv_qp_ex(void *qp)
{
	(void)qp;
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_crypto_login(void *context, void *login_attr)
{
	(void)context; (void)login_attr;
	return EOPNOTSUPP;
}

void *
mlx5dv_dek_create(void *context, void *init_attr)
{
	(void)context; (void)init_attr;
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_dek_destroy(void *dek)
{
	(void)dek;
	return EOPNOTSUPP;
}

/* UCX's libuct_ib: never an mlx5 device, so none of the rest is reached */
int mlx5dv_is_supported(void *device);
void *mlx5dv_create_cq(void *context, void *cq_attr, void *mlx5_cq_attr);
int mlx5dv_init_obj(void *obj, unsigned long obj_type);
void *mlx5dv_devx_create_event_channel(void *context, int flags);
void mlx5dv_devx_destroy_event_channel(void *event_channel);
long mlx5dv_devx_get_event(void *event_channel, void *event_data,
		size_t event_resp_len);
int mlx5dv_devx_subscribe_devx_event(void *event_channel, void *obj,
		uint16_t events_sz, uint16_t events_num[], uint64_t cookie);
void *mlx5dv_devx_alloc_uar(void *context, uint32_t flags);
void mlx5dv_devx_free_uar(void *devx_uar);
void *mlx5dv_devx_obj_create(void *context, const void *in, size_t inlen,
		void *out, size_t outlen);
int mlx5dv_devx_obj_destroy(void *obj);
int mlx5dv_devx_obj_modify(void *obj, const void *in, size_t inlen,
		void *out, size_t outlen);
int mlx5dv_devx_obj_query(void *obj, const void *in, size_t inlen,
		void *out, size_t outlen);
void *mlx5dv_devx_umem_reg(void *context, void *addr, size_t size,
		uint32_t access);
int mlx5dv_devx_umem_dereg(void *umem);
int mlx5dv_devx_qp_modify(void *qp, const void *in, size_t inlen,
		void *out, size_t outlen);
int mlx5dv_devx_qp_query(void *qp, const void *in, size_t inlen,
		void *out, size_t outlen);

int
mlx5dv_is_supported(void *device)
{
	(void)device;
	return 0;
}

void *
mlx5dv_create_cq(void *context, void *cq_attr, void *mlx5_cq_attr)
{
	(void)context; (void)cq_attr; (void)mlx5_cq_attr;
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_init_obj(void *obj, unsigned long obj_type)
{
	(void)obj; (void)obj_type;
	return EOPNOTSUPP;
}

void *
mlx5dv_devx_create_event_channel(void *context, int flags)
{
	(void)context; (void)flags;
	errno = EOPNOTSUPP;
	return NULL;
}

void
mlx5dv_devx_destroy_event_channel(void *event_channel)
{
	(void)event_channel;
}

long
mlx5dv_devx_get_event(void *event_channel, void *event_data,
		size_t event_resp_len)
{
	(void)event_channel; (void)event_data; (void)event_resp_len;
	errno = EOPNOTSUPP;
	return -1;
}

int
mlx5dv_devx_subscribe_devx_event(void *event_channel, void *obj,
		uint16_t events_sz, uint16_t events_num[], uint64_t cookie)
{
	(void)event_channel; (void)obj; (void)events_sz; (void)events_num;
	(void)cookie;
	return EOPNOTSUPP;
}

void *
mlx5dv_devx_alloc_uar(void *context, uint32_t flags)
{
	(void)context; (void)flags;
	errno = EOPNOTSUPP;
	return NULL;
}

void
mlx5dv_devx_free_uar(void *devx_uar)
{
	(void)devx_uar;
}

void *
mlx5dv_devx_obj_create(void *context, const void *in, size_t inlen,
		void *out, size_t outlen)
{
	(void)context; (void)in; (void)inlen; (void)out; (void)outlen;
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_devx_obj_destroy(void *obj)
{
	(void)obj;
	return EOPNOTSUPP;
}

int
mlx5dv_devx_obj_modify(void *obj, const void *in, size_t inlen,
		void *out, size_t outlen)
{
	(void)obj; (void)in; (void)inlen; (void)out; (void)outlen;
	return EOPNOTSUPP;
}

int
mlx5dv_devx_obj_query(void *obj, const void *in, size_t inlen,
		void *out, size_t outlen)
{
	(void)obj; (void)in; (void)inlen; (void)out; (void)outlen;
	return EOPNOTSUPP;
}

void *
mlx5dv_devx_umem_reg(void *context, void *addr, size_t size,
		uint32_t access)
{
	(void)context; (void)addr; (void)size; (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

int
mlx5dv_devx_umem_dereg(void *umem)
{
	(void)umem;
	return EOPNOTSUPP;
}

int
mlx5dv_devx_qp_modify(void *qp, const void *in, size_t inlen,
		void *out, size_t outlen)
{
	(void)qp; (void)in; (void)inlen; (void)out; (void)outlen;
	return EOPNOTSUPP;
}

int
mlx5dv_devx_qp_query(void *qp, const void *in, size_t inlen,
		void *out, size_t outlen)
{
	(void)qp; (void)in; (void)inlen; (void)out; (void)outlen;
	return EOPNOTSUPP;
}
