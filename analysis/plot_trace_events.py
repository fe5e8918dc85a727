#!/usr/bin/python3
"""A trace-event JSON file drawn as a timeline image, as Perfetto lays it out.

  plot_trace_events.py FILE.json --png OUT.png [--from S] [--to S] [--title T]

Reads only the Trace Event Format (the JSON object form {"traceEvents":
[...]}, or a bare array of events): "M" events name processes and threads
(process_name, thread_name, their sort indexes), "X" events are slices
(ts, dur in microseconds) on their (pid, tid) track, "C" events are counter
samples (one series per args key, held until the next sample). What kvsim
run --trace-events writes (sim/out/out_trace_events.h): a process per node
with a track per instance and its "instance I KV" and "instance I queue"
counters, and a process "links" with a lane per concurrent copy of each link
class. Draws one row per thread track with its slices coloured by name, and
one step-plot row per counter (bytes shown in GB where the counter's name
ends in "KV"), in the processes' and threads' sort order, over the window
[--from, --to] in seconds of trace time (default: the whole trace).
Exit status 0, or 1 with a message when the file is not trace-event JSON or
the window holds nothing; 2 for bad arguments."""
import argparse
import json
import sys

# Slice colours by name (kvsim's slice names first; others cycle).
SLICE_COLORS = {"prefill": "#0072B2", "decode": "#56B4E9", "prefill+decode": "#009E73",
                "copy job": "#CC79A7", "foreground copy": "#D55E00",
                "background copy": "#E69F00", "handoff": "#F0E442"}
OTHER = ["#999999", "#882255", "#44AA99", "#117733", "#332288", "#AA4499"]
SERIES = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9"]


class TraceError(Exception):
    """The file is not trace-event JSON (the message says why)."""


