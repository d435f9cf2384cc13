/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Incast in virtual time (incast.c over fabric.c): N senders into one
 * receiver through a switch port of the senders' own speed, with DCQCN or
 * without congestion control, through a switch that marks ECN or only
 * drops. For each case: goodput, each flow's share (Jain's index over
 * the measured span), the bottleneck's use, drops before and after the
 * warm-up, marks, queue depth, and what recovery cost.
 *
 *   droce-incast-sim [--senders 8,64] [--gbps 25,100]
 *       [--cc dcqcn,delay,none] [--delay-target-us US] [--delay-ai-mbps M]
 *       [--np-gap-us US]
 *       [--mark ecn|none] [--run-ms 50] [--warm-ms 10] [--size B]
 *       [--depth N] [--mtu 4096] [--rtt-us 4] [--buffer-kb K]
 *       [--kmin-kb K] [--kmax-kb K] [--pmax P] [--sr 0|1]
 *       [--rto-min-us US] [--series FILE] [--rp KEY=VALUE,...]
 *
 * The switch: a buffer of 1 MB per 25 Gbit/s of port speed, marking
 * from Kmin 30 KB to Kmax 120 KB with Pmax 20%. Hosts: selective repeat
 * (droce peers), DCQCN with ConnectX's parameters unless --rp names
 * others (doc/perf.md, "Congestion", has the runs and why).
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "incast.h"

static void
usage(void)
{
	fprintf(stderr, "usage: droce-incast-sim [--senders N,..] [--gbps G,..] "
		"[--cc dcqcn,delay,none] [--mark ecn|none] [--run-ms MS] "
		"[--delay-target-us US] [--delay-ai-mbps M] [--np-gap-us US] "
		"[--warm-ms MS] [--size B] [--depth N] [--mtu B] [--rtt-us US] "
		"[--buffer-kb K] [--kmin-kb K] [--kmax-kb K] [--pmax P] "
		"[--sr 0|1] [--rto-min-us US] [--series FILE] "
		"[--rp KEY=VALUE,...]\n");
	exit(2);
}

/* rp_ai_rate=20,rp_time_reset=100: DCQCN's parameters by mlx5's names */
static int
rp_parse(char *s, struct droce_dcqcn_params *p)
{
	static const struct {
		const char *k;
		size_t off;
	} keys[] = {
#define K(n) { #n, offsetof(struct droce_dcqcn_params, n) }
		K(rp_rate_reduce_monitor_period), K(rp_initial_alpha_value),
		K(rp_dce_tcp_g), K(rp_dce_tcp_rtt), K(rp_time_reset),
		K(rp_byte_reset), K(rp_threshold), K(rp_ai_rate),
		K(rp_hai_rate), K(rp_gd), K(rp_min_dec_fac), K(rp_min_rate),
		K(rp_rate_to_set_on_first_cnp), K(rp_clamp_tgt_rate),
		K(rp_clamp_tgt_rate_ati),
#undef K
	};
	char *tok, *save = NULL, *eq;
	size_t i;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",",
			&save)) {
		eq = strchr(tok, '=');
		if (eq == NULL)
			return -1;
		*eq = '\0';
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strcmp(tok, keys[i].k) == 0)
				break;
		if (i == sizeof(keys) / sizeof(keys[0])) {
			fprintf(stderr, "droce-incast-sim: --rp %s: no such "
				"parameter\n", tok);
			return -1;
		}
		*(uint32_t *)((char *)p + keys[i].off) =
			(uint32_t)strtoul(eq + 1, NULL, 0);
	}
	return 0;
}

