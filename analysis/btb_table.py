#!/usr/bin/python3
"""The original study's table on the Bursted-ART windows, from kvsim runs.

  btb_table.py [--traces DIR] [-j 2] [--set KEY=VALUE ...] [--lift] [--out DIR]

Runs every window (test_*.jsonl.gz, each from a cold cluster) under the
study's three configurations with the preset `btb`:
  least_load   --set policy.routing.name=least_load
  cache_aware  --set policy.routing.name=cache_aware
  early_rdma   --set policy.replication.name=early_rdma
pools the requests' ttft_ns from /requests and prints pooled mean and
p95 (p95 = sorted[int(0.95 n)], the study's rule) beside the reference
figures in btb_reference_ttft.json (the study's own simulator).

--lift also runs, for each compatibility switch the preset turns on, the
same windows with that one switch turned back to kvsim's default, and with
every switch off (causal, contended), and prints how much each assumption
alone moves each policy's pooled mean TTFT.
Extra --set options apply to every run (after the preset)."""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

POLICIES = {
    "least_load": ["policy.routing.name=least_load"],
    "cache_aware": ["policy.routing.name=cache_aware"],
    "early_rdma": ["policy.replication.name=early_rdma"],
}

# Each switch of the preset btb, and the value that lifts it (kvsim's default).
SWITCHES = [
    ("KV resident at admission", ["kvcache.resident_at=computed"]),
    ("copies from uncomputed KV", ["kvcache.copy_from=computed"]),
    ("no link contention", ["network.contention=maxmin"]),
    ("copy charged to target compute", ["network.copy_charge=network"]),
    ("linear compute model", ["compute.model=roofline"]),
    ("study admission (FIFO, reserve, serial prefill)", ["scheduler.mode=vllm",
                                                         "scheduler.chunked_prefill=true",
                                                         "scheduler.max_batched_tokens=8192"]),
    ("TTFT excludes first decode step", ["scheduler.ttft=first_token"]),
    ("study cache_aware rule", ["policy.routing.balance_rule=sglang"]),
    ("study early_rdma semantics", ["policy.replication.early_trigger=forecast"]),
]


def p95(x):
    s = np.sort(x)
    return float(s[int(0.95 * len(s))]) if len(s) else float("nan")


def run_one(kvsim, trace, sets, outdir):
    """TTFTs (s) of one window's completed requests."""
    cmd = [kvsim, "run", "-q", "-o", outdir, "--set", "policy.preset=btb",
           "--set", "trace.path=" + trace]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    files = glob.glob(os.path.join(outdir, "runs", "*.h5"))
    if len(files) != 1:
        raise RuntimeError("expected one run file in %s" % outdir)
    return read_ttft(files[0])[:2]


def read_ttft(path):
    """TTFTs (s) of a run file's completed requests, and how many did not complete."""
    with h5py.File(path, "r") as f:
        req = f["requests"][:]
        src = f.attrs["trace_path"]
    ok = req["status"] == 0
    src = src.decode() if isinstance(src, bytes) else str(src)
    return req["ttft_ns"][ok] / 1e9, int((~ok).sum()), src


