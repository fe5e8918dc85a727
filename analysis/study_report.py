#!/usr/bin/python3
"""The study's report and figures from its results directory alone.

  study_report.py OUT [--figures DIR]

Reads OUT/study.json and the kvsim sweep results under OUT (e1_breakeven,
e2_traces, e3_interference, e4_vram, e5_lift, e6_disagg, e7_staleness,
e8_oracle_gap: catalog.sqlite + runs/*.h5;
no kvsim is run) and writes OUT/REPORT.md and OUT/fig/*.png:
  breakeven.png  E1: p95 TTFT gain of speculative replication across
                 oracle recall x false-positive rate (experiment.name
                 heatmap*), contour where it is 0: top, the best speculative
                 preset against the best fair baseline of the seed (any
                 preset with replication none); bottom, speculation added
                 to each preset against that preset alone
  axes.png       E1's other panels (gamma: trace.cv, fanout:
                 trace.fanout_size, the link scenarios by name): gain over
                 the same preset's none per preset, dashed the best fair
                 comparison, 95% CI whiskers
  pareto.png     E1+E2: TTFT p95 against VRAM-seconds wasted and against
                 background bytes, one point per configuration
  ttft_cdf.png   E2: TTFT CDF and tail (1 - CDF) per policy on the trace
                 where the policies' p95 differ the most
  traces.png     E2: p95 TTFT per trace (one panel each) and policy family,
                 95% CI, clipped CIs marked
  staleness.png, staleness_mooncake.png  E7 on the default experiment and on
                 the Mooncake conversation trace: p95 TTFT and misrouted share against the event delay,
                 one line per event loss, a column per index (exact, Bloom
                 at each false-positive rate) and replication policy
  oracle_gap.png E8: per trace and policy, the block hit rate missing to
                 the unlimited-copy oracle bound, stacked as network,
                 misprediction and rest (analysis/oracle_gap.py)
  lift.png       E5: pooled mean TTFT of the published variant (btb), each
                 assumption lifted alone (lift_*) and all lifted (all_off),
                 per policy, by experiment.name
Under each figure REPORT.md says what it shows, with the key numbers
computed from the catalog; the tables follow the figures.
An experiment that is absent or skipped is named in the report, which goes
on without it. --figures DIR also copies the headline figures there, and
answer.csv, from which analysis/answer_text.py writes the READMEs' answer.
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
    ("e6_disagg", "E6 speculative replication under prefill/decode disaggregation"),
    ("e7_staleness", "E7 TTFT and decision quality vs index staleness"),
    ("e8_oracle_gap", "E8 each policy's gap to the oracle bound on the real traces"),
]
# Summary metrics each table shows, where the catalog has them: the TTFT
# quantiles and SLO attainment over offered requests (a shed or unfinished
# request is a miss, +inf TTFT), the means over completed ones.
TABLE_METRICS = ["admitted_share", "ttft_p95_ms", "ttft_p99_ms", "slo_attainment",
                 "ttft_completed_mean_ms", "ttft_nospec_mean_ms",
                 "spec.unused_vram_gb_s",
                 "spec.bytes_bg", "spec.fg_slowdown_mean_s", "hit_rate_blocks",
                 "forecast.precision", "forecast.prefix_precision", "forecast.recall",
                 "forecast.placement_acc", "forecast.lead_mean_s"]
REPL = "policy.replication.name"
BOUND_PLACE = "bound.place_hit_rate_blocks"
PRED = "policy.predictor.name"
RECALL = "policy.predictor.oracle_recall"
FP = "policy.predictor.oracle_fp_rate"
TRACE = "trace.path"
NAME = "experiment.name"
PRESET = "policy.preset"
# Parameters that name a policy (a curve, a bar); the others are conditions.
POLICY_COLS = [REPL, PRED, "policy.routing.name", "policy.preset", "policy.transfer.name"]
HEADLINE = ["breakeven.png", "axes.png", "pareto.png", "ttft_cdf.png", "traces.png", "lift.png",
            "disagg.png", "staleness.png", "staleness_mooncake.png", "oracle_gap.png"]
# E7's swept keys and its decision metrics (view.*: the routing index's).
DELAY = "policy.routing.event_delay_ms"
LOSS = "policy.routing.event_loss"
INDEX = "policy.routing.index"
INDEX_FPR = "policy.routing.index_fpr"
MISROUTED = "view.misrouted_share"
# One colour per event loss, in increasing order (Okabe-Ito, colour-blind safe).
LOSS_COLORS = ["#0072B2", "#E69F00", "#D55E00", "#009E73", "#CC79A7", "#56B4E9"]


def fmt(v):
    """A number as the report prints it, to 4 significant figures ('-' for
    none or NaN, 'inf' for a TTFT quantile that reaches a request never
    served; the test reads it back): 12060 rather than 1.206e+04."""
    if v is not None and np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v is None or not np.isfinite(v):
        return "-"
    s = "%.4g" % v
    return "%.0f" % float(s) if "e+" in s and abs(v) < 1e9 else s


def varied(df):
    """The parameters that take more than one value in df."""
    return [p for p in df.attrs["params"] if p in df.columns and df[p].astype(str).nunique() > 1]


def short(v):
    """A parameter value for a label (a trace path by its file name)."""
    if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)) or str(v) in ("None", "?"):
        return "-"
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
            df = kr.load(os.path.join(out, exp), keys=False)  # the swept columns only
            # a catalog keeps the rows of points an older revision ran and
            # the current grid no longer names (a new config key changes
            # every point's id): only the study's own revision counts
            rev = str(study.get("revision") or "").split("-")[0]
            if rev and "git_rev" in df.columns:
                own = df["git_rev"].astype(str).str.startswith(rev)
                if own.any() and not own.all():
                    attrs = dict(df.attrs)
                    df = df[own].copy()
                    df.attrs.update(attrs)
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
            "forecast.precision", "forecast.prefix_precision", "forecast.recall", "runs"]
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
                 for m in ("forecast.precision", "forecast.prefix_precision", "forecast.recall")]
        for i, row in stats[-1].iterrows():  # recall: never NaN here
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


def with_defaults(df):
    """df with the columns a small sweep may lack: experiment.name (one
    panel, 'heatmap') and policy.preset ('none', kvsim's default)."""
    add = {c: v for c, v in ((NAME, "heatmap"), (PRESET, "none")) if c not in df.columns}
    d = df.assign(**add) if add else df.copy()
    d.attrs.update(df.attrs)
    d[PRESET] = d[PRESET].astype(str)
    return d


def nice_ceil(v):
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above v (a colour limit)."""
    if not np.isfinite(v) or v <= 0:
        return 1.0
    e = 10.0 ** np.floor(np.log10(v))
    return float(next(k * e for k in (1, 2, 2.5, 5, 10) if k * e >= v * (1 - 1e-12)))


def ci_text(mean, ci, unit="%"):
    """'+3.2% (95% CI -1.0..+7.4)' or, with one seed, '+3.2% (one seed)'."""
    s = "%+.3g%s" % (mean, unit)
    return s + (" (95%% CI %+.3g..%+.3g)" % (mean - ci, mean + ci) if np.isfinite(ci) else " (one seed)")


def heatmap_panels(df):
    """The recall x FP-rate grids of E1: [(title, rows)], one per
    experiment.name starting with 'heatmap' and value of any other
    parameter its speculative rows vary (the trace CV of
    heatmap_100g_gamma)."""
    d = with_defaults(oracle_rows(df))
    d = d[d[NAME].astype(str).str.startswith("heatmap")]
    out = []
    for (name,), g in kr.groups(d, [NAME]):
        sp = g[g[REPL].astype(str) != "none"]
        extra = [p for p in varied(sp) if p not in (NAME, PRESET, REPL, PRED, RECALL, FP, "seed")]
        if not extra:
            out.append((str(name), g))
            continue
        for key, sub in kr.groups(sp, extra):
            cond = ", ".join("%s=%s" % (short(p), short(v)) for p, v in zip(extra, key))
            keep = np.ones(len(g), dtype=bool)
            for p, v in zip(extra, key):  # the baselines of these conditions
                keep &= (g[p].astype(str) == str(v)).to_numpy()
            out.append(("%s, %s" % (name, cond), g[keep]))
    return out


def heatmap_gains(g):
    """[(label, mean_ci frame over RECALL x FP)] of one heatmap panel: the
    best speculative run of each cell against the best replication-none
    run of the seed (any preset), then speculation on each preset against
    that preset's own none."""
    spec = (g[REPL].astype(str) != "none").to_numpy()
    none = ~spec
    res = [("vs best fair baseline", spec, kr.best_gain(g, "ttft_p95_ms", [RECALL, FP], spec, none))]
    for p in sorted(g.loc[spec, PRESET].unique()):
        on = (g[PRESET] == p).to_numpy()
        res.append(("speculation added to %s" % p, spec & on,
                    kr.best_gain(g, "ttft_p95_ms", [RECALL, FP], spec & on, none & on)))
    return [(lab, kr.mean_ci(r, [RECALL, FP], "gain_pct"), bound_share(g, mask))
            for lab, mask, r in res if len(r)]


def bound_share(g, mask):
    """{(recall, FP rate): mean over seeds of hit_rate_blocks /
    bound.place_hit_rate_blocks} of the run a cell shows per seed: the
    lowest p95 TTFT among the rows of mask (the best speculative preset, or
    the one preset of the panel); {} when the runs carry no bound
    (output.oracle_bound off)."""
    if not {"hit_rate_blocks", BOUND_PLACE} <= set(g.columns):
        return {}
    d = g[mask].assign(_share=pd.to_numeric(g["hit_rate_blocks"], errors="coerce") /
                       pd.to_numeric(g[BOUND_PLACE], errors="coerce"),
                       _p95=pd.to_numeric(g["ttft_p95_ms"], errors="coerce"))
    d = d[np.isfinite(d["_share"]) & np.isfinite(d["_p95"])]
    if d.empty:
        return {}
    best = d.loc[d.groupby([RECALL, FP, "seed"], dropna=False)["_p95"].idxmin()]
    return {k: float(v) for k, v in best.groupby([RECALL, FP])["_share"].mean().items()}


def fig_breakeven(df, study, path):
    """Heatmaps of the mean p95 TTFT gain (%) over recall x FP rate: the
    first row against the best fair baseline, the second speculation added
    to each preset against that preset alone."""
    if df is None or not {RECALL, FP, REPL} <= set(df.columns) or "ttft_p95_ms" not in df:
        return None, "E1 lacks oracle recall, FP rate or TTFT p95 columns", ""
    panels = [(t, heatmap_gains(g)) for t, g in heatmap_panels(df)]
    panels = [(t, gs) for t, gs in panels if gs]
    if not panels:
        return None, "E1 has no heatmap panel with a speculative run and a baseline of its seed", ""
    top = [(t, gs[0]) for t, gs in panels]
    bottom = [(t, x) for t, gs in panels for x in gs[1:]]
    ncols = max(len(top), len(bottom), 1)
    nrows = 2 if bottom else 1
    fig, axes = ks.figure(ncols=ncols, nrows=nrows, squeeze=False,
                          figsize=(max(5.5, 3.3 * ncols + 1.2), 3.4 * nrows + 0.8))
    fig.subplots_adjust(hspace=0.5, wspace=0.3)
    allv = np.concatenate([x[1]["mean"].to_numpy() for _, x in top + bottom])
    # the colour scale spans the finite gains; a side that shed requests
    # (+-inf: a p95 past a request never served) takes the end colour
    fin = np.abs(allv[np.isfinite(allv)])
    lim = nice_ceil(float(fin.max())) if fin.size else 1.0
    im = None
    for r, row in enumerate([top, bottom][:nrows]):
        for c in range(ncols):
            ax = axes[r][c]
            if c >= len(row):
                ax.set_visible(False)
                continue
            title, (lab, st, share) = row[c]
            rs, fs = sorted(st[RECALL].unique()), sorted(st[FP].unique())
            z = st.set_index([FP, RECALL])["mean"].unstack(RECALL).reindex(index=fs, columns=rs).to_numpy()
            im = ax.imshow(z, origin="lower", cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
            for (i, j), v in np.ndenumerate(z):
                if np.isfinite(v):
                    b = share.get((rs[j], fs[i]))
                    ax.text(j, i, "%+.1f" % v + ("" if b is None else "\n%.0f%% bd" % (100 * b)),
                            ha="center", va="center", fontsize=7 if b is None else 6,
                            color="w" if abs(v) > 0.6 * lim else "k")
            if len(rs) > 1 and len(fs) > 1 and np.isfinite(z).any() and \
                    np.nanmin(z) < 0 < np.nanmax(z):
                ax.contour(np.arange(len(rs)), np.arange(len(fs)), z, levels=[0],
                           colors="k", linewidths=1.5)
            ax.set_xticks(range(len(rs)), ["%g" % x for x in rs])
            ax.set_yticks(range(len(fs)), ["%g" % x for x in fs])
            ax.set_xlabel("oracle recall")
            ax.grid(False)
            ax.set_title("%s: %s" % (title, lab), fontsize=8)
            if c == 0:
                ax.set_ylabel("oracle false-positive rate\n(false entries per true one)")
    fig.colorbar(im, ax=[a for row in axes for a in row if a.get_visible()],
                 label="p95 TTFT gain (%, >0: speculation faster)")
    # a cell whose both sides shed requests past the p95 (+inf each) has no
    # gain (NaN); a panel of only such cells has no best cell
    best = max(top, key=lambda x: x[1][1]["mean"].max(skipna=True) if
               x[1][1]["mean"].notna().any() else -np.inf)
    st, shares = best[1][1], best[1][2]
    if st["mean"].notna().any():
        b = st.loc[st["mean"].idxmax()]
    else:
        b = None
    pays = bool((st["mean"] > 0).any()) or any((x[1][1]["mean"] > 0).any() for x in top)
    head = ("Where speculative replication pays: p95 TTFT gain (black line: gain 0)" if pays else
            "Speculative replication pays nowhere here: p95 TTFT gain <= 0 in every cell")
    fig.suptitle(head + "\ntop: best speculative preset vs best fair baseline of the seed; "
                 "bottom: speculation added to one preset vs that preset alone" +
                 ("\nsecond line of a cell: the share of the oracle bound's block hit rate that "
                  "policy reaches (hit_rate_blocks / bound.place_hit_rate_blocks, % bd)"
                  if shares else ""), fontsize=9)
    ks.add_caption(fig, ks.caption(study, "e1_breakeven", seeds_of(df),
                                   "mean over seeds of (baseline - speculative) / baseline; "
                                   "colour scale +-%g%%" % lim))
    if b is None:
        fair = ("No cell compares against the best fair baseline (%s): in every one both "
                "sides' p95 TTFT reaches a request never served (inf)." % best[0])
    else:
        fair = ("The best cell against the best fair baseline (%s) is recall %g, FP rate %g: %s over %d seeds; "
                "%d of %d cells are > 0, %d with the whole CI above 0." %
                (best[0], b[RECALL], b[FP], ci_text(b["mean"], b["ci"]), int(b["n"]),
                 int((st["mean"] > 0).sum()), len(st), int((st["lo"] > 0).sum())))
    if not pays:
        fair += " No cell pays against the best fair baseline: speculation is slower everywhere here."
    if shares and b is not None:
        sv = [v for _, (_, _, sh) in top for v in sh.values()]
        fair += (" That cell's speculative runs reach %.3g%% of the oracle bound's block hit "
                 "rate (bound.place_hit_rate_blocks); over the top row's cells the share runs "
                 "from %.3g%% to %.3g%%." % (100 * shares.get((b[RECALL], b[FP]), np.nan),
                                           100 * min(sv), 100 * max(sv)))
    own = []
    for t, (lab, st2, _) in bottom:
        if not st2["mean"].notna().any():
            own.append("%s (%s): no cell compares, both sides' p95 TTFT reaching a request "
                       "never served (inf) in every one" % (lab, t))
            continue
        r2 = st2.loc[st2["mean"].idxmax()]
        own.append("%s (%s): at best %s at recall %g, FP rate %g, %d of %d cells > 0" %
                   (lab, t, ci_text(r2["mean"], r2["ci"]), r2[RECALL], r2[FP],
                    int((st2["mean"] > 0).sum()), len(st2)))
    text = fair + ((" " + "; ".join(own) + ".") if own else "")
    return ks.save(fig, path), None, text


def axis_panels(df):
    """E1's one-dimensional panels: [(title, x column, rows, x order)]. An
    experiment.name (not a heatmap) whose rows vary a condition is its own
    panel along it (trace.cv for gamma, trace.fanout_size for fanout); the
    names that vary none (the link scenarios) share one panel along the
    name, in catalog order."""
    if NAME not in df.columns:
        return []
    d = with_defaults(df)
    d = d[~d[NAME].astype(str).str.startswith("heatmap")]
    out, flat = [], []
    for name in pd.unique(d[NAME].astype(str)):
        g = d[d[NAME].astype(str) == name]
        cond = [p for p in varied(g) if p not in POLICY_COLS + [NAME, RECALL, FP, "seed"]]
        if cond:
            out.append((name, cond[0], g, sorted(g[cond[0]].unique())))
        else:
            flat.append(name)
    if flat:
        g = d[d[NAME].astype(str).isin(flat)]
        out.append(("links" if len(flat) > 1 else flat[0], NAME, g, flat))
    return out


def legend_title_caption(fig, ax, ncol, title, caption, top=None):
    """The figure's finish: ax's legend below the panels (ncol columns), the
    title above, the layout tightened (the panels below `top`, a fraction
    of the height, where given), the caption under it all."""
    h, lab = ax.get_legend_handles_labels()
    fig.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol(len(lab)),
               fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(**({"rect": (0, 0, 1, top)} if top else {}))
    ks.add_caption(fig, caption)


def fig_axes(df, study, path):
    """p95 TTFT gain of speculative over the same preset's none along each
    of E1's other axes, one series per preset, and (dashed) the best
    speculative preset against the best fair baseline."""
    if df is None or "ttft_p95_ms" not in df.columns:
        return None, "E1 is missing", ""
    panels = axis_panels(df)
    if not panels:
        return None, "E1 has no gamma, fanout or link panel (experiment.name)", ""
    fig, axes = ks.figure(ncols=len(panels), squeeze=False, sharey=True)
    best_txt, best, means = [], None, []
    for ax, (title, x, g, order) in zip(axes[0], panels):
        spec = (g[REPL].astype(str) != "none").to_numpy()
        pos = {v: i for i, v in enumerate(order)}
        presets = sorted(g.loc[spec, PRESET].unique())
        w = 0.5 / max(1, len(presets))
        for k, p in enumerate(presets):
            on = (g[PRESET] == p).to_numpy()
            st = kr.mean_ci(kr.best_gain(g, "ttft_p95_ms", [x], spec & on, ~spec & on, match=[x]),
                            [x], "gain_pct")
            xs = np.array([pos[v] for v in st[x]]) + (k - (len(presets) - 1) / 2) * w
            ax.errorbar(xs, st["mean"], yerr=st["ci"].fillna(0), marker="o", ms=4, capsize=2,
                        lw=1, color=ks.color(p), label=p)
            means += list(st["mean"])
            for _, r in st.iterrows():
                if not np.isnan(r["mean"]) and (best is None or r["mean"] > best[0]):
                    best = (r["mean"], r["ci"], p, title, r[x], int(r["n"]))
        st = kr.mean_ci(kr.best_gain(g, "ttft_p95_ms", [x], spec, ~spec, match=[x]), [x], "gain_pct")
        means += list(st["mean"])
        ax.errorbar(np.array([pos[v] for v in st[x]]) + 0.3, st["mean"], yerr=st["ci"].fillna(0), ls="--", color="k",
                    marker="s", ms=3, capsize=2, lw=1.2, label="best spec vs best fair baseline")
        if st["mean"].notna().any():  # NaN everywhere: both sides' p95 +inf
            r = st.loc[st["mean"].idxmax()]
            best_txt.append("%s: at best %s at %s = %s" % (title, ci_text(r["mean"], r["ci"]),
                                                           short(x), short(r[x])))
        ax.axhline(0, color="k", lw=0.6, ls=":")
        ax.set_xticks(range(len(order)), [short(v) for v in order],
                      rotation=20 if x == NAME else 0)
        ax.set_xlabel("link scenario" if x == NAME else short(x))
        ax.set_title(title)
    # the means set the scale; a 2-seed CI (t = 12.7) would flatten them
    fin = [v for v in means + [0.0] if np.isfinite(v)]  # +-inf: a side never served its p95
    lo, hi = min(fin), max(fin)
    pad = max(5.0, 0.4 * (hi - lo))
    axes[0][0].set_ylim(lo - pad, hi + pad)
    axes[0][0].set_ylabel("p95 TTFT gain of speculative (%)")
    legend_title_caption(fig, axes[0][0], lambda n: min(6, n),
                         "Speculation along E1's other axes: gain over the same preset without "
                         "it (>0 pays; whiskers: 95% CI over seeds)",
                         ks.caption(study, "e1_breakeven", seeds_of(df),
                                    "oracle predictor at its default recall and FP rate; "
                                    "whiskers past the panel are cut at its edge"))
    text = ""
    if best is not None:
        text = ("The largest gain of speculation over its own preset is %s for %s (%s, %s), over %d seeds. "
                % (ci_text(best[0], best[1]), best[2], best[3], short(best[4]), best[5]))
    text += "Against the best fair baseline: " + "; ".join(best_txt) + "."
    return ks.save(fig, path), None, text


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
        return None, "neither E1 nor E2 has TTFT p95, VRAM-seconds, background bytes and policies", ""
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
    f = m[m["front"]]
    b = m.loc[m[y].idxmin()]
    text = ("%d of %d configurations are on the 3-D Pareto front. The lowest p95 relative to the best "
            "baseline of its seed is %.3g (%s, %s), at %s GB·s of unused replica VRAM and %s GB "
            "of background copies (means over seeds)." %
            (len(f), len(m), b[y], b["policy"], b["exp"], fmt(b["spec.unused_vram_gb_s"]),
             fmt(b["spec.bytes_bg"] / 1e9)))
    return ks.save(fig, path), None, text


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


# Short names of the study's traces, by file name (E2's panels).
TRACE_NAMES = [("conversation_trace", "mooncake conv"), ("synthetic_trace", "mooncake synth"),
               ("toolagent_trace", "mooncake tool"), ("Trace_code", "azure code"),
               ("Trace_conv", "azure conv"), ("chunk-", "servegen")]
REPL_SHORT = {"speculative": "spec", "reactive_hotspot": "reactive", "early_rdma": "early"}


def trace_short(v):
    """A trace path by a short name (mooncake conv, bursted-art 00, ...)."""
    s = str(v)
    if v is None or s in ("None", "nan", ""):
        return "default experiment"  # no trace.path: the built-in generated traffic
    base = os.path.basename(s)
    if "bursted_art" in s and base.startswith("test_"):
        return "bursted-art " + base[5:].split(".")[0]
    for pat, name in TRACE_NAMES:
        if pat in base:
            return name
    return base.split(".")[0]


def short_trace_labels(df):
    """trace_labels with trace paths by their short names."""
    if TRACE in trace_cols(df):
        return df[TRACE].map(trace_short)
    return trace_labels(df)


def family_label(row):
    """A policy's short label: replication / the preset (with none) or the
    predictor (with a replication that asks one): none/vllm, spec/oracle."""
    def val(c):
        v = row.get(c)
        return None if v is None or (isinstance(v, float) and np.isnan(v)) or str(v) in ("None", "nan") \
            else str(v)
    repl = val(REPL) or "none"
    if repl == "none":
        return "none/" + (val(PRESET) if val(PRESET) not in (None, "none") else "default")
    return REPL_SHORT.get(repl, repl) + "/" + (val(PRED) or val(PRESET) or "default")


def family_labels(df):
    return pd.Series([family_label(r) for _, r in df.iterrows()], index=df.index, dtype=object)


def pick_trace(df):
    """The trace the CDF shows: the one where the policies' mean p95 TTFT
    differ the most relative to the fastest ((max - min) / min; then by
    name); the one with the most runs when the catalog has no p95."""
    lab = short_trace_labels(df)
    if "ttft_p95_ms" not in df.columns:
        c = lab.value_counts()
        return sorted(c[c == c.max()].index)[0], float("nan")
    st = kr.mean_ci(df.assign(_t=lab, _p=family_labels(df)), ["_t", "_p"], "ttft_p95_ms")
    spread = st.groupby("_t")["mean"].agg(lambda m: (m.max() - m.min()) / m.min() if m.min() > 0 else 0)
    top = spread.max()
    return sorted(spread[spread == top].index)[0], float(top)


def fig_cdf(df, study, path):
    if df is None:
        return None, "E2 is missing", ""
    tr, spread = pick_trace(df)
    d = df[short_trace_labels(df) == tr]
    d = d.assign(_p=family_labels(d))
    fig, (a1, a2) = ks.figure(ncols=2)
    curves = []  # [ttft sorted, names, colour key]; identical runs share a curve
    for (name,), g in kr.groups(d, ["_p"]):
        t = np.concatenate([q.loc[q["status"] == 0, "ttft_ns"].to_numpy()
                            for q in map(kr.read_requests, g["h5_path"])]) / 1e6
        t = np.sort(t[t > 0])
        if not t.size:
            continue
        for c in curves:  # a predictor the policy never asks gives the same runs
            if c[0].size == t.size and np.array_equal(c[0], t):
                c[1].append(name)
                break
        else:
            curves.append([t, [name], str(name).split("/")[0]])
    styles, used = ["-", "--", ":", "-."], {}
    for t, names, ck in curves:
        y = np.arange(1, t.size + 1) / t.size
        ls = styles[used.get(ck, 0) % 4]
        used[ck] = used.get(ck, 0) + 1
        lab = names[0] if len(names) == 1 else "%s (= %s)" % (names[0], ", ".join(names[1:]))
        lab += " (p99 %.0f ms)" % np.percentile(t, 99)
        col = ks.color({"spec": "speculative", "early": "early_rdma",
                        "reactive": "reactive_hotspot"}.get(ck, names[0].split("/")[-1]
                                                             if ck == "none" else ck))
        a1.step(t, y, where="post", color=col, ls=ls, label=lab)
        a2.step(t, 1 - y + 1.0 / t.size, where="post", color=col, ls=ls)
    if not curves:
        plt_close(fig)
        return None, "E2 has no completed request", ""
    for a in (a1, a2):
        ks.log_time_axis(a, "x", "time to first token")
    a1.set_ylabel("fraction of requests (CDF)")
    a1.set_ylim(0, 1.01)
    a2.set_yscale("log")
    a2.set_ylabel("fraction of requests slower (1 - CDF, log)")
    a1.set_title("TTFT distribution: %s" % tr)
    a2.set_title("the tail")
    fig.tight_layout()
    fig.legend(*a1.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=2, fontsize=7, frameon=False)
    ks.add_caption(fig, ks.caption(study, "e2_traces", seeds_of(d),
                                   "trace %s (where the policies' p95 differ the most); completed "
                                   "requests pooled over seeds" % tr))
    p99 = sorted((np.percentile(t, 99), n[0]) for t, n, _ in curves)
    gap = ("the slowest %.3g%% above the fastest" % (100 * spread) if np.isfinite(spread) else
           "the slowest's p95 reaching a request it never served")
    text = ("The CDF shows %s, the E2 trace where the policies' mean p95 TTFT differ the most "
            "(%s). Pooled p99 TTFT of completed requests ranges from %s ms (%s) to "
            "%s ms (%s)." % (tr, gap, fmt(p99[0][0]), p99[0][1], fmt(p99[-1][0]), p99[-1][1]))
    return ks.save(fig, path), None, text


def plt_close(fig):
    import matplotlib.pyplot as plt
    plt.close(fig)


def fig_traces(df, study, path, metric="ttft_p95_ms", exp="e2_traces", labels=None):
    """Small multiples: one panel per trace, a horizontal bar per policy
    family (mean over seeds of the p95 TTFT) with its 95% CI; a CI that
    leaves the panel is clipped at its edge and marked by an arrow.
    labels: the bars' label per row (default family_labels)."""
    if df is None or metric not in df.columns:
        return None, "%s is missing" % exp.split("_")[0].upper(), ""
    d = df.assign(_trace=short_trace_labels(df), _pol=(labels or family_labels)(df))
    traces = sorted(d["_trace"].unique())
    pols = sorted(d["_pol"].unique(), key=lambda p: (not p.startswith("none/"), p))
    st = kr.mean_ci(d, ["_trace", "_pol"], metric)
    ncols = min(3, len(traces))
    nrows = -(-len(traces) // ncols)
    fig, axes = ks.figure(ncols=ncols, nrows=nrows, squeeze=False, sharey=True,
                          figsize=(3.4 * ncols, 0.22 * len(pols) * nrows + 1.2 * nrows))
    clipped, lines = 0, []
    for k, t in enumerate(traces):
        ax = axes[k // ncols][k % ncols]
        s = st[st["_trace"] == t].set_index("_pol")
        mean = np.array([s.loc[p, "mean"] if p in s.index else np.nan for p in pols])
        ci = np.array([s.loc[p, "ci"] if p in s.index else np.nan for p in pols])
        ci = np.where(np.isfinite(ci), ci, 0.0)
        # a policy whose p95 reaches a request it never served (+inf: the
        # mooncake presets' early rejection) is a hatched bar to the edge
        inf = np.isinf(mean)
        fin = mean[np.isfinite(mean)]
        top = 1.25 * fin.max() if fin.size and fin.max() > 0 else 1.0
        y = np.arange(len(pols))
        cols = [ks.color(family_color(p)) for p in pols]
        ax.barh(y[~inf], mean[~inf], 0.7, color=[c for c, i in zip(cols, inf) if not i],
                edgecolor="k", linewidth=0.3)
        if inf.any():
            ax.barh(y[inf], top, 0.7, color=[c for c, i in zip(cols, inf) if i], hatch="//",
                    edgecolor="k", linewidth=0.3)
            for j in np.flatnonzero(inf):
                ax.text(top, y[j], "inf ", ha="right", va="center", fontsize=6)
        lo, hi = np.maximum(mean - ci, 0), np.minimum(mean + ci, top)
        ok = np.isfinite(mean)
        ax.hlines(y[ok], lo[ok], hi[ok], color="k", lw=0.8)
        for j in np.flatnonzero(ok):
            for end, cut, side in ((lo[j], mean[j] - ci[j] < 0, "<"), (hi[j], mean[j] + ci[j] > top, ">")):
                ax.plot([end], [y[j]], marker=side if cut else "|", color="k", ms=5 if cut else 4)
                clipped += int(cut)
        ax.set_xlim(0, top)
        ax.set_yticks(y, pols, fontsize=7)
        ax.set_title(t)
        ax.set_xlabel("p95 TTFT (ms)")
        ax.grid(axis="y", visible=False)
        if ok.any():
            j, i = int(np.nanargmin(mean)), int(np.nanargmax(mean))
            pm = [fmt(mean[x]) + ("" if inf[x] else " ± " + fmt(ci[x])) for x in (j, i)]
            lines.append("%s: %s fastest at %s ms, %s slowest at %s ms" %
                         (t, pols[j], pm[0], pols[i], pm[1]))
    for k in range(len(traces), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle("p95 TTFT per trace and policy (bars: mean over seeds, whiskers: 95% CI; "
                 "arrows: CI clipped at the panel's edge; hatched to the edge: inf, the p95 "
                 "reaching a request never served)", fontsize=9)
    fig.tight_layout()
    ks.add_caption(fig, ks.caption(study, exp, seeds_of(df),
                                   "%d CI ends clipped (wider than the bar's range)" % clipped))
    text = ("Per trace, the fastest and slowest policy by mean p95 TTFT (± 95%% CI over %d seeds): "
            % seeds_of(df) + "; ".join(lines) + ". %d whisker ends are clipped where the CI runs "
            "past the panel (below 0 or past 1.25 x the slowest finite bar)." % clipped)
    return ks.save(fig, path), None, text


def preset_family_labels(df):
    """E6's bar labels: the deployment (preset) and the policy family, so
    speculation on each disaggregated preset sits beside that preset alone
    and beside its aggregated (mixed) form."""
    def one(r):
        pre = r.get(PRESET)
        pre = "default" if pre is None or str(pre) in ("none", "nan", "None") else str(pre)
        fam = family_label(r)
        return pre + ": " + ("none" if fam.startswith("none/") else fam)
    return pd.Series([one(r) for _, r in df.iterrows()], index=df.index, dtype=object)


def fig_disagg(df, study, path):
    """E6: p95 TTFT per trace for each disaggregated preset with replication
    none and speculative (oracle, repeat_count), beside the mixed presets."""
    return fig_traces(df, study, path, exp="e6_disagg", labels=preset_family_labels)


def family_color(label):
    """The colour key of a family label: the preset for none/X, else the
    replication policy (E6's "PRESET: family" labels: the same, the preset
    for none)."""
    pre, sep, fam = label.partition(": ")
    if sep:
        return pre if fam == "none" else family_color(fam)
    repl, _, rest = label.partition("/")
    if repl == "none":
        return "none" if rest == "default" else rest
    return {v: k for k, v in REPL_SHORT.items()}.get(repl, repl)


def lift_descriptions():
    """{experiment.name: label} of E5's variants: btb, lift_<first key of
    each switch> by the switch's description (btb_table.SWITCHES), all_off."""
    import btb_table
    out = {"btb": "published (btb)", "all_off": "all lifted"}
    for desc, sets in btb_table.SWITCHES:
        out["lift_" + sets[0].split("=", 1)[0]] = "lifted: " + desc
    return out


def lift_policy(row):
    """E5's policy of a run: early_rdma where it replicates, else its router
    (where the sweep varied it; else 'none')."""
    r = str(row.get(REPL, "none"))
    if r not in ("none", "None", "nan"):
        return r
    route = row.get("policy.routing.name")
    return "none" if route is None or str(route) in ("None", "nan") else str(route)


def lift_table(df):
    """{policy: [(variant label, pooled mean ms, ci, requests)]} in waterfall
    order: the mean TTFT of each (policy, variant) pooled over the windows'
    completed requests, per seed, then mean ± 95% CI over seeds."""
    names = lift_descriptions()
    d = df.assign(_pol=[lift_policy(r) for _, r in df.iterrows()])
    order = ["btb"] + [n for n in names if n.startswith("lift_")] + ["all_off"]
    out = {}
    known = ["least_load", "cache_aware", "early_rdma"]  # btb_table.POLICIES' order
    for pol in known + sorted(set(d["_pol"]) - set(known)):
        g = d[d["_pol"] == pol]
        if g.empty:
            continue
        rows = []
        for v in order:
            gv = g[g[NAME].astype(str) == v]
            if gv.empty:
                continue
            per_seed = [kr.pooled_mean(x["h5_path"]) for _, x in kr.groups(gv, ["seed"])]
            ms = pd.DataFrame({"k": 0, "m": [p[0] for p in per_seed]})
            r = kr.mean_ci(ms, "k", "m").iloc[0]
            rows.append((names.get(v, v), r["mean"], r["ci"], sum(p[1] for p in per_seed)))
        if rows and rows[0][0] == names["btb"]:
            out[pol] = rows
    return out


def fig_lift(df, study, path):
    if df is None or NAME not in df.columns or "h5_path" not in df.columns:
        return None, "E5 is missing or has no experiment.name labels", ""
    tab = lift_table(df)
    if not tab:
        return None, "E5 has no btb variant", ""
    fig, axes = ks.figure(ncols=len(tab), squeeze=False, sharey=True, figsize=(3.8 * len(tab), 5.2))
    allv = [m for rows in tab.values() for _, m, _, _ in rows]
    logy = max(allv) / max(1e-9, min(allv)) > 20
    floor = min(allv) / 2 if logy else 0.0
    lines = []
    for ax, (pol, rows) in zip(axes[0], tab.items()):
        pub = rows[0][1]
        for i, (lab, m, ci, _) in enumerate(rows):
            ci0 = ci if np.isfinite(ci) else 0.0
            if lab.startswith("lifted: "):
                ax.bar(i, m - pub, 0.7, bottom=pub, color="#D55E00" if m > pub else "#009E73",
                       edgecolor="k", lw=0.3)
            else:
                ax.bar(i, m - floor, 0.7, bottom=floor, color="#777777", edgecolor="k", lw=0.3)
            if ci0:
                ax.errorbar(i, m, yerr=ci0, color="k", capsize=2, lw=0.8)
            ax.text(i, max(m, pub) * (1.06 if logy else 1.0) + ci0, "%.3g s %+.0f%%" %
                    (m / 1e3, 100 * (m - pub) / pub) if i else "%.3g s" % (m / 1e3),
                    ha="center", va="bottom", fontsize=6, rotation=90)
        ax.axhline(pub, color="k", lw=0.6, ls=":")
        if logy:
            ax.set_yscale("log")
            ax.set_ylim(floor, max(allv) * 4)  # room for the labels
        ax.set_xticks(range(len(rows)), [r[0] for r in rows], rotation=60, ha="right", fontsize=7)
        ax.set_title(pol)
        ax.grid(axis="x", visible=False)
        big = max(rows[1:-1] or rows, key=lambda r: abs(r[1] - pub))
        lines.append("%s: published %.4g s, all lifted %.4g s (%+.0f%%), the largest single lift "
                     "'%s' %.4g s (%+.0f%%)" % (pol, pub / 1e3, rows[-1][1] / 1e3,
                                                100 * (rows[-1][1] - pub) / pub, big[0][8:],
                                                big[1] / 1e3, 100 * (big[1] - pub) / pub))
    axes[0][0].set_ylabel("mean TTFT (ms%s), pooled over windows" % (", log scale" if logy else ""))
    fig.suptitle("The published claim, one assumption lifted at a time (floating bars: change "
                 "from published; red: slower, green: faster)", fontsize=9)
    wins = sorted({trace_short(v) for v in df[TRACE]}) if TRACE in df.columns else []
    ks.add_caption(fig, ks.caption(study, "e5_lift", seeds_of(df),
                                   "pooled over %s; whiskers: 95%% CI over seeds where more than one"
                                   % (", ".join(wins) or "the windows")))
    text = ("Pooled mean TTFT over %s (%d seed(s)): " % (", ".join(wins) or "the windows", seeds_of(df))
            + "; ".join(lines) + ".")
    return ks.save(fig, path), None, text


def index_label(row):
    """E7's index of a run: exact, or bloom at its false-positive rate."""
    ix = str(row.get(INDEX, "exact"))
    fpr = row.get(INDEX_FPR)
    if ix == "bloom" and fpr is not None and not (isinstance(fpr, float) and np.isnan(fpr)):
        return "bloom fpr %g" % float(fpr)
    return ix


def e7_rows(df, on_trace):
    """E7's rows on the default experiment (no trace file) or on a trace
    file (the Mooncake lines); None when there are none."""
    if df is None:
        return None
    has = df[TRACE].notna() & (df[TRACE].astype(str) != "") if TRACE in df.columns else \
        pd.Series(False, index=df.index)
    d = df[has] if on_trace else df[~has]
    if not len(d):
        return None
    d = d.copy()
    d.attrs.update(df.attrs)
    return d


def fig_staleness_default(df, study, path):
    return fig_staleness(e7_rows(df, False), study, path, "the default experiment")


def fig_staleness_mooncake(df, study, path):
    return fig_staleness(e7_rows(df, True), study, path, "the Mooncake conversation trace")


def fig_staleness(df, study, path, where="the default experiment"):
    """E7: p95 TTFT (top row) and misrouted share (bottom row) against the
    event delay, one line per event loss (mean over seeds, 95% CI), a
    column per index and replication policy."""
    if df is None:
        return None, "E7 has no runs on %s" % where, ""
    need = {DELAY, LOSS, REPL, "ttft_p95_ms", MISROUTED}
    if not need <= set(df.columns):
        return None, "E7 lacks %s" % ", ".join(sorted(need - set(df.columns))), ""
    d = df.assign(_ix=[index_label(r) for _, r in df.iterrows()], _repl=df[REPL].astype(str))
    d[DELAY] = pd.to_numeric(d[DELAY], errors="coerce")
    d[LOSS] = pd.to_numeric(d[LOSS], errors="coerce")
    cols = [(ix, r) for ix in sorted(d["_ix"].unique(), key=lambda v: (v != "exact", v))
            for r in sorted(d["_repl"].unique(), key=lambda v: (v != "none", v))]
    mets = [("ttft_p95_ms", "p95 TTFT (ms)"), (MISROUTED, "misrouted share")]
    fig, axes = ks.figure(ncols=len(cols), nrows=2, squeeze=False, sharex=True, sharey="row",
                          figsize=(max(5.0, 2.6 * len(cols) + 1.0), 5.6))
    losses = sorted(d[LOSS].dropna().unique())
    lines = []
    for c, (ix, r) in enumerate(cols):
        g = d[(d["_ix"] == ix) & (d["_repl"] == r)]
        for k, (m, lab) in enumerate(mets):
            ax = axes[k][c]
            for n, loss in enumerate(losses):
                st = kr.mean_ci(g[g[LOSS] == loss], [DELAY], m).sort_values(DELAY)
                ax.errorbar(st[DELAY], st["mean"], yerr=st["ci"].fillna(0), marker="o", ms=3,
                            capsize=2, lw=1, color=LOSS_COLORS[n % len(LOSS_COLORS)],
                            label="event loss %g" % loss)
            ax.set_xscale("symlog", linthresh=1.0)
            if k == 0:
                ax.set_title("%s, %s" % (ix, r), fontsize=8)
            else:
                ax.set_xlabel("event delay (ms)")
            if c == 0:
                ax.set_ylabel(lab)
        st = kr.mean_ci(g, [DELAY, LOSS], "ttft_p95_ms")
        ms = kr.mean_ci(g, [DELAY, LOSS], MISROUTED)
        if len(st):
            fresh = st.sort_values([DELAY, LOSS]).iloc[0]
            worst = st.loc[st["mean"].idxmax()]
            mw = ms.loc[ms["mean"].idxmax()]
            lines.append("%s with replication %s: p95 %s ms at delay %g ms, loss %g; at worst %s "
                         "ms (delay %g ms, loss %g); misrouted share at most %.3g (delay %g ms, "
                         "loss %g)" % (ix, r, fmt(fresh["mean"]), fresh[DELAY], fresh[LOSS],
                                       fmt(worst["mean"]), worst[DELAY], worst[LOSS],
                                       mw["mean"], mw[DELAY], mw[LOSS]))
    legend_title_caption(fig, axes[0][0], lambda n: max(1, n),
                         "Cache-aware routing over an event-built index on %s: what staleness "
                         "costs (whiskers: 95%% CI over seeds)" % where,
                         ks.caption(study, "e7_staleness", seeds_of(df),
                                    "event delay on a symmetric log axis (0 included)"))
    text = ("On %s, per index and replication policy (means over %d seed(s)): " %
            (where, seeds_of(df)) +
            "; ".join(lines) + ".")
    return ks.save(fig, path), None, text


# The stack's order: the gap to the budgeted bound first (misprediction +
# rest = gap, where the tick is), then what the budget costs the bound.
GAP_PARTS = [("misprediction", "misprediction", "#D55E00"),
             ("rest", "rest (placement, eviction)", "#999999"),
             ("network", "network (the copy budget)", "#0072B2")]


def oracle_gap_rows(df):
    """E8's per-trace, per-policy means of analysis/oracle_gap.py's split
    (gap, network, misprediction, rest; block hit rate) over seeds. A policy
    is replication/predictor; one whose hit rate is the same under every
    predictor on a trace, seed by seed (it asks none), is one row,
    'replication/any', over its oracle runs."""
    import oracle_gap as og
    d = og.split(df, PRED, "oracle")
    d.attrs.update(df.attrs)  # the merge drops the catalog's attributes
    d["_trace"] = d[TRACE].map(trace_short) if TRACE in d.columns else short_trace_labels(d)
    d["_repl"] = [REPL_SHORT.get(str(v), str(v)) for v in d[REPL]]
    d["_pol"] = d["_repl"] + "/" + (d[PRED].astype(str) if PRED in d.columns else "-")
    if PRED in d.columns and "seed" in d.columns:
        spread = d.groupby(["_trace", "_repl", "seed"])[og.RUN].agg(lambda v: v.max() - v.min())
        same = spread.groupby(level=[0, 1]).max() == 0
        blind = d.set_index(["_trace", "_repl"]).index.map(lambda k: bool(same.get(k, False)))
        blind = np.asarray(blind, dtype=bool)
        d.loc[blind, "_pol"] = d.loc[blind, "_repl"] + "/any"
        d = d[~blind | (d[PRED].astype(str) == "oracle").to_numpy()]
    return og.table(d, ["_trace", "_pol"])


def fig_oracle_gap(df, study, path):
    """E8: per trace (a panel each) and policy (a bar each), the block hit
    rate missing to the unlimited-copy bound, stacked as what the copy
    budget costs the bound (network), what the predictor's errors cost
    (misprediction: the oracle twin minus the run) and the rest; a tick
    marks the gap to the bound within the budget (misprediction + rest)."""
    if df is None:
        return None, "E8 is missing", ""
    if BOUND_PLACE not in df.columns:
        return None, "E8's runs carry no bound.* metrics (output.oracle_bound)", ""
    rows = oracle_gap_rows(df)
    traces = sorted(rows["_trace"].unique())
    pols = sorted(rows["_pol"].unique(), key=lambda p: (not p.startswith("none/"), p))
    ncols = min(3, len(traces))
    nrows = -(-len(traces) // ncols)
    fig, axes = ks.figure(ncols=ncols, nrows=nrows, squeeze=False, sharey=True,
                          figsize=(max(6.0, 3.6 * ncols), 0.24 * len(pols) * nrows + 1.6 * nrows))
    y = np.arange(len(pols))
    lines = []
    for k, t in enumerate(traces):
        ax = axes[k // ncols][k % ncols]
        s = rows[rows["_trace"] == t].set_index("_pol").reindex(pols)
        left = np.zeros(len(pols))
        for col, lab, colour in GAP_PARTS:
            v = s[col].fillna(0.0).to_numpy(dtype=float)
            ax.barh(y, v, 0.7, left=left, color=colour, edgecolor="k", linewidth=0.3,
                    label=lab)
            left = left + v
        ax.plot(s["gap"].to_numpy(dtype=float), y, "k|", ms=9,
                label="gap to the bound within the copy budget")
        ax.axvline(0, color="k", lw=0.6)
        ax.set_yticks(y, pols, fontsize=7)
        ax.set_title(t)
        ax.set_xlabel("block hit rate below the bound")
        ax.grid(axis="y", visible=False)
        ok = s[s["gap"].notna()]
        if len(ok):
            lo, hi = ok["gap"].idxmin(), ok["gap"].idxmax()
            lines.append("%s: bound %.3g (unlimited copies %.3g); the smallest gap %.3g (%s: "
                         "misprediction %s, rest %.3g), the largest %.3g (%s: misprediction %s, "
                         "rest %.3g); the copy budget costs the bound %.3g" %
                         (t, ok[BOUND_PLACE].mean(), ok["bound.place_unlimited_hit_rate_blocks"].mean(),
                          ok.loc[lo, "gap"], lo, fmt(ok.loc[lo, "misprediction"]), ok.loc[lo, "rest"],
                          ok.loc[hi, "gap"], hi, fmt(ok.loc[hi, "misprediction"]), ok.loc[hi, "rest"],
                          ok["network"].mean()))
    for k in range(len(traces), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    legend_title_caption(fig, axes[0][0], lambda n: 2 if ncols == 1 else n,
                         "Each policy's block hit rate below the oracle bound with unlimited "
                         "copies, split by analysis/oracle_gap.py (means over seeds)",
                         ks.caption(study, "e8_oracle_gap", seeds_of(df),
                                    "misprediction: the same run with the oracle predictor "
                                    "minus this one (0 when the policy asks no predictor)"),
                         top=1 - 0.3 / fig.get_size_inches()[1])
    text = ("Block hit rate below the oracle bound within the copy budget (gap = misprediction "
            "+ rest; the bar adds what the budget costs the bound itself), means over %d "
            "seed(s): " % seeds_of(df) + "; ".join(lines) + ".")
    return ks.save(fig, path), None, text


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
            figs[name] = (None, "failed: %s: %s" % (type(e).__name__, e), "")
            failed.append(name)

    draw("breakeven.png", fig_breakeven, data["e1_breakeven"], study)
    draw("axes.png", fig_axes, data["e1_breakeven"], study)
    draw("pareto.png", fig_pareto, {k: data[k] for k in ("e1_breakeven", "e2_traces")}, study)
    draw("ttft_cdf.png", fig_cdf, data["e2_traces"], study)
    draw("traces.png", fig_traces, data["e2_traces"], study)
    draw("lift.png", fig_lift, data["e5_lift"], study)
    draw("disagg.png", fig_disagg, data["e6_disagg"], study)
    draw("staleness.png", fig_staleness_default, data["e7_staleness"], study)
    draw("staleness_mooncake.png", fig_staleness_mooncake, data["e7_staleness"], study)
    draw("oracle_gap.png", fig_oracle_gap, data["e8_oracle_gap"], study)
    rel = os.path.relpath(figdir, out)
    md = ["# When does predictive speculative KV replication pay?", "",
          "Study size `%s`, revision `%s`. Generated by `analysis/study_report.py` from the "
          "catalogs under this directory alone. The answer comes first: paired comparisons "
          "over held-out replicates, metrics over offered requests (analysis/study_answer.py). "
          "The supporting experiments after it give means over seeds "
          "± the half-width of their 95%% Student t CI (none for one seed); they explain, "
          "they do not carry the answer." %
          (study.get("size", "?"), study.get("revision", "?")), ""]
    try:
        import study_answer
        _, text = study_answer.answer(out)
        md += ["## The answer" + text.split("\n", 1)[1].replace("\n## ", "\n### "), ""]
    except Exception as e:  # noqa: BLE001 - reported, and the exit status says so
        md += ["## The answer", "", "not computed: %s: %s" % (type(e).__name__, e), ""]
        failed.append("answer")
    md += ["# Supporting experiments", ""]
    md += ["## Experiments", ""]
    for exp, title in EXPERIMENTS:
        df = data[exp]
        md.append("- **%s** (`%s`): %s" % (title, exp, why.get(exp) if df is None else
                                             "%d runs, %d seeds" % (len(df), seeds_of(df))))
    md.append("")
    md += ["## Figures", ""]
    for name in HEADLINE:
        p, reason, text = figs[name]
        md.append("![%s](%s/%s)" % (name, rel, name) if p else "- `%s` not drawn: %s" % (name, reason))
        md.append("")
        if p and text:
            md += ["**What it shows.** " + text, ""]
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
        fig = os.path.join(a.out, "fig")
        for name in sorted(os.listdir(fig)):
            if name.startswith("answer_"):
                shutil.copy(os.path.join(fig, name), os.path.join(a.figures, name))
        # the numbers the READMEs quote (analysis/answer_text.py writes them)
        if os.path.exists(os.path.join(a.out, "answer.csv")):
            shutil.copy(os.path.join(a.out, "answer.csv"), os.path.join(a.figures, "answer.csv"))
    for name in HEADLINE:
        if not figs[name][0]:
            print("study_report.py: %s not drawn: %s" % (name, figs[name][1]), file=sys.stderr)
    print(path)
    if failed:
        sys.exit("study_report.py: %s failed (the report says why)" % ", ".join(failed))


if __name__ == "__main__":
    main()
