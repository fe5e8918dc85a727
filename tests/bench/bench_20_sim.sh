#!/bin/sh
# Simulator throughput: simulated requests per wall-second, events per
# second and peak RSS for the built-in default experiment (the baseline of
# this table), the default under speculative replication, and the Mooncake
# conversation trace (when ../shared/traces is present). Ratios are against
# the baseline measured in the same invocation. Then decode stepping:
# scheduler.decode = step against segment on the same scenarios, in the
# same invocation (CPU-seconds are user + system of the whole process).
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

# CPU-seconds, events and peak RSS of one run: "cpu events rss_kB"
cpu_run() {
	out=$( { /usr/bin/time -f "CPU %U %S %M" "$KVSIM" run "$@" ; } 2>&1 )
	printf '%s\n' "$out" | awk '/^  events /{e=$2} /^CPU /{c=$2+$3; r=$4} END{printf "%.2f %s %s", c, e, r}'
}
seg_row() { # label, then kvsim run arguments
	label=$1; shift
	set -- $(cpu_run "$@" --set scheduler.decode=step) $(cpu_run "$@" --set scheduler.decode=segment)
	cr=$(awk -v a="$1" -v b="$4" 'BEGIN{printf "%.2f", (b > 0 ? a / b : 0)}')
	er=$(awk -v a="$2" -v b="$5" 'BEGIN{printf "%.1f", (b > 0 ? a / b : 0)}')
	printf '%-34s %8s %9s %8s %9s %8s %8s %10s\n' "$label" "$1" "$2" "$4" "$5" "$cr" "$er" "$6"
}
echo "== decode: scheduler.decode = step vs segment (kvsim run, same invocation)"
printf '%-34s %8s %9s %8s %9s %8s %8s %10s\n' experiment step_cpu step_ev seg_cpu seg_ev \
	cpu_x ev_x seg_rss_kB
seg_row "default"
seg_row "default, sglang" --set scheduler.mode=sglang
seg_row "default, 600 s" --set trace.duration_s=600
seg_row "default, 600 s, sglang" --set trace.duration_s=600 --set scheduler.mode=sglang
seg_row "fan-out 65k (fanout_65k.ini)" analysis/experiments/fanout_65k.ini
seg_row "preemption-heavy (200 x 16 tok)" --set cluster.kv_blocks=200 --set kvcache.block_tokens=16
if [ -r ../shared/traces/mooncake/conversation_trace.jsonl ]; then
	seg_row "mooncake conversation, 16 inst." analysis/experiments/mooncake_conversation.ini
	seg_row "mooncake conversation, sglang" analysis/experiments/mooncake_conversation.ini \
		--set scheduler.mode=sglang
else
	echo "(mooncake trace absent: skipped)"
fi
