#!/bin/sh
# Simulator throughput: simulated requests per wall-second, events per
# second and peak RSS for the built-in default experiment (the baseline of
# this table), the default under speculative replication, and the Mooncake
# conversation trace (when ../shared/traces is present). Ratios are against
# the baseline measured in the same invocation.
set -e
KVSIM=${KVSIM:-build/kvsim}
row() { # label, then kvsim run arguments
	label=$1; shift
	out=$( { /usr/bin/time -f "RSS %M" "$KVSIM" run "$@" ; } 2>&1 )
	reqs=$(printf '%s\n' "$out" | awk '$1 == "requests" && NF == 2 {print $2}')
	ev=$(printf '%s\n' "$out" | awk '/^  events /{print $2}')
	wall=$(printf '%s\n' "$out" | awk '/^  wall time/{print $4}')
	rss=$(printf '%s\n' "$out" | awk '/^RSS/{print $2}')
	rps=$(awk -v r="$reqs" -v w="$wall" 'BEGIN{printf "%.0f", r / w}')
	eps=$(awk -v e="$ev" -v w="$wall" 'BEGIN{printf "%.0f", e / w}')
	[ -z "$base" ] && base=$rps
	ratio=$(awk -v a="$rps" -v b="$base" 'BEGIN{printf "%.2f", a / b}')
	printf '%-34s %9s %9s %12s %12s %8s %10s\n' "$label" "$reqs" "$wall" "$rps" "$eps" "$ratio" "$rss"
}
echo "== simulator throughput (kvsim run)"
printf '%-34s %9s %9s %12s %12s %8s %10s\n' experiment requests wall_s req/s events/s ratio rss_kB
base=""
row "default (baseline)"
row "default, speculative + oracle" --set policy.replication.name=speculative --set policy.predictor.name=oracle
row "default, early_rdma + repeat_count" --set policy.replication.name=early_rdma
if [ -r ../shared/traces/mooncake/conversation_trace.jsonl ]; then
	row "mooncake conversation, 16 inst." analysis/experiments/mooncake_conversation.ini
	row "mooncake conversation, cache_aware" analysis/experiments/mooncake_conversation.ini --set policy.routing.name=cache_aware
else
	echo "(mooncake trace absent: skipped)"
fi
