#!/usr/bin/python3
"""The study's report and figures from its results directory alone.

  study_report.py OUT [--figures DIR]

Reads OUT/study.json and the kvsim sweep results under OUT (e1_breakeven,
e2_traces, e3_interference, e4_vram, e5_lift: catalog.sqlite + runs/*.h5;
no kvsim is run) and writes OUT/REPORT.md and OUT/fig/*.png:
  breakeven.png  E1: p95 TTFT gain of speculative replication over its
                 best baseline (same seed, same other parameters) across
                 oracle recall x false-positive rate, contour where it is 0
  pareto.png     E1+E2: TTFT p95 against VRAM-seconds wasted and against
                 background bytes, one point per configuration
  ttft_cdf.png   E2: TTFT CDF and tail (1 - CDF) per policy on one trace
  traces.png     E2: mean and p95 TTFT per trace and policy, 95% CI
  lift.png       E5: mean TTFT of the published variant, each assumption
                 lifted alone, and all lifted
An experiment that is absent or skipped is named in the report, which goes
on without it. --figures DIR also copies the headline figures there.
Means are over seeds, with the half-width of the 95% Student t CI."""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvsim_results as kr  # noqa: E402
import kvsim_style as ks  # noqa: E402

EXPERIMENTS = [
    ("e1_breakeven", "E1 break-even map"),
    ("e2_traces", "E2 real traces"),
    ("e3_interference", "E3 interference"),
    ("e4_vram", "E4 VRAM pressure"),
    ("e5_lift", "E5 the original claim, lifted one assumption at a time"),
]
# Summary metrics each table shows, where the catalog has them.
TABLE_METRICS = ["ttft_mean_ms", "ttft_p95_ms", "ttft_p99_ms", "spec.unused_vram_gb_s",
                 "spec.bytes_bg", "spec.fg_slowdown_mean_s", "hit_rate_blocks",
                 "forecast.precision", "forecast.recall", "forecast.placement_acc",
                 "forecast.lead_mean_s"]
REPL = "policy.replication.name"
PRED = "policy.predictor.name"
RECALL = "policy.predictor.oracle_recall"
FP = "policy.predictor.oracle_fp_rate"
TRACE = "trace.path"
# Parameters that name a policy (a curve, a bar); the others are conditions.
POLICY_COLS = [REPL, PRED, "policy.routing.name", "policy.preset", "policy.transfer.name"]
HEADLINE = ["breakeven.png", "pareto.png", "ttft_cdf.png", "traces.png", "lift.png"]
LIFT_METRIC = "ttft_mean_ms"


def fmt(v):
    """A number as the report prints it (the test reads it back)."""
    return "nan" if v is None or not np.isfinite(v) else "%.6g" % v


def varied(df):
    """The parameters that take more than one value in df."""
    return [p for p in df.attrs["params"] if p in df.columns and df[p].astype(str).nunique() > 1]


def short(v):
    """A parameter value for a label (a trace path by its file name)."""
    if isinstance(v, (float, np.floating)):
        return "%g" % v
    s = str(v)
    return os.path.basename(s) if "/" in s else s


def policy_label(row, cols):
    return ", ".join(short(row[c]) for c in cols) if cols else "all runs"


def seeds_of(df):
    return df["seed"].nunique() if "seed" in df.columns else 0