/* One case: run it, print its row; 1 if a WRITE failed or was wrong. */
static int
run_case(struct incast_conf *c, const char *cc, const char *series)
{
	struct incast_result r;
	int bad;

	c->cc = strcmp(cc, "none") == 0 ? DROCE_CC_NONE :
		strcmp(cc, "delay") == 0 ? DROCE_CC_DELAY : DROCE_CC_DCQCN;
	c->series = NULL;
	if (series) {
		char path[512];

		snprintf(path, sizeof(path), "%s-%u-%" PRIu64 "-%s.csv",
			series, c->senders, c->gbps, cc);
		c->series = fopen(path, "w");
	}
	bad = incast_run(c, &r);
	if (c->series)
		fclose(c->series);
	printf("%4u:1   %4" PRIu64 " %-5s %-4s %8.2f %6.3f %5.1f%% %7" PRIu64
		" %9" PRIu64 " %7" PRIu64 " %6" PRIu64 "K %6" PRIu64 "K %6"
		PRIu64 "K %8" PRIu64 " %7" PRIu64 " %6.3f %5s\n", c->senders,
		c->gbps, cc, c->no_mark ? "none" : "ecn", r.goodput_gbps,
		r.jain, r.util * 100, r.drops, r.drops_after_warm, r.marks,
		r.q_p50 / 1024, r.q_p99 / 1024, r.qmax / 1024,
		r.resent + r.retransmits, r.timeouts, r.frames_needed ?
		(double)r.frames_sent / r.frames_needed : 0,
		bad ? "FAIL" : "ok");
	fflush(stdout);
	if (bad)
		fprintf(stderr, "incast: %" PRIu64 " errors, %" PRIu64
			" bad bytes, %" PRIu64 " stuck\n", r.errors,
			r.bad_bytes, r.stuck);
	incast_result_free(&r);
	return bad ? 1 : 0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "senders", required_argument, NULL, 'n' },
		{ "gbps", required_argument, NULL, 'g' },
		{ "cc", required_argument, NULL, 'c' },
		{ "mark", required_argument, NULL, 'm' },
		{ "run-ms", required_argument, NULL, 'r' },
		{ "warm-ms", required_argument, NULL, 'w' },
		{ "size", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },
		{ "mtu", required_argument, NULL, 'M' },
		{ "rtt-us", required_argument, NULL, 't' },
		{ "buffer-kb", required_argument, NULL, 'b' },
		{ "kmin-kb", required_argument, NULL, 'k' },
		{ "kmax-kb", required_argument, NULL, 'K' },
		{ "pmax", required_argument, NULL, 'p' },
		{ "sr", required_argument, NULL, 'S' },
		{ "rto-min-us", required_argument, NULL, 'o' },
		{ "series", required_argument, NULL, 'T' },
		{ "rp", required_argument, NULL, 'R' },
		{ "delay-target-us", required_argument, NULL, 'D' },
		{ "delay-ai-mbps", required_argument, NULL, 'A' },
		{ "np-gap-us", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	const char *senders = "8,64", *gbps = "25,100", *ccs = "dcqcn,none";
	const char *series = NULL;
	struct droce_dcqcn_params rp;
	struct incast_conf c;
	int64_t buffer_kb = -1, kmin_kb = -1, kmax_kb = -1;
	double pmax = 0.2;
	int opt, rc = 0, rp_set = 0;
	char list_n[128], list_g[128], list_c[128];
	char *sn, *sg, *sc, *s1 = NULL, *s2 = NULL, *s3 = NULL;

	incast_conf_default(&c);
	c.sr = 1;
	droce_dcqcn_params_default(&rp);
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'n': senders = optarg; break;
		case 'g': gbps = optarg; break;
		case 'c': ccs = optarg; break;
		case 'm': c.no_mark = strcmp(optarg, "none") == 0; break;
		case 'r': c.run_ns = strtoull(optarg, NULL, 0) * 1000000; break;
		case 'w': c.warm_ns = strtoull(optarg, NULL, 0) * 1000000; break;
		case 's': c.size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': c.depth = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'M': c.mtu = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': c.rtt_ns = strtoull(optarg, NULL, 0) * 1000; break;
		case 'b': buffer_kb = strtoll(optarg, NULL, 0); break;
		case 'k': kmin_kb = strtoll(optarg, NULL, 0); break;
		case 'K': kmax_kb = strtoll(optarg, NULL, 0); break;
		case 'p': pmax = strtod(optarg, NULL); break;
		case 'S': c.sr = (uint8_t)atoi(optarg); break;
		case 'o': c.rto_min_us = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'T': series = optarg; break;
		case 'D': c.delay_target_ns = (uint32_t)strtoul(optarg, NULL,
				0) * 1000;
			break;
		case 'A': c.delay_ai_mbps = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'N': c.np_gap_ns = (uint32_t)strtoul(optarg, NULL, 0) * 1000;
			break;
		case 'R':
			if (rp_parse(optarg, &rp) != 0)
				usage();
			rp_set = 1;
			break;
		default: usage();
		}
	}
	if (c.size % 8 || c.size == 0 || c.depth == 0 || c.run_ns <= c.warm_ns)
		usage();
	c.dcqcn = rp_set ? &rp : NULL;
	c.pmax_ppm = (uint32_t)(pmax * 1000000);
	snprintf(list_n, sizeof(list_n), "%s", senders);
	printf("%-7s %4s %-5s %-4s %8s %6s %6s %7s %9s %7s %7s %7s %7s "
		"%8s %7s %6s %5s\n", "incast", "Gb/s", "cc", "mark", "goodput",
		"jain", "util", "drops", "drops>10", "marks", "q-p50",
		"q-p99", "q-max", "resent", "tmo", "ampl", "ok");
	for (sn = strtok_r(list_n, ",", &s1); sn; sn = strtok_r(NULL, ",",
			&s1)) {
		snprintf(list_g, sizeof(list_g), "%s", gbps);
		for (sg = strtok_r(list_g, ",", &s2); sg;
				sg = strtok_r(NULL, ",", &s2)) {
			snprintf(list_c, sizeof(list_c), "%s", ccs);
			for (sc = strtok_r(list_c, ",", &s3); sc;
					sc = strtok_r(NULL, ",", &s3)) {
				c.senders = (uint32_t)strtoul(sn, NULL, 0);
				c.gbps = strtoull(sg, NULL, 0);
				/* 1 MB of buffer per 25 Gbit/s */
				c.buffer = buffer_kb >= 0 ? (uint64_t)buffer_kb *
					1024 : c.gbps * 1024 / 25 * 1024;
				c.kmin = (uint64_t)(kmin_kb >= 0 ? kmin_kb : 30) *
					1024;
				c.kmax = (uint64_t)(kmax_kb >= 0 ? kmax_kb : 120) *
					1024;
				rc |= run_case(&c, sc, series);
			}
		}
	}
	return rc;
}
