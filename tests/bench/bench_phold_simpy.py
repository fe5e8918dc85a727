#!/usr/bin/python3
"""PHOLD in SimPy 3, the baseline `make bench` compares kvsim against.

Same model and parameters as `kvsim bench phold`: each event schedules one
successor at t + lookahead + Exp(mean - lookahead) (rounded to whole ns),
sent to a uniformly random LP with probability --remote, else to its own LP;
lps * events-per-lp events stay pending. Two idiomatic SimPy forms:
  process   one generator process per pending event token, looping on
            env.timeout (what a SimPy user would write);
  callback  bare Timeout events with a callback that schedules the next one
            (no process machinery; the faster form, so the default and the
            fairer baseline).
Only env.run() is timed, not creating the initial events. Prints one JSON line.
"""
import argparse
import json
import math
import random
import sys
import time

import simpy


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lps", type=int, default=1024)
    ap.add_argument("--events-per-lp", type=int, default=1)
    ap.add_argument("--remote", type=float, default=0.9)
    ap.add_argument("--lookahead", type=int, default=100, help="ns")
    ap.add_argument("--mean", type=int, default=1000, help="ns")
    ap.add_argument("--events", type=int, default=200000,
                    help="stop after this many committed events")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--style", choices=("callback", "process"), default="callback")
    a = ap.parse_args()
    if a.lps < 1 or a.events_per_lp < 1 or not 0 <= a.remote <= 1 \
            or a.lookahead < 0 or a.mean <= a.lookahead or a.events < 1:
        ap.error("bad parameters (see --help)")

    env = simpy.Environment()
    rng = random.Random(a.seed)
    rand, log = rng.random, math.log
    la, exp_mean, remote, lps = a.lookahead, float(a.mean - a.lookahead), a.remote, a.lps
    lps_over_remote = lps / remote if remote > 0 else 0.0
    target = a.events
    stop = env.event()
    st = {"n": 0, "remote": 0}

    def delay():
        # Exp by inversion, -m ln U, U in (0, 1], as kvsim does.
        return la + int(-exp_mean * log(1.0 - rand()) + 0.5)

    if a.style == "callback":
        timeout = env.timeout

        def on_event(ev):
            st["n"] += 1
            dst = ev.value
            u = rand()
            if u < remote:  # one uniform picks both, as kvsim does
                dst = min(int(u * lps_over_remote), lps - 1)
                st["remote"] += 1
            timeout(delay(), dst).callbacks.append(on_event)
            if st["n"] == target:
                stop.succeed()

        for lp in range(lps):
            for _ in range(a.events_per_lp):
                timeout(delay(), lp).callbacks.append(on_event)
    else:
        def token(lp):
            while True:
                yield env.timeout(delay())
                st["n"] += 1
                u = rand()
                if u < remote:
                    lp = min(int(u * lps_over_remote), lps - 1)
                    st["remote"] += 1
                if st["n"] == target:
                    stop.succeed()

        for lp in range(lps):
            for _ in range(a.events_per_lp):
                env.process(token(lp))

    t0 = time.perf_counter()
    c0 = time.process_time()
    env.run(until=stop)
    c1 = time.process_time()
    t1 = time.perf_counter()
    wall = t1 - t0
    print(json.dumps({
        "bench": "phold-simpy", "style": a.style, "simpy": simpy.__version__,
        "lps": a.lps, "events_per_lp": a.events_per_lp,
        "pending": a.lps * a.events_per_lp, "remote": a.remote,
        "lookahead_ns": a.lookahead, "mean_ns": a.mean, "seed": a.seed,
        "committed": st["n"], "remote_sent": st["remote"], "sim_end_ns": env.now,
        "wall_s": round(wall, 6), "cpu_s": round(c1 - c0, 6),
        "events_per_s": round(st["n"] / wall) if wall > 0 else 0,
        "events_per_cpu_s": round(st["n"] / (c1 - c0)) if c1 > c0 else 0,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
