#!/usr/bin/python3
"""Checks of analysis/kvsim_stats.py against values computed here by other
means (by hand in the comments, Student's t with 3 degrees of freedom in
closed form, exact bootstrap distributions, textbook examples).

  check_stats.py t_interval|bootstrap|tost|verdict|infinite|baseline|split|holm|cli

Exits 1 with a message on the first mismatch (run by
tests/system/test_analysis_stats.c)."""
import math
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import kvsim_stats as ks  # noqa: E402

SCRIPT = os.path.join(ROOT, "analysis", "kvsim_stats.py")

# The hand data set: four replicates of a lower-is-better metric.
#   base 10 20 40 50, pol 9 18 38 40
#   g = (base - pol) / base = 0.1, 0.1, 0.05, 0.2
#   mean = 0.45 / 4 = 0.1125
#   deviations -0.0125 -0.0125 -0.0625 0.0875, squares 0.00015625 0.00015625
#   0.00390625 0.00765625, sum 0.011875; s^2 = 0.011875 / 3 = 0.0039583333
#   s = 0.0629152870, se = s / 2 = 0.0314576435
BASE = [10.0, 20.0, 40.0, 50.0]
POL = [9.0, 18.0, 38.0, 40.0]
MEAN, SD = 0.1125, math.sqrt(0.011875 / 3)
SE = SD / 2
T975_3 = 3.18244630528  # two-sided 95% Student t, 3 df (any t table)
T95_3 = 2.35336343480   # one-sided 95%, 3 df


def fail(msg):
    print("check_stats: " + msg, file=sys.stderr)
    sys.exit(1)


def near(a, b, tol=1e-9, what=""):
    if not abs(a - b) <= tol * max(1.0, abs(b)):
        fail(f"{what}: {a!r}, expected {b!r}")


def raises(fn, words, what):
    """fn() must raise ValueError whose message contains every word."""
    try:
        fn()
    except ValueError as e:
        for w in words:
            if w not in str(e):
                fail(f"{what}: message {str(e)!r} does not name {w!r}")
        return
    fail(what + ": no ValueError")


def t3_cdf(t):
    """Student t CDF with 3 degrees of freedom in closed form:
    1/2 + (1/pi) (x / (1 + x^2) + atan x), x = t / sqrt 3."""
    x = t / math.sqrt(3)
    return 0.5 + (x / (1 + x * x) + math.atan(x)) / math.pi


def t3_quantile(q):
    lo, hi = -100.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t3_cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


def check_t_interval():
    near(t3_quantile(0.975), T975_3, 1e-9, "closed-form t quantile vs table")
    g = ks.relative_gains(POL, BASE)
    for a, b in zip(g.gains, [0.1, 0.1, 0.05, 0.2]):
        near(a, b, 1e-12, "gain")
    m, lo, hi, s = ks.t_interval(g)
    near(m, MEAN, 1e-12, "mean")
    near(s, SD, 1e-12, "sd")
    # 0.1125 -+ 3.18244631 x 0.0314576435 = 0.1125 -+ 0.1001123 = [0.0123877, 0.2126123]
    near(lo, 0.0123877387, 1e-8, "t lo")
    near(hi, 0.2126122613, 1e-8, "t hi")
    near(hi - lo, 2 * T975_3 * SE, 1e-10, "t width")
    # 90%: 0.1125 -+ 2.35336343 x 0.0314576435
    m, lo, hi, _ = ks.t_interval(g.gains, alpha=0.10)
    near(lo, MEAN - T95_3 * SE, 1e-10, "90% lo")
    # pairs go by replicate id, not by position; ids on one side are listed
    pol = {"s3": 40.0, "s1": 18.0, "s0": 9.0, "s2": 38.0, "s9": 1.0}
    base = {"s0": 10.0, "s2": 40.0, "s1": 20.0, "s3": 50.0, "s7": 5.0}
    c = ks.compare(pol, base, B=500)
    if c.ids != ("s0", "s1", "s2", "s3") or c.unpaired != ("s7", "s9") or c.n != 4:
        fail(f"pairing by id: ids {c.ids}, unpaired {c.unpaired}, n {c.n}")
    near(c.t_lo, 0.0123877387, 1e-8, "compare t lo by id")
    if c.verdict != "better" or c.censored != 0:
        fail(f"hand set: verdict {c.verdict}, censored {c.censored}")
    # higher-is-better flips the sign: the same values as attainment
    h = ks.relative_gains(POL, BASE, higher_is_better=True).gains
    for a, b in zip(h, [-0.1, -0.1, -0.05, -0.2]):
        near(a, b, 1e-12, "higher-is-better gain")
    raises(lambda: ks.t_interval([0.1]), ["at least 2"], "one replicate")
    # the two-sided p of a zero mean: t = 0.1125 / 0.0314576435 = 3.5762...
    # on 3 df, p = 2 (1 - F3(t)) with F3 in closed form
    t = MEAN / SE
    near(ks.t_p(g), 2 * (1 - t3_cdf(t)), 1e-12, "two-sided t p")
    near(c.p, 2 * (1 - t3_cdf(t)), 1e-12, "compare's p")
    if ks.t_p([0.1, 0.1]) != 0.0 or ks.t_p([0.0, 0.0]) != 1.0:
        fail("t_p of constant gains")
    # the direction of kvsim's metrics (names from sim/run/recorder.h)
    for name, up in [("ttft_p95_ms", False), ("tpot_mean_ms", False), ("spec.bytes_bg", False),
                     ("bound.place_gap_blocks", False), ("spec.waste_ratio", False),
                     ("slo_attainment", True), ("goodput_rps", True), ("hit_rate_blocks", True),
                     ("throughput_rps", True), ("forecast.recall", True), ("completed", True)]:
        if ks.higher_is_better(name) != up:
            fail(f"higher_is_better({name!r}) is not {up}")


