#!/bin/sh
# Runs libFuzzer targets one after another, each for SECONDS on its corpus,
# and prints one table row per target; a target that fails (crash, leak,
# timeout, out of memory, or no binary) does not stop the others.
#
#   sh tests/fuzz/fuzz_run.sh SECONDS BUILD_DIR TARGET...
#
# Per target NAME: seeds and the dictionary come from tests/fuzz/NAME/ and
# tests/fuzz/NAME.dict (both optional); the growing corpus is
# BUILD_DIR/corpus/NAME, the log BUILD_DIR/NAME.log, and whatever makes it
# fail is written to BUILD_DIR/artifacts/NAME/. Columns: execs/s and the
# coverage counters libFuzzer prints at its end (cov: edges, ft: features),
# the corpus size (inputs/bytes) and the artifacts this run wrote (libFuzzer
# stops at the first, so 0 or 1). Exit status 1 when any target failed.
set -u
secs=$1
b=$2
shift 2
ntargets=$#
mkdir -p "$b/corpus" "$b/artifacts"
stamp="$b/.fuzz_stamp"
fmt='%-16s %-7s %9s %7s %7s %13s %8s\n'
rows=""
failed=""
for n in "$@"; do
	bin="$b/fuzz/$n"
	log="$b/$n.log"
	art="$b/artifacts/$n"
	mkdir -p "$b/corpus/$n" "$art"
	if [ ! -x "$bin" ]; then
		rows="$rows$(printf "$fmt" "$n" "NOBIN" - - - - -)
"
		failed="$failed $n"
		continue
	fi
	set --
	[ -d "tests/fuzz/$n" ] && set -- "tests/fuzz/$n"
	dict=""
	[ -f "tests/fuzz/$n.dict" ] && dict="-dict=tests/fuzz/$n.dict"
	: >"$stamp"
	echo "fuzz: $n for ${secs}s"
	# -timeout: one input running 10 s is a hang, not a slow machine;
	# -rss_limit_mb: libFuzzer's default, said here so a change is visible
	"$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 $dict -artifact_prefix="$art/" \
		"$b/corpus/$n" "$@" >"$log" 2>&1
	rc=$?
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p')
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	if [ -z "$eps" ]; then
		# no final stats after a crash: executions / seconds of the last line
		eps=$(echo "$last" | sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p')
	fi
	new=$(find "$art" -type f -newer "$stamp" ! -name 'slow-unit-*')
	crashes=$(echo "$new" | grep -c .)
	status=ok
	if [ "$rc" != 0 ] || [ "$crashes" != 0 ]; then
		kind=$(echo "$new" | head -1 | sed 's/.*\///; s/-.*//')
		status=${kind:-FAIL}
		failed="$failed $n"
		echo "fuzz: $n failed (exit $rc); the end of $log:"
		tail -30 "$log"
	fi
	rows="$rows$(printf "$fmt" "$n" "$status" "${eps:--}" "${cov:--}" "${ft:--}" \
		"${corp:--}" "$crashes")
"
done
rm -f "$stamp"
echo
printf "$fmt" target status execs/s cov ft corpus crashes
printf '%s' "$rows"
if [ -n "$failed" ]; then
	echo "fuzz: failed:$failed (inputs in $b/artifacts/NAME/, logs in $b/NAME.log)"
	exit 1
fi
echo "fuzz: all $ntargets targets green, ${secs}s each"
