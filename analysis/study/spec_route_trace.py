#!/usr/bin/env python3
"""Where speculative replication's routing gains or loses, from decision traces.

    spec_route_trace.py [--min-group N] BASE.h5 RUN.h5 [RUN.h5 ...]

BASE and each RUN are one run's HDF5 (kvsim run -o DIR, DIR/runs/*.h5) made
with output.decisions = true on the same trace and seed: BASE with
policy.replication.name = none, each RUN with speculative. Requests are
paired by id. One line per RUN, `key=value` fields:

  routes        route rows (requests the router or the hint placed)
  hinted        of them placed by the replication policy's hint
  hint_regret_ms  mean regret_ns of the hinted rows (chosen instance's TTFT
                estimate minus the best one, policies/README.md, "decision traces")
  dttft_s       sum over requests of TTFT(RUN) - TTFT(BASE), seconds
  dttft_hinted_s  the same over the hinted requests
  onto_pending  requests routed to an instance holding the prefix only by a
                speculative copy that had been asked for but had not started
                (its source was still computing the prefix: a deferred copy)
  pending_queue_ms  their mean queueing delay
  dttft_pending_s   their TTFT change against BASE, summed
  groups        groups of at least N requests (--min-group, 32 by default:
                the default experiment's fan-out bursts have 48) sharing a
                first block, that got a speculative copy in RUN
  group_insts   over those groups, the mean number of instances their
                requests went to, RUN/BASE: how few a replicated burst used
  group_ttft_ms   their requests' mean TTFT, RUN/BASE

A copy row (kind 1) and its /transfers rows are matched on request time,
destination and blocks; a copy has started when its first transfer has.
"""
import sys
from collections import Counter, defaultdict

import h5py
import numpy as np


def load(path):
    with h5py.File(path, "r") as f:
        if "decisions" not in f:
            raise SystemExit(f"{path}: no /decisions (run with output.decisions = true)")
        return f["decisions"][:], f["requests"][:], f["transfers"][:]


def copy_windows(dec, xf):
    """(prefix, dst) -> [(asked_ns, start_ns)] for each copy that was started."""
    start = {}
    for x in xf:
        k = (int(x["requested_ns"]), int(x["dst_instance"]), int(x["blocks"]))
        start[k] = min(start.get(k, 1 << 62), int(x["start_ns"]))
    out = defaultdict(list)
    for c in dec[(dec["kind"] == 1) & (dec["outcome"] == 0)]:
        k = (int(c["t_ns"]), int(c["chosen"]), int(c["blocks"]))
        if k in start:
            out[(int(c["prefix"]), int(c["chosen"]))].append((k[0], start[k]))
    return out


def group_stats(routes, reqs, prefix):
    rs = [r for r in routes if int(r["prefix"]) == prefix]
    insts = len({int(r["chosen"]) for r in rs})
    return insts, float(np.mean([reqs[int(r["id"])]["ttft_ns"] for r in rs])) / 1e6


def report(base, run, min_group):
    bdec, breq, _ = base
    dec, req, xf = run
    b = {int(r["id"]): r for r in breq}
    q = {int(r["id"]): r for r in req}
    routes = dec[dec["kind"] == 0]
    win = copy_windows(dec, xf)
    hinted = routes["hinted"] == 1
    dt = np.array([(q[int(i)]["ttft_ns"] - b[int(i)]["ttft_ns"]) / 1e9 for i in routes["id"]])
    pending = []
    for r in routes:
        t = int(r["t_ns"])
        for asked, started in win.get((int(r["prefix"]), int(r["chosen"])), []):
            if asked <= t < started and r["chosen_matched"] > 0:
                pending.append(int(r["id"]))
                break
    broutes = bdec[bdec["kind"] == 0]
    sizes = Counter(int(p) for p in routes["prefix"])
    groups = sorted({p for p, _ in win if sizes[p] >= min_group})
    gs = [(group_stats(routes, q, p), group_stats(broutes, b, p)) for p in groups]

    def pair(k, fmt):
        return "/".join(fmt.format(np.mean([g[side][k] for g in gs])) for side in (0, 1))
    return {
        "routes": len(routes),
        "hinted": int(hinted.sum()),
        "hint_regret_ms": round(float(routes["regret_ns"][hinted].mean()) / 1e6, 1) if hinted.any() else 0,
        "dttft_s": round(float(dt.sum()), 1),
        "dttft_hinted_s": round(float(dt[hinted].sum()), 1),
        "onto_pending": len(pending),
        "pending_queue_ms": round(float(np.mean([q[i]["queue_ns"] for i in pending])) / 1e6, 1)
        if pending else 0,
        "dttft_pending_s": round(sum((q[i]["ttft_ns"] - b[i]["ttft_ns"]) / 1e9 for i in pending), 1),
        "groups": len(groups),
        "group_insts": pair(0, "{:.1f}") if gs else "0/0",
        "group_ttft_ms": pair(1, "{:.0f}") if gs else "0/0",
    }


def main(argv):
    min_group = 32
    if len(argv) > 2 and argv[1] == "--min-group":
        min_group = int(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        raise SystemExit("usage: " + __doc__.strip().splitlines()[2].strip())
    base = load(argv[1])
    for path in argv[2:]:
        r = report(base, load(path), min_group)
        print(path, " ".join(f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main(sys.argv)
