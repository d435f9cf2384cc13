/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * What droce-perf prints beyond the run's progress: the results table,
 * and the counters and checks at the end of a run (either side's).
 */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perf_internal.h"

/* Frames whose payload left by reference, over all queues. */
uint64_t
zc_frames(void)
{
	struct droce_tp_stats st;
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < opt.queues; i++) {
		droce_port_lock(port, i);
		droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port), i),
			&st);
		droce_port_unlock(port, i);
		n += st.tx_zc_pkts;
	}
	return n;
}

/* This side's NIC-side counters, summed over its queues. */
static struct droce_port_queue_stats
nic_stats(void)
{
	struct droce_port_queue_stats sum, st;
	uint32_t i, k;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < opt.queues; i++)
		if (droce_port_queue_stats(port, i, &st) == 0)
			for (k = 0; k < sizeof(st) / sizeof(uint64_t); k++)
				((uint64_t *)&sum)[k] += ((uint64_t *)&st)[k];
	return sum;
}

/* Frames this side received on one queue for a QP of another. */
uint64_t
handoffs(void)
{
	return nic_stats().handoffs;
}

/* Frames per PMD burst on this side: what the PMD's per-call cost is
 * spread over. */
void
burst_report(const char *who)
{
	struct droce_port_queue_stats st = nic_stats();

	fprintf(stderr, "droce-perf %s: frames per burst: rx %.1f (%" PRIu64
		" bursts), tx %.1f (%" PRIu64 " bursts)\n", who,
		st.rx_bursts ? (double)st.rx_pkts / st.rx_bursts : 0.0,
		st.rx_bursts, st.tx_bursts ?
		(double)st.tx_pkts / st.tx_bursts : 0.0, st.tx_bursts);
}

/*
 * With zero-copy on, frames big enough must have gone by reference: the
 * client's WRITEs and SENDs, the server's READ responses (both sides run
 * with the same options).
 */
static int
zc_check(uint64_t server_frames)
{
	uint32_t min = droce_port_zc_min(port), i, s, payload;
	uint64_t client_frames = zc_frames();
	int want_client = 0, want_server = 0;

	/* inline data and IPv6 frames are always copied */
	if (min == 0 || opt.inline_data || opt.ip6 != NULL)
		return 0;
	for (i = 0; i < (uint32_t)opt.nops; i++)
		for (s = 0; s < opt.nsizes; s++) {
			payload = opt.sizes[s] < (uint32_t)mtu_bytes ?
				opt.sizes[s] : (uint32_t)mtu_bytes;
			if (payload < min || opt.ops[i] == OP_FADD ||
					opt.ops[i] == OP_CSWAP)
				continue;
			if (opt.ops[i] == OP_READ)
				want_server = 1;
			else
				want_client = 1;
		}
	if (!opt.json_out)
		printf(" zero-copy frames (payload >= %u bytes): client %" PRIu64
			", server %" PRIu64 "\n", min, client_frames,
			server_frames);
	if ((want_client && client_frames == 0) ||
			(want_server && server_frames == 0)) {
		fprintf(stderr, "droce-perf: zero-copy is on but no frame "
			"went by reference\n");
		return -1;
	}
	return 0;
}

/*
 * Under fault injection, what recovery cost (test/bench-loss.sh reads
 * it): both transports' frames sent, the client's retransmissions and
 * timeouts, the NAKs and replays, what it sent again alone (READ holes,
 * selective repeat) and the SACKs it took. One test per run gives one
 * test's figures.
 */
static void
loss_report(const struct perf_cmd *srv)
{
	struct droce_tp_stats st;

	droce_port_lock(port, 0);
	droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port), 0), &st);
	droce_port_unlock(port, 0);
	printf(" transport: client tx %" PRIu64 " server tx %" PRIu64
		" retransmits %" PRIu64 " timeouts %" PRIu64 " seq-NAK rx %"
		PRIu64 " out-of-seq %" PRIu64 " read-replays %" PRIu64
		" dup %" PRIu64 " resent %" PRIu64 " sack-rx %" PRIu64 "\n",
		st.tx_pkts, srv->srv_tx, st.retransmits, st.timeouts,
		st.nak_seq_rx, st.out_of_seq_rx, srv->srv_read_replays,
		st.dup_rx + srv->srv_dup_rx, st.resent_pkts, st.sack_rx);
}

