/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * conf_open [pd]: open the first verbs device (and with "pd" allocate a
 * PD, which starts droce's port) and say how that went, errno included,
 * for test/verbs/conf-errors.sh. Exit 0: opened; 1: no device or the
 * open failed; 2: the PD failed.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

int
main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int n = 0, rc = 0;

	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		printf("conf_open: no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL) {
		printf("conf_open: open %s: errno %d (%s)\n",
			ibv_get_device_name(list[0]), errno, strerror(errno));
		ibv_free_device_list(list);
		return 1;
	}
	printf("conf_open: opened %s\n", ibv_get_device_name(list[0]));
	if (argc > 1 && strcmp(argv[1], "pd") == 0) {
		pd = ibv_alloc_pd(ctx);
		if (pd == NULL) {
			printf("conf_open: alloc_pd: errno %d (%s)\n", errno,
				strerror(errno));
			rc = 2;
		} else {
			printf("conf_open: pd allocated\n");
			ibv_dealloc_pd(pd);
		}
	}
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return rc;
}
