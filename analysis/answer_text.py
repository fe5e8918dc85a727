#!/usr/bin/python3
"""The README's answer, written from a study's answer.csv, so that a rerun
of the study rewrites every number it quotes.

  answer_text.py ANSWER.csv                  print the answer's bullets
  answer_text.py ANSWER.csv --write FILE...  replace the block between the
                                             markers in each FILE
  answer_text.py ANSWER.csv --check FILE...  exit 1 where a FILE's block is
                                             not what ANSWER.csv gives

ANSWER.csv is analysis/study_answer.py's (OUT/answer.csv; `make figures`
copies the quick study's to analysis/figures/answer.csv). Two blocks, each
between its BEGIN and END markers (below), on lines of their own: the
answer (the README's bullets) and the findings (analysis/README.md's
tables and counts). A FILE holds either or both; nothing outside them is
touched, and a FILE with neither is an error (exit 2).

Every sentence is chosen by a rule, not by hand, so the words follow the
numbers when a rerun moves them:
- the count of verdicts of speculation with the oracle against the best
  fair baseline over the answer's conditions (A0 load, A1 regimes, A2
  traces), with its largest gain and largest loss there;
- the same speculation added to each deployment (the same preset without
  replication): its verdicts and its largest gain;
- each realistic predictor's count of conditions where it beats the best
  baseline;
- capacity at the SLO (A3): per workload, the best fair baseline's and each
  speculative configuration's capacity gain over it;
- the original study's claim (E5): early_rdma's gain under its assumptions
  and under the one lifted assumption that leaves the least of it.
The findings: per condition of A0-A2, speculation with the oracle and with
the lookahead predictor and reactive_hotspot against the best fair
baseline and added to each deployment; the break-even map's
Holm-adjusted verdicts; the realistic predictors' measured accuracy; the
seed's two claims (E3 transfer scheduling, E4 replicas under memory
pressure) and the route hint as a score against its override, as verdict
counts.
A gain is paired over held-out replicates: "+12.3% [+4.5, +20.1]" is the
mean with its paired 95% t CI; verdicts are study_answer's (better/worse:
CI above/below 0; equivalent: TOST within the margin; else not resolved).
"""
import argparse
import math
import os
import sys

import pandas as pd

BEGIN = "<!-- answer: written by analysis/answer_text.py from answer.csv; do not edit by hand -->"
END = "<!-- answer: end -->"
F_BEGIN = "<!-- findings: written by analysis/answer_text.py from answer.csv; do not edit by hand -->"
F_END = "<!-- findings: end -->"
HEADLINE = "ttft_p95_ms"
ANSWER_EXPS = ("a0_load", "a1_regimes", "a2_traces")
ORACLE = "speculative+oracle"
BEST = "best baseline"


def pct(v):
    """A gain as a signed percentage, 3 significant digits from 100%."""
    if v is None or not math.isfinite(v):
        return "-"
    x = 100 * v
    return "%+.0f%%" % x if abs(x) >= 99.95 else "%+.1f%%" % x


def ci(r):
    """'+12.3% [+4.5, +20.1]' of a row (gain, lo, hi)."""
    lo, hi = pct(r["lo"]).rstrip("%"), pct(r["hi"]).rstrip("%")
    return f"{pct(r['gain'])} [{lo}, {hi}]"


