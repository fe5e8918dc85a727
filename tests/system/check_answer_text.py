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


def check_splice():
    with tempfile.TemporaryDirectory() as d:
        csv = os.path.join(d, "answer.csv")
        frame().to_csv(csv, index=False)
        md = os.path.join(d, "R.md")
        with open(md, "w") as f:
            f.write(f"# Title\n\nbefore\n\n{at.BEGIN}\n- stale +1.0%\n{at.END}\n\nafter\n")
        run = lambda *a: subprocess.run([sys.executable, SCRIPT, csv] + list(a),  # noqa: E731
                                        capture_output=True, text=True)
        p = run("--check", md)
        assert p.returncode == 1 and "not what" in p.stderr, p
        assert run("--write", md).returncode == 0
        with open(md) as f:
            text = f.read()
        assert text.startswith("# Title\n\nbefore\n\n" + at.BEGIN + "\n- **Against"), text
        assert text.endswith(at.END + "\n\nafter\n"), text
        assert "stale" not in text
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


CASES = {"sentences": check_sentences, "splice": check_splice, "readme": check_readme}


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    for name, fn in CASES.items():
        if which in (name, "all"):
            fn()
            print("ok", name)


if __name__ == "__main__":
    main()
