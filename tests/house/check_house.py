#!/usr/bin/python3
"""The house rules, checked on the tree and on the built objects.

  check_house.py layers [ROOT]         no #include reaches up a layer
  check_house.py cycles BUILD_DIR      no two source files call each other in a loop
  check_house.py promises ROOT BUILD   no header promises a symbol a higher layer defines
  check_house.py budgets [ROOT]        no file over 1,000 lines, no function over 100

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
defined in" graph. `promises` reads every header's function-like names
(comments and strings stripped) and reports each one that an object of a
higher layer defines: a lower layer's header must not declare what only a
higher layer provides. `budgets` counts the lines of every production file
(.c, .h, .cu under the layer folders) and of every function (from its
signature's first line to the closing brace at column 0, the house style);
an exception is one entry of BUDGET_EXCEPTIONS, with its reason. Exit
status 0 when clean, 1 with one line per violation."""
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
TOPS = ("sim", "models", "traces", "policies", "gpu_validation")
FILE_BUDGET = 1000
FUNC_BUDGET = 100
# "path" (a file) or "path:function" -> why it may exceed its budget.
BUDGET_EXCEPTIONS = {
}
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


def nm_all(objs):
    """{object: (defined, undefined symbols)} for every object of objs, read
    by one nm run (a run per object cost most of the check's time)."""
    table = {o: (set(), set()) for o in objs}
    if not objs:
        return table
    out = subprocess.run(["nm", "-A"] + sorted(table), capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        obj, _, rest = line.partition(":")
        parts = rest.split()
        if obj not in table:
            continue
        defs, undefs = table[obj]
        if len(parts) == 2 and parts[0] == "U":
            undefs.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVW" and parts[1].isupper():
            defs.add(parts[2])
    return table


def cycles(build):
    objs = [o for o, _ in objects(".", build)]
    owner, need = {}, {}
    syms = nm_all(objs)
    for o in objs:
        defs, undefs = syms[o]
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


def sources(root, exts):
    """Every production file under the layer folders with one of exts."""
    for top in TOPS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for fn in sorted(files):
                if fn.endswith(exts):
                    yield os.path.relpath(os.path.join(d, fn), root)


def strip_c(text):
    """text without comments and with every string literal emptied."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def objects(root, build):
    """(object path, source path) of every production object whose source
    still exists (a stale object of a moved file is not the tree's)."""
    for d, _, files in os.walk(build):
        if "/tests" in d or "/gen" in d or "/fuzz" in d or "/plugins" in d:
            continue
        for f in files:
            if not f.endswith(".o"):
                continue
            stem = os.path.relpath(os.path.join(d, f), build)[:-2]
            for ext in (".c", ".cu"):
                if os.path.exists(os.path.join(root, stem + ext)) or \
                        os.path.exists(os.path.join(build, stem + ext)):
                    yield os.path.join(d, f), stem + ext
                    break


def promises(root, build):
    named = defaultdict(set)  # name -> headers that name it as name(
    for h in sources(root, ".h"):
        with open(os.path.join(root, h), errors="replace") as f:
            for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", strip_c(f.read())):
                named[m.group(1)].add(h)
    bad = []
    objs = sorted(objects(root, build))
    syms = nm_all([obj for obj, _ in objs])
    for obj, src in objs:
        me = folder_of(src)
        if me is None:
            continue
        for sym in sorted(syms[obj][0]):
            for h in sorted(named.get(sym, ())):
                them = folder_of(h)
                if them is not None and RANK[them] < RANK[me]:
                    bad.append("%s: promises %s(), which %s (layer %d '%s') defines" %
                               (h, sym, src, RANK[me], me))
    return bad


def functions(lines):
    """(name, first line, line count) of each function body in a file of the
    house style: the body opens with '{' alone at column 0, closes with '}'
    at column 0, and its signature's lines above start at column 0 or are
    indented continuations."""
    i = 0
    while i < len(lines):
        if lines[i].rstrip() == "{":
            j = i - 1
            while j > 0 and (lines[j][:1] in (" ", "\t", ")")):
                j -= 1
            m = re.search(r"(\w+)\s*\(", lines[j])
            k = i + 1
            while k < len(lines) and lines[k].rstrip() != "}":
                k += 1
            yield (m.group(1) if m else lines[j].strip()), j + 1, k - j + 1
            i = k
        i += 1


def budgets(root):
    bad, used = [], set()
    for p in sources(root, (".c", ".h", ".cu")):
        with open(os.path.join(root, p), errors="replace") as f:
            lines = f.read().split("\n")
        n = len(lines) - (lines[-1] == "")
        if n > FILE_BUDGET:
            if p in BUDGET_EXCEPTIONS:
                used.add(p)
            else:
                bad.append("%s: %d lines (budget %d)" % (p, n, FILE_BUDGET))
        if not p.endswith((".c", ".cu")):
            continue
        for name, at, k in functions(lines):
            if k > FUNC_BUDGET:
                key = "%s:%s" % (p, name)
                if key in BUDGET_EXCEPTIONS:
                    used.add(key)
                else:
                    bad.append("%s:%d: %s() is %d lines (budget %d)" %
                               (p, at, name, k, FUNC_BUDGET))
    for key in sorted(set(BUDGET_EXCEPTIONS) - used):
        bad.append("%s: listed as an exception but within budget (or gone): "
                   "remove it from BUDGET_EXCEPTIONS" % key)
    return bad


def main():
    cmds = ("layers", "cycles", "promises", "budgets")
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    arg = sys.argv[2] if len(sys.argv) > 2 else None
    if sys.argv[1] == "layers":
        bad = layers(arg or ".")
    elif sys.argv[1] == "budgets":
        bad = budgets(arg or ".")
    elif sys.argv[1] == "promises":
        bad = promises(arg or ".", sys.argv[3] if len(sys.argv) > 3 else "build")
    else:
        bad = cycles(arg or "build")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
