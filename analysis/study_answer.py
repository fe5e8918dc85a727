#!/usr/bin/python3
"""The study's answer: paired, replicated comparisons over offered requests.

  study_answer.py OUT [--figures DIR]     (study_report.py calls answer())

Reads the catalogs of the answer's experiments under OUT (each
OUT/<exp>/catalog.sqlite; absent ones are named and left out) and writes
OUT/ANSWER.md, OUT/answer.csv (every comparison, one row each) and the
figures OUT/fig/{load,regimes,breakeven,frontier}.png.

Definitions (analysis/README.md, "The study's answer: design"):
- Metrics are over offered requests: a request rejected, abandoned or still
  in the system at the end misses the SLO and its TTFT is +inf in the
  percentiles (ttft_p50/p95/p99_ms, slo_attainment, goodput_rps).
- A replicate is what varies between repeats of one configuration: a seed
  where the workload is generated (each seed redraws arrivals, lengths and
  prefixes), a trace window where it is read.
- Tuning replicates (TUNE ids chosen by hash, kvsim_stats.split_replicates,
  the same for every policy) choose the best fair baseline (any deployment preset
  with replication none) and each policy family's variant (preset, knobs);
  the comparison uses only the other, held-out replicates.
- A comparison is paired per replicate: gain_i = (base_i - pol_i) / base_i
  on the headline metric (p95 TTFT over offered requests; the sign flips
  for attainment), its mean with a paired t 95% CI and a paired bootstrap
  CI, and a verdict: better / worse (CI wholly above / below 0),
  equivalent (TOST at +-MARGIN), else inconclusive.
"""
import argparse
import os
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402
import kvsim_stats as kst  # noqa: E402
import study_report  # noqa: E402

HEADLINE = "ttft_p95_ms"
LOWER_BETTER = {"ttft_p50_ms": True, "ttft_p95_ms": True, "ttft_p99_ms": True,
                "slo_attainment": False, "goodput_rps": False}
TUNE = 2          # tuning replicates per configuration
MARGIN = 0.05     # equivalence margin, relative to the baseline's metric
REPL = "policy.replication.name"
PRED = "policy.predictor.name"
PRESET = "policy.preset"
NAME = "experiment.name"
LOAD = "trace.rate_scale"
USERS = "trace.users"  # a closed loop's load
RECALL = "policy.predictor.oracle_recall"
FP = "policy.predictor.oracle_fp_rate"

# Condition columns that act only under one generator: the catalog holds
# every run's value, so a crowd run has the default users; blanked where
# they do not act (as a line that did not sweep them left them NULL before).
ACTS_ONLY = {USERS: ("trace.gen", {"sessions"}), "trace.cv": ("trace.gen", {"gamma"}),
             "trace.fanout_size": ("trace.gen", {"fanout"})}

# Per experiment: the columns that name a condition (a cell of the answer).
# A policy variant is named by the other varied policy.* keys; a replicate
# by the seed and every other varied key (a trace window's bounds and file).
ANSWER_EXPERIMENTS = {
    "a0_load": dict(title="offered load on the default fan-out workload",
                    cond=[NAME, LOAD]),
    "a1_regimes": dict(title="where the idea should win: long prefixes, cold joins, agent sessions",
                       cond=[NAME, LOAD, USERS]),
    "a2_traces": dict(title="real traces, replicates = disjoint windows",
                      cond=[NAME]),
    "e1_breakeven": dict(title="break-even map: oracle recall x false positives",
                         cond=[NAME, RECALL, FP, "trace.cv", "trace.fanout_size",
                               "policy.predictor.oracle_lead_s", "policy.predictor.oracle_jitter_s"]),
    # the original study's metric (mean TTFT; the btb preset sheds nothing,
    # which the admitted share column shows), per lifted assumption
    "e5_lift": dict(title="the original claim as the ratio to the best baseline, one assumption lifted at a time",
                    cond=[NAME], metric=["ttft_completed_mean_ms", "ttft_mean_ms"]),
}


def _str(v):
    """A value for a label: study_report.short's, '' for none."""
    s = study_report.short(v)
    return "" if s == "-" else s


