#!/bin/sh
# Runs each cmocka test binary given as an argument from the repository root
# and prints a total. A binary that exits 77 was skipped as a whole (for
# example: no GPU, no trace folder). Exit status 1 if anything failed.
passed=0; failed=0; skipped=0; bad=""
for t in "$@"; do
	name=$(basename "$t")
	out=$("$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	s=$(printf '%s\n' "$out" | sed -n 's/.*\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
	if [ $rc -eq 77 ]; then
		skipped=$((skipped + 1)); echo "SKIP: $name"
	elif [ $rc -ne 0 ]; then
		[ -z "$f" ] && failed=$((failed + 1))
		bad="$bad $name"
	fi
done
echo
[ -n "$bad" ] && echo "failing:$bad"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ -z "$bad" ]
