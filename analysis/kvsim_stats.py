#!/usr/bin/python3
"""Paired statistics for comparing a policy with a baseline over replicates
(seeds): relative gains, their confidence intervals, equivalence, the
verdict a report states, the choice of the best baseline on tuning
replicates only, and Holm's adjustment for a family of comparisons.
numpy and scipy only.

  kvsim_stats.py --selftest
  kvsim_stats.py compare --pol 9,18,38,40 --base 10,20,40,50 [--higher-is-better]
                 [--margin 0.05] [--alpha 0.05] [--boot 10000] [--seed 0]
  kvsim_stats.py holm 0.01 0.04 0.03 0.005

Definitions
-----------
Replicate.  One run of a configuration at one seed; a policy and a baseline
  are paired when they ran at the same replicate id (the same seed, so the
  same trace draw). Only ids present on both sides are compared; the others
  are listed in the result (`unpaired`), never silently mixed in.

Relative gain (per replicate i).  For a lower-is-better metric (latency)
      g_i = (base_i - pol_i) / base_i
  and for a higher-is-better one (attainment, goodput, hit rate)
      g_i = (pol_i - base_i) / base_i,
  so g > 0 always means the policy did better; g = 0.1 is "10% better than
  the baseline". Values must be >= 0 (a relative gain over a negative
  baseline has no sign to read).

Infinite and zero values (censoring).  A TTFT percentile over the offered
  requests is +inf when more than the percentile's tail was shed. For a
  lower-is-better metric +inf is the worst value, and a pair with an
  infinite side is scored, not dropped:
      both +inf            -> g = 0   (tie)
      only the baseline    -> g = +1  (100% better, capped: the largest gain
                                       a lower-is-better metric allows)
      only the policy      -> g = -1  (capped at -100%)
  A zero baseline with a nonzero policy (an infinite ratio) is capped the
  same way (+1 or -1 by which side did better); 0 against 0 is a tie. Every
  pair scored by such a rule is counted in `censored` (the report must say
  so: the mean of capped gains is not a mean relative change). Finite gains
  are not clipped, so a lower-is-better g can be below -1 (a policy more than
  twice as slow) while a shed policy scores -1: the censored count is what
  tells the two apart. +inf for a higher-is-better metric, -inf anywhere and
  NaN anywhere raise ValueError naming the replicate: nothing becomes NaN.

Paired t interval (Student 1908, Biometrika 6:1, on the differences of the
  pairs).  With n >= 2 gains, mean m, sample sd s (n - 1
  in the denominator) and t = the 1 - alpha/2 quantile of Student's t with
  n - 1 degrees of freedom (scipy.stats.t.ppf):
      m +- t s / sqrt(n)

Paired bootstrap percentile interval (Efron & Tibshirani 1993, An
  Introduction to the Bootstrap, ch. 13).  B resamples of the n replicates
  with replacement (a pair is resampled whole, so the pairing is kept); the
  interval is the alpha/2 and 1 - alpha/2 quantiles of the B resampled mean
  gains (numpy.quantile, linear interpolation between order statistics).
  The resampling uses numpy.random.default_rng(seed), so the interval is a
  function of the data, B and the seed.

Equivalence: TOST (Schuirmann 1987, J. Pharmacokinet. Biopharm. 15:657).
  Two one-sided paired t tests of the mean gain mu against the margin d:
      H0-: mu <= -d  rejected when  p- = P(T > (m + d) / se) < alpha
      H0+: mu >= +d  rejected when  p+ = P(T < (m - d) / se) < alpha
  with se = s / sqrt(n), T ~ t(n - 1); the TOST p-value is max(p-, p+) and
  the policy is equivalent when it is < alpha (the same as the 1 - 2 alpha
  t interval lying inside (-d, d)). With s = 0 the tests are decided
  exactly: p = 0 when |m| < d, else 1.

  Margin: d = 0.05 by default, i.e. +-5% of the baseline's own metric (own
  choice). A relative margin means the same for every metric and every cell
  of a study, whatever its unit or load; 5% is the smallest change the study
  treats as worth a policy's extra machinery, so a smaller one is claimed
  neither way (equivalence practice likewise fixes the margin as a share of
  the reference, e.g. 80-125% in bioequivalence). It is a parameter: a
  report states the margin it used.

Verdict (what the report states), from the 1 - alpha interval and TOST:
      "better"        the interval lies wholly above 0
      "worse"         the interval lies wholly below 0
      "equivalent"    else, TOST p < alpha
      "inconclusive"  otherwise
  ("better"/"worse" are tested first: a gain of 2 +- 1% is reported better
  though it is also within the margin.) compare() uses the t interval unless
  told ci="bootstrap".

Best baseline on tuning replicates.  Picking, per replicate, the best of
  several baselines on the same data that the comparison then uses favours
  the baseline (a maximum of noisy values is biased). Instead the replicate
  ids are split into tuning and reported sets (split_replicates), the
  baseline with the best mean on the tuning replicates only is chosen
  (choose_baseline), and the comparison uses the held-out replicates.

Holm-Bonferroni (Holm 1979, Scand. J. Statist. 6:65).  For m p-values sorted
  ascending p(1) <= ... <= p(m), the adjusted values are
      p~(i) = max over j <= i of min(1, (m - j + 1) p(j))
  and hypothesis (i) is rejected at family-wise level alpha when
  p~(i) <= alpha.

API
---
  relative_gains(pol, base, higher_is_better=False) -> Gains
  t_interval(gains, alpha=0.05) -> (mean, lo, hi, sd)
  bootstrap_interval(gains, alpha=0.05, B=10000, seed=0) -> (lo, hi)
  tost(gains, margin=0.05) -> p
  verdict(lo, hi, tost_p, alpha=0.05) -> str
  compare(pol, base, higher_is_better=False, margin=0.05, alpha=0.05,
          B=10000, seed=0, ci="t", ids=None) -> Comparison
  split_replicates(ids, n_tuning, seed=0) -> (tuning, reported)
  choose_baseline(values, tuning, higher_is_better=False) -> BaselineChoice
  holm(pvalues) -> adjusted p-values (dict for a dict, list for a sequence)
  higher_is_better(metric) -> bool  (by kvsim's metric names)

pol and base are mappings replicate id -> value (a dict or a pandas Series
indexed by seed), or equal-length sequences (ids 0..n-1).
"""
import argparse
import hashlib
import json
import math
import sys
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

