/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-switch's own options (after EAL's and "--"). A queue setting
 * takes VALUE for every port or PORT:VALUE for one; later ones win, so
 * "--rate-mbps 1000 --rate-mbps 4:100" makes port 4 the bottleneck. A
 * malformed value names its option and stops the switch: a test fabric
 * that silently runs with a default would measure something else.
 */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "switch.h"

struct sw_options sw_opt;

void
sw_usage(FILE *f)
{
	fprintf(f,
"usage: droce-switch [EAL options] --vdev net_memif0,role=server,socket=S0 \\\n"
"           --vdev net_memif1,... -- [options]\n"
"A store-and-forward Ethernet switch over the EAL's ports, a test fabric\n"
"for congestion control: MAC learning, one egress queue per port with a\n"
"drain rate, a buffer, RED ECN marking and tail drop.\n"
"Queue options take VALUE (every port) or PORT:VALUE (one port):\n"
"  --rate-mbps R       drain rate in Mbit/s, the bottleneck (0: none)\n"
"  --buffer-kb N       buffer; a frame that does not fit is dropped (1024)\n"
"  --burst-kb N        token bucket depth, at least 10 (16)\n"
"  --kmin-kb N         ECN: no mark at or below this depth (100)\n"
"  --kmax-kb N         ECN: every ECT frame marked from here (400)\n"
"  --pmax P            ECN: mark probability just below Kmax, 0..1 (0.2)\n"
"  --ecn [PORT:]0|1    ECN marking on or off (1); off: tail drop only\n"
"  --no-ecn            --ecn 0 on every port\n"
"Other options:\n"
"  --shared-link P,P.. these ports are one link (as the virtual functions\n"
"                      of one NIC port): one egress queue, with the first\n"
"                      port's settings; may be given more than once\n"
"  --series FILE       write a time series (CSV) of queue depths, port and\n"
"                      per-flow bytes\n"
"  --interval-us N     its sampling interval (1000)\n"
"  --duration S        stop after S seconds (0: at SIGINT or SIGTERM)\n"
"  --quiet             no per-flow lines in the exit report\n"
"  --busy-poll         never nap; by default the loop naps 20 us after\n"
"                      256 passes with nothing to do\n"
"  --hold-us N         frames a connected host's full ring refuses wait\n"
"                      at the head of their queue this long, then are\n"
"                      dropped (5000)\n"
"  -h, --help          this text\n"
"See doc/switch.md.\n");
}

/* "[PORT:]VALUE": the port (-1: all) and the value's text */
static int
split_port(const char *name, const char *arg, int nb_ports, int *port,
	const char **val)
{
	const char *c = strchr(arg, ':');
	char *end;
	long p;

	*port = -1;
	*val = arg;
	if (c == NULL)
		return 0;
	errno = 0;
	p = strtol(arg, &end, 10);
	if (errno || end != c || p < 0 || p >= nb_ports) {
		fprintf(stderr, "droce-switch: --%s %s: no port %.*s (%d ports)\n",
			name, arg, (int)(c - arg), arg, nb_ports);
		return -1;
	}
	*port = (int)p;
	*val = c + 1;
	return 0;
}

