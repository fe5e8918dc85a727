#!/usr/bin/python3
"""The README's answer, written from a study's answer.csv, so that a rerun
of the study rewrites every number it quotes.

  answer_text.py ANSWER.csv                  print the answer's bullets
  answer_text.py ANSWER.csv --write FILE...  replace the block between the
                                             markers in each FILE
  answer_text.py ANSWER.csv --check FILE...  exit 1 where a FILE's block is
                                             not what ANSWER.csv gives

ANSWER.csv is analysis/study_answer.py's (OUT/answer.csv; `make figures`
copies the quick study's to analysis/figures/answer.csv). The block sits
between BEGIN and END (below), each on a line of its own; nothing outside
it is touched, and a FILE without both markers is an error (exit 2).

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
A gain is paired over held-out replicates: "+12.3% [+4.5, +20.1]" is the
mean with its paired 95% t CI; verdicts are study_answer's (better/worse:
CI above/below 0; equivalent: TOST within the margin; else not resolved).
"""
import argparse
import math
import sys

import pandas as pd

BEGIN = "<!-- answer: written by analysis/answer_text.py from answer.csv; do not edit by hand -->"
END = "<!-- answer: end -->"
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


def block(df):
    return "\n".join([BEGIN] + bullets(df) + [END])


def splice(text, new, path):
    """text with its BEGIN..END block replaced by new; ValueError names path."""
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        raise ValueError(f"{path}: no answer block ({BEGIN!r} ... {END!r})")
    return text[:b] + new + text[e + len(END):]


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
    new = block(df)
    if not (a.write or a.check):
        print(new)
        return 0
    bad = 0
    for path in a.write or a.check:
        try:
            with open(path) as f:
                text = f.read()
            got = splice(text, new, path)
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
            import os
            os.replace(path + ".tmp", path)
    return bad


if __name__ == "__main__":
    sys.exit(main())