def _val(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return "%g" % v if isinstance(v, float) else str(v)


def cond(r):
    """A condition's name: its workload (experiment.name), load, users."""
    parts = [str(r.get("experiment.name"))]
    load, users = _val(r.get("trace.rate_scale")), _val(r.get("trace.users"))
    if load is not None:
        parts.append("load x" + load)
    if users is not None:
        parts.append(users + " users")
    return ", ".join(parts)


def base_name(r):
    """The baseline configuration of a row, as its label reads."""
    return str(r.get("baseline"))


def verdicts(rows):
    """'B better, E equivalent within 5%, W worse, I not resolved' of rows."""
    v = rows["verdict"].astype(str)
    n_b, n_w = int((v == "better").sum()), int((v == "worse").sum())
    n_e = int((v == "equivalent").sum())
    n_i = len(rows) - n_b - n_w - n_e
    return n_b, n_e, n_w, n_i


def count_text(rows):
    b, e, w, i = verdicts(rows)
    return (f"better in {b} of {len(rows)} conditions, equivalent within 5% in {e}, "
            f"worse in {w}, not resolved in {i}")


def n_text(rows):
    ns = sorted({int(n) for n in rows["n"].dropna()})
    return "/".join(map(str, ns)) if ns else "0"


def bullets(df):
    """The answer's bullets (markdown lines) from answer.csv's rows."""
    out = []
    head = df[(df["metric"] == HEADLINE) & df["experiment"].isin(ANSWER_EXPS)]
    spec = head[head["family"] == ORACLE]
    vs_best = spec[spec["against"] == BEST]
    if len(vs_best):
        s = (f"- **Against the best fair baseline** (any preset without replication, its "
             f"own knobs tuned), speculation with an oracle forecast is {count_text(vs_best)} "
             f"(p95 TTFT over offered requests, paired over {n_text(vs_best)} held-out "
             f"replicates; A0 load, A1 regimes, A2 real traces).")
        won = vs_best[vs_best["verdict"] == "better"].sort_values("gain", ascending=False)
        lost = vs_best[vs_best["verdict"] == "worse"].sort_values("gain")
        if len(won):
            r = won.iloc[0]
            s += f" Its largest gain: {ci(r)} on {cond(r)} ({r['experiment']})."
        else:
            s += " It beats it in no condition."
        if len(lost):
            r = lost.iloc[0]
            s += f" Its largest loss: {ci(r)} on {cond(r)} ({r['experiment']})."
        out.append(s)
    added = spec[spec["against"].astype(str).str.startswith("added to ")]
    if len(added):
        s = (f"- **Added to a deployment** (against the same preset without replication, "
             f"each tuned on its own), it is {count_text(added)}.")
        won = added[added["verdict"] == "better"].sort_values("gain", ascending=False)
        if len(won):
            r = won.iloc[0]
            s += f" Its largest gain: {ci(r)} {r['against']} on {cond(r)} ({r['experiment']})."
        out.append(s)
    real = head[head["family"].astype(str).str.startswith("speculative+")
                & (head["family"] != ORACLE) & (head["against"] == BEST)]
    if len(real):
        parts = []
        for fam, g in sorted(real.groupby("family")):
            b, e, w, i = verdicts(g)
            parts.append(f"{fam.split('+', 1)[1]} better in {b} of {len(g)}, worse in {w}")
        out.append("- **Realistic predictors** against the best fair baseline, where they ran: "
                   + "; ".join(parts) + ".")
    cap = df[(df["experiment"] == "a3_capacity") & (df["metric"] == "capacity")]
    if len(cap):
        parts = []
        for wl, g in sorted(cap.groupby("workload")):
            g = g[g["family"].astype(str).str.startswith("speculative+")]
            if not len(g):
                continue
            r0 = g.iloc[0]
            items = [f"{r['family'].split('+', 1)[1]} on {r['preset']} {ci(r)}"
                     for _, r in g.sort_values(["family", "preset"]).iterrows()]
            parts.append(f"on {wl}, against {r0['baseline']} ({r0['base_mean']:.2f}x load): "
                         + ", ".join(items))
        if parts:
            out.append("- **Capacity at the SLO** (A3, the highest load meeting it, paired per "
                       "seed) of speculation against the best fair baseline's: "
                       + "; ".join(parts) + ".")
    e5 = df[df["experiment"] == "e5_lift"]
    claim = e5[e5["experiment.name"] == "btb"]
    lifts = e5[e5["experiment.name"].astype(str).str.startswith("lift_")]
    if len(claim) and len(lifts):
        r = claim.iloc[0]
        low = lifts.sort_values("gain").iloc[0]
        out.append(f"- **The original study's claim**: early_rdma's mean-TTFT gain over its best "
                   f"baseline on Bursted-ART is {ci(r)} under the study's assumptions; lifting "
                   f"one at a time leaves the least of it with "
                   f"`{str(low['experiment.name'])[len('lift_'):]}` lifted: {ci(low)} "
                   f"({int(r['n'])} held-out windows).")
    return out


SHORT = {"better": "better", "worse": "worse", "equivalent": "equiv.",
         "inconclusive": "n.r.", "both +inf": "both +inf"}
FAMILIES = (ORACLE, "speculative+lookahead", "reactive_hotspot")


def cell(r):
    """'+12.3% [+4.5, +20.1] better' of a row, '-' for none."""
    if r is None:
        return "-"
    if str(r["verdict"]) == "both +inf":  # both sides shed past the p95: no gain to show
        return "both +inf"
    return f"{ci(r)} {SHORT.get(str(r['verdict']), str(r['verdict']))}"


def condition_table(head):
    """Markdown lines: per condition and family of A0-A2, the gain against
    the best fair baseline (and which it was) and added to each preset."""
    against = sorted(a for a in head["against"].astype(str).unique() if a.startswith("added to "))
    lines = ["| experiment | condition | family | best fair baseline | against it | "
             + " | ".join(against) + " |", "|---" * (5 + len(against)) + "|"]
    keys = ["experiment", "experiment.name", "trace.rate_scale", "trace.users"]
    keys = [k for k in keys if k in head.columns]
    h = head[head["family"].isin(FAMILIES)]
    order = {e: i for i, e in enumerate(ANSWER_EXPS)}
    def order_of(key):  # experiment, workload, then load and users as numbers (NaN first)
        nums = [0.0 if v != v else float(v) for v in key[2:]]
        return (order.get(key[0], 9), str(key[1]), *nums)
    groups = sorted(h.groupby(keys, dropna=False, sort=False), key=lambda kv: order_of(kv[0]))
    for _, g in groups:
        for fam in FAMILIES:
            f = g[g["family"] == fam]
            if not len(f):
                continue
            by = {str(r["against"]): r for _, r in f.iterrows()}
            best = by.get(BEST)
            bname = "-" if best is None else str(best["baseline"]).split(",")[0].replace(
                "preset=", "")
            r0 = f.iloc[0]
            lines.append(f"| {r0['experiment']} | {cond(r0)} | {fam} | {bname} | {cell(best)} | "
                         + " | ".join(cell(by.get(a)) for a in against) + " |")
    return lines


def findings(df):
    """analysis/README.md's findings block (markdown lines)."""
    out = []
    head = df[(df["metric"] == HEADLINE) & df["experiment"].isin(ANSWER_EXPS)]
    if len(head):
        out += [f"Per condition (p95 TTFT over offered requests, paired over {n_text(head)} "
                "held-out replicates; better/worse: CI above/below 0, equiv.: within 5% by "
                "TOST, n.r.: not resolved; the best fair baseline's preset, its router knobs "
                "in `answer.csv`):", ""] + condition_table(head) + [""]
    e1 = df[(df["experiment"] == "e1_breakeven") & (df["metric"] == HEADLINE)
            & (df["family"] == ORACLE) & (df["against"] == BEST)]
    if "verdict_holm" in df.columns:
        cells = e1[e1["verdict_holm"].notna()]
        if len(cells):
            v = cells["verdict_holm"].astype(str)
            out.append(f"- **Break-even map** (E1, oracle recall x false positives per true "
                       f"forecast, against the best fair baseline), Holm-adjusted over its "
                       f"{len(cells)} cells: {int((v == 'better').sum())} better, "
                       f"{int((v == 'worse').sum())} worse, {int((v == 'equivalent').sum())} "
                       f"equivalent within 5%, "
                       f"{len(cells) - int(v.isin(['better', 'worse', 'equivalent']).sum())} "
                       f"not resolved.")
    meas = df[df["against"] == "measured"]
    for fam, g in sorted(meas.groupby("family")):
        m = {str(r["metric"])[len("forecast."):]: r["pol_mean"] for _, r in g.iterrows()}

        def f(k, fmt):
            v = m.get(k)
            return "-" if v is None or not math.isfinite(v) else fmt % v
        out.append(f"- **{fam.split('+', 1)[1]}, measured** on the map's workload (A0, load x1, "
                   f"{int(g['n'].iloc[0])} runs): recall {f('recall', '%.2f')}; precision "
                   f"{f('precision', '%.2f')} per entry and tick ({f('fp_rate', '%.3g')} false "
                   f"positives per true forecast, its place on the map), "
                   f"{f('prefix_precision', '%.2f')} per distinct prefix named "
                   f"({f('prefixes', '%.0f')} a run); mean lead {f('lead_s', '%.1f')} s; "
                   f"placement accuracy {f('placement', '%.2f')}.")
    e3 = df[(df["experiment"] == "e3_interference") & (df["metric"] == HEADLINE)
            & df["family"].astype(str).str.startswith("transfer=")]
    if len(e3):
        parts = []
        for fam, g in sorted(e3.groupby("family")):
            b, e, w, i = verdicts(g)
            s = f"{fam.split('=', 1)[1]} better in {b} of {len(g)}, equivalent in {e}, worse in {w}"
            if w:
                wg = g[g["verdict"] == "worse"]["gain"]
                s += f" (by {pct(-wg.max()).lstrip('+')} to {pct(-wg.min()).lstrip('+')})"
            parts.append(s + f", not resolved in {i}")
        out.append("- **Copies in link idle time** (E3, against immediate copies, p95 TTFT): "
                   + "; ".join(parts) + ".")
    hint = df[(df["against"] == "spec_route_hint=override") & (df["metric"] == HEADLINE)]
    if len(hint):
        parts = []
        keys = ["experiment", "family", "policy.preset"]
        for (exp, fam, pre), g in sorted(hint.groupby(keys, dropna=False)):
            b, e, w, i = verdicts(g)
            gains = g[g["verdict"].isin(["better", "worse"])]["gain"]
            rng = (f", {pct(gains.min())} to {pct(gains.max())} where resolved"
                   if len(gains) else "")
            mode = fam.split("=", 1)[-1].split(" ", 1)[0]
            pred = fam.split("(", 1)[-1].rstrip(")").split("+", 1)[-1]
            parts.append(f"{exp.split('_')[0].upper()} {mode}, {pred} on {pre}: better in {b} of "
                         f"{len(g)}, worse in {w}{rng}")
        out.append("- **The route hint against its override** (score: the deployment's router "
                   "decides, counting replicas as holders; off: no hint; paired over every "
                   "replicate, per condition, other knobs at their defaults): "
                   + "; ".join(parts) + ".")
    e4 = df[(df["experiment"] == "e4_vram") & (df["metric"] == HEADLINE)
            & (df["against"] == BEST)]
    if len(e4):
        parts = []
        for fam, g in sorted(e4.groupby("family")):
            b, e, w, i = verdicts(g)
            parts.append(f"{fam} better in {b} of {len(g)} (GPU x load), worse in {w}, "
                         f"equivalent in {e}, not resolved in {i}")
        out.append("- **Replicas under memory pressure** (E4, long contexts, against no "
                   "replication): " + "; ".join(parts) + ".")
    return out


def blocks(df):
    """[(begin, end, text)] of the two blocks."""
    return [(BEGIN, END, "\n".join([BEGIN] + bullets(df) + [END])),
            (F_BEGIN, F_END, "\n".join([F_BEGIN] + findings(df) + [F_END]))]


def splice(text, news, path):
    """text with each of its blocks replaced; ValueError names path when it
    holds none, or a begin marker without its end."""
    n = 0
    for beg, end, new in news:
        b = text.find(beg)
        if b < 0:
            continue
        e = text.find(end, b)
        if e < 0:
            raise ValueError(f"{path}: {beg!r} without {end!r}")
        text = text[:b] + new + text[e + len(end):]
        n += 1
    if not n:
        raise ValueError(f"{path}: no answer block ({BEGIN!r} ... {END!r}) nor findings block")
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("answer", help="a study's answer.csv")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", nargs="+", metavar="FILE")
    g.add_argument("--check", nargs="+", metavar="FILE")
    a = ap.parse_args(argv)
    try:
        df = pd.read_csv(a.answer)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as ex:
        print(f"answer_text: {a.answer}: {ex}", file=sys.stderr)
        return 2
    missing = {"experiment", "family", "against", "metric", "gain", "lo", "hi", "verdict",
               "n"} - set(df.columns)
    if missing:
        print(f"answer_text: {a.answer}: no column {', '.join(sorted(missing))}", file=sys.stderr)
        return 2
    news = blocks(df)
    if not (a.write or a.check):
        print("\n\n".join(b[2] for b in news))
        return 0
    bad = 0
    for path in a.write or a.check:
        try:
            with open(path) as f:
                text = f.read()
            got = splice(text, news, path)
        except (OSError, ValueError) as ex:
            print(f"answer_text: {ex}", file=sys.stderr)
            return 2
        if a.check:
            if got != text:
                print(f"answer_text: {path}: its answer block is not what {a.answer} gives "
                      f"(rewrite it: analysis/answer_text.py {a.answer} --write {path})",
                      file=sys.stderr)
                bad = 1
        elif got != text:
            with open(path + ".tmp", "w") as f:
                f.write(got)
            os.replace(path + ".tmp", path)
    return bad


if __name__ == "__main__":
    sys.exit(main())