def load_events(path):
    """The list of events of a trace-event file (object or array form)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise TraceError("cannot read: %s" % e.strerror) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TraceError("not JSON: %s" % e) from None
    ev = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(ev, list):
        raise TraceError("no traceEvents array")
    for i, e in enumerate(ev):
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            raise TraceError("event %d has no ph" % i)
        if e["ph"] in "XC" and not isinstance(e.get("ts"), (int, float)):
            raise TraceError("event %d (%s) has no numeric ts" % (i, e["ph"]))
        if e["ph"] == "X" and not isinstance(e.get("dur"), (int, float)):
            raise TraceError("event %d (X) has no numeric dur" % i)
    return ev


def collect(events, t0_us, t1_us):
    """Tracks and counters in the window [t0_us, t1_us] (None: open):
    returns (rows, names) where rows is [(sort key, kind, label, data)],
    kind "slices" (data [(start_s, dur_s, name)]) or "counter" (data
    {series: [(t_s, value)]}, with the value in force at the window's
    start)."""
    pname, tname, psort, tsort = {}, {}, {}, {}
    slices, counters = {}, {}
    for e in events:
        ph, pid, tid = e["ph"], e.get("pid", 0), e.get("tid", 0)
        args = e.get("args") or {}
        if ph == "M":
            if e.get("name") == "process_name":
                pname[pid] = str(args.get("name", pid))
            elif e.get("name") == "thread_name":
                tname[(pid, tid)] = str(args.get("name", tid))
            elif e.get("name") == "process_sort_index":
                psort[pid] = args.get("sort_index", 0)
            elif e.get("name") == "thread_sort_index":
                tsort[(pid, tid)] = args.get("sort_index", 0)
        elif ph == "X":
            a, b = e["ts"], e["ts"] + e["dur"]
            if (t1_us is not None and a > t1_us) or (t0_us is not None and b < t0_us):
                continue
            a = a if t0_us is None else max(a, t0_us)
            b = b if t1_us is None else min(b, t1_us)
            slices.setdefault((pid, tid), []).append((a / 1e6, (b - a) / 1e6, str(e.get("name"))))
        elif ph == "C":
            if t1_us is not None and e["ts"] > t1_us:
                continue
            c = counters.setdefault((pid, tid, str(e.get("name"))), {})
            for k, v in args.items():
                if isinstance(v, (int, float)):
                    c.setdefault(k, []).append((e["ts"], float(v)))
    rows = []
    for (pid, tid), sl in slices.items():
        key = (psort.get(pid, pid), pid, tsort.get((pid, tid), tid), tid, 0, "")
        label = "%s / %s" % (pname.get(pid, "pid %s" % pid), tname.get((pid, tid), "tid %s" % tid))
        rows.append((key, "slices", label, sl))
    for (pid, tid, name), series in counters.items():
        data = {}
        for k, pts in series.items():
            pts.sort()
            if t0_us is not None:  # the value in force at the window's start
                before = [p for p in pts if p[0] <= t0_us]
                pts = ([(t0_us, before[-1][1])] if before else []) + [p for p in pts if p[0] > t0_us]
            if pts:
                data[k] = [(t / 1e6, v) for t, v in pts]
        if data:
            key = (psort.get(pid, pid), pid, tsort.get((pid, tid), tid), tid, 1, name)
            rows.append((key, "counter", name, data))
    rows.sort(key=lambda r: r[0])
    return rows


def draw(rows, png, t0_s, t1_s, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    heights = [0.35 if kind == "slices" else 0.75 for _, kind, _, _ in rows]
    fig, axes = plt.subplots(len(rows), 1, sharex=True, squeeze=False,
                             figsize=(13, 1.2 + sum(heights)),
                             gridspec_kw={"height_ratios": heights, "hspace": 0.08})
    colors, other = {}, iter(OTHER * 100)
    for ax, (_, kind, label, data) in zip(axes[:, 0], rows):
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=6.5)
        ax.tick_params(axis="y", labelsize=5.5)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if kind == "slices":
            for name in {n for _, _, n in data}:
                if name not in colors:
                    colors[name] = SLICE_COLORS.get(name) or next(other)
                ax.broken_barh([(a, d) for a, d, n in data if n == name], (0, 1),
                               facecolors=colors[name], edgecolor="none")
            ax.set_ylim(0, 1)
            ax.set_yticks([])
        else:
            gb = label.endswith("KV")
            for k, (key, pts) in enumerate(sorted(data.items())):
                t = [p[0] for p in pts] + [t1_s]
                v = [p[1] / (1e9 if gb else 1.0) for p in pts]
                ax.step(t, v + v[-1:], where="post", lw=0.8, color=SERIES[k % len(SERIES)],
                        label=key + (" (GB)" if gb else ""))
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=5.5, frameon=False)
            ax.set_ylim(bottom=0)
    axes[-1, 0].set_xlim(t0_s, t1_s)
    axes[-1, 0].set_xlabel("trace time (s)")
    handles = [Patch(color=c, label=n) for n, c in colors.items()]
    top = axes[0, 0]
    if handles:  # the slices' legend above the first row, the title above it
        top.add_artist(top.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.02),
                                  ncol=len(handles), fontsize=7, frameon=False))
    top.set_title(title, fontsize=9, pad=18 if handles else 6)
    fig.savefig(png, dpi=130, bbox_inches="tight")
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="trace-event JSON (kvsim run --trace-events FILE)")
    ap.add_argument("--png", required=True, help="the image to write")
    ap.add_argument("--from", dest="t0", type=float, default=None, help="window start, s")
    ap.add_argument("--to", dest="t1", type=float, default=None, help="window end, s")
    ap.add_argument("--title", default=None)
    a = ap.parse_args(argv)
    if a.t0 is not None and a.t1 is not None and a.t1 <= a.t0:
        ap.error("--to must be after --from")
    try:
        ev = load_events(a.file)
    except TraceError as e:
        print("plot_trace_events.py: %s: %s" % (a.file, e), file=sys.stderr)
        return 1
    t0 = None if a.t0 is None else a.t0 * 1e6
    t1 = None if a.t1 is None else a.t1 * 1e6
    rows = collect(ev, t0, t1)
    if not rows:
        print("plot_trace_events.py: %s: no slice or counter in the window" % a.file, file=sys.stderr)
        return 1
    ends = [a_ + d for _, k, _, data in rows if k == "slices" for a_, d, _ in data] + \
        [p[0] for _, k, _, data in rows if k == "counter" for pts in data.values() for p in pts]
    t0_s = a.t0 if a.t0 is not None else 0.0
    t1_s = a.t1 if a.t1 is not None else max(ends)
    draw(rows, a.png, t0_s, max(t1_s, t0_s + 1e-6),
         a.title or "%s, %g-%g s (slices per track; counters as step plots)" % (a.file, t0_s, t1_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
