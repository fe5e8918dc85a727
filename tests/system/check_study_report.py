#!/usr/bin/python3
"""Checks of analysis/study_report.py and analysis/kvsim_results.py on a
tiny study directory (made by tests/system/test_analysis_study_report.c).

  check_study_report.py OUT figures|tables|loader|mean_ci|pair_gain|breakeven|lift|axes|cdf|
                           oracle_gap|staleness

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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import kvsim_results as kr  # noqa: E402

FIGS = ["breakeven.png", "axes.png", "pareto.png", "ttft_cdf.png", "traces.png", "lift.png",
        "oracle_gap.png"]
# two-sided 95% Student t for n - 1 = 1 and 3 (any t table)
T95 = {1: 12.7062047, 3: 3.18244631}


def fail(msg):
    print("check_study_report: " + msg, file=sys.stderr)
    sys.exit(1)


def close(a, b, rel=2e-6):
    """Equal within rel; NaN matches NaN and an infinity itself (a TTFT
    quantile over offered requests is +inf past a request never served)."""
    return (math.isnan(a) and math.isnan(b)) or a == b or \
        abs(a - b) <= rel * max(1.0, abs(a), abs(b))


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
    if "- `staleness.png` not drawn: E7 has no runs on the default experiment\n" not in rep:
        fail("REPORT.md does not say in one line that E7's figure is not drawn")


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


def _f(s):
    """A printed number; '-' (none, NaN) as nan."""
    s = s.strip()
    return float("nan") if s == "-" else float(s)


def cell_value(s):
    """'mean ± ci' or 'mean' as (mean, ci or nan)."""
    parts = s.split("±")
    return _f(parts[0]), _f(parts[1]) if len(parts) > 1 else float("nan")


def _nan(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


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
                if all(str(v) == c or (_nan(v) and c == "-") or
                       (isinstance(v, (int, float)) and _num(c) == float(v))
                       for v, c in zip(k, row[:len(params)])):
                    key = k
            if key is None:
                fail("%s: row %s matches no configuration of the catalog" % (exp, row))
            g = groups[key]
            if int(row[len(params)]) != len(g):
                fail("%s %s: %s seeds, the catalog has %d" % (exp, key, row[len(params)], len(g)))
            for m, c in zip(mets, row[len(params) + 1:]):
                v = [float(r[m]) for r in g if not _nan(r[m])]
                n = len(v)
                mean = sum(v) / n if n else float("nan")
                sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else float("nan")
                ci = T95[n - 1] * sd / math.sqrt(n) if n > 1 else float("nan")
                got = cell_value(c)
                # the report prints 4 significant digits
                if not close(got[0], mean, 6e-4) or not close(got[1], ci, 6e-4):
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
        if c[0] != "e1_breakeven" or c[2] == "-":
            continue  # the gamma panel's oracle runs at its default recall
        v = [float(r["forecast.recall"]) for r in rows
             if r["policy.replication.name"] != "none" and
             not _nan(r["policy.predictor.oracle_recall"]) and
             close(float(r["policy.predictor.oracle_recall"]), float(c[2])) and
             close(float(r["policy.predictor.oracle_fp_rate"]), float(c[3]))]
        # columns: experiment, predictor, recall, FP rate, precision,
        # prefix_precision, recall, runs
        if not v or not close(cell_value(c[6])[0], sum(v) / len(v), 6e-4) or int(c[7]) != len(v):
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
    swept = grid + ["experiment.name", "policy.preset", "trace.gen", "trace.cv"]
    if len(df) != len(rows) or set(df["id"]) != {r["id"] for r in rows}:
        fail("load(dir): %d rows, the catalog has %d done" % (len(df), len(rows)))
    if sorted(df.attrs["params"]) != sorted(swept):
        fail("load(dir): params %s, expected %s" % (df.attrs["params"], swept))
    for m in ("ttft_p95_ms", "spec.unused_vram_gb_s", "spec.bytes_bg"):
        if m not in df.attrs["metrics"] or m not in df.columns:
            fail("load(dir): metric %s missing" % m)
    by_id = {r["id"]: r for r in rows}
    by_file = {os.path.basename(r["h5_path"]): r for r in rows}
    for _, r in df.iterrows():
        if not close(float(r["ttft_p95_ms"]), float(by_id[r["id"]]["ttft_p95_ms"])):
            fail("load(dir): run %s ttft_p95_ms differs from the catalog" % r["id"])
    # the mooncake preset rejects early: its p95 over offered requests reaches
    # a rejected one, +inf in /summary, the catalog and the loaded frame alike
    shed = [r for r in rows if r["policy.preset"] == "mooncake"]
    if not shed:
        fail("e1_breakeven has no mooncake run to shed load")
    for r in shed:
        with h5py.File(os.path.join(exp, r["h5_path"]), "r") as h:
            p95 = float(h["summary"].attrs["ttft_p95_ms"])
        got = float(df.loc[df["id"] == r["id"], "ttft_p95_ms"].iloc[0])
        if not (p95 == math.inf and r["ttft_p95_ms"] == math.inf and got == math.inf):
            fail("run %s (mooncake, admitted share %s): ttft_p95_ms %s in /summary, %s in the "
                 "catalog, %s loaded; expected inf in all three" %
                 (r["id"], r["admitted_share"], p95, r["ttft_p95_ms"], got))
    sub = kr.load(exp, where="policy.replication.name = 'none'")
    if len(sub) != sum(r["policy.replication.name"] == "none" for r in rows):
        fail("load(where=...) kept %d rows" % len(sub))
    # the heatmap's runs on the default deployment: a preset sets other
    # keys, and the gamma panel the trace's, so these differ in the grid only
    mine = {os.path.basename(r["h5_path"]) for r in rows
            if r["experiment.name"] == "heatmap" and r["policy.preset"] == "none"}
    files = sorted(f for f in glob.glob(os.path.join(exp, "runs", "*.h5"))
                   if os.path.basename(f) in mine)
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
    n_all = sum(len(h5py.File(f, "r")["requests"]) for f in
                glob.glob(os.path.join(exp, "runs", "*.h5")))
    if len(cat_req) != n_all or "seed" not in cat_req.columns:
        fail("load(dir, requests=True): %d rows, expected %d with seed" % (len(cat_req), n_all))


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
    # a seed whose p95 reached a shed request (+inf): the mean is inf, no CI
    r = kr.mean_ci(pd.DataFrame({"g": ["a"] * 3, "x": [1.0, math.inf, 3.0]}), "g", "x").iloc[0]
    if not (r["mean"] == math.inf and math.isnan(r["sd"]) and math.isnan(r["ci"])):
        fail("mean_ci([1, inf, 3]): %s, expected mean inf, no sd or CI" % r.to_dict())
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
    # +inf (a p95 past a request never served): a finite treatment against
    # an infinite baseline gains inf, 100%; the reverse loses -inf; both: NaN
    inf = math.inf
    d = pd.DataFrame({"id": ["t1", "t2", "t3", "b1", "b2", "b3"],
                      "policy.replication.name": ["speculative"] * 3 + ["none"] * 3,
                      "seed": [1, 2, 3, 1, 2, 3], "m": [10.0, inf, inf, inf, 20.0, inf]})
    d.attrs["params"] = ["policy.replication.name"]
    g = kr.pair_gain(d, "m").set_index("id")
    for t, gain, pct in (("t1", inf, 100.0), ("t2", -inf, -inf), ("t3", math.nan, math.nan)):
        if not (close(g.loc[t, "gain"], gain) and close(g.loc[t, "gain_pct"], pct)):
            fail("pair_gain with inf: %s gain %s (%s%%), expected %s (%s%%)" %
                 (t, g.loc[t, "gain"], g.loc[t, "gain_pct"], gain, pct))
    # on the catalog: every pair has the same seed, recall and fp rate
    rows, _ = catalog(out, "e1_breakeven")
    by_id = {r["id"]: r for r in rows}
    df = kr.load(os.path.join(out, "e1_breakeven"))
    heat = df["experiment.name"] == "heatmap"
    df = df[heat].reset_index(drop=True)
    df.attrs.update(kr.load(os.path.join(out, "e1_breakeven")).attrs)
    pg = kr.pair_gain(df, "ttft_p95_ms")
    treated = [r for r in rows if r["policy.replication.name"] != "none" and
               r["experiment.name"] == "heatmap"]
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


def what_it_shows(rep, fig):
    """The 'What it shows' paragraph under fig in REPORT.md."""
    m = re.search(r"\(fig/%s\)\n\n\*\*What it shows\.\*\* (.*)\n" % re.escape(fig), rep)
    if not m:
        fail("REPORT.md has no 'What it shows' paragraph under " + fig)
    return m.group(1)


def check_breakeven(out):
    """The best heatmap cell against the best fair baseline: per seed, the
    lowest speculative p95 of the cell (any preset) against the lowest p95
    of every replication-none run of the heatmap (any preset, any cell)."""
    rows, _ = catalog(out, "e1_breakeven")
    rows = [r for r in rows if r["experiment.name"] == "heatmap"]
    base, cell = {}, {}
    for r in rows:
        p95 = float(r["ttft_p95_ms"])
        if r["policy.replication.name"] == "none":
            base[r["seed"]] = min(base.get(r["seed"], math.inf), p95)
        else:
            k = (float(r["policy.predictor.oracle_recall"]),
                 float(r["policy.predictor.oracle_fp_rate"]), r["seed"])
            cell[k] = min(cell.get(k, math.inf), p95)
    gains = {}
    for (rc, fp, seed), t in cell.items():
        gains.setdefault((rc, fp), []).append(100.0 * (base[seed] - t) / base[seed])
    mean = {k: sum(v) / len(v) for k, v in gains.items()}
    best = max(mean, key=mean.get)
    txt = what_it_shows(open(os.path.join(out, "REPORT.md")).read(), "breakeven.png")
    m = re.search(r"is recall ([0-9.]+), FP rate ([0-9.]+): ([-+0-9.e]+)%", txt)
    if not m:
        fail("breakeven paragraph names no best cell: " + txt)
    got = (float(m.group(1)), float(m.group(2)), float(m.group(3)))
    if got[:2] != best or not close(got[2], mean[best], 6e-3):
        fail("breakeven: report's best cell %s, the catalog gives %s at %+.4g%%" %
             (got, best, mean[best]))
    if len(mean) != 4:
        fail("breakeven: %d cells, expected 4" % len(mean))
    # the best cell's share of the oracle bound: per seed, the run the cell
    # shows (the lowest speculative p95 of any preset), hit rate / bound
    shown = {}
    for r in rows:
        k = (float(r["policy.predictor.oracle_recall"]), float(r["policy.predictor.oracle_fp_rate"]))
        if r["policy.replication.name"] == "none" or k != best:
            continue
        if r["seed"] not in shown or float(r["ttft_p95_ms"]) < float(shown[r["seed"]]["ttft_p95_ms"]):
            shown[r["seed"]] = r
    share = [float(r["hit_rate_blocks"]) / float(r["bound.place_hit_rate_blocks"]) for r in shown.values()]
    m = re.search(r"That cell's speculative runs reach ([0-9.]+)% of the oracle bound", txt)
    if not m or not close(float(m.group(1)), 100 * sum(share) / len(share), 6e-3):
        fail("breakeven: report's share of the bound %s, the catalog gives %.4g%%" %
             (m.group(1) if m else txt, 100 * sum(share) / len(share)))


def check_lift(out):
    """Each policy's pooled mean TTFT of the published (btb) and the all
    lifted (all_off) variant, from the run files' completed requests."""
    rows, _ = catalog(out, "e5_lift")
    txt = what_it_shows(open(os.path.join(out, "REPORT.md")).read(), "lift.png")
    seen = 0

    def pol_of(r):  # early_rdma where it replicates, else the router (if swept)
        repl = r["policy.replication.name"]
        return repl if repl != "none" else (r.get("policy.routing.name") or repl)
    for pol in sorted({pol_of(r) for r in rows}):
        want = {}
        for v in ("btb", "all_off"):
            tot, n = 0.0, 0
            for r in rows:
                if r["experiment.name"] != v or pol_of(r) != pol:
                    continue
                with h5py.File(os.path.join(out, "e5_lift", r["h5_path"]), "r") as h:
                    q = h["requests"][:]
                ok = q["status"] == 0
                tot += float(q["ttft_ns"][ok].sum())
                n += int(ok.sum())
            want[v] = tot / n / 1e9 if n else None
        m = re.search(r"%s: published ([0-9.]+) s, all lifted ([0-9.]+) s" % pol, txt)
        if not m or not close(float(m.group(1)), want["btb"], 6e-4) or \
                not close(float(m.group(2)), want["all_off"], 6e-4):
            fail("lift %s: report says %s, the run files give %s" %
                 (pol, m.group(0) if m else txt, want))
        seen += 1
    if not seen:
        fail("lift: no policy checked")


