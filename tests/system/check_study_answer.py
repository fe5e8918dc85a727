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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
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


def check_baseline_knobs():
    """A preset's own knobs tuned: two variants of baseline b (its router's
    prefix weight 1 and 6); "added to b" is against the one better on the
    tuning replicates (6), not skipped for having two. A baseline row's
    predictor key (the catalog holds its default, 10 s) is no condition of
    it: it pairs with the speculative rows at lead 3."""
    reps = seeds(8)
    tune, held = kst.split_replicates([f"{s}" for s in reps], sa.TUNE)
    W = "policy.routing.prefix_weight"
    LEAD = "policy.predictor.oracle_lead_s"
    rows = []
    for s in reps:
        t = str(s) in tune
        for w, v in ((1, 300.0), (6, 200.0 if t else 400.0)):
            rows.append({"seed": s, sa.NAME: "w", LEAD: 10, sa.PRESET: "b", sa.REPL: "none",
                         sa.PRED: "oracle", W: w, "ttft_p95_ms": v})
        rows.append({"seed": s, sa.NAME: "w", LEAD: 3, sa.PRESET: "b", sa.REPL: "speculative",
                     sa.PRED: "oracle", W: 3, "ttft_p95_ms": 250.0})
    d = sa.prepare(frame(rows), dict(cond=[sa.NAME, LEAD]))
    res = sa.compare(d)
    added = [r for r in res if r["against"] == "added to b"]
    assert len(added) == 1, res
    r = added[0]
    assert "prefix_weight=6" in r["baseline"], r["baseline"]
    assert float(r[LEAD]) == 3.0, r
    assert abs(r["gain"] - (400.0 - 250.0) / 400.0) < 1e-12, r["gain"]
    assert r["n"] == len(held)
    # the policy run on one of the preset's routings is added to that one,
    # whatever the tuning seeds say of the others
    for x in rows:
        if x[sa.REPL] == "speculative":
            x[W] = 1
    res = sa.compare(sa.prepare(frame(rows), dict(cond=[sa.NAME, LEAD])))
    r = [x for x in res if x["against"] == "added to b"][0]
    assert "prefix_weight=1" in r["baseline"], r["baseline"]
    assert abs(r["gain"] - (300.0 - 250.0) / 300.0) < 1e-12, r["gain"]


def check_holm_map():
    """The map's verdicts Holm-adjusted over its cells: p 0.01, 0.04, 0.03
    become 0.03, 0.06, 0.06 (kvsim_stats.holm), so only the first cell
    still differs; a TOST p of 0.001 x 3 = 0.003 keeps the third equivalent."""
    rows = [dict(p=0.01, tost_p=0.9, gain=0.2), dict(p=0.04, tost_p=0.9, gain=-0.1),
            dict(p=0.03, tost_p=0.001, gain=0.01)]
    sa.holm_verdicts(rows)
    got = [r["verdict_holm"] for r in rows]
    assert got == ["better", "inconclusive", "equivalent"], got
    assert abs(rows[1]["p_holm"] - 0.06) < 1e-12 and abs(rows[2]["tost_p_holm"] - 0.003) < 1e-12


def check_acts_only():
    """A condition column that acts under one generator only (trace.users,
    sessions) is blank on another's rows, where the catalog holds its
    default: crowd rows get no "16 users" label and pair as before."""
    rows = []
    for s in seeds(4):
        for gen, users in (("crowd", 16), ("sessions", 48)):
            for repl, v in (("none", 100.0), ("speculative", 90.0)):
                rows.append({"seed": s, sa.NAME: gen, sa.USERS: users, "trace.gen": gen,
                             sa.PRESET: "x", sa.REPL: repl, sa.PRED: "oracle",
                             "ttft_p95_ms": v})
    df = frame(rows)
    df.attrs["params"] = [sa.NAME, sa.USERS, sa.PRESET, sa.REPL, sa.PRED]
    d = sa.prepare(df, dict(cond=[sa.NAME, sa.USERS]))
    got = {(n, str(u)) for n, u in zip(d[sa.NAME], d[sa.USERS])}
    assert got == {("crowd", "nan"), ("sessions", "48")}, got
    res = [x for x in sa.compare(d) if x["against"] == "best baseline"]
    assert len(res) == 2 and all(abs(x["gain"] - 0.1) < 1e-12 for x in res), res