MARGIN = 0.05  # equivalence margin, relative to the baseline (see above)
ALPHA = 0.05
BOOT_B = 10000

# kvsim metric names where more is better (sim/run/recorder.h): SLO
# attainment, goodput, throughputs, completions, hit rates and tokens hit,
# forecast precision, recall and placement accuracy.
_HIGHER = ("attainment", "goodput", "throughput", "tokens_per_s", "completed", "hit_rate",
           "hit_tokens", "precision", "recall", "placement_acc")


def higher_is_better(metric):
    """True for kvsim metrics where a larger value is better (attainment,
    goodput, throughput, completions, hit rates, forecast precision and
    recall); False for the rest (latencies, bytes, waste, gaps to a bound),
    which are lower-is-better. A metric neither way (requests, instances)
    reads False: pass the direction explicitly for those."""
    return any(h in metric for h in _HIGHER)


@dataclass(frozen=True)
class Gains:
    """Per-replicate relative gains of a pairing (see the module's
    definitions). ids[i] is the replicate of gains[i]; censored counts the
    pairs scored by the infinite/zero rules; unpaired lists the ids present
    on one side only."""
    ids: tuple
    gains: np.ndarray
    censored: int
    unpaired: tuple

    @property
    def n(self):
        return len(self.ids)


@dataclass(frozen=True)
class Comparison:
    """One policy against one baseline. mean, sd: of the n gains; t_lo,
    t_hi: the paired t interval; boot_lo, boot_hi: the bootstrap percentile
    interval (B resamples, seed); tost_p: TOST p-value against +-margin;
    verdict: better | worse | equivalent | inconclusive (from the `ci`
    interval); censored: pairs with an infinite (or zero-baseline) side."""
    n: int
    mean: float
    sd: float
    t_lo: float
    t_hi: float
    boot_lo: float
    boot_hi: float
    tost_p: float
    verdict: str
    censored: int
    ids: tuple
    gains: tuple
    unpaired: tuple
    higher_is_better: bool
    margin: float
    alpha: float
    B: int
    seed: int
    ci: str
    p: float = float("nan")  # two-sided paired t p-value of a zero mean gain (t_p)

    def as_dict(self):
        return asdict(self)


@dataclass(frozen=True)
class BaselineChoice:
    """name: the chosen baseline; heldout: its replicate ids outside the
    tuning set (sorted), the ones to compare on; tuning_means: each
    baseline's mean over the tuning replicates."""
    name: object
    heldout: tuple
    tuning_means: dict = field(default_factory=dict)


