#!/bin/sh
# Runs each cmocka test binary given as an argument from the repository root
# and prints one line per program (its name and cmocka's counts); a failing
# program's output follows its line in full. Every program's output goes to
# the log file $TEST_LOG (default build/test.log), named on the line before
# the totals, which come last. A binary that exits 77 was skipped as a whole
# (for example: no GPU, no trace folder). Exit status 1 if anything failed.
log=${TEST_LOG:-build/test.log}
mkdir -p "$(dirname "$log")"
: >"$log" || exit 1
passed=0; failed=0; skipped=0; bad=""
# cmocka's count on its summary line TAG ("PASSED", "FAILED", "SKIPPED "),
# summed over the groups a program runs; empty when it printed none.
count() {
	printf '%s\n' "$1" | sed -n "s/.*\[  $2\] \([0-9][0-9]*\) test.*/\1/p" |
		awk '{ n += $1; seen = 1 } END { if (seen) print n }'
}
for t in "$@"; do
	name=$(basename "$t")
	out=$("$t" 2>&1); rc=$?
	{ printf '==== %s (exit %d)\n' "$name" "$rc"; printf '%s\n' "$out"; } >>"$log"
	p=$(count "$out" "PASSED  "); f=$(count "$out" "FAILED  "); s=$(count "$out" "SKIPPED ")
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
	counts="${p:-0} passed"
	[ -n "$f" ] && counts="$counts, $f failed"
	[ -n "$s" ] && counts="$counts, $s skipped"
	if [ $rc -eq 77 ]; then
		skipped=$((skipped + 1))
		why=$(printf '%s\n' "$out" | sed '/^[[:space:]]*$/d' | tail -1 | cut -c1-70)
		printf 'SKIP  %-36s %s\n' "$name" "skipped as a whole (exit 77)${why:+: $why}"
	elif [ $rc -ne 0 ]; then
		[ -z "$f" ] && failed=$((failed + 1))
		bad="$bad $name"
		how="exit $rc"; [ $rc -gt 128 ] && how="killed by signal $((rc - 128))"
		printf 'FAIL  %-36s %s (%s)\n' "$name" "$counts" "$how"
		printf -- '---- %s: its output ----\n%s\n---- end of %s ----\n' "$name" "$out" "$name"
	else
		printf 'ok    %-36s %s\n' "$name" "$counts"
	fi
done
echo
echo "full log: $log"
[ -n "$bad" ] && echo "failing:$bad"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ -z "$bad" ]