def check_bootstrap():
    g = ks.relative_gains(POL, BASE).gains
    a = ks.bootstrap_interval(g, B=4000, seed=11)
    if a != ks.bootstrap_interval(g, B=4000, seed=11):
        fail("bootstrap not deterministic for one seed")
    # four gains have few distinct resampled means, so the seed shows on more
    x = np.random.default_rng(8).normal(0.0, 1.0, 30)
    if ks.bootstrap_interval(x, B=500, seed=1) == ks.bootstrap_interval(x, B=500, seed=2):
        fail("bootstrap ignores its seed")
    # B = 1: the one resample's mean, whatever the quantile
    one = ks.bootstrap_interval(g, B=1, seed=5)
    if one[0] != one[1] or not 0.05 <= one[0] <= 0.2:
        fail(f"B = 1: {one}")
    # two replicates: resampled means are a (1/4), (a+b)/2 (1/2), b (1/4),
    # so the 2.5% and 97.5% quantiles of many resamples are exactly a and b
    lo, hi = ks.bootstrap_interval([0.02, 0.08], B=20000, seed=1)
    if (lo, hi) != (0.02, 0.08):
        fail(f"two-replicate bootstrap: {(lo, hi)}, expected (0.02, 0.08)")
    # the interval of the mean lies within the range of the gains
    lo, hi = ks.bootstrap_interval(g, B=4000, seed=3)
    if not 0.05 <= lo < MEAN < hi <= 0.2:
        fail(f"bootstrap {lo, hi} outside the gains' range or not around the mean")
    # on normal data both intervals estimate the same thing: the percentile
    # interval's ends within 5% of the t interval's half-width of its ends
    x = np.random.default_rng(2024).normal(0.03, 0.05, 400)
    m, tlo, thi, _ = ks.t_interval(x)
    blo, bhi = ks.bootstrap_interval(x, B=20000, seed=7)
    half = (thi - tlo) / 2
    if abs(blo - tlo) > 0.05 * half or abs(bhi - thi) > 0.05 * half:
        fail(f"bootstrap {blo, bhi} far from t {tlo, thi} on normal data")
    c = ks.compare(POL, BASE, B=3000, seed=9, ci="bootstrap")
    if (c.boot_lo, c.boot_hi) != ks.bootstrap_interval(g, B=3000, seed=9) or c.B != 3000:
        fail("compare's bootstrap interval is not bootstrap_interval's")