static int
parse_num(const char *name, const char *arg, double min, double max,
	double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end != '\0' || !isfinite(v) || v < min ||
			v > max) {
		fprintf(stderr, "droce-switch: --%s %s: want a number from %.10g"
			" to %.10g\n", name, arg, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

enum { O_RATE = 256, O_BUFFER, O_BURST, O_KMIN, O_KMAX, O_PMAX, O_ECN,
	O_NO_ECN, O_SHARED, O_SERIES, O_INTERVAL, O_DURATION, O_QUIET, O_BUSY, O_HOLD };

static int
set_queue_opt(int o, const char *name, const char *arg, int nb_ports)
{
	static const struct { double min, max; } lim[] = {
		[O_RATE - O_RATE] = { 0, 400000 },
		[O_BUFFER - O_RATE] = { 1, 1 << 20 },
		[O_BURST - O_RATE] = { 10, 1 << 20 },
		[O_KMIN - O_RATE] = { 0, 1 << 20 },
		[O_KMAX - O_RATE] = { 0, 1 << 20 },
		[O_PMAX - O_RATE] = { 0, 1 },
		[O_ECN - O_RATE] = { 0, 1 },
	};
	const char *val;
	double v;
	int p, i;

	if (split_port(name, arg, nb_ports, &p, &val) ||
			parse_num(name, val, lim[o - O_RATE].min,
			lim[o - O_RATE].max, &v))
		return -1;
	if (o == O_ECN && v != 0 && v != 1) {
		fprintf(stderr, "droce-switch: --ecn %s: want 0 or 1\n", arg);
		return -1;
	}
	for (i = 0; i < nb_ports; i++) {
		struct sw_qconf *q = &sw_opt.q[i];

		if (p >= 0 && i != p)
			continue;
		switch (o) {
		case O_RATE: q->rate_bps = (uint64_t)(v * 1e6); break;
		case O_BUFFER: q->buffer = (uint32_t)(v * 1024); break;
		case O_BURST: q->burst = (uint32_t)(v * 1024); break;
		case O_KMIN: q->kmin = (uint32_t)(v * 1024); break;
		case O_KMAX: q->kmax = (uint32_t)(v * 1024); break;
		case O_PMAX: q->pmax = v; break;
		case O_ECN: q->ecn = (int)v; break;
		}
	}
	return 0;
}

static int
parse_shared(const char *arg, int nb_ports)
{
	const char *s = arg;
	int n = 0, first = -1;

	while (*s) {
		char *end;
		long p;

		errno = 0;
		p = strtol(s, &end, 10);
		if (errno || end == s || p < 0 || p >= nb_ports ||
				(*end != ',' && *end != '\0') ||
				sw_opt.shared[p] >= 0) {
			fprintf(stderr, "droce-switch: --shared-link %s: want "
				"distinct ports 0..%d in no other link\n", arg,
				nb_ports - 1);
			return -1;
		}
		if (first < 0)
			first = (int)p;
		sw_opt.shared[p] = first;
		n++;
		s = *end ? end + 1 : end;
	}
	if (n < 2) {
		fprintf(stderr, "droce-switch: --shared-link %s: want two ports "
			"or more\n", arg);
		return -1;
	}
	return 0;
}

int
sw_options_parse(int argc, char **argv, int nb_ports)
{
	static const struct option lo[] = {
		{ "rate-mbps", required_argument, NULL, O_RATE },
		{ "buffer-kb", required_argument, NULL, O_BUFFER },
		{ "burst-kb", required_argument, NULL, O_BURST },
		{ "kmin-kb", required_argument, NULL, O_KMIN },
		{ "kmax-kb", required_argument, NULL, O_KMAX },
		{ "pmax", required_argument, NULL, O_PMAX },
		{ "ecn", required_argument, NULL, O_ECN },
		{ "no-ecn", no_argument, NULL, O_NO_ECN },
		{ "shared-link", required_argument, NULL, O_SHARED },
		{ "series", required_argument, NULL, O_SERIES },
		{ "interval-us", required_argument, NULL, O_INTERVAL },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "busy-poll", no_argument, NULL, O_BUSY },
		{ "hold-us", required_argument, NULL, O_HOLD },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double v;
	int c, i;

	for (i = 0; i < SW_MAX_PORTS; i++) {
		sw_opt.q[i] = (struct sw_qconf){ .rate_bps = 0,
			.buffer = 1024 * 1024, .burst = 16 * 1024,
			.kmin = 100 * 1024, .kmax = 400 * 1024, .pmax = 0.2,
			.ecn = 1, .hold_us = 5000 };
		sw_opt.shared[i] = -1;
	}
	sw_opt.interval_us = 1000;
	/* getopt_long takes "--rate" for --rate-mbps: a name must be whole,
	 * or a typo of another option would pass for this one */
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const struct option *o;
		size_t len;

		if (strncmp(argv[i], "--", 2) != 0)
			continue;
		len = strcspn(argv[i] + 2, "=");
		for (o = lo; o->name != NULL; o++)
			if (strlen(o->name) == len &&
					strncmp(o->name, argv[i] + 2, len) == 0)
				break;
		if (o->name == NULL) {
			fprintf(stderr, "droce-switch: unknown option %s\n",
				argv[i]);
			return -1;
		}
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		const char *name = c >= O_RATE && c <= O_HOLD ?
			lo[c - O_RATE].name : "";

		switch (c) {
		case O_RATE: case O_BUFFER: case O_BURST: case O_KMIN:
		case O_KMAX: case O_PMAX: case O_ECN:
			if (set_queue_opt(c, name, optarg, nb_ports))
				return -1;
			break;
		case O_NO_ECN:
			for (i = 0; i < SW_MAX_PORTS; i++)
				sw_opt.q[i].ecn = 0;
			break;
		case O_SHARED:
			if (parse_shared(optarg, nb_ports))
				return -1;
			break;
		case O_SERIES: sw_opt.series = optarg; break;
		case O_INTERVAL:
			if (parse_num(name, optarg, 10, 60e6, &v))
				return -1;
			sw_opt.interval_us = (uint64_t)v;
			break;
		case O_DURATION:
			if (parse_num(name, optarg, 0, 1e7, &v))
				return -1;
			sw_opt.duration_s = v;
			break;
		case O_QUIET: sw_opt.quiet = 1; break;
		case O_BUSY: sw_opt.busy_poll = 1; break;
		case O_HOLD:
			if (parse_num(name, optarg, 0, 1e6, &v))
				return -1;
			for (i = 0; i < SW_MAX_PORTS; i++)
				sw_opt.q[i].hold_us = (uint64_t)v;
			break;
		case 'h':
			sw_usage(stdout);
			exit(0);
		default:
			sw_usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "droce-switch: unexpected argument %s\n",
			argv[optind]);
		return -1;
	}
	for (i = 0; i < nb_ports; i++) {
		const struct sw_qconf *q = &sw_opt.q[i];

		if (q->ecn && q->kmin >= q->kmax) {
			fprintf(stderr, "droce-switch: port %d: --kmin-kb %u not "
				"below --kmax-kb %u\n", i, q->kmin / 1024,
				q->kmax / 1024);
			return -1;
		}
	}
	return 0;
}
