"""The answer's figures (study_answer.py): one function per figure, each
from the prepared catalog of one experiment and its comparison rows.

  load        per workload (experiment.name), against offered load: SLO
              attainment (mean, 95% t CI) and p50 / p99 TTFT over offered
              requests (median over replicates, band = interquartile range;
              a percentile that is +inf, i.e. the share of shed requests
              exceeds its tail, is drawn at the top edge as a triangle)
  regimes     paired p95 gain over the best fair baseline per condition and
              policy family, with the paired t 95% CI; verdict markers
  breakeven   the recall x false-positive map of the best speculative
              deployment against the best fair baseline, gain and verdict
              per cell
  frontier    gain against background bytes copied and against VRAM-time
              held by replicas no request used, one point per comparison
"""
import os

import numpy as np
import pandas as pd

from matplotlib import ticker

import kvsim_style as ks

# line style per replication family (colour is the deployment preset), marker per predictor
_LS = {"none": "-", "speculative": "--", "reactive_hotspot": ":", "full": (0, (5, 1, 1, 1)),
       "early_rdma": (0, (3, 1, 1, 1, 1, 1))}
_MK = {"none": "o", "speculative+oracle": "^", "speculative+lookahead": "v"}

VERDICT_MARK = {"better": "▲", "worse": "▼", "equivalent": "=", "inconclusive": "?"}
NAME = "experiment.name"
LOAD = "trace.rate_scale"
USERS = "trace.users"


def _label(fam, preset):
    p = "" if preset is None or (isinstance(preset, float) and np.isnan(preset)) else str(preset)
    return f"{p or 'default'}: {fam}" if fam != "none" else f"{p or 'default'} (no replication)"


def _xcol(sub):
    """The load column that varies in these rows: the rate scale, or a
    closed loop's users."""
    for c in (LOAD, USERS):
        if c in sub.columns and sub[c].dropna().astype(str).nunique() > 1:
            return c
    return None


# More (family, preset) lines than this in one panel of fig_load, and
# each family keeps only its best preset (the full size's six presets).
MAX_LINES = 12