def prepare(df, spec):
    """df with _rep (replicate id), _cond (condition label), _pol (policy
    variant label) and _fam (family: replication + predictor)."""
    params = [p for p in df.attrs.get("params", []) if p in df.columns]
    varied = [p for p in params if df[p].astype(str).nunique() > 1]
    cond = [c for c in spec["cond"] if c in df.columns]
    # a policy variant: the varied policy.* keys not naming a condition;
    # every other varied key (a window's bounds, a trace's block size)
    # belongs to the replicate or is fixed within a condition
    pol = [p for p in varied if p.startswith("policy.") and p not in cond]
    rep = [c for c in varied if c not in cond and c not in pol]
    d = df.copy()
    # the catalog holds every run's own value of every swept key, also where
    # the key does not act: a baseline (replication none) has no predictor
    # and no replication knobs, so it belongs to every value of them (as a
    # condition) and they are no part of its variant
    for c, (key, vals) in ACTS_ONLY.items():
        if c in d.columns and key in d.columns:
            d[c] = d[c].astype(object)
            d.loc[~d[key].astype(str).isin(vals), c] = np.nan
    base = d[REPL].astype(str) == "none"
    for c in d.columns:
        if (c.startswith("policy.predictor.") or c.startswith("policy.replication.")) and c != REPL:
            d[c] = d[c].astype(object)
            d.loc[base, c] = np.nan
    d["_rep"] = d[["seed"] + rep].astype(str).agg("|".join, axis=1)
    d["_pol"] = d[pol].apply(lambda r: ", ".join(f"{k.split('.')[-1]}={_str(v)}" for k, v in r.items()
                                                  if _str(v) != "" and k not in (REPL, PRED)),
                             axis=1) if pol else "all"
    d["_pol"] = d["_pol"].replace("", "default")
    repl = d[REPL].astype(str)
    pred = d[PRED].astype(str) if PRED in d.columns else pd.Series("", index=d.index)
    uses_pred = repl.isin(["speculative", "early_rdma"]) & ~pred.isin(["", "nan", "None"])
    d["_fam"] = np.where(repl == "none", "none", np.where(uses_pred, repl + "+" + pred, repl))
    d.attrs.update(df.attrs)
    d.attrs.update(cond=cond, rep=rep, pol=pol)
    return d


def cond_rows(d, key):
    """The rows of condition `key` (a dict): a row whose condition column is
    NaN (a line that did not set it) belongs to every value."""
    m = np.ones(len(d), dtype=bool)
    for c, v in key.items():
        col = d[c]
        m &= (col.astype(str) == str(v)).to_numpy() | col.isna().to_numpy()
    return d[m]


def by_rep(rows, metric):
    """{replicate: value} of one variant (the mean of duplicates, which
    are identical runs)."""
    v = pd.to_numeric(rows[metric], errors="coerce")
    return v.groupby(rows["_rep"]).mean().to_dict()


def choose(variants, metric, tune):
    """The best variant label on the tuning replicates (inf sorts last)."""
    lower = LOWER_BETTER.get(metric, True)
    best, score = None, None
    for lab, vals in sorted(variants.items()):
        t = [vals[r] for r in tune if r in vals]
        if not t:
            continue
        s = float(np.mean(t)) if lower else -float(np.mean(t))
        if score is None or s < score:
            best, score = lab, s
    return best


