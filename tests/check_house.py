#!/usr/bin/python3
"""The house rules, checked on the tree and on the built objects.

  check_house.py layers [ROOT]         no #include reaches up a layer
  check_house.py cycles BUILD_DIR      no two source files call each other in a loop

Layers, lowest first (a folder may include its own headers and those of any
layer below it, never one above; the same-rank folders models, traces and
policies may not include each other):
  0 sim/base
  1 models traces policies
  2 sim/engine
  3 sim/cluster sim/net
  4 sim/run
  5 sim/out gpu_validation
  6 sim/cli
  tests/ may include anything.
`cycles` reads every object's defined and undefined symbols (nm) and reports
each strongly connected set of more than one file in the "calls a function
defined in" graph. Exit status 0 when clean, 1 with one line per violation."""
import os
import re
import subprocess
import sys
from collections import defaultdict

LAYERS = [
    ["sim/base"],
    ["models", "traces", "policies"],
    ["sim/engine"],
    ["sim/cluster", "sim/net"],
    ["sim/run"],
    ["sim/out", "gpu_validation"],
    ["sim/cli"],
]
RANK = {f: i for i, fs in enumerate(LAYERS) for f in fs}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    """The layer folder holding path (longest match), or None."""
    best = None
    for f in RANK:
        if path == f or path.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def layers(root):
    bad = []
    for top in ("sim", "models", "traces", "policies", "gpu_validation"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for fn in files:
                if not fn.endswith((".c", ".h", ".cu")):
                    continue
                p = os.path.relpath(os.path.join(d, fn), root)
                me = folder_of(p)
                if me is None:
                    bad.append("%s: not in any layer folder" % p)
                    continue
                with open(os.path.join(root, p), errors="replace") as f:
                    text = f.read()
                for ln, m in ((text.count("\n", 0, m.start()) + 1, m)
                              for m in INC.finditer(text)):
                    inc = m.group(1)
                    them = folder_of(inc)
                    if them is None:
                        continue  # generated or local headers
                    if them == me:
                        continue
                    if RANK[them] > RANK[me] or (RANK[them] == RANK[me]):
                        bad.append("%s:%d: includes %s (layer %d '%s' from layer %d '%s')" %
                                   (p, ln, inc, RANK[them], them, RANK[me], me))
    return bad


def nm(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defs, undefs = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefs.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVW" and parts[1].isupper():
            defs.add(parts[2])
    return defs, undefs


def cycles(build):
    objs = []
    for d, _, files in os.walk(build):
        if "/tests" in d or "/gen" in d or "/fuzz" in d or "/plugins" in d:
            continue
        objs += [os.path.join(d, f) for f in files if f.endswith(".o")]
    owner, need = {}, {}
    for o in objs:
        defs, undefs = nm(o)
        name = os.path.relpath(o, build)[:-2]
        need[name] = undefs
        for s in defs:
            owner[s] = name
    graph = defaultdict(set)
    for n, us in need.items():
        for s in us:
            if s in owner and owner[s] != n:
                graph[n].add(owner[s])
    # Tarjan's strongly connected components
    index, low, stack, on, out, k = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = k[0]
        k[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(need):
        if v not in index:
            visit(v)
    return ["call loop: " + " <-> ".join(c) for c in out]


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("layers", "cycles"):
        sys.exit(__doc__)
    if sys.argv[1] == "layers":
        bad = layers(sys.argv[2] if len(sys.argv) > 2 else ".")
    else:
        bad = cycles(sys.argv[2] if len(sys.argv) > 2 else "build")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
