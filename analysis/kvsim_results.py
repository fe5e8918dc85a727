"""Helpers shared by the plotting scripts: read a kvsim results catalog
(DIR/catalog.sqlite) into pandas, and the /requests table of a run's HDF5.

A TTFT quantile over offered requests (ttft_p50_ms .. ttft_p99_ms) is +inf
where it reaches a request the run never served (rejected or unfinished);
the catalog and /summary keep it as float('inf'), and the helpers below
carry it through: a mean over seeds with one +inf is +inf (no CI), and a
gain against a +inf baseline is +inf (100%).

Every run's resolved config keys are in the catalog's table run_config:
load_runs adds each as a column by its dotted name (cluster.nodes,
policy.routing.name, ...), and `where` may name them as `kvsim runs
--where` does. df.attrs["params"] lists the swept parameters,
["keys"] every config key, ["metrics"] the summary metrics."""
import importlib.util
import os
import re
import sqlite3
import sys


def require(*mods):
    """Exits with a message naming each module of mods this Python lacks and
    how to get it (the analysis needs Debian's python3-h5py, -pandas,
    -numpy, -matplotlib; a python3 earlier on PATH often has none)."""
    missing = [m for m in mods if importlib.util.find_spec(m) is None]
    if not missing:
        return
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "kvsim_results"
    raise SystemExit(
        "%s: this Python (%s) has no module %s, which kvsim's analysis needs. Run it as "
        "`kvsim plot ...`, which picks an interpreter that has them (/usr/bin/python3 "
        "first), or install them: apt-get install %s (Debian), or %s -m pip install %s"
        % (prog, sys.executable, ", ".join(repr(m) for m in missing),
           " ".join("python3-" + m for m in missing), sys.executable, " ".join(missing)))


require("numpy", "pandas", "h5py")
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def catalog_path(d):
    return d if d.endswith(".sqlite") else os.path.join(d, "catalog.sqlite")


def _key_sql(key):
    """The run's recorded value of config key `key`, as SQL on table runs."""
    return "(SELECT value FROM run_config WHERE run_id = runs.id AND key = '%s')" % \
        key.replace("'", "''")


def _quote_where(where, columns, con=None):
    """Quote bare dotted column names (trace.rate > 2), as kvsim runs does,
    and read a dotted config key that is no column from table run_config."""
    out, i = [], 0
    for m in re.finditer(r"'[^']*'|\"[^\"]*\"|[A-Za-z0-9_.]+", where):
        out.append(where[i:m.start()])
        tok = m.group(0)
        dotted = "." in tok and (tok[0].isalpha() or tok[0] == "_")
        if dotted and tok in columns:
            tok = f'"{tok}"'
        elif dotted and con is not None and _has_key(con, tok):
            tok = _key_sql(tok)
        elif dotted and con is not None:
            raise SystemExit(f"--where: no column or config key '{tok}'")
        out.append(tok)
        i = m.end()
    out.append(where[i:])
    return "".join(out)


def _has_key(con, key):
    try:
        return con.execute("SELECT 1 FROM run_config WHERE key = ? LIMIT 1",
                           (key,)).fetchone() is not None
    except sqlite3.OperationalError:  # a catalog from before run_config
        return False


def _numeric(col):
    """A column of config values as numbers when every value is one."""
    try:
        return pd.to_numeric(col)
    except (ValueError, TypeError):
        return col