def compare(d, metric=HEADLINE):
    """Every comparison of d (prepared), one dict each."""
    out = []
    cond = d.attrs["cond"]
    # one comparison per condition the policies ran at (a NaN is a value:
    # the heatmap's rows have no lead time); baseline rows with a NaN
    # condition belong to every value of it (cond_rows)
    pol_rows = d[d["_fam"] != "none"]
    keys = pol_rows[cond].drop_duplicates().to_dict("records") if cond else [{}]
    for key in keys:
        rows = cond_rows(d, key)
        base = rows[rows["_fam"] == "none"]
        if base.empty:
            continue
        reps = sorted(rows["_rep"].unique())
        if len(reps) < TUNE + 2:
            continue  # too few replicates to tune and compare
        tune, held = kst.split_replicates(reps, TUNE)
        bvars = {lab: by_rep(g, metric) for lab, g in base.groupby("_pol")}
        best = choose(bvars, metric, tune)
        if best is None:
            continue
        for fam, g in rows[rows["_fam"] != "none"].groupby("_fam"):
            pvars = {lab: by_rep(x, metric) for lab, x in g.groupby("_pol")}
            comps = [("best baseline", best, choose(pvars, metric, tune))]
            # added to each deployment: the family's best variant on that
            # preset against the preset alone
            if PRESET in d.columns:
                for p, x in g.groupby(PRESET):
                    # the preset's baseline run with the routing the policy
                    # ran on (the policy added to it); where the policy's
                    # routing knobs match none of them, the preset's best
                    # variant on the tuning replicates (its own knobs tuned)
                    pb = base[base[PRESET].astype(str) == str(p)]
                    rk = [c for c in d.attrs["pol"] if c.startswith("policy.routing.")]
                    sig = x[rk].astype(str).drop_duplicates()
                    same = pb
                    if rk and len(sig) == 1:
                        same = pb[(pb[rk].astype(str) == sig.iloc[0]).all(axis=1)]
                    bl = {lab: bvars[lab] for lab in (same if len(same) else pb)["_pol"].unique()}
                    if bl:
                        pv = {lab: by_rep(y, metric) for lab, y in x.groupby("_pol")}
                        comps.append((f"added to {p}", choose(bl, metric, tune),
                                      choose(pv, metric, tune)))
            for kind, blab, plab in comps:
                if plab is None:
                    continue
                bv, pv = bvars[blab], pvars[plab]
                # a NaN (a failed run, a metric without requests) leaves its pair out
                ids = [r for r in held if r in bv and r in pv
                       and not np.isnan(bv[r]) and not np.isnan(pv[r])]
                if len(ids) < 2:
                    continue
                res = kst.compare({i: pv[i] for i in ids}, {i: bv[i] for i in ids},
                                  higher_is_better=not LOWER_BETTER.get(metric, True),
                                  margin=MARGIN, B=2000)
                res = dict(n=res.n, mean=res.mean, lo=res.t_lo, hi=res.t_hi, boot_lo=res.boot_lo,
                           boot_hi=res.boot_hi, tost_p=res.tost_p, p=res.p, verdict=_verdict(res),
                           censored=res.censored)
                prow = g[g["_pol"] == plab]
                brow = base[base["_pol"] == blab]
                held_p = prow[prow["_rep"].isin(ids)]
                held_b = brow[brow["_rep"].isin(ids)]
                r = dict(key)
                r.update(family=fam, against=kind, baseline=blab, policy=plab, metric=metric,
                         n=res["n"], base_mean=float(np.mean([bv[i] for i in ids])) if ids else np.nan,
                         pol_mean=float(np.mean([pv[i] for i in ids])) if ids else np.nan,
                         gain=res["mean"], lo=res["lo"], hi=res["hi"], boot_lo=res["boot_lo"],
                         boot_hi=res["boot_hi"], tost_p=res["tost_p"], p=res["p"],
                         verdict=res["verdict"],
                         censored=res["censored"])
                for m in ("slo_attainment", "ttft_p50_ms", "ttft_p99_ms", "goodput_rps",
                          "admitted_share", "spec.bytes_bg", "bytes_bg", "spec.unused_vram_gb_s",
                          "offered_rps"):
                    if m in d.columns:
                        r["base_" + m] = pd.to_numeric(held_b[m], errors="coerce").mean()
                        r["pol_" + m] = pd.to_numeric(held_p[m], errors="coerce").mean()
                out.append(r)
    return out


def holm_verdicts(rows):
    """Each row's verdict again with its two tests Holm-adjusted over the
    rows (one family: the cells of one map): better / worse when the
    adjusted paired t p < 0.05 (sign of the gain), equivalent when the
    adjusted TOST p < 0.05, else inconclusive. Sets verdict_holm, p_holm
    and tost_p_holm."""
    if not rows:
        return rows
    ph = kst.holm([float(r["p"]) for r in rows])
    th = kst.holm([float(r["tost_p"]) for r in rows])
    for r, a, b in zip(rows, ph, th):
        r["p_holm"], r["tost_p_holm"] = a, b
        r["verdict_holm"] = (("better" if r["gain"] > 0 else "worse") if a < kst.ALPHA
                             else "equivalent" if b < kst.ALPHA else "inconclusive")
    return rows


