#!/bin/sh
# The performance issue's target rows, each with what it is compared with
# measured in the same invocation (CPU-seconds are user + system of the whole
# process, RSS its peak):
#   - the Mooncake conversation trace on 16 instances, segment vs step;
#   - the same 100 K Poisson requests on 16 vs 1,024 instances (TP2);
#   - the 1,024-GPU hour (analysis/experiments/cluster_1024gpu_hour.ini),
#     with its 10 K and 100 K request prefixes for the growth;
#   - the 15 Bursted-ART windows x 3 policies of the study's table (the
#     Python driver included), with the parsed-trace cache empty and
#     then warm, and warm again with decode stepped (the same-call
#     baseline), when ../shared/traces is present.
# BENCH_QUICK=1 skips the hour (about a minute on 2 cores).
set -e
KVSIM=${KVSIM:-build/kvsim}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# "cpu events rss_kB" of: kvsim run ARGS
cpu_run() {
	out=$( { /usr/bin/time -f "CPU %U %S %M" "$KVSIM" run -o "$D/r$$" "$@" ; } 2>&1 )
	rm -rf "$D/r$$"
	printf '%s\n' "$out" | awk '/^  events /{e=$2} /^CPU /{c=$2+$3; r=$4} END{printf "%.2f %s %s", c, e, r}'
}
row() { # label, a: "cpu events rss" of the compared run, b: the same of the target run
	set -- "$1" $2 $3
	printf '%-44s %9s %11s %9s %11s %8s %10s\n' "$1" "$2" "$3" "$5" "$6" \
	    "$(awk -v a="$2" -v b="$5" 'BEGIN{printf "%.2f", (a > 0 ? b / a : 0)}')" "$7"
}
echo "== performance targets (compared run, then target run; ratio = target / compared CPU)"
printf '%-44s %9s %11s %9s %11s %8s %10s\n' scenario cmp_cpu cmp_events cpu events ratio rss_kB
if [ -r ../shared/traces/mooncake/conversation_trace.jsonl ]; then
	M=analysis/experiments/mooncake_conversation.ini
	row "mooncake 16 inst.: step -> segment" "$(cpu_run "$M" --set scheduler.decode=step)" \
	    "$(cpu_run "$M")"
else
	echo "(mooncake trace absent: skipped)"
fi
P="--set trace.kind=gen --set trace.gen=poisson --set trace.rate=4 --set trace.duration_s=0 \
--set trace.requests=100000 --set cluster.tp=2"
# shellcheck disable=SC2086
row "100 K requests: 16 inst. -> 1,024 inst." "$(cpu_run $P --set cluster.nodes=4)" \
    "$(cpu_run $P --set cluster.nodes=256)"
H=analysis/experiments/cluster_1024gpu_hour.ini
row "1,024-GPU config: 10 K -> 100 K requests" "$(cpu_run "$H" --set trace.duration_s=36)" \
    "$(cpu_run "$H" --set trace.duration_s=360)"
if [ -z "${BENCH_QUICK:-}" ]; then
	row "1,024-GPU config: 100 K -> 1 M (the hour)" "$(cpu_run "$H" --set trace.duration_s=360)" \
	    "$(cpu_run "$H")"
fi
if [ -r ../shared/traces/bursted_art/test_00.jsonl.gz ]; then
	# cold: an empty parsed-trace cache (every window parsed); warm: the
	# same call again, as every later run of a sweep or of this driver
	C=$(mktemp -d)
	# CPU-seconds of the driver with the cache $C and extra options $@
	btb_cpu() {
		{ KVSIM_CACHE_DIR=$C /usr/bin/time -f "CPU %U %S %M" /usr/bin/python3 \
		    analysis/btb_table.py -j 1 --kvsim "$KVSIM" "$@" > /dev/null ; } 2>&1 |
		    awk '/^CPU /{printf "%.2f", $2 + $3}'
	}
	for t in cold warm; do
		c=$(btb_cpu)
		printf '%-44s %9s %11s %9s\n' "bursted-art 15 windows x 3 policies, $t" "" "" "$c"
	done
	# the same-call baseline: the warm call again with decode stepped
	s=$(btb_cpu --set scheduler.decode=step)
	row "bursted-art warm: step -> segment" "$s - -" "$c - -"
	rm -rf "$C"
fi
