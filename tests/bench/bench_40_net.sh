#!/bin/sh
# Network model benchmark: flow-event cost (median, p99) on a 128-GPU
# leaf/spine cluster at 2:1 oversubscription (burst of 10,000 concurrent
# copies, steady closed-loop stream) and the 1,000 -> 100,000 flow scaling
# table on one shared bottleneck, and N flows on N distinct paths (N = 1,000
# to 100,000) under the full and the incremental re-solve, with their ratio.
# Run by `make bench` with $KVSIM set.
# Target: median < 10 us per flow event at 10,000 concurrent flows on 10,000
# distinct paths (incremental solver, leaf groups under a core).
set -e
: "${KVSIM:?set KVSIM to the kvsim binary}"
echo "== bench: network model (kvsim net bench) =="
"$KVSIM" net bench "$@"
