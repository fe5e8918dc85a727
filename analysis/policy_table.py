#!/usr/bin/python3
"""Mean and 95% confidence interval of catalog metrics, grouped by parameters.

  policy_table.py RESULTS_DIR --by policy.replication.name \
      --metrics admitted_share,ttft_p95_ms,ttft_completed_mean_ms [--where SQL] [--markdown]

Runs that share the --by columns (typically the seeds of one configuration)
form one row: the mean over runs, +- the half-width of the 95% CI of that
mean (Student t, n - 1 degrees of freedom; none for a single run). A row
whose metric is identical over every run says so ("same in every seed"), so
a fixed trace with nothing random is not passed off as replicated. A TTFT
quantile over offered requests is inf where it reaches a request the run
never served; a row with such runs says "inf (k of n seeds)". Latencies over
completed requests only are headed "(completed)"."""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402

# two-sided 95% Student t quantiles, by degrees of freedom
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(dof):
    if dof in T95:
        return T95[dof]
    ks = sorted(k for k in T95 if k <= dof)
    return T95[ks[-1]] if dof < 60 else 1.96


def cell(vals):
    n = len(vals)
    k = sum(1 for v in vals if math.isinf(v))
    if k:  # a mean with an inf is inf, with no spread to tell
        return "inf" if n < 2 else "inf (%d of %d seeds)" % (k, n)
    m = sum(vals) / n
    if n < 2:
        return "%.4g" % m
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (n - 1))
    if sd == 0:
        return "%.4g (same in every seed)" % m
    return "%.4g +- %.2g" % (m, t95(n - 1) * sd / math.sqrt(n))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--by", required=True, help="comma-separated parameter columns")
    ap.add_argument("--metrics", required=True, help="comma-separated metric columns")
    ap.add_argument("--where")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    runs = kr.load_runs(a.results, a.where)
    if runs.empty:
        sys.exit("policy_table.py: no done runs match")
    by = a.by.split(",")
    mets = a.metrics.split(",")
    for c in by + mets:
        if c not in runs.columns:
            sys.exit("policy_table.py: no column '%s' (have: %s)" % (c, ", ".join(runs.columns)))
    head = by + ["seeds"] + [kr.label(m) for m in mets]
    rows = []
    for key, g in runs.groupby(by if len(by) > 1 else by[0], sort=False):
        key = key if isinstance(key, tuple) else (key,)
        rows.append([str(k) for k in key] + [str(len(g))] +
                    [cell([float(x) for x in g[m]]) for m in mets])
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(head)))
        for r in rows:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)))


if __name__ == "__main__":
    main()
