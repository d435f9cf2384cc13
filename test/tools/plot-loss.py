#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""plot-loss.py OUT.png CSV=LABEL...: goodput against loss rate from
droce-loss-bench --csv files, one line per file, operation and link speed,
each a share of its own lossless run (the reference line at 100%)."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    styles = ["-", "--", ":", "-."]
    for k, arg in enumerate(sys.argv[2:]):
        path, _, label = arg.partition("=")
        rows = [r for r in csv.DictReader(open(path))
                if r["op"] != "send" and int(r["loss_ppm"]) > 0]
        for ax, gbps in zip(axes, ("25", "100")):
            for op, color in (("write", "tab:blue"), ("read", "tab:orange")):
                pts = sorted((int(r["loss_ppm"]) / 1e6,
                              100 * float(r["of_lossless"]))
                             for r in rows
                             if r["op"] == op and r["gbps"] == gbps)
                if not pts:
                    continue
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        styles[k % len(styles)], color=color, marker="o",
                        markersize=3, label="%s, %s" % (op.upper(),
                                                        label or path))
    for ax, gbps in zip(axes, ("25", "100")):
        ax.axhline(100, color="gray", linewidth=0.8, label="lossless")
        ax.set_xscale("log")
        ax.set_xlabel("random loss each way")
        ax.set_title("%s Gbit/s, 10 us round trip (virtual time)" % gbps)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(0, 105)
    axes[0].set_ylabel("goodput, % of lossless")
    axes[1].legend(fontsize=7, loc="lower left")
    fig.suptitle("One RC QP, 64 KB messages, 128 in flight (READ: 16), "
                 "path MTU 1024", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
