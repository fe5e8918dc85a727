#!/usr/bin/python3
"""Checks of analysis/answer_text.py (the README's answer written from a
study's answer.csv) on hand-made answer rows with known sentences, and of
the committed README against the committed quick answer.

  check_answer_text.py CASE      (CASE: sentences, splice, readme, or all)
"""
import os
import subprocess
import sys
import tempfile

import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import answer_text as at  # noqa: E402

SCRIPT = os.path.join(ROOT, "analysis", "answer_text.py")


def row(exp, name, fam, against, gain, lo, hi, verdict, **kw):
    r = {"experiment": exp, "experiment.name": name, "family": fam, "against": against,
         "metric": "ttft_p95_ms", "gain": gain, "lo": lo, "hi": hi, "verdict": verdict,
         "n": 10, "baseline": "preset=mooncake"}
    r.update(kw)
    return r


def frame():
    return pd.DataFrame([
        row("a0_load", "fanout", at.ORACLE, "best baseline", -1.01, -1.2, -0.83, "worse",
            **{"trace.rate_scale": 4.0}),
        row("a0_load", "fanout", at.ORACLE, "best baseline", -0.01, -0.035, 0.015, "equivalent",
            **{"trace.rate_scale": 1.0}),
        row("a1_regimes", "crowd.nic_400g", at.ORACLE, "best baseline", 0.123, 0.045, 0.201,
            "better", **{"trace.rate_scale": 1.0}),
        row("a1_regimes", "sessions.nic_400g", at.ORACLE, "best baseline", 0.02, -0.1, 0.14,
            "inconclusive", **{"trace.users": 48.0}),
        row("a1_regimes", "crowd.nic_400g", at.ORACLE, "added to none", 0.447, 0.361, 0.533,
            "better", **{"trace.rate_scale": 1.0}),
        row("a1_regimes", "crowd.nic_400g", at.ORACLE, "added to llm-d", 0.301, 0.197, 0.405,
            "better", **{"trace.rate_scale": 1.0}),
        row("a2_traces", "bursted_art", "speculative+ewma", "best baseline", -0.05, -0.09,
            -0.01, "worse"),
        # not the headline metric, nor an answer experiment: left out
        row("e1_breakeven", "heatmap", at.ORACLE, "best baseline", 0.9, 0.8, 1.0, "better"),
        dict(row("a0_load", "fanout", at.ORACLE, "best baseline", 0.9, 0.8, 1.0, "better"),
             metric="ttft_p50_ms"),
        dict(row("a3_capacity", None, at.ORACLE, "best baseline", 0.847, 0.684, 1.01, "better"),
             metric="capacity", workload="crowd", preset="none", baseline="mooncake",
             base_mean=1.7418),
        row("e5_lift", "btb", "early_rdma", "best baseline", 0.602, 0.578, 0.625, "better", n=13),
        row("e5_lift", "lift_kvcache.resident_at", "early_rdma", "best baseline", 0.052, 0.022,
            0.082, "better", n=13),
        row("e5_lift", "lift_compute.model", "early_rdma", "best baseline", 0.518, 0.451, 0.584,
            "better", n=13),
    ])


def check_sentences():
    b = at.bullets(frame())
    assert len(b) == 5, b
    assert b[0].startswith("- **Against the best fair baseline**"), b[0]
    # 4 conditions of A0-A2 (the p50 row, E1 and A3 are no part of it)
    assert "better in 1 of 4 conditions, equivalent within 5% in 1, worse in 1, " \
           "not resolved in 1" in b[0], b[0]
    assert "Its largest gain: +12.3% [+4.5, +20.1] on crowd.nic_400g, load x1 (a1_regimes)." \
        in b[0], b[0]
    assert "Its largest loss: -101% [-120, -83.0] on fanout, load x4 (a0_load)." in b[0], b[0]
    assert "better in 2 of 2 conditions" in b[1], b[1]
    assert "+44.7% [+36.1, +53.3] added to none on crowd.nic_400g, load x1" in b[1], b[1]
    assert "ewma better in 0 of 1, worse in 1" in b[2], b[2]
    assert "on crowd, against mooncake (1.74x load): oracle on none +84.7% [+68.4, +101]" \
        in b[3], b[3]
    assert "+60.2% [+57.8, +62.5] under the study's assumptions" in b[4], b[4]
    assert "`kvcache.resident_at` lifted: +5.2% [+2.2, +8.2] (13 held-out windows)" in b[4], b[4]
    # no win anywhere: said so
    f = frame()
    f.loc[f["verdict"] == "better", "verdict"] = "inconclusive"
    assert "It beats it in no condition." in at.bullets(f)[0]