def check_axes(out):
    """The largest gain of axes.png: speculative over the same preset's
    none at equal trace CV and seed in the gamma panel, mean over seeds."""
    rows, _ = catalog(out, "e1_breakeven")
    rows = [r for r in rows if r["experiment.name"] == "gamma"]
    by = {}
    for r in rows:
        by.setdefault((r["policy.preset"], float(r["trace.cv"]), r["seed"]), {})[
            r["policy.replication.name"]] = float(r["ttft_p95_ms"])
    gains = {}
    for (pre, cv, _), v in by.items():
        gains.setdefault((pre, cv), []).append(100.0 * (v["none"] - v["speculative"]) / v["none"])
    mean = {k: sum(g) / len(g) for k, g in gains.items()}
    best = max(mean, key=mean.get)
    txt = what_it_shows(open(os.path.join(out, "REPORT.md")).read(), "axes.png")
    m = re.search(r"over its own preset is ([-+0-9.e]+)% .* for (\S+) \(gamma, ([0-9.]+)\)", txt)
    if not m or m.group(2) != best[0] or float(m.group(3)) != best[1] or \
            not close(float(m.group(1)), mean[best], 6e-3):
        fail("axes: report says %s, the catalog gives %s at %+.4g%%" % (txt, best, mean[best]))


