#!/usr/bin/python3
"""Mean and 95% confidence interval of catalog metrics, grouped by parameters.

  policy_table.py RESULTS_DIR --by policy.replication.name \
      --metrics admitted_share,ttft_p95_ms,ttft_completed_mean_ms [--where SQL] [--markdown]

A header says what ran: the workload, the deployment and the policies the
runs share (what varies is in the rows). Runs that share the --by columns
(typically the seeds of one configuration) form one row: the mean over
runs +- the half-width of the 95% CI of that mean (Student t, n - 1
degrees of freedom; none for a single run), the CI to 2 significant digits
and the mean to the same place. A quantile column (ttft_p99_ms, ...) is the
mean of each run's own quantile, not the quantile of the runs' requests
pooled (as plot_ttft_cdf.py's legend gives it). Shares print as %, bytes
in MB/GB/TB. A value identical in every seed of a row is marked '*' (a
fixed trace with nothing random is not passed off as replicated); a
metric identical in every run is left out of the table and said once
below it. Runs that differ in a config key that is neither a --by column
nor the seed are never pooled: that key joins the rows, with a note. A
TTFT quantile over offered requests is inf where it reaches a request the
run never served; a row with such runs says "inf (k of n seeds)".
Latencies over completed requests only are headed "(completed)"."""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402  (first: it names missing modules)

# What the header shows: per line, its parts as (text, config key): the
# text with {} for the key's value.
HEADER = [
    ("workload", [("{},", "trace"), ("offered {} req/s (mean over runs)", "offered_rps")]),
    ("deployment", [("{} nodes", "cluster.nodes"), ("x {}", "cluster.gpus_per_node"),
                    ("{},", "gpu.name"), ("{}", "model.name"), ("at TP {},", "cluster.tp"),
                    ("preset {},", "policy.preset"), ("routing {},", "policy.routing.name"),
                    ("fetch {}", "kvcache.fetch")]),
    ("policies", [("replication {},", "policy.replication.name"),
                  ("predictor {},", "policy.predictor.name"),
                  ("eviction {},", "policy.eviction.name"),
                  ("transfer {},", "policy.transfer.name"),
                  ("admission {}", "policy.admission.name")]),
]


def header(runs, by):
    """The header lines: each key's value when every run has the same; a
    --by column (or one the rows were split by) says "by row", another
    that differs "varies"."""
    out = []
    for title, parts in HEADER:
        words = []
        for text, k in parts:
            if k not in runs.columns:
                continue
            if k in by:
                v = "(by row)"
            elif k == "offered_rps":
                v = kr.fmt_num(float(runs[k].astype(float).mean()))
            elif runs[k].astype(str).nunique() == 1:
                v = str(runs[k].iloc[0])
            else:
                v = "(varies)"
            words.append(text.format(v))
        if words:
            out.append("%-11s %s" % (title, " ".join(words).rstrip(",")))
    return out


def cell(vals, scale):
    """(text, zero spread) of one row's values of a metric."""
    n = len(vals)
    k = sum(1 for v in vals if math.isinf(v))
    if k:  # a mean with an inf is inf, with no spread to tell
        return ("inf" if n < 2 else "inf (%d of %d seeds)" % (k, n)), False
    vals = [v * scale for v in vals]
    m = sum(vals) / n
    if n < 2:
        return kr.fmt_num(m), False
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (n - 1))
    if sd == 0:
        return kr.fmt_num(m) + "*", True
    return kr.fmt_mean_ci(m, kr.t_quantile(n - 1) * sd / math.sqrt(n)), False


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
            sys.exit("policy_table.py: no column '%s' (parameters: %s; metrics: %s)" %
                     (c, ", ".join(runs.attrs["params"]), ", ".join(runs.attrs["metrics"])))
    extra = kr.hidden_axes(runs, by)
    if extra:
        print("policy_table.py: the runs also differ in %s: a row per value (not pooled)" %
              ", ".join(extra), file=sys.stderr)
        by = by + extra
    units = runs.attrs.get("units", {})
    heads, scales, same = [], [], []
    for m in mets:
        vals = [float(x) for x in runs[m]]
        h, s = kr.heading(m, units.get(m, ""), vals)
        if len(set(vals)) == 1 and len(vals) > 1:  # one value in every run
            same.append("%s %s" % (h, kr.fmt_num(vals[0] * s)))
            continue
        heads.append((m, h))
        scales.append(s)
    rows, starred = [], False
    for key, g in kr.groups(runs, by, sort=False):
        r = [str(k) for k in key] + [str(len(g))]
        for (m, _), s in zip(heads, scales):
            text, zero = cell([float(x) for x in g[m]], s)
            starred |= zero
            r.append(text)
        rows.append(r)
    head = by + ["seeds"] + [h for _, h in heads]
    for line in header(runs, by):
        print(line)
    print("cells: mean over the seeds ± half-width of its 95% CI (Student t); a quantile "
          "column is the mean of each seed's own quantile")
    print()
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(head)).rstrip())
        for r in rows:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
    if starred:
        print("* the same in every seed of the row (no spread to show)")
    if same:
        print("the same in every run: " + ", ".join(same))


if __name__ == "__main__":
    main()
