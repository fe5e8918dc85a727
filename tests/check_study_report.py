#!/usr/bin/python3
"""Checks of analysis/study_report.py and analysis/kvsim_results.py on a
tiny study directory (made by tests/test_analysis_study_report.c).

  check_study_report.py OUT figures|tables|loader|mean_ci|pair_gain

Each check recomputes what it compares from the catalog (sqlite3) or the
run files (h5py) directly, not through kvsim_results, and exits 1 with a
message on the first mismatch."""
import glob
import math
import os
import re
import sqlite3
import sys

import h5py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import kvsim_results as kr  # noqa: E402

FIGS = ["breakeven.png", "pareto.png", "ttft_cdf.png", "traces.png", "lift.png"]
# two-sided 95% Student t for n - 1 = 1 and 3 (any t table)
T95 = {1: 12.7062047, 3: 3.18244631}


def fail(msg):
    print("check_study_report: " + msg, file=sys.stderr)
    sys.exit(1)


def close(a, b, rel=2e-6):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def catalog(out, exp):
    con = sqlite3.connect(os.path.join(out, exp, "catalog.sqlite"))
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM runs WHERE status = 'done'")]
    kinds = dict(con.execute("SELECT name, kind FROM columns").fetchall())
    con.close()
    return rows, kinds


def check_figures(out):
    for d in (os.path.join(out, "fig"), os.path.join(out, "copied")):
        for f in FIGS:
            p = os.path.join(d, f)
            if not os.path.exists(p):
                fail(p + ": missing")
            with open(p, "rb") as fh:
                if fh.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail(p + ": not a PNG")
    rep = open(os.path.join(out, "REPORT.md")).read()
    for f in FIGS:
        if "(fig/%s)" % f not in rep:
            fail("REPORT.md does not show " + f)
    if "e3_interference" not in rep or "skipped: no trace here" not in rep:
        fail("REPORT.md does not say E3 was skipped and why")
    if "e4_vram" not in rep or "absent" not in rep:
        fail("REPORT.md does not say E4 is absent")


def report_table(rep, exp):
    """The rows of the table under '<!-- table EXP -->': header, cells."""
    m = re.search(r"<!-- table %s -->\n((?:\|.*\n?)+)" % exp, rep)
    if not m:
        fail("REPORT.md has no table for " + exp)
    lines = [ln.strip().strip("|").split("|") for ln in m.group(1).strip().splitlines()]
    return [c.strip() for c in lines[0]], [[c.strip() for c in ln] for ln in lines[2:]]


def _num(s):
    try:
        return float(s)
    except ValueError:
        return None


def cell_value(s):
    """'mean ± ci' or 'mean' as (mean, ci or nan)."""
    parts = s.split("±")
    return float(parts[0]), float(parts[1]) if len(parts) > 1 else float("nan")


def check_tables(out):
    rep = open(os.path.join(out, "REPORT.md")).read()
    for exp in ("e1_breakeven", "e2_traces", "e5_lift"):
        rows, kinds = catalog(out, exp)
        params = [k for k, v in kinds.items() if v == "param" and
                  len({str(r[k]) for r in rows}) > 1]
        head, cells = report_table(rep, exp)
        mets = head[len(params) + 1:]
        if head[:len(params)] != params or head[len(params)] != "seeds" or not mets:
            fail("%s: table header %s, expected the parameters %s, seeds, metrics" %
                 (exp, head, params))
        groups = {}
        for r in rows:
            groups.setdefault(tuple(r[p] for p in params), []).append(r)
        if len(cells) != len(groups):
            fail("%s: %d table rows, the catalog has %d configurations" %
                 (exp, len(cells), len(groups)))
        checked = 0
        for row in cells:
            key = None
            for k in groups:  # match the printed parameter values
                if all(str(v) == c or (isinstance(v, (int, float)) and _num(c) == float(v))
                       for v, c in zip(k, row[:len(params)])):
                    key = k
            if key is None:
                fail("%s: row %s matches no configuration of the catalog" % (exp, row))
            g = groups[key]
            if int(row[len(params)]) != len(g):
                fail("%s %s: %s seeds, the catalog has %d" % (exp, key, row[len(params)], len(g)))
            for m, c in zip(mets, row[len(params) + 1:]):
                v = [float(r[m]) for r in g]
                n = len(v)
                mean = sum(v) / n
                sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
                ci = T95[n - 1] * sd / math.sqrt(n)
                got = cell_value(c)
                # the report prints 6 significant digits
                if not close(got[0], mean, 1e-5) or not close(got[1], ci, 1e-5):
                    fail("%s %s %s: report says %s, the catalog gives %.9g ± %.9g" %
                         (exp, key, m, c, mean, ci))
                checked += 1
        if checked < 8:
            fail("%s: only %d cells checked" % (exp, checked))
    check_forecast(out, rep)