def load_runs(d, where=None, done_only=True, keys=True):
    """One row per run: parameters, seed, metrics, h5_path made absolute,
    the derived columns (trace, preset, git_rev) and, with keys, every
    resolved config key as a column by its dotted name."""
    path = catalog_path(d)
    if not os.path.exists(path):
        raise SystemExit(f"{path}: no catalog here")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    conds = []
    if done_only:
        conds.append("status = 'done'")
    if where:
        conds.append("(" + _quote_where(where, set(cols), con) + ")")
    cond = (" WHERE " + " AND ".join(conds)) if conds else ""
    df = pd.read_sql_query("SELECT * FROM runs" + cond, con)
    kinds = dict(con.execute("SELECT name, kind FROM columns").fetchall())
    units = dict(con.execute("SELECT name, unit FROM columns").fetchall())
    key_names = []
    if keys and _has_table(con, "run_config"):
        kv = pd.read_sql_query("SELECT run_id, key, value FROM run_config WHERE run_id IN"
                               " (SELECT id FROM runs" + cond + ")", con)
        if len(kv):
            wide = kv.pivot(index="run_id", columns="key", values="value")
            key_names = sorted(wide.columns)
            add = {k: _numeric(df["id"].map(wide[k])) for k in key_names if k not in df.columns}
            if add:
                df = pd.concat([df, pd.DataFrame(add, index=df.index)], axis=1)
    con.close()
    base = os.path.dirname(os.path.abspath(path))
    df["h5_path"] = [os.path.join(base, p) for p in df["h5_path"]]
    df.attrs["params"] = [c for c in df.columns if kinds.get(c) == "param"]
    df.attrs["metrics"] = [c for c in df.columns if kinds.get(c) == "metric"]
    df.attrs["keys"] = key_names
    df.attrs["units"] = {c: units.get(c) or "" for c in df.attrs["metrics"]}
    attrs = dict(df.attrs)
    df = df.copy()  # one block per dtype: adding columns later stays fast
    df.attrs.update(attrs)
    return df


def _has_table(con, name):
    return con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def varying_keys(df, skip=()):
    """The config keys (df.attrs["keys"]) whose value differs between rows
    of df, but for the seed and the names in skip: the rows of one
    configuration differ in none of them."""
    out = []
    for k in df.attrs.get("keys", []):
        if k in skip or k == "experiment.seed" or k not in df.columns:
            continue
        if df[k].astype(str).nunique(dropna=False) > 1:
            out.append(k)
    return out


def hidden_axes(df, shown):
    """The configuration columns that differ between runs which agree on the
    `shown` columns (and differ in more than the seed): pooling such runs
    would mix configurations. Config keys when df has them (attrs keys),
    else the swept parameters."""
    shown = [c for c in shown if c in df.columns]
    if df.attrs.get("keys"):
        cand = varying_keys(df, skip=shown)
    else:
        cand = [p for p in df.attrs.get("params", []) if p not in shown and p in df.columns]
    out = []
    for k in cand:
        v = df[k].astype(str)
        if not shown:
            mixed = v.nunique() > 1
        else:
            mixed = (v.groupby([df[c].astype(str) for c in shown]).nunique() > 1).any()
        if mixed:
            out.append(k)
    return out


# ---- numbers for people ------------------------------------------------------

_SHARE = re.compile(r"(_share|attainment|attainment_completed|^hit_rate_|_hit_rate_|_gap_blocks"
                    r"|network_cost_blocks)$|^hit_rate_")