def check_findings():
    f = frame()
    extra = [
        dict(row("e1_breakeven", "heatmap", at.ORACLE, "best baseline", -0.2, -0.3, -0.1, "worse"),
             verdict_holm="worse"),
        dict(row("e1_breakeven", "heatmap", at.ORACLE, "best baseline", 0.0, -0.01, 0.01,
                 "equivalent"), verdict_holm="equivalent"),
        dict(row("e1_breakeven", "heatmap", at.ORACLE, "best baseline", 0.0, -0.2, 0.2,
                 "inconclusive"), verdict_holm="inconclusive"),
        row("e3_interference", "fetch_fanout", "transfer=rate_cap", "transfer=immediate",
            -0.063, -0.12, -0.005, "worse"),
        row("e3_interference", "handoff_disagg", "transfer=rate_cap", "transfer=immediate",
            -0.169, -0.239, -0.098, "worse"),
        row("e3_interference", "fetch_crowd", "transfer=rate_cap", "transfer=immediate",
            -0.03, -0.1, 0.04, "inconclusive"),
        row("e3_interference", "fetch_crowd", "transfer=idle_window", "transfer=immediate",
            0.0, 0.0, 0.0, "equivalent"),
        dict(row("a1_regimes", "crowd.nic_400g", "spec_route_hint=score (speculative+oracle)",
                 "spec_route_hint=override", 0.394, 0.348, 0.439, "better"),
             **{"policy.preset": "mooncake"}),
        dict(row("a1_regimes", "crowd.nic_100g", "spec_route_hint=score (speculative+oracle)",
                 "spec_route_hint=override", 0.143, 0.068, 0.219, "better"),
             **{"policy.preset": "mooncake"}),
        dict(row("a1_regimes", "crowd.nic_400g", "spec_route_hint=score (speculative+oracle)",
                 "spec_route_hint=override", -0.428, -0.595, -0.262, "worse"),
             **{"policy.preset": "none"}),
    ] + [dict(experiment="e1_breakeven", family="speculative+lookahead", against="measured",
              metric="forecast." + k, n=36, pol_mean=v)
         for k, v in (("recall", 0.79), ("precision", 0.01), ("fp_rate", 99.0),
                      ("prefix_precision", 0.06), ("prefixes", 447.0), ("lead_s", 5.0),
                      ("placement", 0.34))]
    f = pd.concat([f, pd.DataFrame(extra)], ignore_index=True)
    out = at.findings(f)
    tab = [ln for ln in out if ln.startswith("| ")]
    assert tab[0].startswith("| experiment | condition | family | best fair baseline | against it "
                             "| added to llm-d | added to none |"), tab[0]
    # A0 before A1, lower load first; each row's cells in the header's order
    assert tab[1] == ("| a0_load | fanout, load x1 | speculative+oracle | mooncake | "
                      "-1.0% [-3.5, +1.5] equiv. | - | - |"), tab[1]
    assert tab[2].startswith("| a0_load | fanout, load x4 |"), tab[2]
    crowd = [ln for ln in tab if "crowd.nic_400g" in ln]
    assert crowd == ["| a1_regimes | crowd.nic_400g, load x1 | speculative+oracle | mooncake | "
                     "+12.3% [+4.5, +20.1] better | +30.1% [+19.7, +40.5] better | "
                     "+44.7% [+36.1, +53.3] better |"], crowd
    text = "\n".join(out)
    assert "Holm-adjusted over its 3 cells: 0 better, 1 worse, 1 equivalent within 5%, " \
           "1 not resolved." in text, text
    assert "recall 0.79; precision 0.01 per entry and tick (99 false positives per true " \
           "forecast, its place on the map), 0.06 per distinct prefix named (447 a run)" in text
    assert "idle_window better in 0 of 1, equivalent in 1, worse in 0, not resolved in 0" in text
    assert "A1 score, oracle on mooncake: better in 2 of 2, worse in 0, +14.3% to +39.4% where " \
           "resolved; A1 score, oracle on none: better in 0 of 1, worse in 1, -42.8% to -42.8% " \
           "where resolved." in text, text
    assert "rate_cap better in 0 of 3, equivalent in 0, worse in 2 (by 6.3% to 16.9%), " \
           "not resolved in 1" in text, text


def check_splice():
    with tempfile.TemporaryDirectory() as d:
        csv = os.path.join(d, "answer.csv")
        frame().to_csv(csv, index=False)
        md = os.path.join(d, "R.md")
        with open(md, "w") as f:
            f.write(f"# Title\n\nbefore\n\n{at.BEGIN}\n- stale +1.0%\n{at.END}\n\nafter\n"
                    f"{at.F_BEGIN}\nold table\n{at.F_END}\n")
        run = lambda *a: subprocess.run([sys.executable, SCRIPT, csv] + list(a),  # noqa: E731
                                        capture_output=True, text=True)
        p = run("--check", md)
        assert p.returncode == 1 and "not what" in p.stderr, p
        assert run("--write", md).returncode == 0
        with open(md) as f:
            text = f.read()
        assert text.startswith("# Title\n\nbefore\n\n" + at.BEGIN + "\n- **Against"), text
        assert at.END + "\n\nafter\n" + at.F_BEGIN + "\nPer condition" in text, text
        assert text.endswith(at.F_END + "\n"), text
        assert "stale" not in text and "old table" not in text
        assert run("--check", md).returncode == 0
        # no markers: an error naming the file, the file untouched
        with open(md, "w") as f:
            f.write("no block\n")
        p = run("--write", md)
        assert p.returncode == 2 and "R.md" in p.stderr, p
        with open(md) as f:
            assert f.read() == "no block\n"
        # an answer.csv without the columns: an error naming it
        with open(csv, "w") as f:
            f.write("a,b\n1,2\n")
        p = run()
        assert p.returncode == 2 and "answer.csv" in p.stderr and "no column" in p.stderr, p


def check_readme():
    """The README and analysis/README.md quote the committed quick answer."""
    csv = os.path.join(ROOT, "analysis", "figures", "answer.csv")
    p = subprocess.run([sys.executable, SCRIPT, csv, "--check",
                        os.path.join(ROOT, "README.md"),
                        os.path.join(ROOT, "analysis", "README.md")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


CASES = {"sentences": check_sentences, "findings": check_findings, "splice": check_splice,
         "readme": check_readme}


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    for name, fn in CASES.items():
        if which in (name, "all"):
            fn()
            print("ok", name)


if __name__ == "__main__":
    main()
