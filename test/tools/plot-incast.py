#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""plot-incast.py SERIES.csv OUT.png [TITLE] [--smooth US]

Per-flow rate and the bottleneck's queue depth over time, from the CSV
droce-incast-sim --series writes (t_us, queue_bytes, flowN_gbps...,
flowN_rate_gbps...) or one with the same first columns (droce-switch's).
With many flows, each flow's rate is a thin line and the fair share a
dashed one. --smooth averages the rates over that many microseconds.
"""
import csv
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    args = [a for a in sys.argv[1:]]
    smooth = 0.0
    if "--smooth" in args:
        i = args.index("--smooth")
        smooth = float(args[i + 1])
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    src, out = args[0], args[1]
    title = args[2] if len(args) > 2 else src
    with open(src) as f:
        rows = list(csv.reader(f))
    head, data = rows[0], rows[1:]
    t = [float(r[0]) / 1000 for r in data]   # ms
    q = [float(r[1]) / 1024 for r in data]   # KB
    flows = [i for i, h in enumerate(head) if h.endswith("_gbps")
             and not h.endswith("_rate_gbps")]
    if len(data) > 1 and smooth > 0:
        dt = (float(data[1][0]) - float(data[0][0]))
        w = max(1, int(smooth / dt))
    else:
        w = 1
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    total = [0.0] * len(data)
    for i in flows:
        v = [float(r[i]) for r in data]
        for k in range(len(v)):
            total[k] += v[k]
        if w > 1:
            v = [sum(v[max(0, k - w + 1):k + 1]) / len(v[max(0, k - w + 1):k + 1])
                 for k in range(len(v))]
        a1.plot(t, v, linewidth=0.6 if len(flows) > 8 else 1.0)
    if flows and data:
        cap = max(total) if total else 0
        a1.set_ylabel("per-flow rate, Gbit/s")
        share = sum(total) / len(total) / len(flows) if total else 0
        a1.axhline(share, color="k", linestyle="--", linewidth=0.8,
                   label="mean share %.2f Gbit/s" % share)
        a1.legend(loc="upper right", fontsize=8)
        del cap
    a1.set_title(title, fontsize=10)
    a2.plot(t, q, color="tab:red", linewidth=0.8)
    a2.set_ylabel("queue, KB")
    a2.set_xlabel("time, ms")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


if __name__ == "__main__":
    main()