def load_study(out):
    p = os.path.join(out, "study.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        return json.load(f)


def load_experiments(out, study):
    """{exp: DataFrame or None} and {exp: why it is missing}."""
    data, why = {}, {}
    meta = study.get("experiments", {})
    for exp, _ in EXPERIMENTS:
        skipped = (meta.get(exp) or {}).get("skipped")
        cat = os.path.join(out, exp, "catalog.sqlite")
        if skipped:
            data[exp], why[exp] = None, "skipped: " + str(skipped)
        elif not os.path.exists(cat):
            data[exp], why[exp] = None, "absent (no %s/catalog.sqlite)" % exp
        else:
            df = kr.load(os.path.join(out, exp))
            data[exp] = df if len(df) else None
            if df.empty:
                why[exp] = "no done runs in its catalog"
    return data, why


# ---- tables -----------------------------------------------------------------

def exp_table(df):
    """Markdown table: one row per configuration (the varied parameters but
    the seed), mean +- 95% CI over its seeds for each metric present."""
    by = [p for p in varied(df) if p != "seed"]
    mets = [m for m in TABLE_METRICS if m in df.columns]
    key = by or ["_all"]
    d = df.assign(_all="all") if not by else df
    head = [short(p) for p in by] + ["seeds"] + mets
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    # one pass over the groups (NaN kept: a parameter a sweep line left
    # unset is NaN, and NaN keys cannot be looked up in an index)
    for kt, g in kr.groups(d, key):
        cells = [short(v) for v in kt] if by else []
        cells.append(str(len(g)))
        for m in mets:
            r = kr.mean_ci(g, key, m).iloc[0]
            cells.append(fmt(r["mean"]) + ("" if not np.isfinite(r["ci"]) else " ± " + fmt(r["ci"])))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def forecast_table(frames):
    """Measured forecast precision/recall beside the oracle's injected recall:
    one row per experiment, predictor and (for the oracle) injected recall
    and FP rate, mean ± 95% CI over the runs there."""
    head = ["experiment", "predictor", "injected recall", "injected FP rate",
            "forecast.precision", "forecast.recall", "runs"]
    lines = []
    for exp, df in frames.items():
        if df is None or "forecast.recall" not in df.columns:
            continue
        d = df[pd.to_numeric(df["forecast.recall"], errors="coerce").notna()]
        if PRED in d.columns:
            d = d[d[PRED].astype(str) != "none"]
        if REPL in d.columns:  # no replication: nothing asks the predictor
            d = d[d[REPL].astype(str) != "none"]
        # a catalog has a column for what its sweep varied only: a swept
        # oracle_recall with no predictor column means the oracle ran
        oracle = (d[PRED].astype(str) == "oracle") if PRED in d.columns else \
            pd.Series(RECALL in d.columns, index=d.index)
        d = d.assign(**{c: d[c] if c in d.columns else "?" for c in (PRED, RECALL, FP)})
        if PRED not in df.columns and RECALL in df.columns:
            d[PRED] = "oracle"
        # the injected error means something only to the oracle
        d.loc[~oracle, RECALL] = "-"
        d.loc[~oracle, FP] = "-"
        d[RECALL], d[FP] = d[RECALL].astype(str), d[FP].astype(str)
        by = [PRED, RECALL, FP]
        stats = [kr.mean_ci(d, by, m) if m in d.columns else None
                 for m in ("forecast.precision", "forecast.recall")]
        for i, row in stats[1].iterrows():
            cells = [exp] + [short(_num_or(row[c])) for c in by]
            for st in stats:
                cells.append("-" if st is None else fmt(st.iloc[i]["mean"]) +
                             ("" if not np.isfinite(st.iloc[i]["ci"]) else " ± " + fmt(st.iloc[i]["ci"])))
            cells.append(str(int(row["n"])))
            lines.append("| " + " | ".join(cells) + " |")
    if not lines:
        return None
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + lines)