def check_cdf(out):
    """ttft_cdf.png shows the E2 trace (here: rate scale) where the
    policies' mean p95 TTFT differ the most relative to the fastest."""
    rows, _ = catalog(out, "e2_traces")
    p95 = {}
    for r in rows:
        p95.setdefault(float(r["trace.rate_scale"]), {}).setdefault(
            r["policy.replication.name"], []).append(float(r["ttft_p95_ms"]))
    spread = {}
    for t, pol in p95.items():
        m = [sum(v) / len(v) for v in pol.values()]
        spread[t] = (max(m) - min(m)) / min(m)
    want = max(spread, key=spread.get)
    txt = what_it_shows(open(os.path.join(out, "REPORT.md")).read(), "ttft_cdf.png")
    m = re.search(r"The CDF shows rate_scale=([0-9.]+), .*\(the slowest ([0-9.e+]+)% above", txt)
    if not m or float(m.group(1)) != want or not close(float(m.group(2)), 100 * spread[want], 6e-3):
        fail("cdf: report says %s, the catalog's largest spread is rate_scale=%g (%.4g%%)" %
             (txt, want, 100 * spread[want]))
    if "nan" in txt or "None" in txt:
        fail("cdf: raw nan/None in the labels: " + txt)


def check_oracle_gap(out):
    """oracle_gap.png's paragraph: the smallest and the largest gap to the
    bound within the budget, per policy (replication/predictor) mean over
    seeds of bound.place - hit rate, with its misprediction share (the
    oracle twin of the same seed minus the run)."""
    rows, _ = catalog(out, "e8_oracle_gap")
    hit = {(r["policy.replication.name"], r["policy.predictor.name"], r["seed"]): r for r in rows}
    # a policy whose hit rate no predictor changes is one row, its oracle runs
    rates = {}
    for (repl, pred, seed), r in hit.items():
        rates.setdefault(repl, set()).add((seed, float(r["hit_rate_blocks"])))
    seeds = {seed for (_, _, seed) in hit}
    blind = {repl for repl, v in rates.items() if len(v) == len(seeds)}
    if "none" not in blind or "speculative" in blind:
        fail("oracle_gap: replication none should ignore the predictor, speculative not: %s" % rates)
    gap, mis = {}, {}
    for (repl, pred, seed), r in hit.items():
        if repl in blind and pred != "oracle":
            continue
        k = ("spec" if repl == "speculative" else repl) + "/" + ("any" if repl in blind else pred)
        g = float(r["bound.place_hit_rate_blocks"]) - float(r["hit_rate_blocks"])
        gap.setdefault(k, []).append(g)
        twin = hit[(repl, "oracle", seed)]
        mis.setdefault(k, []).append(float(twin["hit_rate_blocks"]) - float(r["hit_rate_blocks"]))
    mean = {k: sum(v) / len(v) for k, v in gap.items()}
    txt = what_it_shows(open(os.path.join(out, "REPORT.md")).read(), "oracle_gap.png")
    m = re.search(r"the smallest gap ([0-9.e-]+) \((\S+): misprediction ([-0-9.e]+), rest "
                  r"([-0-9.e]+)\), the largest ([0-9.e-]+) \((\S+): misprediction ([-0-9.e]+)", txt)
    if not m:
        fail("oracle_gap paragraph names no smallest and largest gap: " + txt)
    for g_, pol, mp in ((m.group(1), m.group(2), m.group(3)), (m.group(5), m.group(6), m.group(7))):
        if pol not in mean or not close(float(g_), mean[pol], 2e-3):
            fail("oracle_gap: report says %s for %s, the catalog gives %s" % (g_, pol, mean.get(pol)))
        want = sum(mis[pol]) / len(mis[pol])
        if not close(float(mp), want, 2e-3):
            fail("oracle_gap: %s misprediction %s, the catalog gives %.4g" % (pol, mp, want))
    if not close(float(m.group(1)), min(mean.values()), 2e-3) or \
            not close(float(m.group(5)), max(mean.values()), 2e-3):
        fail("oracle_gap: smallest/largest %s/%s, the catalog gives %s" %
             (m.group(1), m.group(5), mean))