def check_forecast(out, rep):
    """Where E1's runs measured forecast recall: each oracle row of the
    report's forecast table is the mean over the runs of its injected
    recall and FP rate (the baselines, which forecast nothing, left out)."""
    rows, kinds = catalog(out, "e1_breakeven")
    if kinds.get("forecast.recall") != "metric":
        return  # this build measures no forecasts
    m = re.search(r"## Forecast accuracy\n\n.*\n\n((?:\|.*\n?)+)", rep)
    if not m:
        fail("REPORT.md has no forecast table though E1 measured forecast.recall")
    seen = 0
    for ln in m.group(1).strip().splitlines()[2:]:
        c = [x.strip() for x in ln.strip().strip("|").split("|")]
        if c[0] != "e1_breakeven":
            continue
        v = [float(r["forecast.recall"]) for r in rows
             if r["policy.replication.name"] != "none" and
             close(float(r["policy.predictor.oracle_recall"]), float(c[2])) and
             close(float(r["policy.predictor.oracle_fp_rate"]), float(c[3]))]
        if not v or not close(cell_value(c[5])[0], sum(v) / len(v), 1e-5) or int(c[6]) != len(v):
            fail("forecast row %s: the catalog gives %s" % (c, v))
        seen += 1
    if seen != 4:
        fail("forecast table: %d E1 rows, expected 4 (recall x FP rate)" % seen)


def check_loader(out):
    exp = os.path.join(out, "e1_breakeven")
    rows, kinds = catalog(out, "e1_breakeven")
    df = kr.load(exp)
    grid = ["policy.replication.name", "policy.predictor.oracle_recall",
            "policy.predictor.oracle_fp_rate"]
    if len(df) != len(rows) or set(df["id"]) != {r["id"] for r in rows}:
        fail("load(dir): %d rows, the catalog has %d done" % (len(df), len(rows)))
    if sorted(df.attrs["params"]) != sorted(grid):
        fail("load(dir): params %s, expected %s" % (df.attrs["params"], grid))
    for m in ("ttft_p95_ms", "spec.unused_vram_gb_s", "spec.bytes_bg"):
        if m not in df.attrs["metrics"] or m not in df.columns:
            fail("load(dir): metric %s missing" % m)
    by_id = {r["id"]: r for r in rows}
    by_file = {os.path.basename(r["h5_path"]): r for r in rows}
    for _, r in df.iterrows():
        if not close(float(r["ttft_p95_ms"]), float(by_id[r["id"]]["ttft_p95_ms"])):
            fail("load(dir): run %s ttft_p95_ms differs from the catalog" % r["id"])
    sub = kr.load(exp, where="policy.replication.name = 'none'")
    if len(sub) != sum(r["policy.replication.name"] == "none" for r in rows):
        fail("load(where=...) kept %d rows" % len(sub))
    files = sorted(glob.glob(os.path.join(exp, "runs", "*.h5")))
    hf, req = kr.load(files, requests=True)
    if sorted(hf.attrs["params"]) != sorted(grid):
        fail("load(h5 files): params %s, expected %s" % (hf.attrs["params"], grid))
    if len(hf) != len(files):
        fail("load(h5 files): %d rows for %d files" % (len(hf), len(files)))
    n = 0
    for f in files:
        with h5py.File(f, "r") as h:
            q = h["requests"][:]
            p95 = float(h["summary"].attrs["ttft_p95_ms"])
            seed = int(h.attrs["seed"])
        rid = os.path.basename(f)[:-3]  # a run file's id is its name
        mine = req[req["id"] == rid]
        if len(mine) != len(q) or list(mine["ttft_ns"]) != list(q["ttft_ns"]):
            fail("load(requests=True): run %s's /requests rows differ" % rid)
        cat = by_file[os.path.basename(f)]
        if set(mine["seed"]) != {seed} or cat["seed"] != seed:
            fail("load(requests=True): run %s's seed not joined" % rid)
        for p in grid:
            if not all(str(v) == str(cat[p]) if isinstance(cat[p], str) else
                       close(float(v), float(cat[p])) for v in mine[p]):
                fail("load(requests=True): run %s's %s not joined" % (rid, p))
        if not close(float(hf.loc[hf["id"] == rid, "ttft_p95_ms"].iloc[0]), p95):
            fail("load(h5 files): run %s's summary differs" % rid)
        n += len(q)
    if len(req) != n or n == 0:
        fail("load(requests=True): %d request rows, the files hold %d" % (len(req), n))
    cat_df, cat_req = kr.load(exp, requests=True)
    if len(cat_req) != n or "seed" not in cat_req.columns:
        fail("load(dir, requests=True): %d rows, expected %d with seed" % (len(cat_req), n))