def _num_or(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


# ---- figures ----------------------------------------------------------------

def oracle_rows(df):
    """Runs whose recall and FP axes mean something: the oracle predictor's
    (and the baselines', which ignore the predictor)."""
    if PRED not in df.columns:
        return df
    return df[(df[PRED].astype(str) == "oracle") | (df[REPL].astype(str) == "none")]


def fig_breakeven(df, study, path):
    """Heatmap of the mean p95 TTFT gain (%) over recall x FP rate."""
    if df is None or not {RECALL, FP, REPL} <= set(df.columns) or "ttft_p95_ms" not in df:
        return None, "E1 lacks oracle recall, FP rate or TTFT p95 columns"
    pg = kr.pair_gain(oracle_rows(df), "ttft_p95_ms")
    if pg.empty:
        return None, "E1 has no speculative run with a baseline of the same seed"
    extra = [k for k in pg.attrs["pair_keys"] if k not in (RECALL, FP)]
    facet = extra[0] if extra else None
    panels = sorted(pg[facet].unique(), key=str)[:6] if facet else [None]
    fig, axes = ks.figure(ncols=len(panels), squeeze=False, sharey=True)
    rs, fs = sorted(pg[RECALL].unique()), sorted(pg[FP].unique())
    lim = max(1.0, float(np.nanmax(np.abs(pg["gain_pct"]))))
    for ax, val in zip(axes[0], panels):
        d = pg if facet is None else pg[pg[facet] == val]
        z = d.groupby([FP, RECALL])["gain_pct"].mean().unstack(RECALL).reindex(index=fs, columns=rs)
        im = ax.imshow(z.to_numpy(), origin="lower", cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
        for (i, j), v in np.ndenumerate(z.to_numpy()):
            if np.isfinite(v):
                ax.text(j, i, "%+.1f" % v, ha="center", va="center", fontsize=7,
                        color="w" if abs(v) > 0.6 * lim else "k")
        if len(rs) > 1 and len(fs) > 1 and np.nanmin(z.to_numpy()) < 0 < np.nanmax(z.to_numpy()):
            ax.contour(np.arange(len(rs)), np.arange(len(fs)), z.to_numpy(), levels=[0],
                       colors="k", linewidths=1.5)
        ax.set_xticks(range(len(rs)), ["%g" % r for r in rs])
        ax.set_yticks(range(len(fs)), ["%g" % f for f in fs])
        ax.set_xlabel("oracle recall (share of hot prefixes forecast)")
        ax.grid(False)
        if facet:
            ax.set_title("%s = %s" % (facet, short(val)))
    axes[0][0].set_ylabel("oracle false-positive rate (false entries per true one)")
    fig.colorbar(im, ax=list(axes[0]), label="p95 TTFT gain over best baseline (%)")
    rest = extra[1:]
    fig.suptitle("Where speculative replication pays: p95 TTFT gain (>0 pays; black line: gain 0)")
    ks.add_caption(fig, ks.caption(study, "e1_breakeven", seeds_of(df),
                                   "mean over seeds of (baseline - speculative) / baseline"
                                   + ("; averaged over " + ", ".join(rest) if rest else "")))
    return ks.save(fig, path), None


def pareto_mask(pts):
    """True for the points no other point beats in every coordinate (all
    minimised) while being strictly better in one."""
    pts = np.asarray(pts, dtype=float)
    keep = np.ones(len(pts), dtype=bool)
    for i, p in enumerate(pts):
        dom = np.all(pts <= p, axis=1) & np.any(pts < p, axis=1)
        keep[i] = not dom.any()
    return keep


def config_means(df, exp, mets):
    """Per configuration (the varied parameters but the seed): the mean of
    each of mets over its seeds, and of the p95 TTFT relative to the best
    baseline of the same seed and conditions (1 for the baselines), which
    stays comparable across traces and loads where the raw p95 does not."""
    pg = kr.pair_gain(df, "ttft_p95_ms")
    rel = pd.Series(np.nan, index=df.index)
    rel[df[REPL].astype(str) == "none"] = 1.0
    ratio = dict(zip(pg["id"], pd.to_numeric(pg["ttft_p95_ms"]) / pg["base_ttft_p95_ms"]))
    rel = rel.fillna(df["id"].map(ratio))
    d = df.assign(rel_p95=rel)
    by = [p for p in varied(d) if p != "seed"] or ["_all"]
    d = d.assign(_all="all") if by == ["_all"] else d
    m = d.groupby(by[0] if len(by) == 1 else by, sort=True, dropna=False)[mets + ["rel_p95"]] \
        .mean(numeric_only=True).reset_index()
    m["policy"] = m[REPL].astype(str) if REPL in m.columns else "all"
    m["exp"] = exp
    return m


def fig_pareto(frames, study, path):
    mets = ["ttft_p95_ms", "spec.unused_vram_gb_s", "spec.bytes_bg"]
    parts = [config_means(df, exp, mets) for exp, df in frames.items()
             if df is not None and set(mets) | {REPL} <= set(df.columns)]
    if not parts:
        return None, "neither E1 nor E2 has TTFT p95, VRAM-seconds, background bytes and policies"
    y = "rel_p95"
    m = pd.concat(parts, ignore_index=True).dropna(subset=[y] + mets[1:])
    m["front"] = pareto_mask(m[[y] + mets[1:]].to_numpy())
    fig, axes = ks.figure(ncols=2, sharey=True)
    marks = {"e1_breakeven": "o", "e2_traces": "s"}
    black, clear = (0, 0, 0, 1), (0, 0, 0, 0)
    for ax, x, xl, scale in [(axes[0], "spec.unused_vram_gb_s",
                              "VRAM-seconds held by unused replicas (GB·s)", 1.0),
                             (axes[1], "spec.bytes_bg", "background copy bytes (GB)", 1e-9)]:
        for (exp, pol), d in m.groupby(["exp", "policy"], sort=True):
            ax.scatter(d[x] * scale, d[y], s=np.where(d["front"], 46, 18),
                       marker=marks.get(exp, "^"), color=ks.color(pol),
                       edgecolors=[black if f else clear for f in d["front"]], alpha=0.85,
                       label="%s (%s)" % (pol, exp.split("_")[0].upper()))
        # this panel's own front: the configurations no cheaper one beats
        f = m.sort_values([x, y])
        f = f[f[y] < f[y].cummin().shift(fill_value=np.inf)]
        ax.step(f[x] * scale, f[y], where="post", color="k", lw=0.8, alpha=0.6)
        ax.axhline(1.0, color="k", lw=0.6, ls=":")
        ax.set_xlabel(xl)
        ax.set_xlim(left=-0.03 * max(1e-12, float(m[x].max() * scale)))
    axes[0].set_ylabel("TTFT p95 / best baseline's (same seed and conditions)")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    fig.suptitle("What the gain costs, per configuration (below 1: faster than the best baseline;\n"
                 "black edge: on the 3-D Pareto front; line: each panel's front)")
    ks.add_caption(fig, ks.caption(study, "e1_breakeven + e2_traces",
                                   "/".join(str(seeds_of(df)) for df in frames.values() if df is not None),
                                   "means over seeds; E1 circles, E2 squares"))
    return ks.save(fig, path), None


def policy_cols(df):
    return [c for c in POLICY_COLS if c in varied(df)]

def trace_cols(df):
    """What names a trace: trace.path where it varies, else the varied
    trace.* parameters (generated traffic under several settings)."""
    v = varied(df)
    return [TRACE] if TRACE in v else [p for p in v if p.startswith("trace.")]


def trace_labels(df):
    cols = trace_cols(df)
    if not cols:
        return pd.Series(["default"] * len(df), index=df.index)
    return pd.Series([", ".join(short(r[c]) if c == TRACE else "%s=%s" % (c[6:], short(r[c]))
                                for c in cols) for _, r in df.iterrows()], index=df.index)


def pick_trace(df):
    """The trace the CDF shows: the one with the most runs (then by name)."""
    c = trace_labels(df).value_counts()
    return sorted(c[c == c.max()].index)[0]


def fig_cdf(df, study, path):
    if df is None:
        return None, "E2 is missing"
    tr = pick_trace(df)
    d = df[trace_labels(df) == tr]
    cols = policy_cols(d)
    fig, (a1, a2) = ks.figure(ncols=2)
    curves = []  # [ttft sorted, names, colour key]; identical runs share a curve
    for key, g in (kr.groups(d, cols) if cols else [(("all runs",), d)]):
        t = np.concatenate([q.loc[q["status"] == 0, "ttft_ns"].to_numpy()
                            for q in map(kr.read_requests, g["h5_path"])]) / 1e6
        t = np.sort(t[t > 0])
        if not t.size:
            continue
        name = ", ".join(short(k) for k in key)
        for c in curves:  # a predictor the policy never asks gives the same runs
            if c[0].size == t.size and np.array_equal(c[0], t):
                c[1].append(name)
                break
        else:
            curves.append([t, [name], short(key[0])])
    styles, used = ["-", "--", ":", "-."], {}
    for t, names, ck in curves:
        y = np.arange(1, t.size + 1) / t.size
        ls = styles[used.get(ck, 0) % 4]
        used[ck] = used.get(ck, 0) + 1
        lab = names[0] if len(names) == 1 else "%s (= %s)" % (names[0], "; ".join(names[1:]))
        lab += " (p99 %.0f ms)" % np.percentile(t, 99)
        a1.step(t, y, where="post", color=ks.color(ck), ls=ls, label=lab)
        a2.step(t, 1 - y + 1.0 / t.size, where="post", color=ks.color(ck), ls=ls)
    drawn = len(curves)
    if not drawn:
        plt_close(fig)
        return None, "E2 has no completed request"
    for a in (a1, a2):
        ks.log_time_axis(a, "x", "time to first token")
    a1.set_ylabel("fraction of requests (CDF)")
    a1.set_ylim(0, 1.01)
    a2.set_yscale("log")
    a2.set_ylabel("fraction of requests slower (1 - CDF, log)")
    a1.set_title("TTFT distribution")
    a2.set_title("the tail")
    # under the panels, so that no curve is hidden
    fig.tight_layout()
    fig.legend(*a1.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=2, fontsize=7, frameon=False)
    ks.add_caption(fig, ks.caption(study, "e2_traces", seeds_of(d),
                                   "trace %s; completed requests pooled over seeds" % tr))
    return ks.save(fig, path), None


def plt_close(fig):
    import matplotlib.pyplot as plt
    plt.close(fig)


def fig_traces(df, study, path):
    if df is None:
        return None, "E2 is missing"
    cols = policy_cols(df)
    d = df.assign(_trace=trace_labels(df))
    d = d.assign(_pol=[policy_label(r, cols) for _, r in d.iterrows()])
    traces, pols = sorted(d["_trace"].unique()), sorted(d["_pol"].unique())
    mets = [m for m in ("ttft_mean_ms", "ttft_p95_ms") if m in d.columns]
    fig, axes = ks.figure(ncols=len(mets), squeeze=False)
    w = 0.8 / max(1, len(pols))
    # colour: the first policy column; hatch: the rest, within one colour
    first = [p.split(", ")[0] for p in pols]
    hatch = [["", "//", "..", "xx", "\\\\"][first[:j].count(first[j]) % 5] for j in range(len(pols))]
    for ax, m in zip(axes[0], mets):
        s = kr.mean_ci(d, ["_trace", "_pol"], m).set_index(["_trace", "_pol"])
        for j, p in enumerate(pols):
            vals = [s.loc[(t, p)] if (t, p) in s.index else None for t in traces]
            x = np.arange(len(traces)) + (j - (len(pols) - 1) / 2) * w
            mean = [v["mean"] if v is not None else np.nan for v in vals]
            ci = [v["ci"] if v is not None and np.isfinite(v["ci"]) else 0 for v in vals]
            ax.bar(x, mean, w, yerr=ci, capsize=2, color=ks.color(p.split(", ")[0]),
                   edgecolor="k", linewidth=0.3, label=p, hatch=hatch[j])
        ax.set_xticks(range(len(traces)), traces, rotation=20, ha="right")
        ax.set_ylabel(m.replace("_ms", "").replace("_", " ").replace("ttft", "TTFT") + " (ms)")
        ax.grid(axis="x", visible=False)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("TTFT per trace and policy (bars: mean over seeds, whiskers: 95% CI)")
    fig.tight_layout()
    ks.add_caption(fig, ks.caption(study, "e2_traces", seeds_of(df)))
    return ks.save(fig, path), None


def lift_switches():
    """{key: (lifted value, description)} from btb_table.SWITCHES, the one
    list of the preset btb's compatibility switches."""
    import btb_table
    out = {}
    for desc, sets in btb_table.SWITCHES:
        for kv in sets:
            k, v = kv.split("=", 1)
            out[k] = (v, desc)
    return out


def lift_variants(df):
    """Each run's variant label from the switch parameters (varied, not a
    policy, trace or seed) whose value differs from the published (btb)
    variant's. A switch of btb_table.SWITCHES is lifted where it holds its
    lifting value (kvsim's default); another parameter's published value is
    its most common one (each switch is lifted only in its own variant and
    in 'all lifted'). A lift that matches one switch is named by it."""
    known = lift_switches()
    sw = [p for p in varied(df) if p not in POLICY_COLS + [TRACE, "seed"]]
    mode = {p: df[p].dropna().astype(str).mode().iloc[0] for p in sw}

    def lifted(p, v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return False  # a sweep that did not set it ran the preset's value
        return str(v) == known[p][0] if p in known else str(v) != mode[p]

    labels = []
    for _, r in df.iterrows():
        diff = [p for p in sw if lifted(p, r[p])]
        descs = {known[p][1] for p in diff if p in known}
        if not diff:
            labels.append("published (btb)")
        elif len(diff) == len(sw) and len(sw) > 1:
            labels.append("all lifted")
        elif len(descs) == 1 and all(p in known for p in diff):
            labels.append("lift " + descs.pop())
        else:
            labels.append("lift " + ", ".join("%s=%s" % (p, short(r[p])) for p in diff))
    return labels


def fig_lift(df, study, path):
    if df is None or LIFT_METRIC not in df.columns:
        return None, "E5 is missing"
    d = df.assign(_var=lift_variants(df))
    cols = [c for c in policy_cols(d) if c != "policy.preset"]
    groups = list(kr.groups(d, cols)) if cols else [(("all",), d)]
    fig, axes = ks.figure(ncols=min(3, len(groups)), squeeze=False, sharey=True)
    for ax, (key, g) in zip(axes[0], groups):
        s = kr.mean_ci(g, "_var", LIFT_METRIC).set_index("_var")
        if "published (btb)" not in s.index:
            continue
        order = ["published (btb)"] + sorted(v for v in s.index if v.startswith("lift ")) + \
            (["all lifted"] if "all lifted" in s.index else [])
        pub = s.loc["published (btb)", "mean"]
        for i, v in enumerate(order):
            mean, ci = s.loc[v, "mean"], s.loc[v, "ci"]
            ci = ci if np.isfinite(ci) else 0
            if v.startswith("lift "):
                ax.bar(i, mean - pub, 0.7, bottom=pub, yerr=ci, capsize=2,
                       color="#D55E00" if mean > pub else "#009E73", edgecolor="k", lw=0.3)
            else:
                ax.bar(i, mean, 0.7, yerr=ci, capsize=2, color="#777777", edgecolor="k", lw=0.3)
            ax.text(i, max(mean, pub if v.startswith("lift ") else mean) + ci, "%.0f" % mean,
                    ha="center", va="bottom", fontsize=7)
        ax.axhline(pub, color="k", lw=0.6, ls=":")
        ax.set_xticks(range(len(order)), [v.replace("lift ", "lifted: ") for v in order], rotation=30,
                      ha="right", fontsize=7)
        ax.set_title(", ".join(short(k) for k in key))
        ax.grid(axis="x", visible=False)
    axes[0][0].set_ylabel("mean TTFT (ms)")
    fig.suptitle("The published claim, one assumption lifted at a time "
                 "(floating bars: change from published; red: slower)")
    ks.add_caption(fig, ks.caption(study, "e5_lift", seeds_of(df), "whiskers: 95% CI over seeds"))
    return ks.save(fig, path), None


# ---- the report -------------------------------------------------------------

def write_report(out, figdir):
    study = load_study(out)
    data, why = load_experiments(out, study)
    os.makedirs(figdir, exist_ok=True)
    ks.apply()
    figs, failed = {}, []

    def draw(name, fn, *args):
        # one figure that fails leaves the others and the report standing
        try:
            figs[name] = fn(*args, os.path.join(figdir, name))
        except Exception as e:  # noqa: BLE001 - reported, and the exit status says so
            figs[name] = (None, "failed: %s: %s" % (type(e).__name__, e))
            failed.append(name)

    draw("breakeven.png", fig_breakeven, data["e1_breakeven"], study)
    draw("pareto.png", fig_pareto, {k: data[k] for k in ("e1_breakeven", "e2_traces")}, study)
    draw("ttft_cdf.png", fig_cdf, data["e2_traces"], study)
    draw("traces.png", fig_traces, data["e2_traces"], study)
    draw("lift.png", fig_lift, data["e5_lift"], study)
    rel = os.path.relpath(figdir, out)
    md = ["# When does predictive speculative KV replication pay?", "",
          "Study size `%s`, revision `%s`. Generated by `analysis/study_report.py` from the "
          "catalogs under this directory alone; every number is the mean over seeds "
          "± the half-width of its 95%% Student t CI (none for one seed)." %
          (study.get("size", "?"), study.get("revision", "?")), ""]
    md += ["## Experiments", ""]
    for exp, title in EXPERIMENTS:
        df = data[exp]
        md.append("- **%s** (`%s`): %s" % (title, exp, why.get(exp) if df is None else
                                             "%d runs, %d seeds" % (len(df), seeds_of(df))))
    md.append("")
    md += ["## Figures", ""]
    for name in HEADLINE:
        p, reason = figs[name]
        md.append("![%s](%s/%s)" % (name, rel, name) if p else "- `%s` not drawn: %s" % (name, reason))
        md.append("")
    fc = forecast_table(data)
    if fc:
        md += ["## Forecast accuracy", "",
               "Measured precision and recall of the hot-prefix forecasts beside the oracle's "
               "injected recall (`%s`)." % RECALL, "", fc, ""]
    for exp, title in EXPERIMENTS:
        df = data[exp]
        md += ["## %s" % title, ""]
        if df is None:
            md += ["Not in this study: %s." % why.get(exp), ""]
            continue
        cmds = (study.get("experiments", {}).get(exp) or {}).get("commands") or []
        if cmds:
            md += ["```sh"] + [str(c) for c in cmds] + ["```", ""]
        md += ["<!-- table %s -->" % exp, exp_table(df), ""]
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(md))
    return path, figs, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", metavar="OUT", help="the study's results directory")
    ap.add_argument("--figures", metavar="DIR", help="also copy the headline figures here")
    a = ap.parse_args()
    if not os.path.isdir(a.out):
        sys.exit("study_report.py: %s: no such directory" % a.out)
    path, figs, failed = write_report(a.out, os.path.join(a.out, "fig"))
    if a.figures:
        os.makedirs(a.figures, exist_ok=True)
        for name in HEADLINE:
            if figs[name][0]:
                shutil.copy(figs[name][0], os.path.join(a.figures, name))
    for name in HEADLINE:
        if not figs[name][0]:
            print("study_report.py: %s not drawn: %s" % (name, figs[name][1]), file=sys.stderr)
    print(path)
    if failed:
        sys.exit("study_report.py: %s failed (the report says why)" % ", ".join(failed))


if __name__ == "__main__":
    main()
