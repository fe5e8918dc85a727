#!/bin/sh
# The performance issue's target rows, each with what it is compared with
# measured in the same invocation (CPU-seconds are user + system of the whole
# process, RSS its peak):
#   - the Mooncake conversation trace on 16 instances, segment vs step;
#   - the same 100 K Poisson requests on 16 vs 1,024 instances (TP2);
#   - the 1,024-GPU hour (analysis/experiments/cluster_1024gpu_hour.ini),
#     with its 10 K and 100 K request prefixes for the growth;
#   - the 8,192-GPU hour (analysis/experiments/cluster_8192gpu_hour.ini,
#     prefix sharing, least_load): speculative replication with the oracle
#     against least_load at 30 simulated seconds, and the hour itself;
#   - growth, each against its first point: about 1 M requests at a similar
#     per-instance rate on 1,024, 4,096 and 8,192 GPUs (the 1,024-GPU
#     config), and 1 M, 3 M and 10 M requests on 8,192 GPUs (the 8,192
#     config at 360, 1,080 and 3,600 s);
#   - the 15 Bursted-ART windows x 3 policies of the study's table (the
#     Python driver included), with the parsed-trace cache empty and
#     then warm, and warm again with decode stepped (the same-call
#     baseline), when ../shared/traces is present.
# Every row gives CPU-s, peak RSS (kB) and events of both runs and the
# target / compared ratio of each. BENCH_QUICK=1 skips the hours and the
# 10 M-request point (the longest rows: several minutes on 2 cores).
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
# x / y to two decimals ("-" when either is not a measure)
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN{if (a !~ /^[0-9.]+$/ || !(b > 0)) print "-"; else printf "%.2f", a / b}'
}
row() { # label, a: "cpu events rss" of the compared run, b: the same of the target run
	# shellcheck disable=SC2086
	set -- "$1" $2 $3
	printf '%-44s %8s %10s %10s  %8s %10s %10s  %6s %6s %6s\n' "$1" "$2" "$4" "$3" "$5" "$7" "$6" \
	    "$(ratio "$5" "$2")" "$(ratio "$7" "$4")" "$(ratio "$6" "$3")"
}
# label, then "cpu events rss" of each point: each against the first
growth() {
	l=$1
	shift
	n=0
	for run in "$@"; do
		n=$((n + 1))
		# shellcheck disable=SC2086
		set -- $run
		[ $n = 1 ] && c1=$1 e1=$2 r1=$3
		printf '%-44s %8s %10s %10s  %6s %6s %6s\n' "$l: $n" "$1" "$3" "$2" \
		    "$(ratio "$1" "$c1")" "$(ratio "$3" "$r1")" "$(ratio "$2" "$e1")"
	done
}
echo "== performance targets (compared run, then target run; ratios target / compared)"
printf '%-44s %8s %10s %10s  %8s %10s %10s  %6s %6s %6s\n' scenario cmp_cpu cmp_rss_kB cmp_events \
    cpu rss_kB events cpu_x rss_x ev_x
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
H1=$(cpu_run "$H") # the 1,024-GPU hour, 1 M requests: three rows compare with it
if [ -z "${BENCH_QUICK:-}" ]; then
	row "1,024-GPU config: 100 K -> 1 M (the hour)" "$(cpu_run "$H" --set trace.duration_s=360)" \
	    "$H1"
fi
X=analysis/experiments/cluster_8192gpu_hour.ini
SPEC="--set policy.replication.name=speculative --set policy.predictor.name=oracle"
# shellcheck disable=SC2086
row "8,192-GPU config, 30 s: least_load -> spec." "$(cpu_run "$X" --set trace.duration_s=30)" \
    "$(cpu_run "$X" --set trace.duration_s=30 $SPEC)"
if [ -z "${BENCH_QUICK:-}" ]; then
	X1=$(cpu_run "$X") # the 8,192-GPU hour, 10 M requests
	row "1,024-GPU hour -> 8,192-GPU hour (10 M)" "$H1" "$X1"
fi
echo "== growth (point: cpu rss_kB events, then cpu_x rss_x ev_x against point 1)"
growth "~1 M req., 1,024 -> 4,096 -> 8,192 GPUs" "$H1" \
    "$(cpu_run "$H" --set cluster.nodes=512 --set trace.rate=1112 --set trace.duration_s=900)" \
    "$(cpu_run "$H" --set cluster.nodes=1024 --set trace.rate=2224 --set trace.duration_s=450)"
if [ -z "${BENCH_QUICK:-}" ]; then
	growth "8,192 GPUs, 1 M -> 3 M -> 10 M requests" \
	    "$(cpu_run "$X" --set trace.duration_s=360)" \
	    "$(cpu_run "$X" --set trace.duration_s=1080)" "$X1"
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
		printf '%-44s %8s %10s %10s  %8s\n' "bursted-art 15 windows x 3 policies, $t" "" "" "" "$c"
	done
	# the same-call baseline: the warm call again with decode stepped
	s=$(btb_cpu --set scheduler.decode=step)
	row "bursted-art warm: step -> segment" "$s - -" "$c - -"
	rm -rf "$C"
fi