def predictor_points(out):
    """Where the realistic predictors sit on the break-even map: from A0's
    speculative runs on the same default workload at load x1, per
    predictor other than the oracle, the mean over its runs of
    forecast.recall, the false positives per true forecast (1 - P) / P from
    forecast.precision P (per entry and tick, as the oracle's injected false
    positives are drawn per forecast), forecast.prefix_precision (each
    distinct prefix named once), forecast.prefixes, forecast.lead_mean_s
    and forecast.placement_acc. [] without A0."""
    df = load_exp(out, "a0_load")
    if df is None or PRED not in df.columns:
        return []
    d = df[(df[REPL].astype(str) == "speculative") & (df[PRED].astype(str) != "oracle")]
    if LOAD in d.columns:
        d = d[pd.to_numeric(d[LOAD], errors="coerce") == 1]
    pts = []
    for pred, g in d.groupby(PRED):
        m = {k: pd.to_numeric(g[k], errors="coerce").mean() if k in g.columns else np.nan
             for k in ("forecast.recall", "forecast.precision", "forecast.lead_mean_s",
                       "forecast.placement_acc", "forecast.prefix_precision",
                       "forecast.prefixes")}
        prec = m["forecast.precision"]
        pts.append(dict(predictor=str(pred), recall=m["forecast.recall"], precision=prec,
                        fp_rate=(1 - prec) / prec if prec and prec > 0 else np.inf,
                        lead_s=m["forecast.lead_mean_s"], placement=m["forecast.placement_acc"],
                        prefix_precision=m["forecast.prefix_precision"],
                        prefixes=m["forecast.prefixes"], runs=len(g)))
    return pts


def _verdict(c):
    """kvsim_stats' verdict, except where every pair is censored: both
    sides shed past the percentile in every replicate, so the metric cannot
    tell them apart (say so rather than 'equivalent')."""
    if c.censored == c.n and all(g == 0 for g in c.gains):
        return "both +inf"
    return c.verdict


def variant_compare(d, key, ref, cond, metric=HEADLINE, fam=None):
    """Paired comparisons of each value of `key` against `ref` within one
    family (e.g. transfer policies within speculative), per condition, over
    every replicate (nothing is chosen, so nothing is held out)."""
    out = []
    rows = d if fam is None else d[d["_fam"] == fam]
    if key not in rows.columns:
        return out
    cond = [c for c in cond if c in rows.columns]
    for ckey, g in (rows.groupby(cond, dropna=False) if cond else [((), rows)]):
        ckey = ckey if isinstance(ckey, tuple) else (ckey,)
        base = by_rep(g[g[key].astype(str) == ref], metric)
        for v, x in g[g[key].astype(str) != ref].groupby(key):
            pv = by_rep(x, metric)
            ids = [r for r in sorted(base) if r in pv and not np.isnan(base[r]) and not np.isnan(pv[r])]
            if len(ids) < 2:
                continue
            c = kst.compare({i: pv[i] for i in ids}, {i: base[i] for i in ids},
                            higher_is_better=not LOWER_BETTER.get(metric, True), margin=MARGIN, B=2000)
            r = dict(zip(cond, ckey))
            lab = "" if metric == HEADLINE else f" [{metric}]"
            r.update(family=f"{key.split('.')[-2]}={v}{lab}", against=f"{key.split('.')[-2]}={ref}",
                     baseline=ref, policy=str(v), metric=metric, n=c.n,
                     base_mean=float(np.mean([base[i] for i in ids])),
                     pol_mean=float(np.mean([pv[i] for i in ids])), gain=c.mean, lo=c.t_lo,
                     hi=c.t_hi, boot_lo=c.boot_lo, boot_hi=c.boot_hi, tost_p=c.tost_p,
                     verdict=_verdict(c), censored=c.censored)
            out.append(r)
    return out


