#!/bin/sh
# Runs the study's experiment matrix (issue 15) at one size into OUT, then
# the report. Usage, from anywhere:
#   analysis/study/run_study.sh SIZE OUT [-j N] [--skip EXP,...] [--no-report]
#   SIZE: tiny, quick or full; --skip: experiments not to run (by name,
#   e.g. e7_staleness on a kvsim that lacks its keys), recorded as skipped
# Every experiment analysis/study/<exp>.ini has its sweeps in <exp>.sweep
# (one per line "SIZE: ARGS", format in analysis/study/README.md); each runs
# as `kvsim sweep <exp>.ini ARGS -j N -o OUT/<exp>`, so a rerun resumes
# (points already done are skipped) and every line of one experiment fills
# one catalog. An experiment whose trace is missing is skipped with one line
# saying which. OUT/study.json records the size, the revision and the exact
# commands. Environment: KVSIM (default build/kvsim), KVSIM_TRACES (default
# ../shared/traces, relative to the repository root, where this runs).
set -eu
usage() { echo "usage: run_study.sh tiny|quick|full OUT [-j N] [--skip EXP,...] [--no-report]" >&2; exit 2; }
[ $# -ge 2 ] || usage
size=$1 out=$2; shift 2
jobs=2 report=1 skips=""
while [ $# -gt 0 ]; do
	case $1 in
	-j|--jobs) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
	--skip) [ $# -ge 2 ] || usage; skips="$skips,$2"; shift 2 ;;
	--no-report) report=0; shift ;;
	*) usage ;;
	esac
done
case $size in tiny|quick|full) ;; *) usage ;; esac
case $jobs in ''|*[!0-9]*) usage ;; esac

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
KVSIM=${KVSIM:-build/kvsim}
KVSIM_TRACES=${KVSIM_TRACES:-../shared/traces}
[ -x "$KVSIM" ] || { echo "run_study.sh: no kvsim at $KVSIM (make build, or set KVSIM)" >&2; exit 1; }
mkdir -p "$out"
case $out in /*) ;; *) out=$root/$out ;; esac

# JSON string of $1 (the commands hold no control characters).
js() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }

rev=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || rev="$rev-dirty"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s)
exps=""
status=0
for ini in analysis/study/*.ini; do
	exp=$(basename "$ini" .ini)
	sw=analysis/study/$exp.sweep
	[ -f "$sw" ] || { echo "run_study.sh: $ini has no $sw" >&2; exit 1; }
	# this size's lines, with the trace folder filled in
	lines=$(sed -n "s/^$size:[[:space:]]*//p" "$sw" | sed "s|\${KVSIM_TRACES}|$KVSIM_TRACES|g")
	[ -n "$lines" ] || { echo "run_study.sh: $sw has no '$size:' line" >&2; exit 1; }
	absent=""
	for p in $(printf '%s\n' "$lines" | tr ' ,=' '\n\n\n' | grep -F "$KVSIM_TRACES/" | sort -u); do
		[ -e "$p" ] || { absent=$p; break; }
	done
	cmds=""
	case "$skips," in *",$exp,"*) asked=1 ;; *) asked=0 ;; esac
	if [ $asked -eq 1 ]; then
		echo "study: $exp skipped: --skip"
		skip=$(js "--skip $exp")
	elif [ -n "$absent" ]; then
		echo "study: $exp skipped: trace $absent is absent (set KVSIM_TRACES)"
		skip=$(js "trace $absent is absent")
	else
		skip=null
		echo "study: $exp ($size)"
		# one sweep per line; ARGS split on blanks, never globbed
		set -f
		while IFS= read -r l; do
			cmd="$KVSIM sweep $ini $l -j $jobs -o $out/$exp --no-progress"
			cmds="$cmds${cmds:+, }$(js "$cmd")"
			# shellcheck disable=SC2086
			"$KVSIM" sweep "$ini" $l -j "$jobs" -o "$out/$exp" --no-progress || status=1
		done <<LINES
$lines
LINES
		set +f
	fi
	exps="$exps${exps:+,
}  $(js "$exp"): {\"config\": $(js "$ini"), \"skipped\": $skip, \"sweeps\": [$cmds]}"
done
cat > "$out/study.json" <<JSON
{
 "size": $(js "$size"),
 "revision": $(js "$rev"),
 "kvsim_version": $(js "$("$KVSIM" --version)"),
 "kvsim_traces": $(js "$KVSIM_TRACES"),
 "jobs": $jobs,
 "started_at": $(js "$started"),
 "wall_s": $(( $(date +%s) - t0 )),
 "experiments": {
$exps
 }
}
JSON
echo "study: wrote $out/study.json"
[ $status -eq 0 ] || { echo "run_study.sh: a sweep failed (see above)" >&2; exit 1; }
# The report (analysis/study_report.py) comes with the analysis library; a
# tree without it yet stops after the runs.
if [ $report -eq 0 ]; then
	:
elif [ -f analysis/study_report.py ]; then
	/usr/bin/python3 analysis/study_report.py "$out"
else
	echo "study: analysis/study_report.py is not in this tree yet; no report written"
fi
