#!/usr/bin/python3
"""TTFT CDFs of several kvsim runs in one PNG.

  plot_ttft_cdf.py RUN.h5 [RUN.h5 ...] -o ttft.png
  plot_ttft_cdf.py --catalog results --where "trace.fanout_size = 48" --label policy.replication.name -o ttft.png

Only completed requests count (status 0). With --catalog, runs that share the
--label values (comma-separated columns; for example the seeds of one
configuration) are pooled into one curve: its legend's p99 is the 99th
percentile of those runs' requests pooled, which is not the mean of each
run's own p99 that policy_table.py shows (and both count completed requests
only, unlike ttft_p99_ms, which is over offered ones). Runs that differ in
another config key than the seed are never pooled: that key joins the
label, with a note on stderr."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402  (first: it names missing modules)

kr.require("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="HDF5 files of runs")
    ap.add_argument("--catalog", metavar="DIR", help="take the runs from this results directory")
    ap.add_argument("--where", help="SQL condition on the catalog")
    ap.add_argument("--label", help="catalog column that names each curve (default: the swept parameters)")
    ap.add_argument("--log", action="store_true", help="logarithmic TTFT axis")
    ap.add_argument("--title", default="TTFT distribution")
    ap.add_argument("-o", "--output", default="ttft_cdf.png")
    a = ap.parse_args()

    groups = {}
    if a.catalog:
        runs = kr.load_runs(a.catalog, a.where)
        if runs.empty:
            sys.exit("no done runs match")
        cols = a.label.split(",") if a.label else list(runs.attrs["params"])
        for c in cols:
            if c not in runs.columns:
                sys.exit(f"no column '{c}'; parameters: {runs.attrs['params']}")
        extra = kr.hidden_axes(runs, cols)
        if extra:
            print("plot_ttft_cdf.py: runs of one label also differ in %s: not pooled, a "
                  "curve per value" % ", ".join(extra), file=sys.stderr)
            cols += extra
        for _, r in runs.iterrows():
            name = ", ".join(f"{c}={r[c]}" for c in cols) if cols else os.path.basename(r["h5_path"])
            groups.setdefault(name, []).append(r["h5_path"])
    for f in a.files:
        groups.setdefault(os.path.basename(f), []).append(f)
    if not groups:
        ap.error("give HDF5 files or --catalog DIR")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, files in groups.items():
        ttft = np.concatenate([
            d.loc[d["status"] == 0, "ttft_ns"].to_numpy() for d in map(kr.read_requests, files)
        ]) / 1e6
        ttft = np.sort(ttft[ttft >= 0])
        if ttft.size == 0:
            print(f"{name}: no completed requests", file=sys.stderr)
            continue
        y = np.arange(1, ttft.size + 1) / ttft.size
        how = f"p99 of {len(files)} runs' requests pooled" if len(files) > 1 else "p99"
        p99 = kr.fmt_num(np.percentile(ttft, 99), 3)
        ax.step(ttft, y, where="post", label=f"{name} ({how}: {p99} ms)")
        print(f"{name}: {how}: {p99} ms ({ttft.size} completed requests)")
    ax.set_xlabel("time to first token (ms), completed requests")
    ax.set_ylabel("fraction of requests")
    if a.log:
        ax.set_xscale("log")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.set_title(a.title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    print(a.output)


if __name__ == "__main__":
    main()
