#!/usr/bin/python3
"""The reuse analysis of a trace (`kvsim trace reuse FILE --h5 OUT.h5`) in one PNG.

  plot_reuse.py OUT.h5 OUT.png

Four panels, all read from the HDF5 file (layout in analysis/README.md):
the miss-ratio curve (LRU hit rate vs cache capacity in blocks, one cache
for the cluster and one per instance, requests round-robin), the
reuse-distance histogram (prompt-block accesses per log2 bin of LRU stack
distance), hot-prefix concentration (share of requests whose first-L-block
prefix is among the top k) and the think-time gaps."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvsim_style as ks  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    with h5py.File(src, "r") as f:
        cap = f["mrc/capacity"][:]
        clus = f["mrc/cluster_hit_rate"][:]
        inst = f["mrc/instance_hit_rate"][:]
        dist = f["reuse_distance/distance"][:]
        cnt = f["reuse_distance/count"][:]
        cold = int(f["reuse_distance"].attrs["cold_misses"])
        depth = f["hot_prefix/depth"][:]
        topk = f["hot_prefix/top_k"][:]
        share = f["hot_prefix/share"][:]
        edges = f["session/gap_edges"][:]
        gaps = f["session/gap_count"][:]
        n_inst = int(f.attrs["instances"])
        rate = float(f.attrs["sample_rate"])
        btok = int(f.attrs["block_tokens"])
        source = f.attrs["source"]
        source = source.decode() if isinstance(source, bytes) else str(source)

    ks.apply()
    fig, axs = ks.figure(ncols=2, nrows=2)
    ax = axs[0][0]
    ax.step(cap, clus, where="post", label="cluster (one cache)", color=ks.color("cluster"))
    ax.step(cap, inst, where="post", label=f"per instance ({n_inst}, round-robin)",
            color=ks.color("instance"))
    ax.set_xscale("log")
    ax.set_xlabel(f"cache capacity (blocks of {btok} tokens, log scale)")
    ax.set_ylabel("LRU hit rate")
    ax.set_ylim(0, max(0.05, float(max(clus.max(initial=0), inst.max(initial=0))) * 1.1))
    ax.legend(loc="upper left")
    ax.set_title("miss-ratio curve" + (f" (SHARDS, R = {rate:g})" if rate < 1 else ""))

    ax = axs[0][1]
    if dist.size:
        bins = 2.0 ** np.arange(0, np.ceil(np.log2(dist.max())) + 2)
        ax.hist(dist, bins=bins, weights=cnt, color=ks.color("cluster"))
        ax.set_xscale("log")
    ax.set_xlabel("LRU stack distance (blocks, log2 bins)")
    ax.set_ylabel("prompt-block accesses")
    ax.set_title(f"reuse distances (cold misses: {cold})")

    ax = axs[1][0]
    x = np.arange(len(depth))
    w = 0.8 / len(topk)
    for j, k in enumerate(topk):
        ax.bar(x + (j - (len(topk) - 1) / 2) * w, share[:, j], w, label=f"top {k}",
               color=ks.color(f"top {k}"))
    ax.set_xticks(x, [f"first {d} blocks" for d in depth])
    ax.set_ylabel("share of requests")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("hot-prefix concentration")

    ax = axs[1][1]
    ax.stairs(gaps, edges, fill=True, color=ks.color("cluster"))
    ax.set_xscale("log")
    ax.set_xlabel("gap after the last holder of the longest shared prefix (s, log)")
    ax.set_ylabel("requests")
    ax.set_title("think time")

    fig.suptitle(os.path.basename(source))
    fig.tight_layout()
    ks.save(fig, out)


if __name__ == "__main__":
    main()