def sweep_windows(kvsim, traces, sets, jobs, outdir):
    """[(ttft s, not completed)] of every window in order, from one `kvsim sweep`
    over trace.path: one process, and each window's trace parsed at most once
    (the parsed-trace cache serves the other policies). The base config names
    the first window, so each point resolves exactly as `kvsim run` would."""
    # The run files are read once and deleted: deflating them is wasted work
    # (output.compression changes the files' bytes, never a result).
    cmd = [kvsim, "sweep", "-o", outdir, "-j", str(jobs), "--no-progress", "--set",
           "policy.preset=btb", "--set", "trace.path=" + traces[0], "--set",
           "output.compression=0"]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["--grid", "trace.path=" + ",".join(traces)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:  # the failed points' own errors are in the catalog
        why = subprocess.run([kvsim, "runs", outdir, "--where", "status = 'failed'",
                              "--columns", "id,error"], capture_output=True, text=True)
        raise RuntimeError("%s failed (%d): %s\n%s" % (" ".join(cmd), r.returncode,
                                                    r.stderr.strip(), why.stdout.strip()))
    by_src = {}
    for f in glob.glob(os.path.join(outdir, "runs", "*.h5")):
        x, bad, src = read_ttft(f)
        by_src[os.path.realpath(src)] = (x, bad)
    try:
        return [by_src[os.path.realpath(t)] for t in traces]
    except KeyError as k:
        raise RuntimeError("no run file for %s in %s" % (k, outdir)) from None


def pooled(kvsim, traces, sets, jobs, tmp):
    """{policy: (mean, p95, n, not completed)} over all windows."""
    out = {}
    acc = {p: ([], 0) for p in POLICIES}
    # A comma would split a --grid value, and a set trace.path would be
    # overridden by the grid: such calls keep one `kvsim run` per window.
    one_sweep = (not any("," in t for t in traces) and len(set(traces)) == len(traces)
                 and not any(s.startswith("trace.path=") for s in sets))
    if one_sweep:
        for pol, ps in POLICIES.items():
            for x, bad in sweep_windows(kvsim, traces, sets + ps, jobs,
                                        tempfile.mkdtemp(dir=tmp)):
                acc[pol] = (acc[pol][0] + [x], acc[pol][1] + bad)
    else:
        with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
            futs = {}
            for pol, ps in POLICIES.items():
                for t in traces:
                    d = tempfile.mkdtemp(dir=tmp)
                    futs[ex.submit(run_one, kvsim, t, sets + ps, d)] = pol
            for fu, pol in futs.items():
                x, bad = fu.result()
                acc[pol] = (acc[pol][0] + [x], acc[pol][1] + bad)
    for pol, (xs, bad) in acc.items():
        x = np.concatenate(xs) if xs else np.array([])
        out[pol] = (float(x.mean()) if len(x) else float("nan"), p95(x), len(x), bad)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default=os.path.join(ROOT, "..", "shared", "traces", "bursted_art"),
                    help="folder with test_*.jsonl.gz and btb_reference_ttft.json")
    ap.add_argument("--kvsim", default=os.path.join(ROOT, "build", "kvsim"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--windows", help="comma-separated window names (default: all)")
    ap.add_argument("--lift", action="store_true", help="also lift each switch alone, then all")
    ap.add_argument("--json", help="write every figure to this JSON file")
    ap.add_argument("--from-json", help="print the tables of an earlier --json run, run nothing")
    a = ap.parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            result = json.load(f)
        report(result, None, a.lift or len(result["variants"]) > 1)
        return

    traces = sorted(glob.glob(os.path.join(a.traces, "test_*.jsonl.gz")))
    if a.windows:
        keep = set(a.windows.split(","))
        traces = [t for t in traces if os.path.basename(t).split(".")[0] in keep]
    if not traces:
        sys.exit("btb_table.py: no test_*.jsonl.gz under %s" % a.traces)
    ref = None
    rp = os.path.join(a.traces, "btb_reference_ttft.json")
    names = [os.path.basename(t).split(".")[0] for t in traces]
    if os.path.exists(rp):
        with open(rp) as f:
            rj = json.load(f)
        if len(names) == len(rj["windows"]):
            ref = rj.get("ALL") or rj.get("all") or rj.get("pooled")
        else:  # a subset: pool the reference only where it is per window
            ref = None
    result = {"windows": names, "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        variants = [("study assumptions (preset btb)", [])]
        if a.lift:
            variants += [("lift: " + n, s) for n, s in SWITCHES]
            variants.append(("every switch off", [x for _, s in SWITCHES for x in s]))
        for name, sets in variants:
            result["variants"][name] = pooled(a.kvsim, traces, a.set + sets, a.jobs, tmp)

    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(result, reference=ref), f, indent=1)
    result["reference"] = ref
    report(result, ref, a.lift)


def report(result, ref, lift):
    ref = ref or result.get("reference")
    names = result["windows"]
    base = result["variants"]["study assumptions (preset btb)"]
    print("Bursted-ART, %d windows pooled (%s)" % (len(names), ", ".join(names)))
    print("%-12s %9s %9s %9s %9s %8s %8s" % ("policy", "mean s", "p95 s", "ref mean", "ref p95",
                                             "mean err", "p95 err"))
    for pol, (m, q, n, bad) in base.items():
        if ref and pol in ref:
            rm, rq = ref[pol]
            print("%-12s %9.3f %9.3f %9.3f %9.3f %+7.1f%% %+7.1f%%" %
                  (pol, m, q, rm, rq, 100 * (m / rm - 1), 100 * (q / rq - 1)))
        else:
            print("%-12s %9.3f %9.3f %9s %9s" % (pol, m, q, "-", "-"))
        if bad:
            print("  (%d requests of %s did not complete)" % (bad, pol))
    if lift:
        off = result["variants"]["every switch off"]
        print("\nstudy assumptions vs every switch off (causal, contended), pooled TTFT s")
        print("%-12s %10s %10s %10s %10s" % ("policy", "study mean", "study p95", "off mean",
                                             "off p95"))
        for pol in POLICIES:
            print("%-12s %10.3f %10.3f %10.3f %10.3f" % (pol, base[pol][0], base[pol][1],
                                                         off[pol][0], off[pol][1]))
        print("\nmean TTFT (s) with one assumption lifted (change against the study's)")
        print("%-48s" % "variant" + "".join("%20s" % p for p in POLICIES))
        for name, res in result["variants"].items():
            cells = ""
            for pol in POLICIES:
                m = res[pol][0]
                cells += "%11.3f (%+5.0f%%)" % (m, 100 * (m / base[pol][0] - 1))
            print("%-48s%s" % (name[:48], cells))


if __name__ == "__main__":
    main()