def check_mean_ci(out):
    import pandas as pd
    d = pd.DataFrame({"g": ["a"] * 4 + ["b"], "x": [1.0, 2.0, 3.0, 4.0, 7.0]})
    r = kr.mean_ci(d, "g", "x").set_index("g")
    sd = math.sqrt(5.0 / 3.0)  # sum of squares 5 over n - 1 = 3
    if not (close(r.loc["a", "mean"], 2.5) and close(r.loc["a", "ci"], T95[3] * sd / 2, 1e-6)):
        fail("mean_ci([1,2,3,4]): %s, expected 2.5 ± %.6f" % (r.loc["a"].to_dict(), T95[3] * sd / 2))
    if r.loc["b", "n"] != 1 or not math.isnan(r.loc["b", "ci"]):
        fail("mean_ci of one run must have no CI")
    if not close(kr._T95[3], T95[3], 1e-3) or not close(kr.t_quantile(1), T95[1], 1e-6):
        fail("t quantiles differ from the table")
    # on the catalog: the p95 TTFT of each policy over its seeds
    rows, _ = catalog(out, "e2_traces")
    df = kr.load(os.path.join(out, "e2_traces"))
    got = kr.mean_ci(df, ["policy.replication.name", "trace.rate_scale"], "ttft_p95_ms")
    for _, g in got.iterrows():
        v = [float(x["ttft_p95_ms"]) for x in rows if x["policy.replication.name"] ==
             g["policy.replication.name"] and close(float(x["trace.rate_scale"]),
                                                     float(g["trace.rate_scale"]))]
        m = sum(v) / len(v)
        s = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))
        if g["n"] != len(v) or not close(g["mean"], m) or not close(g["ci"], T95[len(v) - 1] * s / math.sqrt(len(v)), 1e-6):
            fail("mean_ci on the catalog: %s, expected %g ± %g" % (g.to_dict(), m, s))


def check_pair_gain(out):
    import pandas as pd
    # hand case: treatment seeds 1, 2; two baseline presets per seed; the
    # gain pairs each seed with its own best (lowest) baseline
    d = pd.DataFrame({
        "id": ["t1", "t2", "b1v", "b1s", "b2v", "b2s"],
        "policy.replication.name": ["speculative"] * 2 + ["none"] * 4,
        "policy.preset": ["vllm", "vllm", "vllm", "sglang", "vllm", "sglang"],
        "seed": [1, 2, 1, 1, 2, 2],
        "m": [10.0, 30.0, 12.0, 11.0, 20.0, 25.0]})
    d.attrs["params"] = ["policy.replication.name", "policy.preset"]
    g = kr.pair_gain(d, "m").set_index("id")
    want = {"t1": ("b1s", 1.0), "t2": ("b2v", -10.0)}
    for t, (b, gain) in want.items():
        if g.loc[t, "base_id"] != b or not close(g.loc[t, "gain"], gain):
            fail("pair_gain hand case: %s paired with %s gain %s, expected %s %s" %
                 (t, g.loc[t, "base_id"], g.loc[t, "gain"], b, gain))
    # on the catalog: every pair has the same seed, recall and fp rate
    rows, _ = catalog(out, "e1_breakeven")
    by_id = {r["id"]: r for r in rows}
    df = kr.load(os.path.join(out, "e1_breakeven"))
    pg = kr.pair_gain(df, "ttft_p95_ms")
    treated = [r for r in rows if r["policy.replication.name"] != "none"]
    if len(pg) != len(treated):
        fail("pair_gain: %d pairs for %d speculative runs" % (len(pg), len(treated)))
    for _, r in pg.iterrows():
        b = by_id[r["base_id"]]
        if b["policy.replication.name"] != "none" or b["seed"] != r["seed"]:
            fail("pair_gain: %s paired with %s of seed %s" % (r["id"], b["id"], b["seed"]))
        for p in ("policy.predictor.oracle_recall", "policy.predictor.oracle_fp_rate"):
            if not close(float(b[p]), float(r[p])):
                fail("pair_gain: %s paired across %s" % (r["id"], p))
        if not close(r["gain"], float(b["ttft_p95_ms"]) - float(r["ttft_p95_ms"])):
            fail("pair_gain: %s gain %s" % (r["id"], r["gain"]))


CHECKS = {"figures": check_figures, "tables": check_tables, "loader": check_loader,
          "mean_ci": check_mean_ci, "pair_gain": check_pair_gain}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CHECKS:
        sys.exit("usage: check_study_report.py OUT " + "|".join(CHECKS))
    CHECKS[sys.argv[2]](sys.argv[1])