def check_staleness(out):
    """fig_staleness on a synthetic E7 frame: 2 delays x 2 losses x exact
    and bloom x none and speculative x 2 seeds, p95 and misrouted share
    made to grow with delay and loss; the text states each column's worst
    point; a frame without view.misrouted_share, and no frame, are one
    line each."""
    import pandas as pd
    import study_report as sr
    rows = []
    for ix, fpr in (("exact", float("nan")), ("bloom", 0.1)):
        for repl in ("none", "speculative"):
            for delay in (0.0, 100.0):
                for loss in (0.0, 0.5):
                    for seed in (1, 2):
                        p95 = 1000 + 5 * delay + 400 * loss + 10 * seed + (50 if ix == "bloom" else 0)
                        rows.append({sr.INDEX: ix, sr.INDEX_FPR: fpr, sr.REPL: repl, sr.DELAY: delay,
                                     sr.LOSS: loss, "seed": seed, "ttft_p95_ms": p95,
                                     sr.MISROUTED: delay / 1000 + loss / 4 + seed / 100})
    df = pd.DataFrame(rows)
    df.attrs["params"] = [sr.INDEX, sr.INDEX_FPR, sr.REPL, sr.DELAY, sr.LOSS]
    path = os.path.join(out, "staleness_synthetic.png")
    p, why, txt = sr.fig_staleness(df, {}, path)
    if not p or not os.path.getsize(path):
        fail("staleness: not drawn on the synthetic frame: %s" % why)
    for ix in ("exact", "bloom fpr 0.1"):
        for repl in ("none", "speculative"):
            worst = 1000 + 5 * 100 + 400 * 0.5 + 15 + (50 if ix != "exact" else 0)
            want = ("%s with replication %s: p95 %s ms at delay 0 ms, loss 0; at worst %s ms "
                    "(delay 100 ms, loss 0.5); misrouted share at most %.3g (delay 100 ms, loss 0.5)"
                    % (ix, repl, sr.fmt(1015 + (50 if ix != "exact" else 0)), sr.fmt(worst),
                       0.1 + 0.125 + 0.015))
            if want not in txt:
                fail("staleness: %r not in %r" % (want, txt))
    p, why, _ = sr.fig_staleness(df.drop(columns=[sr.MISROUTED]), {}, path)
    if p or why != "E7 lacks view.misrouted_share":
        fail("staleness without view.misrouted_share: %r" % why)
    if sr.fig_staleness(None, {}, path)[1] != "E7 has no runs on the default experiment":
        fail("staleness of no frame")
    # the trace lines' rows (trace.path set) are drawn apart from the
    # default experiment's
    df2 = df.assign(**{sr.TRACE: [("m.jsonl" if ix == "bloom" else None) for ix in df[sr.INDEX]]})
    on, off = sr.e7_rows(df2, True), sr.e7_rows(df2, False)
    if set(on[sr.INDEX]) != {"bloom"} or set(off[sr.INDEX]) != {"exact"}:
        fail("e7_rows: the trace and default rows are not split by trace.path")
    if sr.e7_rows(df, True) is not None or len(sr.e7_rows(df, False)) != len(df):
        fail("e7_rows: a frame without trace.path is all default-experiment rows")
    p, why, txt = sr.fig_staleness_mooncake(df2, {}, path)
    if not p or "exact" in txt or not txt.startswith("On the Mooncake conversation trace"):
        fail("staleness_mooncake: %r %r" % (why, txt[:80]))


CHECKS = {"figures": check_figures, "oracle_gap": check_oracle_gap, "staleness": check_staleness, "breakeven": check_breakeven, "lift": check_lift,
          "axes": check_axes, "cdf": check_cdf, "tables": check_tables, "loader": check_loader,
          "mean_ci": check_mean_ci, "pair_gain": check_pair_gain}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CHECKS:
        sys.exit("usage: check_study_report.py OUT " + "|".join(CHECKS))
    CHECKS[sys.argv[2]](sys.argv[1])
