/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-perf: RDMA benchmark over droce, client and server like perftest,
 * with every figure printed beside the raw rate of the same PMD measured
 * in the same run (plain rte_eth_tx_burst/rx_burst, same frame sizes).
 *
 *   droce-perf --server --vdev net_memif0,role=server,socket=/tmp/m.sock \
 *              --ip 10.0.0.1 [--port 18515]
 *   droce-perf --client --vdev net_memif0,role=client,socket=/tmp/m.sock \
 *              --ip 10.0.0.2 --peer-ip 10.0.0.1 --op write --size 64
 *
 * args.c: options; setup.c: port, QPs, memory, the side channel's
 * exchange; worker.c: worker lcores; client.c: the tests; raw.c: the raw
 * PMD baseline; server.c: the server; ud.c: ud_send's UD QPs; report.c:
 * results and counters.
 */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "perf_internal.h"

/* The client's run: every test, the results, the checks at the end. */
static int
client_main(void)
{
	struct result rs[64];
	int nr, rc;

	if (!opt.json_out)
		printf(" droce-perf: %u QP(s), %u queue(s), %u core(s), "
			"depth %u, post list %u, cq-mod %u, outs %u, "
			"path MTU %u%s%s\n",
			opt.nqp, opt.queues, opt.cores,
			opt.lat ? 1 : opt.depth,
			opt.post_list, opt.cq_mod, opt.outs, mtu_bytes,
			opt.inline_data ? ", inline" : "",
			opt.lat ? ", latency" : ", bandwidth");
	warm_up();
	rc = run_tests(rs, RTE_DIM(rs), &nr);
	print_results(rs, nr);
	if (faults_on() && fault_report() != 0)
		rc = 1;
	if (rc)
		fail_report();
	if (end_report() != 0)
		rc = 1;
	return rc;
}

int
main(int argc, char **argv)
{
	int rc;

	if (parse_args(argc, argv) != 0)
		return 2;
	srand((unsigned int)getpid());
	if (setup() != 0)
		return 1;
	if (sc_exchange() != 0)
		return 1;
	if (connect_qps() != 0 || setup_workers() != 0)
		return 1;
	rc = opt.server ? server_loop() : client_main();
	close(sc);
	droce_port_close(port);
	return rc;
}