def check_capacity_lo_fails():
    """A capacity search that fails even at the lowest load has no value in
    the catalog's capacity table: the answer keeps its bound (the
    bracket's hi), so the baseline's held-out mean includes it and the
    comparison is made, not refused as a NaN."""
    import sqlite3
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        os.makedirs(os.path.join(out, "a3_capacity"))
        with sqlite3.connect(os.path.join(out, "a3_capacity", "catalog.sqlite")) as db:
            db.execute("create table capacity (point, seed, params, key, metric, target, value, "
                       "lo, hi, probes, verdict)")
            fams = {"none": "policy.replication.name=none policy.predictor.name=oracle",
                    "spec": "policy.replication.name=speculative policy.predictor.name=oracle"}
            n = sa.TUNE + 4
            _, held_ids = kst.split_replicates(sorted(str(s) for s in seeds(n)), sa.TUNE)
            for s in seeds(n):
                for f, kv in fams.items():
                    params = "experiment.name=fanout policy.preset=none " + kv
                    if f == "none" and str(s) == held_ids[-1]:  # a held-out seed fails at LO
                        row = (0, s, params, "trace.rate_scale", "slo_attainment", 0.9, None, None,
                               0.125, 2, "lo_fails")
                    else:
                        v = 1.0 if f == "none" else 1.5
                        row = (0, s, params, "trace.rate_scale", "slo_attainment", 0.9, v, v,
                               v * 1.04, 9, "bracketed")
                    db.execute("insert into capacity values (?,?,?,?,?,?,?,?,?,?,?)", row)
        _, rows = sa.capacity(out)
    assert len(rows) == 1, rows
    r = rows[0]
    held = n - sa.TUNE
    assert r["n"] == held, r
    assert abs(r["base_mean"] - ((held - 1) * 1.0 + 0.125) / held) < 1e-12, r
    assert abs(r["pol_mean"] - 1.5) < 1e-12, r


def check_capacity_variants():
    """A family searched under two variants (a tuning line's knob): the one
    better on the tuning seeds is compared, though the other is better on
    every held-out seed, and the row names it."""
    import sqlite3
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        os.makedirs(os.path.join(out, "a3_capacity"))
        n = sa.TUNE + 4
        tune_ids, _ = kst.split_replicates(sorted(str(s) for s in seeds(n)), sa.TUNE)
        with sqlite3.connect(os.path.join(out, "a3_capacity", "catalog.sqlite")) as db:
            db.execute("create table capacity (point, seed, params, key, metric, target, value, "
                       "lo, hi, probes, verdict)")
            base = "experiment.name=crowd policy.preset=mooncake policy.predictor.name=oracle "
            for s in seeds(n):
                tune = str(s) in tune_ids
                for params, v in (
                        (base + "policy.replication.name=none", 2.0),
                        (base + "policy.replication.name=speculative "
                         "policy.replication.spec_route_hint=score", 2.4 if tune else 1.8),
                        (base + "policy.replication.name=speculative "
                         "policy.replication.spec_route_hint=override", 2.2 if tune else 3.0)):
                    db.execute("insert into capacity values (?,?,?,?,?,?,?,?,?,?,?)",
                               (0, s, params, "trace.rate_scale", "slo_attainment", 0.9, v, v,
                                v * 1.04, 9, "bracketed"))
        md, rows = sa.capacity(out)
    assert len(rows) == 1, rows
    r = rows[0]
    assert r["policy"] == "spec_route_hint=score", r
    assert abs(r["pol_mean"] - 1.8) < 1e-12 and abs(r["base_mean"] - 2.0) < 1e-12, r
    assert any("mooncake (spec_route_hint=score)" in ln for ln in md), md


def check_route_hint():
    """The hint as a score against the override, per condition and preset,
    paired over every replicate, with the other tuned knobs at their
    defaults: a spec_targets=4 variant (override too) is no part of the
    override side."""
    rows = []
    for s in seeds(6):
        for hint, tg, v in (("override", 2, 200.0), ("score", 2, 150.0), ("override", 4, 50.0)):
            rows.append({"seed": s, sa.NAME: "crowd", sa.LOAD: 1, sa.PRESET: "mooncake",
                         sa.REPL: "speculative", sa.PRED: "oracle", sa.HINT: hint,
                         "policy.replication.spec_targets": tg, "ttft_p95_ms": v + s % 2})
    df = frame(rows)
    orig = sa.load_exp
    sa.load_exp = lambda out, exp: df if exp == "a1_regimes" else None
    try:
        md, res = sa.route_hint("unused")
    finally:
        sa.load_exp = orig
    assert len(res) == 1, res
    r = res[0]
    assert r["family"] == "spec_route_hint=score (speculative+oracle)", r
    assert r["against"] == "spec_route_hint=override" and r["policy.preset"] == "mooncake", r
    assert r["n"] == 6, r  # every replicate: nothing is chosen
    exp = np.mean([((200.0 + s % 2) - (150.0 + s % 2)) / (200.0 + s % 2) for s in seeds(6)])
    assert abs(r["gain"] - exp) < 1e-12, (r["gain"], exp)
    assert r["verdict"] == "better", r


CASES = {"tuning": check_tuning, "acts_only": check_acts_only, "holm_map": check_holm_map, "inf": check_inf, "conditions": check_conditions,
         "baseline_knobs": check_baseline_knobs, "capacity_lo_fails": check_capacity_lo_fails,
         "capacity_variants": check_capacity_variants, "route_hint": check_route_hint}


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    for name, fn in CASES.items():
        if which in (name, "all"):
            fn()
            print("ok", name)


if __name__ == "__main__":
    main()
