/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * 8:1 incast through the simulated switch (fabric.c, incast.c), in
 * virtual time, at 25 Gbit/s with a 1 MB buffer: every WRITE of every
 * flow completes with its bytes intact, with DCQCN and without congestion
 * control, and through a switch that only drops. With DCQCN the switch
 * marks, the receiver sends CNPs, the senders cut their rates, and after
 * the first burst nothing more is dropped; without it the queue stays
 * full and keeps dropping. All of it runs in virtual time: the same on
 * any machine, however loaded.
 */

#include <inttypes.h>
#include <stdio.h>

#include "check.h"
#include "incast.h"

static struct droce_dcqcn_params rp;

static void
conf(struct incast_conf *c, uint8_t cc, uint8_t sr)
{
	incast_conf_default(c);
	c->senders = 8;
	c->gbps = 25;
	c->run_ns = 20000000;
	c->warm_ns = 5000000;
	c->buffer = 1 << 20;
	c->kmin = 30 << 10;
	c->kmax = 120 << 10;
	c->pmax_ppm = 500000;
	c->cc = cc;
	c->sr = sr;
	c->dcqcn = &rp;
}

static void
report(const char *what, const struct incast_result *r)
{
	printf("%s: goodput %.2f Gbit/s, Jain %.3f, drops %" PRIu64 " (%"
		PRIu64 " after warm-up), marks %" PRIu64 ", CNPs %" PRIu64
		", cuts %" PRIu64 ", queue p50 %" PRIu64 " B, resent %" PRIu64
		", completed %" PRIu64 "\n", what, r->goodput_gbps, r->jain,
		r->drops, r->drops_after_warm, r->marks, r->cnps, r->cuts,
		r->q_p50, r->resent + r->retransmits, r->completed);
}

static void
verified(const char *what, int rc, const struct incast_result *r)
{
	CHECK(rc == 0 && r->errors == 0 && r->bad_bytes == 0 &&
		r->stuck == 0 && r->completed > 100, "%s: every WRITE "
		"completed with its bytes (%" PRIu64 " done, %" PRIu64
		" errors, %" PRIu64 " bad bytes, %" PRIu64 " stuck)", what,
		r->completed, r->errors, r->bad_bytes, r->stuck);
}

int
main(void)
{
	struct incast_result dc, none, drop, gbn;
	struct incast_conf c;
	int rc;

	/* the switch's marks carry the control: the paper's target
	 * clamping and a faster additive step (doc/congestion.md) */
	droce_dcqcn_params_default(&rp);
	rp.rp_clamp_tgt_rate = 1;
	rp.rp_ai_rate = 20;

	conf(&c, DROCE_CC_DCQCN, 1);
	rc = incast_run(&c, &dc);
	report("dcqcn", &dc);
	verified("dcqcn", rc, &dc);
	CHECK(dc.marks > 0 && dc.cnps > 0 && dc.cuts > 0, "marks, CNPs and "
		"rate cuts");
	CHECK_EQ(dc.drops_after_warm, 0, "dcqcn: no drop after the first "
		"burst");
	CHECK(dc.q_p50 < c.kmax, "dcqcn: the queue held below Kmax (p50 %"
		PRIu64 ")", dc.q_p50);

	conf(&c, DROCE_CC_NONE, 1);
	rc = incast_run(&c, &none);
	report("none", &none);
	verified("none", rc, &none);
	CHECK(none.cnps > 0 && none.cuts == 0, "none: CNPs came, no cut");
	CHECK(none.drops_after_warm > 100 && none.q_p50 > c.buffer / 2,
		"none: the queue stays full and drops (%" PRIu64 ")",
		none.drops_after_warm);

	/* a switch that only drops: DCQCN has nothing but timeouts */
	conf(&c, DROCE_CC_DCQCN, 1);
	c.no_mark = 1;
	rc = incast_run(&c, &drop);
	report("dcqcn, no marks", &drop);
	verified("dcqcn, no marks", rc, &drop);
	CHECK_EQ(drop.marks, 0, "no marks");

	/* go-back-N (a standard peer's recovery) under the same incast */
	conf(&c, DROCE_CC_DCQCN, 0);
	rc = incast_run(&c, &gbn);
	report("dcqcn, go-back-N", &gbn);
	verified("dcqcn, go-back-N", rc, &gbn);

	incast_result_free(&dc);
	incast_result_free(&none);
	incast_result_free(&drop);
	incast_result_free(&gbn);
	return check_report("test_tp_incast");
}
