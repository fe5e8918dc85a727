#!/usr/bin/python3
"""A summary metric against a swept parameter, from a kvsim catalog, as PNG.

  kvsim sweep --grid policy.replication.name=none,early_rdma --grid trace.fanout_size=24,48 --seeds 3 -o results
  plot_metric.py results --x trace.fanout_size --y ttft_p99_ms --group policy.replication.name -o p99.png

One line per value of the --group columns (several: --group a,b). The
point is the mean over the runs at that x (the seeds), the bar its 95%
confidence interval (Student t, n - 1 degrees of freedom; none for one
run). Runs are never pooled across configurations: when runs at one point
of a line differ in another config key (or swept parameter) than the seed,
that key splits the line too, and a note on stderr names it (use --where
to pick one value, or --group to name it). A point with a run at +inf (a
TTFT quantile over offered requests that reaches a request never served)
is left off the line and marked by a triangle at the top edge."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402  (first: it names missing modules)

kr.require("matplotlib")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("catalog", metavar="DIR", help="results directory (or its catalog.sqlite)")
    ap.add_argument("--x", required=True, help="parameter or config key on the x axis")
    ap.add_argument("--y", required=True, help="metric on the y axis")
    ap.add_argument("--group", help="comma-separated columns: one line per combination of values")
    ap.add_argument("--where", help="SQL condition on the catalog")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply y by this (1e-3: ms to s)")
    ap.add_argument("--ylabel")
    ap.add_argument("--logx", action="store_true")
    ap.add_argument("--logy", action="store_true")
    ap.add_argument("--data", metavar="FILE.csv",
                    help="also write the plotted points: line, x, n, mean, ci (half-width), lo, hi")
    ap.add_argument("-o", "--output", default="metric.png")
    a = ap.parse_args()

    runs = kr.load_runs(a.catalog, a.where)
    group = [g for g in (a.group or "").split(",") if g]
    for c in [a.x, a.y] + group:
        if c not in runs.columns:
            sys.exit(f"no column '{c}'; parameters: {runs.attrs['params']}, metrics: {runs.attrs['metrics']}"
                     " (any config key works too: kvsim config doc lists them)")
    if runs.empty:
        sys.exit("no done runs match")
    extra = kr.hidden_axes(runs, [a.x] + group)
    if extra:
        print("plot_metric.py: runs at one point also differ in %s: not pooled, a line per "
              "value (pick one with --where, or name it in --group)" % ", ".join(extra),
              file=sys.stderr)
    lines = group + extra
    import matplotlib  # after the checks: a typo fails fast

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs["_y"] = pd.to_numeric(runs[a.y], errors="coerce") * a.scale
    fig, ax = plt.subplots(figsize=(7, 4.5))
    top = ax.get_xaxis_transform()  # x in data, y in axes (1 = the top edge)
    n_inf, most, data = 0, 0, []
    parts = kr.groups(runs, lines) if lines else [((), runs)]
    for key, d in parts:
        s = kr.mean_ci(d, a.x, "_y").set_index(a.x).sort_index()
        name = ", ".join(f"{c}={v}" for c, v in zip(lines, key)) if lines else kr.label(a.y)
        data.append(s.reset_index().assign(line=name))
        most = max(most, int(s["n"].max()))
        inf = np.isinf(s["mean"])
        n_inf += int(inf.sum())
        s = s.where(~inf)  # masked points break the line
        err = s["ci"].fillna(0).to_numpy()
        line = ax.errorbar(s.index, s["mean"], yerr=err, marker="o", capsize=3, label=name)
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
    ax.set_title(f"{a.y} vs {a.x}: mean over seeds (up to {most}), bars 95% CI (Student t)" +
                 (f"\n^ at the top: {n_inf} point(s) at +inf (a request never served)"
                  if n_inf else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    if a.data:
        d = pd.concat(data, ignore_index=True).rename(columns={a.x: "x"})
        d[["line", "x", "n", "mean", "ci", "lo", "hi"]].to_csv(a.data, index=False)
    print(a.output)


if __name__ == "__main__":
    main()