def _as_mapping(x, what):
    if hasattr(x, "items"):
        return dict(x.items())
    try:
        return dict(enumerate(x))
    except TypeError:
        raise TypeError(f"{what}: a mapping replicate id -> value or a sequence") from None


def _value(v, what, rid, higher):
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} at replicate {rid!r}: {v!r} is not a number") from None
    if math.isnan(v):
        raise ValueError(f"{what} at replicate {rid!r} is NaN (a missing or failed run?)")
    if v < 0:
        raise ValueError(f"{what} at replicate {rid!r} is {v}: relative gains need values >= 0")
    if math.isinf(v) and higher:
        raise ValueError(f"{what} at replicate {rid!r} is +inf: infinite values are allowed "
                         "only for lower-is-better metrics (where +inf is the worst)")
    return v


def _sorted_ids(ids):
    try:
        return sorted(ids)
    except TypeError:
        return sorted(ids, key=repr)


def relative_gains(pol, base, higher_is_better=False):
    """The relative gain of each replicate present in both pol and base
    (mappings replicate id -> metric value, or sequences), in sorted id
    order, with the censoring rules of the module's docstring. Raises
    ValueError on NaN, negative or -inf values (naming the replicate)."""
    p, b = _as_mapping(pol, "pol"), _as_mapping(base, "base")
    ids = _sorted_ids(set(p) & set(b))
    unpaired = tuple(_sorted_ids(set(p) ^ set(b)))
    sign = 1.0 if higher_is_better else -1.0
    g, censored = [], 0
    for rid in ids:
        pv = _value(p[rid], "policy", rid, higher_is_better)
        bv = _value(b[rid], "baseline", rid, higher_is_better)
        if math.isinf(pv) or math.isinf(bv):  # lower-is-better only (checked above)
            censored += 1
            g.append(0.0 if pv == bv else (1.0 if math.isinf(bv) else -1.0))
        elif bv == 0.0:
            if pv == 0.0:
                g.append(0.0)
            else:
                censored += 1
                g.append(sign)  # pv > 0: better when higher is better
        else:
            g.append(sign * (pv - bv) / bv)
    return Gains(tuple(ids), np.asarray(g, dtype=float), censored, unpaired)


def _gains_array(gains):
    g = np.asarray(gains.gains if isinstance(gains, Gains) else gains, dtype=float)
    if g.ndim != 1 or len(g) < 2:
        raise ValueError(f"need at least 2 paired replicates, have {g.size}")
    if not np.all(np.isfinite(g)):
        bad = int(np.flatnonzero(~np.isfinite(g))[0])
        raise ValueError(f"gain {bad} is {g[bad]}: gains must be finite (use relative_gains)")
    return g


def t_interval(gains, alpha=ALPHA):
    """(mean, lo, hi, sd): the mean gain and its 1 - alpha paired Student t
    interval, m +- t(1 - alpha/2; n - 1) s / sqrt(n). gains: a Gains or a
    sequence of at least 2 finite gains."""
    g = _gains_array(gains)
    n, m, s = len(g), float(g.mean()), float(g.std(ddof=1))
    h = float(stats.t.ppf(1 - alpha / 2, n - 1)) * s / math.sqrt(n)
    return m, m - h, m + h, s


