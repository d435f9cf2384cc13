#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""plot-switch-series.py OUT.png QUEUE-ID KMIN-KB KMAX-KB CSV=LABEL...: per-flow
rate and the bottleneck's queue depth over time, from droce-switch
--series files (doc/switch.md), one column of plots per file. Prints
for each file the flows' mean rates and Jain's fairness index over the
second half of the run (first to last byte of the flows), and the
drops and marks in each half.

Solid: the rate a flow got through the switch; dotted: what it offered
(arrived, dropped or not). Flows drawn: those through the bottleneck queue's ports, i.e. whose
bytes the queue's port_tx lines count; a flow is named by droce-switch
as SRC>DST:UDP-SOURCE-PORT."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WINDOW_US = 20000  # rates over 20 ms windows: a sample every 1 ms is noise


def load(path):
    series = defaultdict(list)  # (what, id) -> [(t_us, value)]
    # a switch stopped mid-line (killed) leaves a short last line
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["value"] is None:
                continue
            series[(r["what"], r["id"])].append(
                (int(r["time_us"]), int(r["value"])))
    return series


def rates(points):
    """(t_s, Mbit/s) over WINDOW_US windows of a cumulative byte count."""
    out = []
    if not points:
        return out
    t0, b0 = points[0]
    for t, b in points[1:]:
        if t - t0 >= WINDOW_US:
            out.append((t / 1e6, (b - b0) * 8 / (t - t0)))
            t0, b0 = t, b
    return out


def value_at(points, t_us):
    """The last value at or before t_us (cumulative counts)."""
    v = 0
    for t, x in points:
        if t > t_us:
            break
        v = x
    return v


def main():
    if len(sys.argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    out, qid = sys.argv[1], sys.argv[2]
    kmin, kmax = float(sys.argv[3]), float(sys.argv[4])
    runs = sys.argv[5:]
    fig, axes = plt.subplots(2, len(runs), figsize=(6.5 * len(runs), 7),
                             sharex="col", squeeze=False)
    for col, arg in enumerate(runs):
        path, _, label = arg.partition("=")
        s = load(path)
        # the data flows: IP flows (SRC>DST), the busiest ones (the
        # ACKs' way back and droce-perf's raw probes are not drawn)
        flows = [k[1] for k in s if k[0] == "flow_tx" and ">" in k[1]]
        total = {f: s[("flow_tx", f)][-1][1] for f in flows}
        big = max(total.values()) if total else 0
        flows = sorted(f for f in flows if total[f] > big / 20)
        ax = axes[0][col]
        # the run: from the first to the last byte of these flows (the
        # hosts start one by one, EAL and all, on a busy machine)
        moved = [t for f in flows for (t, b), (_, b0) in
                 zip(s[("flow_tx", f)][1:], s[("flow_tx", f)]) if b != b0]
        t_first, t_last = (min(moved), max(moved)) if moved else (0, 1)
        half = (t_first + t_last) / 2
        means = []
        for f in flows:
            pts = rates(s[("flow_tx", f)])
            if not pts:
                continue
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts],
                            label=f, linewidth=1)
            # what the sender offered, dropped frames too (dotted)
            off = rates(s.get(("flow_rx", f), []))
            if off:
                ax.plot([p[0] for p in off], [p[1] for p in off],
                        linestyle=":", linewidth=0.8,
                        color=line.get_color())
            tail = [p[1] for p in pts if half <= p[0] * 1e6 <= t_last]
            means.append(sum(tail) / len(tail) if tail else 0.0)
        ax.set_ylabel("flow rate, Mbit/s (%d ms windows)" %
                      (WINDOW_US // 1000))
        ax.set_title(label)
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3)
        ax = axes[1][col]
        q = s[("qdepth", qid)]
        ax.plot([t / 1e6 for t, _ in q], [v / 1024 for _, v in q],
                linewidth=0.7, color="tab:red", label="queue depth")
        ax.axhline(kmin, color="gray", linestyle="--", linewidth=0.8,
                   label="Kmin")
        ax.axhline(kmax, color="gray", linestyle=":", linewidth=0.8,
                   label="Kmax")
        ax.set_xlabel("time, s")
        ax.set_ylabel("bottleneck queue, KB")
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3)
        drops, marks = s[("dropped", qid)], s[("marked", qid)]
        d1, m1 = value_at(drops, half), value_at(marks, half)
        d2, m2 = drops[-1][1] - d1, marks[-1][1] - m1
        jain = (sum(means) ** 2 / (len(means) * sum(x * x for x in means))
                if means and any(means) else 0.0)
        qs = sorted(v for t, v in q if half <= t <= t_last)
        print("%s: %d flows, second half: mean rates %s Mbit/s (sum %.1f), "
              "Jain %.3f, median queue %.1f KB; drops %d then %d, "
              "marks %d then %d (first half, second half)" % (
                  label, len(means),
                  " ".join("%.1f" % m for m in means), sum(means), jain,
                  qs[len(qs) // 2] / 1024 if qs else 0, d1, d2, m1, m2))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