def display_unit(metric, unit, values=()):
    """How a metric's values read best: (unit text, scale). Shares are %,
    bytes MB/GB/TB by the median magnitude of the values that are not 0,
    ms and others as they are."""
    if not unit and _SHARE.search(metric):
        return "%", 100.0
    if unit == "bytes":
        mags = sorted(abs(v) for v in values if v == v and v != 0 and abs(v) != float("inf"))
        big = mags[len(mags) // 2] if mags else 0
        for scale, name in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
            if big >= scale:
                return name, 1.0 / scale
        return "bytes", 1.0
    return unit, 1.0


def heading(metric, unit, values=()):
    """A metric's column heading with the unit its values are shown in
    (none repeated when the name already ends in it): ("ttft_p99_ms",
    "slo_attainment (%)", "bytes_bg (GB)") and the scale to apply."""
    u, scale = display_unit(metric, unit, values)
    name = label(metric)
    if u and not metric.endswith("_" + u) and u not in ("1/s",):
        name = f"{name} ({u})"
    elif u == "1/s":
        name = f"{name} (/s)"
    return name, scale


def fmt_num(v, digits=4):
    """v to `digits` significant digits, no exponent below 1e15; whole
    numbers as they are."""
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return "%d" % v
    if abs(v) >= 1e15:
        return "%.*g" % (digits, v)
    import math
    d = digits - 1 - int(math.floor(math.log10(abs(v))))
    return "%.*f" % (min(max(d, 0), 6), v)


def fmt_mean_ci(m, h):
    """A mean and its CI half-width h as "m ± h": h to 2 significant digits,
    m to the same decimal place (no exponent); m alone when h is 0 or NaN."""
    import math
    if not (h == h) or h == 0 or math.isinf(m):
        return fmt_num(m)
    e = int(math.floor(math.log10(abs(h)))) - 1  # place of h's second digit
    dec = max(0, -e)
    mr, hr = round(m, -e), round(h, -e)
    return "%.*f ± %.*f" % (dec, mr, dec, hr)


# The latency families kvsim summarises over completed requests only (their
# `kvsim metrics` docs say "of completed requests"); ttft_p50_ms .. p99 are
# over offered requests.
_COMPLETED_ONLY = re.compile(r"^(ttft_completed|tpot|tbt_p90|e2e|queue|ttft_nospec)"
                             r"_(mean|p50|p90|p95|p99)_ms$")


def label(metric):
    """A metric's name for a table or axis: completed-only latencies say so."""
    return metric + " (completed)" if _COMPLETED_ONLY.match(metric) and \
        "completed" not in metric else metric


def read_requests(h5):
    with h5py.File(h5, "r") as f:
        return pd.DataFrame(f["requests"][:])


# ---- one-call loading, confidence intervals, baseline pairing --------------

def _parse_config(text):
    """The resolved config text of /config as {"section.key": "value"}."""
    out, sec = {}, ""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            sec = line[1:-1].strip()
        elif "=" in line:
            k, v = line.split("=", 1)
            out[f"{sec}.{k.strip()}" if sec else k.strip()] = v.strip()
    return out


def _h5_text(v):
    v = v[()] if hasattr(v, "shape") else v
    return v.decode() if isinstance(v, bytes) else str(v)


def _load_h5_runs(files):
    """One row per run file: the config keys that every file has and that
    differ between them (the parameters), seed, every /summary metric, id
    and h5_path."""
    rows, cfgs = [], []
    for p in files:
        with h5py.File(p, "r") as f:
            cfgs.append(_parse_config(_h5_text(f["config"])) if "config" in f else {})
            row = {"id": os.path.splitext(os.path.basename(p))[0],
                   "seed": int(f.attrs["seed"]) if "seed" in f.attrs else None,
                   "h5_path": os.path.abspath(p)}
            mets = [k for k in f["summary"].attrs if not k.startswith("unit.")]
            row.update({k: float(f["summary"].attrs[k]) for k in mets})
            rows.append(row)
    # keys only some files have belong to a policy another key chose: that
    # key is the parameter, not them
    keys = sorted(set.intersection(*map(set, cfgs))) if cfgs else []
    params = [k for k in keys if len({c[k] for c in cfgs}) > 1 and k != "experiment.seed"]
    for row, c in zip(rows, cfgs):
        row.update({k: _num(c.get(k)) for k in params})
    df = pd.DataFrame(rows)
    df.attrs["params"] = params
    df.attrs["metrics"] = [c for c in df.columns if c not in params + ["id", "seed", "h5_path"]]
    return df


def _num(v):
    """A config value as the catalog stores it: a number when it reads as one."""
    try:
        f = float(v)
        return int(f) if f.is_integer() and "." not in str(v) else f
    except (TypeError, ValueError):
        return v


def load(path, requests=False, where=None, keys=True):
    """Runs as a DataFrame: parameters, seed and metrics, one row per run.

    path: a results directory, its catalog.sqlite, or one run .h5 file or a
    list of them (their parameters are the /config keys that differ between
    the files; `where` is then a pandas query string, else SQL on the
    catalog as `kvsim runs --where`). df.attrs["params"] and ["metrics"]
    name the columns; with keys (a catalog), every resolved config key is a
    column too (attrs["keys"]), swept or not. With requests=True returns
    (runs, reqs): every run's /requests rows with its id and parameters
    (and seed) joined, in run order."""
    files = [path] if isinstance(path, str) else list(path)
    if len(files) == 1 and not files[0].endswith(".h5"):
        df = load_runs(files[0], where, keys=keys)
    else:
        df = _load_h5_runs(files)
        if where:
            attrs = dict(df.attrs)
            df = df.query(where).reset_index(drop=True)
            df.attrs.update(attrs)
    if not requests:
        return df
    keep = ["id"] + [c for c in df.attrs["params"] + ["seed"] if c in df.columns]
    parts = []
    for _, r in df.iterrows():
        q = read_requests(r["h5_path"])
        for c in keep:
            q[c] = r[c]
        parts.append(q)
    reqs = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=keep)
    reqs.attrs["params"] = list(df.attrs["params"])
    return df, reqs