def pct(v):
    return "-" if v is None or not np.isfinite(v) else "%+.1f%%" % (100 * v)


def ms(v):
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    return "inf" if np.isinf(v) else "%.0f" % v


def table_md(rows, cond, metric=HEADLINE):
    m = metric.replace("_ms", "").replace("ttft_", "")
    cols = cond + ["family", "against", "n", f"baseline {m}", f"policy {m}", "gain [95% CI]",
                   "verdict", "attainment b -> p"]
    lines = ["| " + " | ".join(c.split(".")[-1] if "." in c else c for c in cols) + " |",
             "|" + "---|" * len(cols)]
    for r in rows:
        cells = [_str(r.get(c)) for c in cond]
        cells += [r["family"], f"{r['against']} ({r['baseline']})" if r["against"] == "best baseline"
                  else r["against"], str(r["n"]), ms(r["base_mean"]), ms(r["pol_mean"]),
                  f"{pct(r['gain'])} [{pct(r['lo'])}, {pct(r['hi'])}]"
                  + (f" ({r['censored']} censored)" if r["censored"] else ""),
                  r["verdict"],
                  "%s -> %s" % (pct(r.get("base_slo_attainment", np.nan))[1:],
                                pct(r.get("pol_slo_attainment", np.nan))[1:])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# The seed's two claims, tested directly: each compares variants within a
# family (nothing is tuned, every replicate reported) and the families
# against replication none.
CLAIMS = {
    "e3_interference": dict(
        title="claim 1: copies in link idle time cost the foreground less than immediate or "
              "rate-capped copies",
        cond=[NAME, "network.bg_share"], key="policy.transfer.name", ref="immediate",
        fam="speculative+oracle", metrics=["ttft_p95_ms", "ttft_nospec_p95_ms"]),
    "e4_vram": dict(
        title="claim 2: replicas' VRAM displaces useful cache under memory pressure",
        cond=["gpu.name", LOAD], key=None),
}


def own_hit_rate(h5):
    """Prompt tokens served from KV other than speculative copies, over
    prompt tokens (the hits replicas can displace)."""
    q = kr.read_requests(h5)
    inp = float(q["input_tokens"].sum())
    own = float((q["tok_local"] + q["tok_peer"] + q["tok_host"] - q["tok_spec_hit"]).sum())
    return own / inp if inp else np.nan


def present(out, table, md, level="##"):
    """(exp, spec, catalog frame) of each experiment of `table` that this
    study has; a heading for each in md, and a line for an absent one."""
    for exp, spec in table.items():
        df = load_exp(out, exp)
        md.append(f"{level} {exp}: {spec['title']}")
        if df is None:
            md += ["", "absent from this study (no catalog).", ""]
        else:
            yield exp, spec, df


def capacity(out):
    """Markdown lines: per workload, each policy's capacity at the SLO
    (a3_capacity's `capacity` table: the highest load meeting the target,
    per seed) paired with the best fair baseline's, chosen on the tuning
    seeds; where a family was searched under several variants (a tuning
    line's knobs), its variant best on the tuning seeds, as elsewhere. A
    search that failed even at the lowest load, or passed at the highest,
    keeps that bound as its value and is counted."""
    import sqlite3
    md = ["## a3_capacity: capacity at the SLO", ""]
    cat = os.path.join(out, "a3_capacity", "catalog.sqlite")
    if not os.path.exists(cat):
        return md + ["absent from this study (no catalog).", ""], []
    with sqlite3.connect(cat) as db:
        t = pd.read_sql("select * from capacity", db)
    if t.empty:
        return md + ["no capacity search ended.", ""], []
    # a search that failed at the lowest load has no value: it keeps that
    # bound (its bracket's hi), as the docstring says
    lo_fails = (t["verdict"] == "lo_fails") & t["value"].isna()
    t.loc[lo_fails, "value"] = t.loc[lo_fails, "hi"]
    kv = t["params"].str.split(" ").apply(lambda xs: dict(x.split("=", 1) for x in xs if "=" in x))
    t["workload"] = kv.apply(lambda d: d.get(NAME, ""))
    t["preset"] = kv.apply(lambda d: d.get(PRESET, ""))
    t["family"] = kv.apply(lambda d: "none" if d.get(REPL) == "none"
                           else d.get(REPL, "") + "+" + d.get(PRED, ""))
    # a variant: the other policy.* keys of the search (a tuning line's
    # knobs), chosen per family and preset on the tuning seeds as elsewhere
    t["variant"] = kv.apply(lambda d: ", ".join(f"{k.split('.')[-1]}={v}" for k, v in sorted(d.items())
                                               if k.startswith("policy.") and
                                               k not in (PRESET, REPL, PRED)) or "default")
    first = t.iloc[0]
    md += [f"Highest `{first['key']}` with `{first['metric']}` >= {first['target']:g}, per seed "
           f"(bisection in log space; a search that fails at the lowest load keeps it as its value, "
           f"one that passes at the highest keeps that). Pairs: the policy against the best fair "
           f"baseline chosen on {TUNE} tuning seeds.", "",
           "| workload | family | preset | n | baseline (preset) | capacity, baseline | capacity, "
           "policy | gain [95% CI] | verdict | searches at a bound (policy / baseline) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for wl, g in t.groupby("workload"):
        reps = sorted(g["seed"].astype(str).unique())
        if len(reps) < TUNE + 2:
            continue
        tune, held = kst.split_replicates(reps, TUNE)
        allv = {k: dict(zip(x["seed"].astype(str), x["value"]))
                for k, x in g.groupby(["family", "preset", "variant"])}

        def tuned(k):  # mean capacity on the tuning seeds (higher is better)
            v = [allv[k][r] for r in tune if r in allv[k]]
            return np.mean(v) if v else -np.inf
        val, chosen = {}, {}
        for k in sorted(allv):  # each (family, preset): its best variant, first on ties
            fp = k[:2]
            if fp not in val or tuned(k) > tuned(chosen[fp]):
                val[fp], chosen[fp] = allv[k], k
        base = {k: v for k, v in val.items() if k[0] == "none"}
        best = max(base, key=lambda k: tuned(chosen[k]))
        for k, v in sorted(val.items()):
            if k[0] == "none":
                continue
            ids = [r for r in held if r in v and r in base[best]]
            if len(ids) < 2:
                continue
            c = kst.compare({i: v[i] for i in ids}, {i: base[best][i] for i in ids},
                            higher_is_better=True, margin=MARGIN, B=2000)
            def at_bound(fp):
                fam, pre, var = chosen[fp]
                return int((g[(g["family"] == fam) & (g["preset"] == pre) & (g["variant"] == var)]
                            ["verdict"] != "bracketed").sum())
            bound = f"{at_bound(k)} / {at_bound(best)}"
            r = dict(experiment="a3_capacity", workload=wl, family=k[0], preset=k[1], n=c.n,
                     policy=chosen[k][2],
                     baseline=best[1], base_mean=np.mean([base[best][i] for i in ids]),
                     pol_mean=np.mean([v[i] for i in ids]), gain=c.mean, lo=c.t_lo, hi=c.t_hi,
                     verdict=_verdict(c), metric="capacity")
            rows.append(r)
            md.append(f"| {wl} | {k[0]} | {k[1]} ({chosen[k][2]}) | {c.n} | {best[1]} | {r['base_mean']:.3g} | "
                      f"{r['pol_mean']:.3g} | {pct(c.mean)} [{pct(c.t_lo)}, {pct(c.t_hi)}] | "
                      f"{r['verdict']} | {bound} |")
    return md + [""], rows


# The route hint (issue: "offer the hint as a score as well as an
# override, and report copying with and without each"): within one family
# and preset, each mode (score: the deployment's router decides, counting
# replicas as holders; off) against the override (requests of a replicated
# prefix sent to its least busy warm instance) at equal values of every
# other tuned knob, paired over every replicate (nothing chosen). A tuning
# variant that was not run with the override has nothing to pair with.
HINT = "policy.replication.spec_route_hint"


def route_hint(out, prepared=None):
    """Markdown lines and rows: the hint's modes against override, per
    condition, preset and other knobs of the experiments that swept it.
    prepared: {exp: prepare()'s frame} already made (answer() passes its
    own, so the catalogs are not read twice); others are loaded here."""
    md, allrows = ["## The route hint: as a score, or off, against the override", ""], []
    for exp in ("a0_load", "a1_regimes"):
        d = (prepared or {}).get(exp)
        if d is None:
            df = load_exp(out, exp)
            d = None if df is None else prepare(df, ANSWER_EXPERIMENTS[exp])
        if d is None or HINT not in d.columns:
            continue
        d = d[d["_fam"].astype(str).str.startswith("speculative+")]
        knobs = [p for p in d.attrs["pol"] if p not in (HINT, PRESET, REPL, PRED)]
        cond = list(d.attrs["cond"]) + [PRESET] + knobs
        rows = []
        for fam in sorted(d["_fam"].unique()):
            for r in variant_compare(d, HINT, "override", cond, HEADLINE, fam):
                r.update(experiment=exp, family=f"spec_route_hint={r['policy']} ({fam})",
                         against="spec_route_hint=override")
                rows.append(r)
        if rows:
            md += [f"### {exp}", "", table_md(rows, cond), ""]
        allrows += rows
    return md, allrows


def claims(out, fig):
    import answer_figures as af
    md, allrows = ["## The seed's two claims, tested directly", ""], []
    for exp, spec, df in present(out, CLAIMS, md, "###"):
        d = prepare(df, dict(cond=spec["cond"]))
        rows = compare(d)
        for m in spec.get("metrics", []):
            rows += variant_compare(d, spec["key"], spec["ref"], spec["cond"], m, spec["fam"])
        for r in rows:
            r["experiment"] = exp
        allrows += rows
        md += ["", table_md(rows, d.attrs["cond"]), ""]
        if spec.get("key"):
            p = af.fig_regimes(rows, os.path.join(fig, f"answer_claim_{exp}.png"), spec["title"],
                               against=f"{spec['key'].split('.')[-2]}={spec['ref']}",
                               cond=spec["cond"])
        else:
            d["_own_hit"] = [own_hit_rate(h) for h in d["h5_path"]]
            t = d.groupby(d.attrs["cond"] + ["_fam"], dropna=False).agg(
                runs=("_own_hit", "size"), own_hit=("_own_hit", "mean"),
                hit=("hit_rate_tokens", "mean"), unused=("spec.unused_vram_gb_s", "mean"),
                p95=(HEADLINE, "median")).reset_index()
            md += ["Own-cache hit rate (prompt tokens served from KV other than replicas) beside "
                   "the total, per GPU, load and family (means over replicates; p95: median):", "",
                   "```\n" + t.to_string(index=False, float_format="%.4g") + "\n```", ""]
            p = af.fig_regimes(rows, os.path.join(fig, f"answer_claim_{exp}.png"), spec["title"],
                               cond=spec["cond"])
        if p:
            md += [f"![{exp}](fig/{os.path.basename(p)})", ""]
    return allrows, md


def load_exp(out, exp):
    cat = os.path.join(out, exp, "catalog.sqlite")
    if not os.path.exists(cat):
        return None
    df = kr.load(os.path.join(out, exp))
    # the swept columns, and the keys ACTS_ONLY reads (the catalog holds
    # every resolved key; the report works on what was swept)
    extra = [k for k in df.attrs.get("keys", []) if k not in df.attrs.get("params", [])
             and k not in {w for w, _ in ACTS_ONLY.values()}]
    attrs = dict(df.attrs)
    df = df.drop(columns=[k for k in extra if k in df.columns])
    df.attrs.update(attrs)
    return df if len(df) else None


def answer(out, figdir=None):
    """Writes ANSWER.md, answer.csv and the figures; returns the comparison
    rows (list of dicts) and the markdown text."""
    import answer_figures as af
    af.PREDICTORS = []  # set by the e1 part, where E1 and A0 are present
    allrows, md = [], ["# The answer: paired, replicated, over offered requests", "",
                       __doc__.split("Definitions")[1].split('"""')[0].strip(), ""]
    fig = os.path.join(out, "fig")
    os.makedirs(fig, exist_ok=True)
    prepared = {}  # exp -> its prepared frame, which route_hint reads again
    for exp, spec, df in present(out, ANSWER_EXPERIMENTS, md):
        d = prepared[exp] = prepare(df, spec)
        metric = next((m for m in spec.get("metric", [HEADLINE]) if m in d.columns), HEADLINE)
        rows = compare(d, metric)
        for r in rows:
            r["experiment"] = exp
        allrows += rows
        ns = sorted({r["n"] for r in rows})
        md += ["", f"Metric: `{metric}`. Replicates per comparison: {TUNE} tuning, "
                   f"{'/'.join(map(str, ns)) or 0} held out; equivalence margin {MARGIN:.0%}.", ""]
        md.append(table_md(rows, d.attrs["cond"], metric))
        md.append("")
        if exp == "e1_breakeven":
            cells = [r for r in rows if r["against"] == "best baseline"
                     and r["family"] == "speculative+oracle" and str(r.get(NAME)) == "heatmap"]
            holm_verdicts(cells)
            af.PREDICTORS = predictor_points(out)
            nb = sum(r["verdict_holm"] in ("better", "worse") for r in cells)
            ne = sum(r["verdict_holm"] == "equivalent" for r in cells)
            md += [f"Break-even map, Holm-adjusted over its {len(cells)} cells (paired t for a "
                   f"difference, TOST for equivalence): {nb} cells differ, {ne} are equivalent "
                   f"within {MARGIN:.0%}, {len(cells) - nb - ne} inconclusive.", ""]
            for pt in af.PREDICTORS:
                md += [f"- `{pt['predictor']}` on the same workload (A0, load x1, {pt['runs']} runs): "
                       f"recall {pt['recall']:.2f}, precision {pt['precision']:.2f} "
                       f"({pt['fp_rate']:.2f} false positives per true forecast), mean lead "
                       f"{pt['lead_s']:.1f} s, placement accuracy {pt['placement']:.2f}; "
                       f"per distinct prefix named (each once, however many ticks name it), "
                       f"{pt['prefix_precision']:.2f} of {pt['prefixes']:.0f} a run come true."]
            md.append("")
        for name, path in af.draw(exp, d, rows, fig).items():
            md += [f"![{name}](fig/{os.path.basename(path)})", ""]
    p = af.fig_headline(allrows, os.path.join(fig, "answer_headline.png"))
    if p:
        md[4:4] = ["![headline](fig/answer_headline.png)", ""]
    cmd, rows = capacity(out)
    allrows += rows
    md += cmd
    rows, cmd = claims(out, fig)
    allrows += rows
    md += cmd
    cmd, rows = route_hint(out, prepared)
    allrows += rows
    md += cmd
    import breakeven_model
    md += breakeven_model.section(out)
    # the realistic predictors' measured accuracy (predictor_points), one
    # row per measure: against 'measured', the value in pol_mean
    for pt in af.PREDICTORS:
        for k in ("recall", "precision", "fp_rate", "prefix_precision", "prefixes", "lead_s",
                  "placement"):
            allrows.append(dict(experiment="e1_breakeven", family="speculative+" + pt["predictor"],
                                against="measured", metric="forecast." + k, n=pt["runs"],
                                pol_mean=pt[k], **{LOAD: 1.0}))
    pd.DataFrame(allrows).to_csv(os.path.join(out, "answer.csv"), index=False)
    text = "\n".join(md) + "\n"
    with open(os.path.join(out, "ANSWER.md"), "w") as f:
        f.write(text)
    if figdir:
        import shutil
        os.makedirs(figdir, exist_ok=True)
        for p in sorted(os.listdir(fig)):
            if p.startswith("answer_"):
                shutil.copy(os.path.join(fig, p), figdir)
    return allrows, text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--figures")
    a = ap.parse_args()
    rows, _ = answer(a.out, a.figures)
    print(f"study_answer: {len(rows)} comparisons -> {a.out}/ANSWER.md, answer.csv")


if __name__ == "__main__":
    main()
