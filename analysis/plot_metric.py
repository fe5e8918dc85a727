#!/usr/bin/python3
"""A summary metric against a swept parameter, from a kvsim catalog, as PNG.

  kvsim sweep --grid policy.replication.name=none,early_rdma --grid trace.fanout_size=24,48 -o results
  plot_metric.py results --x trace.fanout_size --y ttft_p99_ms --group policy.replication.name -o p99.png

Seeds (and any other parameter not on the plot) are averaged: the line is the
mean, the bars span min..max over the runs at that point. A point with a run
at +inf (a TTFT quantile over offered requests that reaches a request never
served) is left off the line and marked by a triangle at the top edge."""
import argparse
import os
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("catalog", metavar="DIR", help="results directory (or its catalog.sqlite)")
    ap.add_argument("--x", required=True, help="swept parameter on the x axis")
    ap.add_argument("--y", required=True, help="metric on the y axis")
    ap.add_argument("--group", help="parameter that makes one line per value")
    ap.add_argument("--where", help="SQL condition on the catalog")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply y by this (1e-3: ms to s)")
    ap.add_argument("--ylabel")
    ap.add_argument("--logx", action="store_true")
    ap.add_argument("--logy", action="store_true")
    ap.add_argument("-o", "--output", default="metric.png")
    a = ap.parse_args()

    runs = kr.load_runs(a.catalog, a.where)
    for c in [a.x, a.y] + ([a.group] if a.group else []):
        if c not in runs.columns:
            sys.exit(f"no column '{c}'; parameters: {runs.attrs['params']}, metrics: {runs.attrs['metrics']}")
    if runs.empty:
        sys.exit("no done runs match")
    import matplotlib  # after the checks: a typo fails fast

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs["_y"] = pd.to_numeric(runs[a.y], errors="coerce") * a.scale
    fig, ax = plt.subplots(figsize=(7, 4.5))
    top = ax.get_xaxis_transform()  # x in data, y in axes (1 = the top edge)
    n_inf = 0
    for name, d in (runs.groupby(a.group, sort=True) if a.group else [(None, runs)]):
        s = d.groupby(a.x)["_y"].agg(["mean", "min", "max", "count"]).sort_index()
        inf = np.isinf(s["max"])
        n_inf += int(inf.sum())
        s = s.where(~inf)  # masked points break the line
        line = ax.errorbar(s.index, s["mean"], yerr=[s["mean"] - s["min"], s["max"] - s["mean"]],
                           marker="o", capsize=3,
                           label=f"{a.group}={name}" if a.group else kr.label(a.y))
        if inf.any():
            ax.plot(s.index[inf], [0.98] * int(inf.sum()), "^", transform=top, clip_on=False,
                    color=line[0].get_color())
    ax.set_xlabel(a.x)
    ax.set_ylabel(a.ylabel or kr.label(a.y))
    if a.logx:
        ax.set_xscale("log")
    if a.logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{a.y} vs {a.x} (mean, min..max over seeds)" +
                 (f"\n^ at the top: {n_inf} point(s) at +inf (a request never served)"
                  if n_inf else ""))
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    print(a.output)


if __name__ == "__main__":
    main()