/*
 * Congestion: frames that came CE-marked, CNPs sent and acted on, and
 * the slowest QP's rate now (test/bench-incast.sh reads it). Nothing
 * when no frame met congestion.
 */
void
cc_report(const char *side)
{
	struct droce_tp_stats st;
	struct droce_qp_cc cc;
	uint64_t slowest = UINT64_MAX;
	uint32_t i, limited = 0;

	droce_port_lock(port, 0);
	droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port), 0), &st);
	for (i = 0; i < opt.nqp; i++) {
		droce_qp_cc(qp[i], &cc);
		limited += cc.limited;
		if (cc.rate_mbps < slowest)
			slowest = cc.rate_mbps;
	}
	droce_port_unlock(port, 0);
	if (st.np_ecn_marked + st.rp_cnp_handled + st.rp_cnp_ignored == 0)
		return;
	fprintf(stderr, "droce-perf %s: congestion: ecn-marked %" PRIu64
		" cnp-sent %" PRIu64 " cnp-handled %" PRIu64 " cnp-ignored %"
		PRIu64 " qps-limited %u slowest %" PRIu64 " Mbit/s\n", side,
		st.np_ecn_marked, st.np_cnp_sent, st.rp_cnp_handled,
		st.rp_cnp_ignored, limited, slowest);
}

/* ud_send's receives: UD drops what finds no receive posted, and the
 * client's completions say only that its frames left. */
static void
ud_arrived(const struct result *r)
{
	if (opt.json_out)
		printf(", \"received\": %" PRIu64, r->received);
	else
		printf("   %s %u: %" PRIu64 " of %" PRIu64 " arrived (%.2f%%)\n",
			op_names[r->op], r->size, r->received, r->msgs,
			r->msgs ? 100.0 * (double)r->received /
			(double)r->msgs : 0.0);
}

void
print_results(struct result *rs, int n)
{
	int i;

	if (opt.json_out) {
		printf("{\"qps\": %u, \"queues\": %u, \"cores\": %u,"
			" \"results\": [\n", opt.nqp, opt.queues, opt.cores);
		for (i = 0; i < n; i++) {
			printf("  {\"op\": \"%s\", \"size\": %u, \"msgs\": %" PRIu64
				", \"msgs_per_s\": %.0f, \"gbps\": %.3f,"
				" \"lat_avg_us\": %.2f, \"lat_p50_us\": %.2f,"
				" \"lat_p99_us\": %.2f, \"raw_rtt_p50_us\": %.2f,"
				" \"raw_frames_per_s\": %.0f,"
				" \"raw_gbps\": %.3f, \"ratio\": %.3f,"
				" \"ratio_min\": %.3f, \"ratio_max\": %.3f,"
				" \"runs\": %u,"
				" \"verified\": %s", op_names[rs[i].op],
				rs[i].size, rs[i].msgs, rs[i].mps, rs[i].gbps,
				rs[i].lat_avg, rs[i].lat_p50, rs[i].lat_p99,
				rs[i].raw_lat_p50, rs[i].raw_fps, rs[i].raw_gbps, rs[i].ratio,
				rs[i].ratio_min, rs[i].ratio_max, opt.repeat,
				rs[i].ok ? "true" : "false");
			if (rs[i].op == OP_UD_SEND)
				ud_arrived(&rs[i]);
			printf("}%s\n", i + 1 < n ? "," : "");
		}
		printf("]}\n");
		return;
	}
	printf("-----------------------------------------------------------------"
		"---------------------------\n");
	printf(" %-10s %8s %10s %12s %10s %9s %12s %10s %7s %s\n", "op",
		"bytes", "msgs", "msgs/s", "Gbit/s", opt.lat ? "lat us" : "",
		opt.lat ? "raw rtt us" : "raw fr/s", "raw Gb/s", "ratio",
		"check");
	for (i = 0; i < n; i++) {
		char lat[32] = "";

		if (opt.lat)
			snprintf(lat, sizeof(lat), "%.2f/%.2f", rs[i].lat_p50,
				rs[i].lat_p99);
		printf(opt.lat ? " %-10s %8u %10" PRIu64 " %12.0f %10.3f %9s "
			"%12.2f %10.3f %6.1f%% %s\n" : " %-10s %8u %10" PRIu64
			" %12.0f %10.3f %9s %12.0f %10.3f %6.1f%% %s\n",
			op_names[rs[i].op], rs[i].size,
			rs[i].msgs, rs[i].mps, rs[i].gbps, lat,
			opt.lat ? rs[i].raw_lat_p50 : rs[i].raw_fps,
			rs[i].raw_gbps, rs[i].ratio * 100,
			opt.verify ? (rs[i].ok ? "verified" : "FAILED") :
			(rs[i].ok ? "ok" : "FAILED"));
		if (opt.repeat > 1 && opt.raw)
			printf("   %u runs, ratio %.1f%% to %.1f%%\n",
				opt.repeat, rs[i].ratio_min * 100,
				rs[i].ratio_max * 100);
		if (rs[i].op == OP_UD_SEND)
			ud_arrived(&rs[i]);
	}
	printf("-----------------------------------------------------------------"
		"---------------------------\n");
}