def check_tost():
    # the hand set: m = 0.1125 is outside +-0.05, so TOST must fail;
    # p = P(T3 < (0.1125 - 0.05) / se) = F3(1.9868) by the closed form
    p = ks.tost(ks.relative_gains(POL, BASE))
    near(p, t3_cdf((MEAN - 0.05) / SE), 1e-10, "TOST p on the hand set")
    if p < 0.05:
        fail("TOST passes a mean of 11% against a 5% margin")
    # gains 0.01, -0.01, 0.02, 0: m = 0.005, s^2 = (25+225+225+25)e-6/3,
    # s = 0.0129099, se = 0.00645497; (m - 0.05)/se = -6.9714,
    # (m + 0.05)/se = 8.5206: p = max(1 - F3(8.5206), F3(-6.9714))
    eq = [0.01, -0.01, 0.02, 0.0]
    se = math.sqrt(500e-6 / 3) / 2
    want = max(1 - t3_cdf((0.005 + 0.05) / se), t3_cdf((0.005 - 0.05) / se))
    p = ks.tost(eq)
    near(p, want, 1e-9, "TOST p on an equivalent set")
    if not p < 0.05:
        fail(f"TOST fails a tight set around 0.5% (p = {p})")
    # a narrower margin than the data support: 0.01 -> must fail
    if ks.tost(eq, margin=0.01) < 0.05:
        fail("TOST passes at a margin of 1% with se 0.65%")
    # TOST at alpha <=> the 1 - 2 alpha t interval inside (-d, d)
    rng = np.random.default_rng(5)
    for k in range(40):
        x = rng.normal(rng.uniform(-0.06, 0.06), rng.uniform(0.005, 0.05), rng.integers(3, 30))
        lo, hi = ks.t_interval(x, 0.10)[1:3]
        if (ks.tost(x) < 0.05) != (-0.05 < lo and hi < 0.05):
            fail(f"TOST and the 90% interval disagree on draw {k}")
    # no spread: decided exactly
    if ks.tost([0.01, 0.01, 0.01]) != 0.0 or ks.tost([0.07, 0.07]) != 1.0:
        fail("TOST with zero spread")
    raises(lambda: ks.tost(eq, margin=0), ["margin"], "zero margin")


def check_verdict():
    cases = [((0.01, 0.2, 0.9), "better"), ((-0.2, -0.01, 0.9), "worse"),
             ((-0.01, 0.02, 0.01), "equivalent"), ((-0.01, 0.2, 0.3), "inconclusive"),
             ((0.001, 0.02, 0.001), "better"), ((-0.01, 0.02, 0.05), "inconclusive")]
    for (lo, hi, p), want in cases:
        if ks.verdict(lo, hi, p) != want:
            fail(f"verdict({lo}, {hi}, {p}) = {ks.verdict(lo, hi, p)}, expected {want}")
    # through compare: a policy 1% +- 0.1% faster is better, 0.5% +- 1% equivalent
    base = [100.0] * 6
    if ks.compare([99.0, 98.9, 99.1, 99.0, 98.95, 99.05], base, B=200).verdict != "better":
        fail("compare: a consistent 1% gain is not better")
    c = ks.compare([99.5, 100.5, 98.5, 100.5, 99.5, 98.5], base, B=200)
    if c.verdict != "equivalent":
        fail(f"compare: gains within +-1.5% are {c.verdict}, TOST p {c.tost_p}")
    c = ks.compare([80.0, 120.0, 95.0, 110.0], base[:4], B=200)
    if c.verdict != "inconclusive":
        fail(f"compare: +-20% scatter is {c.verdict}")