# Two-sided Student t quantiles t_{1-a/2, dof} for conf = 0.95, from any
# statistics table (e.g. NIST/SEMATECH e-Handbook of Statistical Methods,
# 1.3.6.7.2); used only when scipy is not importable.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042,
        40: 2.021, 60: 2.000, 120: 1.980}


def t_quantile(dof, conf=0.95):
    """Two-sided Student t quantile: the CI half-width is this x sd / sqrt(n)."""
    try:
        from scipy import stats
        return float(stats.t.ppf(0.5 + conf / 2, dof))
    except ImportError:
        if abs(conf - 0.95) > 1e-12:
            raise ValueError("without scipy only conf=0.95 is tabulated")
        ks = [k for k in sorted(_T95) if k <= dof]
        # the next smaller tabulated dof: a slightly wider, conservative CI
        return _T95[ks[-1]] if dof <= 120 else 1.960


def groups(df, by, sort=True):
    """(key tuple, rows) per group of the columns `by` (a list), NaN kept."""
    for key, g in df.groupby(by[0] if len(by) == 1 else by, sort=sort, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), g


def mean_ci(df, by, metric, conf=0.95):
    """Mean of `metric` per group of `by` (a column or list; the runs of a
    group are typically its seeds) and the half-width of its `conf` CI
    (Student t, n - 1 degrees of freedom; NaN for one run). Returns a
    DataFrame with the `by` columns, n, mean, sd, ci, lo, hi. A group with
    an infinite value has that mean (+inf) and no sd or CI."""
    by = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in groups(df, by):
        v = pd.to_numeric(g[metric], errors="coerce").dropna().to_numpy(dtype=float)
        n = len(v)
        m = float(v.mean()) if n else float("nan")
        # a run that never served some requests has a +inf quantile: the
        # mean is +inf and has no spread (numpy's would be NaN, inf - inf)
        spread = n > 1 and np.isfinite(v).all()
        sd = float(v.std(ddof=1)) if spread else float("nan")
        ci = t_quantile(n - 1, conf) * sd / n ** 0.5 if spread else float("nan")
        rows.append(dict(zip(by, key), n=n, mean=m, sd=sd, ci=ci, lo=m - ci, hi=m + ci))
    return pd.DataFrame(rows, columns=by + ["n", "mean", "sd", "ci", "lo", "hi"])


