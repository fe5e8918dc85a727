"""Helpers shared by the plotting scripts: read a kvsim results catalog
(DIR/catalog.sqlite) into pandas, and the /requests table of a run's HDF5."""
import os
import re
import sqlite3

import h5py
import pandas as pd


def catalog_path(d):
    return d if d.endswith(".sqlite") else os.path.join(d, "catalog.sqlite")


def _quote_where(where, columns):
    """Quote bare dotted column names (trace.rate > 2), as kvsim runs does."""
    out, i = [], 0
    for m in re.finditer(r"'[^']*'|\"[^\"]*\"|[A-Za-z0-9_.]+", where):
        out.append(where[i:m.start()])
        tok = m.group(0)
        out.append(f'"{tok}"' if "." in tok and tok in columns else tok)
        i = m.end()
    out.append(where[i:])
    return "".join(out)


def load_runs(d, where=None, done_only=True):
    """One row per run: parameters, seed, metrics, h5_path made absolute."""
    path = catalog_path(d)
    if not os.path.exists(path):
        raise SystemExit(f"{path}: no catalog here")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    sql = "SELECT * FROM runs"
    conds = []
    if done_only:
        conds.append("status = 'done'")
    if where:
        conds.append("(" + _quote_where(where, set(cols)) + ")")
    if conds:
        sql += " WHERE " + " AND ".join(conds)
    df = pd.read_sql_query(sql, con)
    kinds = dict(con.execute("SELECT name, kind FROM columns").fetchall())
    con.close()
    base = os.path.dirname(os.path.abspath(path))
    df["h5_path"] = [os.path.join(base, p) for p in df["h5_path"]]
    df.attrs["params"] = [c for c in df.columns if kinds.get(c) == "param"]
    df.attrs["metrics"] = [c for c in df.columns if kinds.get(c) == "metric"]
    return df


def read_requests(h5):
    with h5py.File(h5, "r") as f:
        return pd.DataFrame(f["requests"][:])
