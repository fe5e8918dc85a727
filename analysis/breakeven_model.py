#!/usr/bin/python3
"""An analytic account of what a replication policy saves, checked against
the simulated runs it explains.

  breakeven_model.py OUT [EXP...]     (default: a0_load a1_regimes)

Model (per replicate, a policy run against its own deployment without
replication, same workload draw):

    dW     = (recomputed_base - recomputed_pol) x c_tok        [ms of prefill]
    direct = dW / completed_pol                                 [ms per request]
    copy   = fg_lost_pol / completed_pol                        [ms per request]
    predicted mean TTFT gain = direct - copy

recomputed is the prompt tokens each run computed (the requests' rows,
tok_recomputed: hits from any source, speculative ones included, and the
hits that replicas displaced, both land here); c_tok the compute model's
prefill time per token for the deployment (`kvsim model cost --prefill
4096`, divided by 4,096); fg_lost the foreground flow time lost to sharing
links with the copies (spec.fg_slowdown_mean_s, summed). The model prices
"expected use x time saved" (tokens a copy let a request skip) against
"copy time plus displaced hits" with no fitted constant. It leaves out
queueing: a prefill saved also shortens the wait of every request behind
it, so under load the simulated gain exceeds the direct one by roughly the
M/G/1 factor 1/(1 - rho). The check states the error of the direct model
at the lowest load of each workload, and the ratio simulated / predicted
at each load (the amplification), so a reader sees where the account holds.

Writes OUT/breakeven_model.csv (one row per pair), OUT/breakeven_model.md
and OUT/fig/answer_model.png (predicted against simulated).
"""
import functools
import os
import subprocess
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_results as kr  # noqa: E402
import study_answer as sa  # noqa: E402

_CTOK = {}


def c_tok(kvsim, cfg):
    """Prefill ms per token for the run's GPU, model and TP (cached)."""
    key = tuple(cfg.get(k, "") for k in ("gpu.name", "model.name", "cluster.tp"))
    if key not in _CTOK:
        args = [kvsim, "model", "cost", "--prefill", "4096"]
        for k, v in zip(("gpu.name", "model.name", "cluster.tp"), key):
            if v:
                args += ["--set", f"{k}={v}"]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        tot = [float(line.split()[1]) for line in out.splitlines() if line.startswith("total")]
        _CTOK[key] = tot[0] / 4096.0
    return _CTOK[key]


@functools.lru_cache(maxsize=None)
def recomputed(h5):
    """Prompt tokens the run computed (a baseline's file is read once,
    however many policies pair with it)."""
    q = kr.read_requests(h5)
    return float(q["tok_recomputed"].sum())


def pairs(out, exp, kvsim):
    df = sa.load_exp(out, exp)
    if df is None:
        return pd.DataFrame()
    d = sa.prepare(df, sa.ANSWER_EXPERIMENTS[exp])
    mean = "ttft_completed_mean_ms" if "ttft_completed_mean_ms" in d.columns else "ttft_mean_ms"
    cond = d.attrs["cond"]
    rows = []
    base = d[d["_fam"] == "none"]
    for _, p in d[d["_fam"] != "none"].iterrows():
        m = (base["_rep"] == p["_rep"])
        for c in cond + [sa.PRESET]:
            if c in d.columns:
                m &= (base[c].astype(str) == str(p[c])) | base[c].isna()
        b = base[m]
        if len(b) != 1:
            continue
        b = b.iloc[0]
        cfg = kr._parse_config(p["config"]) if "config" in p and isinstance(p["config"], str) else {}
        ct = c_tok(kvsim, cfg)
        dw = (recomputed(b["h5_path"]) - recomputed(p["h5_path"])) * ct
        n = float(p["completed"]) if p["completed"] else np.nan
        lost = float(np.nan_to_num(p.get("spec.fg_slowdown_mean_s", 0.0))) * 1e3
        r = {c: p[c] for c in cond if c in d.columns}
        r.update(experiment=exp, family=p["_fam"], preset=p.get(sa.PRESET), rep=p["_rep"],
                 c_tok_ms=ct, saved_ms=dw, direct_ms=dw / n, copy_ms=lost / n,
                 predicted_ms=(dw - lost) / n,
                 simulated_ms=float(b[mean]) - float(p[mean]))
        rows.append(r)
    return pd.DataFrame(rows)


def summarize(t):
    """Markdown: per workload and load, the direct model's error."""
    if t.empty:
        return "No pairs (the experiments are absent)."
    lines = ["| experiment | workload | load | family | pairs | predicted gain (ms, median) | simulated "
             "gain (ms, median) | simulated / predicted (median) | MAE (ms) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, g in t.groupby(["experiment", sa.NAME, sa.LOAD, "family"], dropna=False):
        pr, si = g["predicted_ms"].to_numpy(), g["simulated_ms"].to_numpy()
        ok = np.abs(pr) > 1e-9
        ratio = np.median(si[ok] / pr[ok]) if ok.any() else np.nan
        lines.append("| %s | %s | %s | %s | %d | %.1f | %.1f | %.2f | %.1f |" % (
            key[0], key[1], key[2], key[3], len(g), np.median(pr), np.median(si), ratio,
            np.mean(np.abs(si - pr))))
    return "\n".join(lines)


def figure(t, path):
    import kvsim_style as ks
    ks.apply()
    fig, ax = ks.figure()
    loads = sorted(pd.to_numeric(t[sa.LOAD], errors="coerce").dropna().unique())
    for ld in loads:
        g = t[pd.to_numeric(t[sa.LOAD], errors="coerce") == ld]
        ax.scatter(g["predicted_ms"], g["simulated_ms"], s=8, alpha=0.6, label=f"load x{ld:g}")
    lim = np.nanmax(np.abs(t[["predicted_ms", "simulated_ms"]].to_numpy()))
    ax.plot([-lim, lim], [-lim, lim], color="black", lw=0.8, ls=":", label="simulated = predicted")
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_yscale("symlog", linthresh=10)
    ax.set_xlabel("predicted mean TTFT gain (ms): prefill saved - copy interference, per request")
    ax.set_ylabel("simulated mean TTFT gain (ms, completed requests)")
    ax.legend(fontsize=7)
    ks.add_caption(fig, "one point per replicate and policy, against the same deployment without "
                        "replication; no fitted constant")
    return ks.save(fig, path)


def section(out, exps=("a0_load", "a1_regimes")):
    """The report's section (markdown lines); writes the CSV and figure."""
    kvsim = os.environ.get("KVSIM", "build/kvsim")
    parts = [pairs(out, e, kvsim) for e in exps]
    t = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    t.to_csv(os.path.join(out, "breakeven_model.csv"), index=False)
    md = ["## The analytic account", "", __doc__.split("Model")[1].split("Writes")[0].strip(), "",
          summarize(t), ""]
    if not t.empty:
        os.makedirs(os.path.join(out, "fig"), exist_ok=True)
        figure(t, os.path.join(out, "fig", "answer_model.png"))
        md += ["![model](fig/answer_model.png)", ""]
    with open(os.path.join(out, "breakeven_model.md"), "w") as f:
        f.write("\n".join(md))
    return md


def main():
    out = sys.argv[1]
    md = section(out, sys.argv[2:] or ("a0_load", "a1_regimes"))
    print(f"breakeven_model: {len(md)} lines -> {out}/breakeven_model.md")


if __name__ == "__main__":
    main()