def pair_gain(df, metric, treat=None, base=None, policy="policy.replication.name",
              baseline="none", lower_is_better=True, best_of=("policy.preset",)):
    """Each treated run against its baseline: a run whose `policy` column is
    `baseline` at equal values of every other varied parameter and the same
    seed. Where several baselines match (the `best_of` parameters, the
    presets, are never matched on), the best by `metric` is taken (the
    lowest when lower_is_better). treat / base
    optionally narrow the two sides further (a pandas query string or a
    boolean mask). Returns the treated rows with base_<metric>, base_id, gain
    (base - treat when lower is better, treat - base otherwise) and gain_pct
    (gain / base x 100; +inf values as _gain says); a treated run without a
    baseline is left out."""
    params = [p for p in df.attrs.get("params", []) if p in df.columns]
    is_base = df[policy].astype(str) == baseline
    tr, bs = df[~is_base], df[is_base]
    if treat is not None:
        tr = tr.query(treat) if isinstance(treat, str) else tr[treat[~is_base]]
    if base is not None:
        bs = bs.query(base) if isinstance(base, str) else bs[base[is_base]]
    keys = _pair_keys(tr, bs, params, [policy, *best_of])
    m = pd.to_numeric(bs[metric], errors="coerce")
    bs = bs.assign(_m=m).sort_values("_m", ascending=lower_is_better, kind="mergesort")
    best = bs.drop_duplicates(keys + ["seed"], keep="first")
    best = best[keys + ["seed", "_m", "id"]].rename(columns={"_m": "base_" + metric, "id": "base_id"})
    out = tr.merge(best, on=keys + ["seed"], how="inner")
    t = pd.to_numeric(out[metric], errors="coerce")
    out["gain"], out["gain_pct"] = _gain(t, out["base_" + metric], lower_is_better)
    out.attrs.update(df.attrs)
    out.attrs["pair_keys"] = keys
    return out


def _gain(t, b, lower_is_better):
    """gain (b - t when lower is better, t - b otherwise) and gain_pct (gain
    / b x 100) of treated values t over baselines b. With +inf (a quantile
    that reaches a request never served): a finite t against an infinite b
    gains inf, 100% (the limit of (b - t) / b); an infinite t against a
    finite b loses -inf; both infinite: NaN (nothing to compare)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        gain = (b - t) if lower_is_better else (t - b)
        pct = 100.0 * gain / b
    pct = pct.mask(np.isinf(b) & np.isfinite(t), 100.0 if lower_is_better else -100.0)
    return gain, pct


def _pair_keys(tr, bs, params, skip):
    """The parameters a pair must agree on: every varied parameter but the
    `skip` ones and those that one side does not vary (a parameter such as
    oracle_recall means nothing to the baseline, which may have run at one
    value of it or none)."""
    return [p for p in params if p not in skip and
            tr[p].astype(str).nunique() > 1 and bs[p].astype(str).nunique() > 1]


def best_gain(df, metric, cells, treat, base, match=(), lower_is_better=True):
    """The best treated run of each cell against the best baseline, per seed.

    cells: the columns naming a cell (e.g. oracle recall and FP rate);
    treat, base: boolean masks over df (the treated and the baseline rows);
    match: columns a baseline must share with the cell besides the seed
    (none: every baseline row of the seed competes, e.g. all the presets
    with replication none). Per (cells, seed) the best (lowest when
    lower_is_better) treated `metric` meets the best baseline `metric` of
    that seed (and match values). Returns one row per (cells, seed) with
    treat_<metric>, base_<metric>, gain (base - treat when lower is better)
    and gain_pct (gain / base x 100); a cell without a baseline is left out.
    NaN cell values are kept as their own cell."""
    cells, match = list(cells), list(match)
    m = pd.to_numeric(df[metric], errors="coerce")
    d = df.assign(_m=m if lower_is_better else -m)
    t = d[treat].groupby(cells + ["seed"], dropna=False)["_m"].min().rename("_t").reset_index()
    b = d[base].groupby(match + ["seed"], dropna=False)["_m"].min().rename("_b").reset_index()
    out = t.merge(b, on=match + ["seed"], how="inner")
    sign = 1.0 if lower_is_better else -1.0
    out["treat_" + metric], out["base_" + metric] = sign * out.pop("_t"), sign * out.pop("_b")
    out["gain"], out["gain_pct"] = _gain(out["treat_" + metric], out["base_" + metric],
                                         lower_is_better)
    return out


def pooled_mean(h5_paths, column="ttft_ns", scale=1e-6):
    """The mean of a /requests column over the completed requests (status
    0) of several runs pooled, x scale (ns to ms by default), and how many
    requests that is; (nan, 0) when none completed."""
    tot, n = 0.0, 0
    for p in h5_paths:
        q = read_requests(p)
        v = q.loc[q["status"] == 0, column].to_numpy(dtype=float)
        tot += float(v.sum())
        n += len(v)
    return (tot / n * scale if n else float("nan")), n