def check_infinite():
    inf = math.inf
    # both inf: tie; only the baseline: +1; only the policy: -1; finite: as usual
    g = ks.relative_gains({1: inf, 2: 5.0, 3: inf, 4: 8.0}, {1: inf, 2: inf, 3: 4.0, 4: 10.0})
    if list(g.gains) != [0.0, 1.0, -1.0, 0.2] or g.censored != 3:
        fail(f"infinite rules: {list(g.gains)}, censored {g.censored}")
    c = ks.compare({1: inf, 2: 5.0, 3: inf, 4: 8.0}, {1: inf, 2: inf, 3: 4.0, 4: 10.0}, B=300)
    if c.censored != 3 or c.n != 4:
        fail(f"compare does not report the censored pairs: {c.censored}")
    near(c.mean, 0.2 / 4, 1e-12, "mean of capped gains")
    # zero baseline: an infinite ratio, capped and counted; 0 vs 0 a tie
    z = ks.relative_gains([0.0, 3.0, 0.0], [0.0, 0.0, 2.0])
    if list(z.gains) != [0.0, -1.0, 1.0] or z.censored != 1:
        fail(f"zero baseline (lower is better): {list(z.gains)}, censored {z.censored}")
    z = ks.relative_gains([0.5, 0.0], [0.0, 0.4], higher_is_better=True)
    if list(z.gains) != [1.0, -1.0] or z.censored != 1:
        fail(f"zero baseline (higher is better): {list(z.gains)}, censored {z.censored}")
    # every pair shed on both sides: ties, zero spread, no NaN anywhere
    c = ks.compare([inf, inf, inf], [inf, inf, inf], B=100)
    for k, v in c.as_dict().items():
        if isinstance(v, float) and math.isnan(v):
            fail(f"all-tie comparison gives NaN {k}")
    if (c.mean, c.t_lo, c.t_hi, c.verdict, c.censored) != (0.0, 0.0, 0.0, "equivalent", 3):
        fail(f"all ties: {c}")
    raises(lambda: ks.relative_gains({"seed4": math.nan, "seed5": 1.0}, {"seed4": 1.0, "seed5": 2.0}),
           ["seed4", "NaN", "policy"], "NaN policy")
    raises(lambda: ks.compare({7: 1.0, 8: 2.0}, {7: 1.0, 8: float("nan")}),
           ["8", "NaN", "baseline"], "NaN baseline")
    raises(lambda: ks.relative_gains([-inf, 1.0], [1.0, 1.0]), ["replicate 0"], "-inf")
    raises(lambda: ks.relative_gains([inf, 1.0], [1.0, 1.0], higher_is_better=True),
           ["replicate 0", "inf"], "+inf in a higher-is-better metric")
    raises(lambda: ks.t_interval([0.1, math.inf]), ["finite"], "infinite gain given directly")


def check_baseline():
    # Replicates 0..5; tuning = 0, 1. A is the better baseline there (lower
    # TTFT), B on the other four and on all six:
    #   A: 10 10 | 30 30 30 30   mean tuning 10, all 140/6 = 23.3
    #   B: 12 12 | 15 15 15 15   mean tuning 12, all 84/6 = 14
    vals = {"B": {i: v for i, v in enumerate([12, 12, 15, 15, 15, 15])},
            "A": {i: v for i, v in enumerate([10, 10, 30, 30, 30, 30])}}
    on_all = min(vals, key=lambda k: np.mean(list(vals[k].values())))
    if on_all != "B":
        fail("the case must pick differently on all replicates")
    ch = ks.choose_baseline(vals, [0, 1])
    if ch.name != "A" or ch.heldout != (2, 3, 4, 5):
        fail(f"choice on tuning replicates: {ch.name}, held out {ch.heldout}")
    near(ch.tuning_means["A"], 10.0, 0, "tuning mean A")
    near(ch.tuning_means["B"], 12.0, 0, "tuning mean B")
    # higher is better: the largest tuning mean
    if ks.choose_baseline(vals, [0, 1], higher_is_better=True).name != "B":
        fail("higher-is-better choice")
    # a shed baseline (+inf) on a tuning replicate is the worst
    shed = {"A": {0: math.inf, 1: 1.0, 2: 1.0}, "B": {0: 50.0, 1: 50.0, 2: 1.0}}
    if ks.choose_baseline(shed, [0, 1]).name != "B":
        fail("+inf tuning mean is not the worst")
    # equal means: the first name in sorted order, whatever the dict order
    tie = {"z": {0: 1.0, 1: 2.0}, "m": {0: 2.0, 1: 1.0}}
    if ks.choose_baseline(tie, [0]).name != "z" or ks.choose_baseline(tie, [0, 1]).name != "m":
        fail("tie break")
    raises(lambda: ks.choose_baseline({"A": {0: 1.0}, "B": {1: 1.0}}, [0]), ["'B'", "[0]"],
           "baseline lacking a tuning replicate")
    # the comparison then runs on the held-out replicates only
    pol = {i: 14.0 for i in range(6)}
    c = ks.compare(pol, vals[ch.name], ids=ch.heldout, B=100)
    if c.ids != (2, 3, 4, 5):
        fail(f"compare on held-out ids: {c.ids}")
    near(c.mean, (30 - 14) / 30, 1e-12, "held-out gain")


