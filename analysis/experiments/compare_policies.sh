#!/bin/sh
# Runs one experiment under the policy combinations the speculative-
# replication question needs (routing baselines, the proposal's early_rdma
# rule, and speculative replication with each predictor), into a results
# directory, and prints the admitted share, p95 TTFT over offered requests
# (inf where a shed request reaches it), mean TTFT of completed requests,
# bytes copied and wasted VRAM.
#   analysis/experiments/compare_policies.sh CONFIG [RESULTS_DIR] [kvsim sweep options]
set -e
cfg=${1:?usage: compare_policies.sh CONFIG [RESULTS_DIR] [sweep options]}
dir=${2:-results/$(basename "$cfg" .ini)}
[ $# -ge 2 ] && shift 2 || shift $#
# the repository's build, else an installed kvsim on PATH
[ -n "$KVSIM" ] || { [ -x build/kvsim ] && KVSIM=build/kvsim || KVSIM=kvsim; }
"$KVSIM" sweep "$cfg" -j 2 -o "$dir" "$@" \
	--zip policy.routing.name=least_load,cache_aware,least_load,least_load,least_load,least_load,least_load,least_load \
	--zip policy.replication.name=none,none,early_rdma,speculative,speculative,speculative,speculative,speculative \
	--zip policy.predictor.name=repeat_count,repeat_count,repeat_count,oracle,repeat_count,ewma,holt,hawkes
"$KVSIM" runs "$dir" --where "status = 'done'" --columns \
	policy.routing.name,policy.replication.name,policy.predictor.name,admitted_share,ttft_p95_ms,ttft_completed_mean_ms,hit_rate_tokens,bytes_fg,bytes_bg,spec.replicas_created,spec.replicas_wasted,spec.unused_vram_gb_s