def bootstrap_interval(gains, alpha=ALPHA, B=BOOT_B, seed=0):
    """(lo, hi): the paired bootstrap percentile 1 - alpha interval of the
    mean gain from B resamples of the replicates, drawn with
    numpy.random.default_rng(seed) (deterministic for equal data, B, seed)."""
    g = _gains_array(gains)
    if int(B) < 1:
        raise ValueError(f"B = {B}: need at least 1 resample")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(g), size=(int(B), len(g)))
    means = g[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def t_p(gains):
    """The two-sided paired t test's p-value of a zero mean gain:
    2 P(T_{n-1} > |m| / (s / sqrt n)); 0 or 1 when every gain is the same
    (nonzero or zero)."""
    g = _gains_array(gains)
    n, m, s = len(g), float(g.mean()), float(g.std(ddof=1))
    if s == 0.0:
        return 1.0 if m == 0.0 else 0.0
    return float(2 * stats.t.sf(abs(m) / (s / math.sqrt(n)), n - 1))


def tost(gains, margin=MARGIN):
    """The TOST p-value (Schuirmann 1987) of the mean gain against the
    equivalence interval (-margin, +margin): max of the two one-sided paired
    t tests' p-values; equivalent at level alpha when p < alpha."""
    g = _gains_array(gains)
    if not margin > 0:
        raise ValueError(f"margin = {margin}: must be > 0")
    n, m, s = len(g), float(g.mean()), float(g.std(ddof=1))
    if s == 0.0:
        return 0.0 if abs(m) < margin else 1.0
    se = s / math.sqrt(n)
    p_lower = float(stats.t.sf((m + margin) / se, n - 1))  # H0: mu <= -margin
    p_upper = float(stats.t.cdf((m - margin) / se, n - 1))  # H0: mu >= +margin
    return max(p_lower, p_upper)


def verdict(lo, hi, tost_p, alpha=ALPHA):
    """better (lo > 0), worse (hi < 0), equivalent (tost_p < alpha) or
    inconclusive, in that order."""
    if lo > 0:
        return "better"
    if hi < 0:
        return "worse"
    if tost_p < alpha:
        return "equivalent"
    return "inconclusive"


def compare(pol, base, higher_is_better=False, margin=MARGIN, alpha=ALPHA, B=BOOT_B, seed=0,
            ci="t", ids=None):
    """Paired comparison of a policy with a baseline: relative gains, the t
    and bootstrap intervals, TOST and the verdict (from the `ci` interval,
    "t" or "bootstrap"). ids, when given, restricts the pairs to those
    replicate ids (the held-out set of choose_baseline). Returns a
    Comparison; raises ValueError when fewer than 2 pairs remain."""
    if ci not in ("t", "bootstrap"):
        raise ValueError(f"ci = {ci!r}: t or bootstrap")
    p, b = _as_mapping(pol, "pol"), _as_mapping(base, "base")
    if ids is not None:
        keep = set(ids)
        p = {k: v for k, v in p.items() if k in keep}
        b = {k: v for k, v in b.items() if k in keep}
    gs = relative_gains(p, b, higher_is_better)
    m, t_lo, t_hi, s = t_interval(gs, alpha)
    b_lo, b_hi = bootstrap_interval(gs, alpha, B, seed)
    p_tost = tost(gs, margin)
    lo, hi = (t_lo, t_hi) if ci == "t" else (b_lo, b_hi)
    return Comparison(n=gs.n, mean=m, sd=s, t_lo=t_lo, t_hi=t_hi, boot_lo=b_lo, boot_hi=b_hi,
                      tost_p=p_tost, verdict=verdict(lo, hi, p_tost, alpha),
                      censored=gs.censored, ids=gs.ids, gains=tuple(float(x) for x in gs.gains),
                      unpaired=gs.unpaired, higher_is_better=bool(higher_is_better),
                      margin=margin, alpha=alpha, B=int(B), seed=seed, ci=ci, p=t_p(gs))


def split_replicates(ids, n_tuning, seed=0):
    """(tuning, reported): the replicate ids split into n_tuning tuning ids
    and the rest, both sorted. The tuning ids are those with the smallest
    SHA-256 of "seed:id", so the split depends only on the ids and the seed
    (not on their order), and adding replicates moves an id from tuning to
    reported only when a new id hashes below it."""
    ids = list(ids)
    if len(set(ids)) != len(ids):
        raise ValueError("replicate ids repeat")
    if not 1 <= n_tuning < len(ids):
        raise ValueError(f"n_tuning = {n_tuning}: need 1 <= n_tuning < {len(ids)} (the ids)")

    def key(rid):
        return hashlib.sha256(f"{seed}:{rid}".encode()).hexdigest()

    tuning = set(sorted(ids, key=key)[:n_tuning])
    return (tuple(_sorted_ids(tuning)), tuple(_sorted_ids(set(ids) - tuning)))


def choose_baseline(values, tuning, higher_is_better=False):
    """The baseline with the best mean metric over the tuning replicate ids
    only. values: baseline name -> (replicate id -> value); every baseline
    must have every tuning id. +inf counts as the worst (lower-is-better);
    equal means go to the first name in sorted order. Returns a
    BaselineChoice whose heldout ids (the chosen baseline's other
    replicates) are the ones the comparison must use."""
    tuning = list(tuning)
    if not values:
        raise ValueError("no baselines to choose from")
    if not tuning:
        raise ValueError("no tuning replicates")
    means = {}
    for name, v in values.items():
        v = _as_mapping(v, f"baseline {name!r}")
        miss = [r for r in tuning if r not in v]
        if miss:
            raise ValueError(f"baseline {name!r} lacks tuning replicates {miss}")
        means[name] = float(np.mean([_value(v[r], f"baseline {name!r}", r, higher_is_better)
                                     for r in tuning]))
    order = sorted(means, key=repr)
    best = (max if higher_is_better else min)(order, key=lambda k: means[k])
    held = _sorted_ids(set(_as_mapping(values[best], "")) - set(tuning))
    return BaselineChoice(best, tuple(held), means)


def holm(pvalues):
    """Holm-Bonferroni adjusted p-values of a family: a dict (cell -> p)
    gives a dict with the same keys, a sequence a list in its order. Reject
    a hypothesis at family-wise level alpha when its adjusted p <= alpha."""
    is_map = hasattr(pvalues, "items")
    items = list(pvalues.items()) if is_map else list(enumerate(pvalues))
    for k, p in items:
        p = float(p)
        if not 0.0 <= p <= 1.0:  # NaN fails too
            raise ValueError(f"p-value of {k!r} is {p}: must be in [0, 1]")
    m = len(items)
    order = sorted(range(m), key=lambda i: float(items[i][1]))
    adj, run = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, (m - rank) * float(items[i][1])))
        adj[i] = run
    if is_map:
        return {k: adj[i] for i, (k, _) in enumerate(items)}
    return adj