def fig_load(d, path, title):
    names = sorted(d[NAME].dropna().astype(str).unique()) if NAME in d.columns else ["all"]
    names = [n for n in names if _xcol(d[d[NAME].astype(str) == n] if NAME in d.columns else d)]
    if not names:
        return None
    ks.apply()
    fig, axes = ks.figure(ncols=3, nrows=len(names), squeeze=False)
    presets = d["policy.preset"] if "policy.preset" in d.columns else pd.Series("", index=d.index)
    fewer = False
    for i, name in enumerate(names):
        sub = d[d[NAME].astype(str) == name] if NAME in d.columns else d
        X = _xcol(sub)
        lines = []
        for (fam, pre), g in sub.groupby([sub["_fam"], presets.loc[sub.index].astype(str)]):
            # each family's variant with the best median p95 at the lowest load
            best = g.groupby("_pol")["ttft_p95_ms"].median().sort_values().index[0]
            g = g[g["_pol"] == best]
            low = pd.to_numeric(g[X]).min()
            lines.append((fam, pre, g, g[pd.to_numeric(g[X]) == low]["ttft_p95_ms"].median()))
        if len(lines) > MAX_LINES:
            # too many to read: each family on its best preset (the same rule)
            fewer = True
            keep = {}
            for ln in lines:
                if ln[0] not in keep or ln[3] < keep[ln[0]][3]:
                    keep[ln[0]] = ln
            lines = [ln for ln in lines if keep[ln[0]] is ln]
        for fam, pre, g, _ in lines:
            lab = _label(fam, pre)
            x = sorted(pd.to_numeric(g[X]).unique())
            style = dict(color=ks.color(pre if pre not in ("", "nan", "None") else "none"),
                         ls=_LS.get(fam.split("+")[0], "-."), marker=_MK.get(fam, "s"), ms=3, lw=1.2)
            att = [pd.to_numeric(g[pd.to_numeric(g[X]) == v]["slo_attainment"]) for v in x]
            m = [a.mean() for a in att]
            h = [1.96 * a.std(ddof=1) / np.sqrt(len(a)) if len(a) > 1 else 0 for a in att]
            ax = axes[i][0]
            ax.plot(x, m, label=lab, **style)
            ax.fill_between(x, np.subtract(m, h), np.add(m, h), color=style["color"], alpha=0.12)
            for j, met in enumerate(("ttft_p50_ms", "ttft_p99_ms")):
                ax = axes[i][1 + j]
                q = [pd.to_numeric(g[pd.to_numeric(g[X]) == v][met]) for v in x]
                med = np.array([np.median(v) for v in q], dtype=float)
                lo = np.array([np.percentile(v, 25) for v in q], dtype=float)
                hi = np.array([np.percentile(v, 75) for v in q], dtype=float)
                fin = np.isfinite(med)
                ax.plot(np.array(x)[fin], med[fin], **style)
                ok = np.isfinite(lo) & np.isfinite(hi)
                ax.fill_between(np.array(x)[ok], lo[ok], hi[ok], color=style["color"], alpha=0.12)
                if (~fin).any():
                    ax.plot(np.array(x)[~fin], [np.nan] * int((~fin).sum()))
                    for xv in np.array(x)[~fin]:
                        ax.annotate("▲", (xv, 1.0), xycoords=("data", "axes fraction"),
                                    color=style["color"], ha="center", va="top", fontsize=8)
        axes[i][0].set_ylabel(f"{name}\nSLO attainment (offered)")
        axes[i][0].set_ylim(-0.02, 1.02)
        for j, met in enumerate(("p50", "p99")):
            ax = axes[i][1 + j]
            ax.set_yscale("log")
            ax.set_ylabel(f"TTFT {met} over offered (ms)")
        for ax in axes[i]:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xlabel("closed-loop users" if X == USERS else "load (x the workload's base rate)")
    h, lab = axes[0][0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(h, lab, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=7,
               title=title, title_fontsize=10)
    ks.add_caption(fig, "attainment: mean over replicates, 95% t CI; p50/p99: median over replicates, "
                        "band = interquartile range; ▲ = +inf (more requests shed than the tail holds)"
                   + ("; each family on the preset with its lowest median p95 at the lowest load "
                      "(every preset: the gain figure)" if fewer else ""))
    return ks.save(fig, path)


def fig_regimes(rows, path, title, against="best baseline", cond=None):
    r = [x for x in rows if x["against"] == against or against is None]
    global _COND
    _COND = cond
    if not r:
        return None
    ks.apply()
    conds = sorted({" / ".join(_cond(x)) for x in r})
    fams = sorted({x["family"] for x in r})
    fig, ax = ks.figure()
    fig.set_size_inches(max(7, 0.5 * len(conds) * max(1, len(fams)) / 2), 4.5)
    w = 0.8 / len(fams)
    for k, fam in enumerate(fams):
        xs, ys, lo, hi, mk = [], [], [], [], []
        for i, c in enumerate(conds):
            m = [x for x in r if x["family"] == fam and " / ".join(_cond(x)) == c]
            if not m:
                continue
            x = m[0]
            xs.append(i + (k - (len(fams) - 1) / 2) * w)
            ys.append(100 * x["gain"])
            lo.append(100 * (x["gain"] - x["lo"]) if np.isfinite(x["lo"]) else 0)
            hi.append(100 * (x["hi"] - x["gain"]) if np.isfinite(x["hi"]) else 0)
            mk.append(VERDICT_MARK.get(x["verdict"], ""))
        ax.bar(xs, ys, w, yerr=[lo, hi], color=ks.color(fam.split("+")[0]), alpha=0.8 if "oracle" in fam else 0.5,
               label=fam, capsize=2, edgecolor="black", lw=0.4)
        for xv, m in zip(xs, mk):
            ax.annotate(m, (xv, 0.99), xycoords=("data", "axes fraction"), ha="center", va="top",
                        fontsize=7)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(conds)))
    ax.set_xticklabels(conds, rotation=35, ha="right", fontsize=7)
    m = r[0]["metric"].replace("_ms", "").replace("ttft_", "TTFT ").replace("_", " ")
    ax.set_ylabel(f"{m} gain over {'the best fair baseline' if against == 'best baseline' else 'the reference'} (%)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    ks.add_caption(fig, "paired over held-out replicates; whiskers: paired t 95% CI; marks at the top: "
                        "▲ better, ▼ worse, = equivalent within 5%, ? inconclusive")
    return ks.save(fig, path)


_COND = None  # the condition columns fig_regimes labels by (None: name, load, users)


def _cond(x):
    out = []
    for k in (_COND or ("experiment.name", LOAD, USERS)):
        if k in x and x[k] is not None and not (isinstance(x[k], float) and np.isnan(x[k])):
            v = x[k]
            out.append(("load x%g" % float(v)) if k == LOAD else
                       ("%g users" % float(v)) if k == USERS else
                       str(v) if k == NAME else
                       "%s=%s" % (k.split(".")[-1], ("%g" % v) if isinstance(v, (int, float)) else v))
    return out