/* Under --fault: what was injected on receive, and whether that is what
 * was asked for; -1 if not. */
int
fault_report(void)
{
	struct droce_fault_stats fs;
	int rc = 0;

	droce_port_fault_stats(port, &fs, NULL);
	printf(" faults injected on receive: %" PRIu64 " dropped, %"
		PRIu64 " duplicated, %" PRIu64 " reordered, %"
		PRIu64 " corrupted, %" PRIu64 " delayed\n",
		fs.dropped, fs.duplicated, fs.reordered,
		fs.corrupted, fs.delayed);
	/* ud_send alone sends this side nothing to inject faults into */
	if (!(opt.nops == 1 && opt.ops[0] == OP_UD_SEND) &&
			((opt.fault.drop_ppm && !fs.dropped) ||
			(opt.fault.delay_ppm && !fs.delayed) ||
			(opt.fault.dup_ppm && !fs.duplicated) ||
			(opt.fault.reorder_ppm && !fs.reordered))) {
		fprintf(stderr, "droce-perf: faults asked for "
			"were not injected\n");
		rc = -1;
	}
	/* a window: no fault past it; at 100% loss every frame
	 * in it is lost, and the run still completes */
	if (opt.fault.frames && (fs.dropped > opt.fault.frames ||
			fs.duplicated > opt.fault.frames ||
			fs.reordered > opt.fault.frames ||
			fs.delayed > opt.fault.frames ||
			(opt.fault.drop_ppm >= 1000000 &&
			fs.dropped != opt.fault.frames))) {
		fprintf(stderr, "droce-perf: faults outside the "
			"first %" PRIu64 " frames\n",
			opt.fault.frames);
		rc = -1;
	}
	return rc;
}

/* A failed run: what this side's transport counted. */
void
fail_report(void)
{
	struct droce_tp_stats st;

	droce_port_lock(port, 0);
	droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port),
		0), &st);
	droce_port_unlock(port, 0);
	fprintf(stderr, "droce-perf: tx %" PRIu64 " rx %" PRIu64
		" retransmits %" PRIu64 " timeouts %" PRIu64
		" seq-NAK rx %" PRIu64 " RNR rx %" PRIu64
		" dup %" PRIu64 " ICRC drops %" PRIu64 "\n",
		st.tx_pkts, st.rx_pkts, st.retransmits,
		st.timeouts, st.nak_seq_rx, st.rnr_nak_rx,
		st.dup_rx, st.rx_drop_parse[-DROCE_WIRE_EICRC]);
}

/*
 * The client's end of a run: the server quits and answers with its
 * counters; this side's own, and the checks that need both sides'
 * figures. -1 if the server did not answer or a check failed.
 */
int
end_report(void)
{
	struct perf_cmd c = { .kind = PERF_CMD_QUIT };
	uint64_t mine;
	int rc = 0;

	sc_send(sc, &c, sizeof(c));
	if (sc_recv(sc, &c, sizeof(c)) != 0)
		return -1;
	mine = handoffs();
	burst_report("client");
	cc_report("client");
	if (faults_on())
		loss_report(&c);
	if (zc_check(c.value) != 0)
		rc = -1;
	if (opt.queues > 1 && !opt.json_out)
		printf(" hand-offs between queues: client "
			"%" PRIu64 ", server %" PRIu64 "\n",
			mine, c.handoffs);
	if (opt.expect_handoffs &&
			mine + c.handoffs == 0) {
		fprintf(stderr, "droce-perf: no frame "
			"went through a hand-off ring\n");
		rc = -1;
	}
	return rc;
}