# --- command line -----------------------------------------------------------

def _selftest():
    """Consistency checks that need no reference values (tests/system/check_stats.py
    has those): returns a list of failures."""
    bad = []
    rng = np.random.default_rng(1)
    base = rng.uniform(50, 100, 12)
    pol = base * (1 - rng.normal(0.02, 0.01, 12))
    c = compare(pol, base, B=2000, seed=3)
    if not (c.t_lo < c.mean < c.t_hi and c.boot_lo < c.mean < c.boot_hi):
        bad.append("intervals do not hold the mean")
    if compare(pol, base, B=2000, seed=3) != c:
        bad.append("compare is not deterministic")
    g = relative_gains(pol, base).gains
    for d in (0.01, 0.03, 0.05):
        lo90, hi90 = t_interval(g, 0.10)[1:3]
        if (tost(g, d) < 0.05) != (-d < lo90 and hi90 < d):
            bad.append(f"TOST at margin {d} disagrees with the 90% interval")
    if relative_gains([math.inf, 1, math.inf], [math.inf, math.inf, 2]).gains.tolist() != \
            [0.0, 1.0, -1.0]:
        bad.append("infinite pairs")
    try:
        relative_gains([1.0, math.nan], [1.0, 2.0])
        bad.append("NaN accepted")
    except ValueError:
        pass
    ps = [0.01, 0.04, 0.03, 0.005]
    adj = holm(ps)
    by_p = [adj[i] for i in np.argsort(ps)]
    if any(a < p for a, p in zip(adj, ps)) or by_p != sorted(by_p):
        bad.append("Holm: an adjusted p below its raw p, or out of the raw order")
    return bad


def _floats(s):
    return [float(x) for x in s.split(",") if x.strip()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--selftest", action="store_true", help="run the built-in consistency checks")
    sub = ap.add_subparsers(dest="cmd")
    c = sub.add_parser("compare", help="paired comparison of two value lists (JSON out)")
    c.add_argument("--pol", required=True, help="policy values, comma-separated, replicate order")
    c.add_argument("--base", required=True, help="baseline values, same replicates, same order")
    c.add_argument("--higher-is-better", action="store_true")
    c.add_argument("--margin", type=float, default=MARGIN)
    c.add_argument("--alpha", type=float, default=ALPHA)
    c.add_argument("--boot", type=int, default=BOOT_B, help="bootstrap resamples B")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--ci", choices=("t", "bootstrap"), default="t")
    h = sub.add_parser("holm", help="Holm-adjusted p-values, one per line")
    h.add_argument("p", type=float, nargs="+")
    a = ap.parse_args(argv)
    if a.selftest:
        bad = _selftest()
        for b in bad:
            print("kvsim_stats selftest: " + b, file=sys.stderr)
        print("kvsim_stats selftest: " + ("FAILED" if bad else "ok"))
        return 1 if bad else 0
    try:
        if a.cmd == "compare":
            r = compare(_floats(a.pol), _floats(a.base), a.higher_is_better, a.margin, a.alpha,
                        a.boot, a.seed, a.ci)
            print(json.dumps(r.as_dict(), indent=1))
        elif a.cmd == "holm":
            for p, q in zip(a.p, holm(a.p)):
                print(f"{p:.6g}\t{q:.6g}")
        else:
            ap.print_help()
            return 2
    except ValueError as e:
        print(f"kvsim_stats: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