def check_split():
    ids = list(range(10))
    tu, rep = ks.split_replicates(ids, 3, seed=1)
    if len(tu) != 3 or len(rep) != 7 or set(tu) & set(rep) or set(tu) | set(rep) != set(ids):
        fail(f"split sizes/disjointness: {tu} {rep}")
    if list(tu) != sorted(tu) or list(rep) != sorted(rep):
        fail("split not sorted")
    if ks.split_replicates(ids[::-1], 3, seed=1) != (tu, rep):
        fail("split depends on the ids' order")
    if ks.split_replicates(ids, 3, seed=1) != (tu, rep):
        fail("split not deterministic")
    if all(ks.split_replicates(ids, 3, seed=s)[0] == tu for s in range(2, 8)):
        fail("split ignores its seed")
    # independent recomputation of the rule: the smallest SHA-256 of "seed:id"
    import hashlib
    want = sorted(sorted(ids, key=lambda i: hashlib.sha256(f"1:{i}".encode()).hexdigest())[:3])
    if list(tu) != want:
        fail(f"split {tu}, the hash rule gives {want}")
    raises(lambda: ks.split_replicates([1, 2], 2), ["n_tuning"], "no reported replicates")
    raises(lambda: ks.split_replicates([1, 1, 2], 1), ["repeat"], "repeated ids")


def check_holm():
    # Holm (1979) as in the usual textbook/encyclopaedia example: four
    # hypotheses, p = 0.01, 0.04, 0.03, 0.005, alpha 0.05. Sorted: 0.005 <=
    # 0.05/4 rejected, 0.01 <= 0.05/3 rejected, 0.03 > 0.05/2 stop: H1 and
    # H4 rejected. Adjusted: 4 x 0.005 = 0.02, 3 x 0.01 = 0.03,
    # 2 x 0.03 = 0.06, max(0.06, 1 x 0.04) = 0.06.
    adj = ks.holm({"H1": 0.01, "H2": 0.04, "H3": 0.03, "H4": 0.005})
    want = {"H1": 0.03, "H2": 0.06, "H3": 0.06, "H4": 0.02}
    for k in want:
        near(adj[k], want[k], 1e-12, "Holm " + k)
    if sorted(k for k, v in adj.items() if v <= 0.05) != ["H1", "H4"]:
        fail("Holm rejects other than H1, H4")
    # a list keeps its order; the step-down maximum carries 2 x 0.4 = 0.8
    # past 1 x 0.5; large products are capped at 1
    lst = ks.holm([0.5, 0.001, 0.4])
    for a, b in zip(lst, [0.8, 0.003, 0.8]):
        near(a, b, 1e-12, "Holm list")
    if ks.holm([0.6, 0.7]) != [1.0, 1.0]:
        fail("Holm cap at 1")
    raises(lambda: ks.holm({"cell": float("nan")}), ["cell"], "NaN p-value")


def check_cli():
    r = subprocess.run([sys.executable, SCRIPT, "--selftest"], capture_output=True, text=True)
    if r.returncode != 0 or "ok" not in r.stdout:
        fail(f"--selftest: {r.returncode} {r.stdout} {r.stderr}")
    r = subprocess.run([sys.executable, SCRIPT, "compare", "--pol", "9,18,38,40", "--base",
                        "10,20,40,50", "--boot", "500"], capture_output=True, text=True)
    import json
    d = json.loads(r.stdout)
    near(d["t_lo"], 0.0123877387, 1e-8, "CLI t lo")
    if d["n"] != 4 or d["verdict"] != "better" or d["B"] != 500:
        fail(f"CLI compare: {d}")
    r = subprocess.run([sys.executable, SCRIPT, "compare", "--pol", "1,nan", "--base", "1,2"],
                       capture_output=True, text=True)
    if r.returncode != 1 or "replicate 1" not in r.stderr:
        fail(f"CLI NaN: {r.returncode} {r.stderr}")
    r = subprocess.run([sys.executable, SCRIPT, "holm", "0.01", "0.04", "0.03", "0.005"],
                       capture_output=True, text=True)
    got = [float(line.split("\t")[1]) for line in r.stdout.split("\n") if line]
    if got != [0.03, 0.06, 0.06, 0.02]:
        fail(f"CLI holm: {got}")


CHECKS = {"t_interval": check_t_interval, "bootstrap": check_bootstrap, "tost": check_tost,
          "verdict": check_verdict, "infinite": check_infinite, "baseline": check_baseline,
          "split": check_split, "holm": check_holm, "cli": check_cli}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CHECKS:
        sys.exit("usage: check_stats.py " + "|".join(CHECKS))
    CHECKS[sys.argv[1]]()