PREDICTORS = []  # realistic predictors' measured places (study_answer.predictor_points)


def _cell_pos(v, ticks):
    """A value's position on an axis of cells at ticks (linear between
    neighbouring ticks, clamped to the axis with a flag)."""
    if not np.isfinite(v) or v >= ticks[-1]:
        return len(ticks) - 1, v > ticks[-1] or not np.isfinite(v)
    if v <= ticks[0]:
        return 0.0, v < ticks[0]
    i = int(np.searchsorted(ticks, v)) - 1
    return i + (v - ticks[i]) / (ticks[i + 1] - ticks[i]), False


def fig_breakeven(rows, path):
    rc, fc = "policy.predictor.oracle_recall", "policy.predictor.oracle_fp_rate"
    r = [x for x in rows if x["against"] == "best baseline" and x["family"] == "speculative+oracle"
         and str(x.get(NAME)) == "heatmap" and rc in x and fc in x]
    if not r:
        return None
    recalls = sorted({float(x[rc]) for x in r})
    fps = sorted({float(x[fc]) for x in r})
    g = np.full((len(recalls), len(fps)), np.nan)
    ks.apply()
    fig, ax = ks.figure()
    for x in r:
        i, j = recalls.index(float(x[rc])), fps.index(float(x[fc]))
        g[i, j] = 100 * x["gain"]
    lim = np.nanmax(np.abs(g)) if np.isfinite(g).any() else 1
    im = ax.imshow(g, origin="lower", cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    for x in r:
        i, j = recalls.index(float(x[rc])), fps.index(float(x[fc]))
        v = x.get("verdict_holm", x["verdict"])
        ax.text(j, i, "%+.1f%%\n[%+.0f, %+.0f] %s" % (100 * x["gain"], 100 * x["lo"], 100 * x["hi"],
                                                  VERDICT_MARK.get(v, "")),
                ha="center", va="center", fontsize=6.5)
    for pt in PREDICTORS:
        xj, cx = _cell_pos(pt["fp_rate"], fps)
        yi, cy = _cell_pos(pt["recall"], recalls)
        ax.plot([xj], [yi], marker="D", ms=7, mfc="gold", mec="k", zorder=5)
        ax.annotate(pt["predictor"] + (" (off the axis)" if cx or cy else ""), (xj, yi),
                    xytext=(0, 9), textcoords="offset points", fontsize=6.5, ha="center",
                    bbox=dict(boxstyle="round", fc="white", alpha=0.85), zorder=6)
    ax.set_xticks(range(len(fps)))
    ax.set_xticklabels(["%g" % v for v in fps])
    ax.set_yticks(range(len(recalls)))
    ax.set_yticklabels(["%g" % v for v in recalls])
    ax.set_xlabel("oracle false positives per true forecast")
    ax.set_ylabel("oracle recall")
    fig.colorbar(im, ax=ax, label="p95 TTFT gain over the best fair baseline (%)")
    n = r[0]["n"]
    ax.set_title("Speculation (best preset) vs the best fair baseline, default workload")
    ks.add_caption(fig, f"paired over {n} held-out replicates (workload redrawn per seed); "
                        f"[95% paired t CI];\nmarks Holm-adjusted over the {len(r)} cells: "
                        "▲ better ▼ worse = equivalent within 5% ? inconclusive;\n"
                        "◆ realistic predictors measured on the same workload (A0, load x1): "
                        + "; ".join("%s recall %.2f, precision %.2f per entry and tick "
                                    "(%.3g false positives per true forecast), %.2f per "
                                    "distinct prefix, lead %.1f s, placement %.2f"
                                    % (pt["predictor"], pt["recall"], pt["precision"],
                                       pt["fp_rate"], pt.get("prefix_precision", np.nan),
                                       pt["lead_s"], pt["placement"])
                                    for pt in PREDICTORS))
    return ks.save(fig, path)


def fig_frontier(rows, path):
    r = [x for x in rows if x["against"] == "best baseline" and x["family"] != "none"]
    if not r:
        return None
    ks.apply()
    fig, axes = ks.figure(ncols=2)
    for x in r:
        fam = x["family"]
        gb = x.get("pol_bytes_bg", np.nan) / 1e9
        vr = x.get("pol_spec.unused_vram_gb_s", np.nan)
        c = ks.color(fam.split("+")[0])
        for ax, v in ((axes[0], gb), (axes[1], vr)):
            if np.isfinite(v):
                ax.errorbar([max(v, 1e-3)], [100 * x["gain"]],
                            yerr=[[100 * (x["gain"] - x["lo"])], [100 * (x["hi"] - x["gain"])]]
                            if np.isfinite(x["lo"]) else None,
                            fmt="o", ms=3, color=c, alpha=0.7, lw=0.6)
    for fam in sorted({x["family"] for x in r}):
        axes[0].plot([], [], "o", color=ks.color(fam.split("+")[0]), label=fam)
    for ax, lab in ((axes[0], "background bytes copied (GB, log)"),
                    (axes[1], "VRAM held by unused replicas (GB·s, log)")):
        ax.set_xscale("log")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel(lab)
    axes[0].set_ylabel("p95 TTFT gain over the best fair baseline (%)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    ks.add_caption(fig, "one point per condition and family, held-out replicates; whiskers: paired t 95% CI")
    return ks.save(fig, path)


def fig_headline(rows, path, fam="speculative+oracle"):
    """The README's figure: per workload and load, the family's paired p95
    gain against the best fair baseline, and added to kvsim's default
    deployment and to llm-d (each against itself alone)."""
    kinds = [("best baseline", "against the best fair baseline", "#D55E00"),
             ("added to none", "added to kvsim's default deployment", "#0072B2"),
             ("added to llm-d", "added to llm-d", "#999999")]
    r = [x for x in rows if x["family"] == fam and x["against"] in [k[0] for k in kinds]
         and x.get("experiment") in ("a0_load", "a1_regimes")]
    if not r:
        return None
    global _COND
    _COND = None
    conds = []
    for x in r:
        c = " / ".join(_cond(x))
        if c not in conds:
            conds.append(c)
    ks.apply()
    fig, ax = ks.figure()
    fig.set_size_inches(max(7, 0.55 * len(conds)), 4.5)
    w = 0.8 / len(kinds)
    for k, (kind, lab, col) in enumerate(kinds):
        xs, ys, lo, hi, mk = [], [], [], [], []
        for i, c in enumerate(conds):
            m = [x for x in r if x["against"] == kind and " / ".join(_cond(x)) == c]
            if not m:
                continue
            x = m[0]
            xs.append(i + (k - 1) * w)
            ys.append(100 * x["gain"])
            lo.append(100 * (x["gain"] - x["lo"]) if np.isfinite(x["lo"]) else 0)
            hi.append(100 * (x["hi"] - x["gain"]) if np.isfinite(x["hi"]) else 0)
            mk.append(VERDICT_MARK.get(x["verdict"], ""))
        ax.bar(xs, ys, w, yerr=[lo, hi], color=col, label=lab, capsize=2, edgecolor="black", lw=0.4)
        for xv, m in zip(xs, mk):
            ax.annotate(m, (xv, 0.99), xycoords=("data", "axes fraction"), ha="center", va="top",
                        fontsize=6)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(conds)))
    ax.set_xticklabels(conds, rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("p95 TTFT gain over offered requests (%)")
    ax.set_title(f"{fam}: paired gain per workload and load")
    ax.legend(fontsize=7, loc="lower left")
    ns = "/".join(str(n) for n in sorted({int(x["n"]) for x in r}))
    ks.add_caption(fig, f"{ns} held-out replicates each (workload redrawn per seed); whiskers: "
                        "paired t 95% CI; top: ▲ better ▼ worse = equivalent within 5% ? inconclusive")
    return ks.save(fig, path)


def draw(exp, d, rows, figdir):
    """{name: path} of the figures this experiment makes."""
    out = {}
    title = exp
    p = fig_load(d, os.path.join(figdir, f"answer_load_{exp}.png"), f"{exp}: against offered load")
    if p:
        out["load"] = p
    if exp != "e1_breakeven":
        p = fig_regimes(rows, os.path.join(figdir, f"answer_gain_{exp}.png"), title)
        if p:
            out["gain"] = p
    p = fig_breakeven(rows, os.path.join(figdir, "answer_breakeven.png")) if exp == "e1_breakeven" else None
    if p:
        out["breakeven"] = p
    lead = [x for x in rows if str(x.get(NAME)) == "oracle_lead"]
    if lead:
        p = fig_regimes(lead, os.path.join(figdir, "answer_oracle_lead.png"),
                        "oracle lead time and jitter (default workload)",
                        cond=("policy.predictor.oracle_lead_s", "policy.predictor.oracle_jitter_s"))
        if p:
            out["oracle_lead"] = p
    p = fig_frontier(rows, os.path.join(figdir, f"answer_frontier_{exp}.png"))
    if p:
        out["frontier"] = p
    return out
