#!/usr/bin/python3
"""Each policy's gap to the oracle bound, split into what mis-predicted reuse
and what the network's capacity cost.

  oracle_gap.py RESULTS_DIR [--by policy.replication.name] [--where SQL]
                [--predictor policy.predictor.name] [--oracle oracle] [--csv]

Reads a sweep catalog whose runs set output.oracle_bound = true (and
output.bound_bw_gbps to the policy's copy budget, e.g. spec_bw_gbps), with a
grid over the predictor that includes the oracle (policy.predictor.name =
oracle; sim/run/bound.h has the bounds' definitions). For every run, in
block hit rate (hit_rate_blocks):

  gap          bound.place_hit_rate_blocks - hit_rate_blocks: the bound
               within the copy budget minus what the run reached
  network      bound.network_cost_blocks: the bound with unlimited copy
               bandwidth minus the bound within the budget (what the
               network's capacity costs the bound itself)
  misprediction  the same configuration and seed with the oracle predictor
               minus this run (what forecasting reuse wrongly costs; 0 for
               the oracle's own runs, blank when the catalog has no oracle
               twin)
  rest         gap - misprediction: what even a perfect forecast leaves
               (the online policy's placement and eviction choices)

Rows are the means over the runs that share the --by columns (the seeds
and traces of one policy). Prints a table, or CSV with --csv.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402

RUN = "hit_rate_blocks"
PLACE = "bound.place_hit_rate_blocks"
UNLIMITED = "bound.place_unlimited_hit_rate_blocks"
NETWORK = "bound.network_cost_blocks"
MIN = "bound.belady_hit_rate_blocks"


def split(df, predictor, oracle):
    """Per-run gap columns; df: one row per run with the bound metrics."""
    for m in (RUN, PLACE, UNLIMITED, NETWORK, MIN):
        if m not in df.columns:
            raise SystemExit(f"no {m} in the catalog: run the sweep with "
                             "output.oracle_bound = true")
    df = df[df[PLACE].notna()].copy()
    df["gap"] = df[PLACE] - df[RUN]
    df["network"] = df[NETWORK]
    # the oracle twin: every other parameter and the seed equal
    keys = [c for c in df.attrs.get("params", []) if c != predictor and c in df.columns]
    keys = keys + ["seed"] if "seed" in df.columns else keys
    if predictor in df.columns:
        ref = df[df[predictor] == oracle][keys + [RUN]].rename(columns={RUN: "_oracle"})
        ref = ref.drop_duplicates(subset=keys)
        df = df.merge(ref, on=keys, how="left") if keys else df.assign(_oracle=math.nan)
    else:
        df["_oracle"] = math.nan
    df["misprediction"] = df["_oracle"] - df[RUN]
    df["rest"] = df["gap"] - df["misprediction"]
    return df.drop(columns=["_oracle"])


COLS = [RUN, MIN, PLACE, UNLIMITED, "gap", "network", "misprediction", "rest"]


def table(df, by):
    by = [c for c in by if c in df.columns]
    rows = df.groupby(by, dropna=False)[COLS].mean().reset_index() if by else \
        df[COLS].mean().to_frame().T
    rows["runs"] = df.groupby(by, dropna=False).size().values if by else [len(df)]
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--by", default="policy.replication.name,policy.predictor.name",
                    help="comma-separated columns that make one row")
    ap.add_argument("--where", default=None, help="SQL on the catalog, as kvsim runs --where")
    ap.add_argument("--predictor", default="policy.predictor.name")
    ap.add_argument("--oracle", default="oracle", help="the predictor value of the oracle runs")
    ap.add_argument("--csv", action="store_true")
    a = ap.parse_args(argv)
    df = split(kr.load(a.results, where=a.where, keys=False), a.predictor, a.oracle)
    if df.empty:
        raise SystemExit(f"{a.results}: no run with the bound metrics")
    rows = table(df, a.by.split(","))
    if a.csv:
        rows.to_csv(sys.stdout, index=False, float_format="%.6g")
    else:
        print(rows.to_string(index=False, float_format=lambda v: "%.4f" % v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
