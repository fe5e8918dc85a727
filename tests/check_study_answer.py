#!/usr/bin/python3
"""Checks of analysis/study_answer.py's comparison logic on hand-made
catalog frames (no kvsim run): the best baseline is chosen on the tuning
replicates only, comparisons are paired over the held-out ones, a shed
baseline (+inf p95) loses to a policy that serves, NaN-condition baseline
rows belong to every condition, and families/variants are labelled as the
report prints them. Exit status 0 when every check passes.

  check_study_answer.py CASE     (CASE: tuning, inf, conditions, all)
"""
import os
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
import study_answer as sa  # noqa: E402
import kvsim_stats as kst  # noqa: E402

SPEC = dict(cond=[sa.NAME, sa.LOAD])


def frame(rows):
    df = pd.DataFrame(rows)
    df.attrs["params"] = [c for c in df.columns if "." in c]
    return df


def seeds(n):
    return [1000 + i for i in range(n)]


def check_tuning():
    """Baseline A is better than B on every held-out replicate, B on the
    tuning ones: the comparison must be against B (chosen on tuning), over
    the held-out replicates only."""
    reps = seeds(8)
    tune, held = kst.split_replicates([f"{s}" for s in reps], sa.TUNE)
    rows = []
    for s in reps:
        t = str(s) in tune
        rows.append({"seed": s, sa.NAME: "w", sa.LOAD: 1, sa.PRESET: "a", sa.REPL: "none",
                     sa.PRED: np.nan, "ttft_p95_ms": 300.0 if t else 100.0})
        rows.append({"seed": s, sa.NAME: "w", sa.LOAD: 1, sa.PRESET: "b", sa.REPL: "none",
                     sa.PRED: np.nan, "ttft_p95_ms": 200.0})
        rows.append({"seed": s, sa.NAME: "w", sa.LOAD: 1, sa.PRESET: "b", sa.REPL: "speculative",
                     sa.PRED: "oracle", "ttft_p95_ms": 150.0 + (s % 3)})
    d = sa.prepare(frame(rows), SPEC)
    res = sa.compare(d)
    best = [r for r in res if r["against"] == "best baseline"]
    assert len(best) == 1, best
    r = best[0]
    assert r["baseline"] == "preset=b", r["baseline"]
    assert r["n"] == len(held), (r["n"], held)
    exp = np.mean([(200.0 - (150.0 + (s % 3))) / 200.0 for s in reps if str(s) in held])
    assert abs(r["gain"] - exp) < 1e-12, (r["gain"], exp)
    assert r["verdict"] == "better", r
    assert r["family"] == "speculative+oracle", r["family"]
    # "added to b" is the same pair; "added to a" has no speculative rows
    added = {x["against"] for x in res}
    assert added == {"best baseline", "added to b"}, added


def check_inf():
    """A baseline that sheds (+inf p95 on every replicate) against a policy
    that serves: gain +100% per replicate, every replicate censored."""
    rows = []
    for s in seeds(6):
        rows.append({"seed": s, sa.NAME: "w", sa.LOAD: 2, sa.PRESET: "x", sa.REPL: "none",
                     sa.PRED: np.nan, "ttft_p95_ms": np.inf})
        rows.append({"seed": s, sa.NAME: "w", sa.LOAD: 2, sa.PRESET: "x", sa.REPL: "speculative",
                     sa.PRED: "oracle", "ttft_p95_ms": 900.0})
    res = sa.compare(sa.prepare(frame(rows), SPEC))
    r = [x for x in res if x["against"] == "best baseline"][0]
    assert r["gain"] == 1.0 and r["censored"] == r["n"] == 4, r


def check_conditions():
    """Baseline rows whose condition column is NaN (a line that did not
    grid it) pair with every value of it; each condition is its own row."""
    rows = []
    for s in seeds(5):
        rows.append({"seed": s, sa.NAME: "w", sa.LOAD: np.nan, sa.PRESET: "x", sa.REPL: "none",
                     sa.PRED: np.nan, "ttft_p95_ms": 100.0})
        for load in (1, 2):
            rows.append({"seed": s, sa.NAME: "w", sa.LOAD: load, sa.PRESET: "x",
                         sa.REPL: "speculative", sa.PRED: "oracle",
                         "ttft_p95_ms": 100.0 - 10 * load})
    res = [x for x in sa.compare(sa.prepare(frame(rows), SPEC)) if x["against"] == "best baseline"]
    got = sorted((float(x[sa.LOAD]), round(x["gain"], 12)) for x in res)
    assert got == [(1.0, 0.1), (2.0, 0.2)], got


CASES = {"tuning": check_tuning, "inf": check_inf, "conditions": check_conditions}


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    for name, fn in CASES.items():
        if which in (name, "all"):
            fn()
            print("ok", name)


if __name__ == "__main__":
    main()
