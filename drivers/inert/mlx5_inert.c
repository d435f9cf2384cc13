/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An inert libmlx5.so.1: perftest links Mellanox's direct-verbs library
 * for DC transport, AES-XTS and the like. A droce device is never an mlx5
 * device, so every call fails cleanly (EOPNOTSUPP) and the program takes
 * its plain-verbs path. Only the symbols Debian's perftest imports exist.
 */

#include <errno.h>
#include <stddef.h>

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
