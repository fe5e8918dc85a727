#!/bin/sh
# run_on_gpu.sh — on a machine with a GPU: build, replay the calibration
# plan (plus the compute shapes), fit the transfer model, replay one schedule
# of the default kvsim experiment, check the model against it, and write a
# short report. Budgeted for under 8 minutes on one H200.
#
#   gpu_validation/run_on_gpu.sh [OUTDIR]
#
# Environment:
#   NAME           calibration name (default: from the device, e.g. nvidia-h200)
#   MAX_BYTES      largest planned copy (default 1G)
#   RUN_H5         a kvsim run file to replay (default: run `kvsim run` and
#                  take the HDF5 it writes; KVSIM_RUN_ARGS are passed to it)
#   RUN_LIMIT      transfers of the run to replay (default 2000), RUN_SPAN_S
#                  seconds of it at most (default 10)
#   BATCH          1: also replay the plan with cudaMemcpyBatchAsync
#   BACKEND        host: a dry run of the whole script with the host backend
#   COMPUTE_ARGS   extra kvreplay --compute options (e.g. --tokens 1,16)
#   COMPUTE_MODEL  model whose layer GEMMs are timed per TP for the compute
#                  profile (default Llama-3-70B); COMPUTE_TPS (default
#                  "1 2 4 8"); COMPUTE_TOKENS (kvreplay --tokens list)
#   COMPUTE_GPU    built-in GPU spec the compute fit is relative to
#                  (default: from the device name)
#   COMPUTE_ONLY   1: only the compute profile and its fit (step 2b)
# Exit status: 0 done, 77 no usable GPU (kvreplay's SKIP line is printed),
# 1 a step failed. Outputs: OUTDIR (default results/gpu-DATE),
# models/calibration/NAME.ini (transfers) and
# models/calibration/compute-GPU.ini (compute terms; embedded, and so used by
# compute.calibration = auto, from the next build on).
set -eu
cd "$(dirname "$0")/.."
T0=$(date +%s)
OUT=${1:-results/gpu-$(date -u +%Y%m%d-%H%M%S)}
MAX_BYTES=${MAX_BYTES:-1G}
RUN_LIMIT=${RUN_LIMIT:-2000}
RUN_SPAN_S=${RUN_SPAN_S:-10}
KVSIM=build/kvsim
KVREPLAY=build/kvreplay
mkdir -p "$OUT"

say() { printf 'run_on_gpu [%3ds]: %s\n' $(($(date +%s) - T0)) "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }

# 1. build (the CUDA backend needs nvcc)
say "building"
make -j"$(nproc)" build >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; die "make build"; }
BACKEND=${BACKEND:-cuda}
[ "$BACKEND" = host ] || [ -f build/kvreplay_cuda.so ] || die "no CUDA backend was built (is nvcc installed? CUDA_HOME=...)"

# 2b. the compute profile: one decoder layer's GEMMs at each TP's per-GPU
# shape (heads/tp, kv_heads/tp, ffn/tp), as a profile in Vidur's mlp.csv
# format, fitted like the shipped H100/A100 ones. Small kernels and the
# all-reduce are not measured here (one GPU): the fit keeps those terms
# from the H100 calibration (same NVSwitch generation on HGX H200).
compute_profile() {
	CM=${COMPUTE_MODEL:-Llama-3-70B}
	SPEC=models/llm/$CM.ini
	[ -f "$SPEC" ] || die "no built-in model spec $SPEC"
	key() { sed -n "s/^$1 *= *\([0-9]*\).*/\1/p" "$SPEC" | head -1; }
	H=$(key heads)
	KV=$(key kv_heads)
	FFN=$(key intermediate)
	DEV=${DEVICE:-}
	case "${COMPUTE_GPU:-$DEV}" in
	*H200*) G=H200 ;; *H100*) G=H100-SXM ;; *A100*) G=A100-80GB ;; *B200*) G=B200 ;;
	*) G=${COMPUTE_GPU:-H200} ;;
	esac
	TOK=${COMPUTE_TOKENS:-1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192,16384}
	FILES=
	for TP in ${COMPUTE_TPS:-1 2 4 8}; do
		KVT=$((KV / TP))
		[ "$KVT" -ge 1 ] || KVT=1
		say "timing $CM's layer GEMMs at tp $TP"
		timeout 120 $KVREPLAY --backend "$BACKEND" --compute --model "$CM" --heads $((H / TP)) \
			--kv-heads "$KVT" --ffn $((FFN / TP)) --tokens "$TOK" -q \
			-o "$OUT/compute_tp$TP.h5" >"$OUT/compute_tp$TP.txt" 2>&1 \
			|| die "kvreplay --compute at tp $TP (see compute_tp$TP.txt)"
		FILES="$FILES $OUT/compute_tp$TP.h5"
	done
	$KVSIM calibrate compute profile $FILES --model "$CM" -o "$OUT/compute_profile.csv" >&2 \
		|| die "calibrate compute profile"
	CCAL=models/calibration/compute-$G.ini
	$KVSIM calibrate compute fit "$OUT/compute_profile.csv" --gpu "$G" \
		--base models/calibration/compute-H100-SXM.ini -o "$CCAL" >"$OUT/compute_fit.txt" \
		|| die "calibrate compute fit"
	cat "$OUT/compute_fit.txt" >&2
	say "compute calibration: $CCAL"
}
if [ "${COMPUTE_ONLY:-0}" = 1 ]; then
	BACKEND=${BACKEND:-cuda}
	compute_profile
	exit 0
fi

# 2. plan + replay with the compute shapes
say "planning (sizes up to $MAX_BYTES)"
$KVSIM calibrate plan -o "$OUT/plan.h5" --max-bytes "$MAX_BYTES" | tee "$OUT/plan.txt" >&2
say "replaying the plan and timing GEMMs + read kernel"
set +e
timeout 300 $KVREPLAY --backend "$BACKEND" "$OUT/plan.h5" --compute ${COMPUTE_ARGS:-} -o "$OUT/plan_meas.h5" >"$OUT/replay.txt" 2>"$OUT/replay.err"
rc=$?
set -e
if [ $rc -eq 77 ]; then
	cat "$OUT/replay.txt"
	exit 77
fi
[ $rc -eq 0 ] || { cat "$OUT/replay.err" >&2; die "kvreplay plan (exit $rc)"; }
cat "$OUT/replay.txt" >&2

DEVICE=$(sed -n 's/^kvreplay: backend [a-z]*, [0-9]* device(s), \(.*\); driver.*/\1/p' "$OUT/replay.err" | head -1)
NAME=${NAME:-$(printf '%s' "${DEVICE:-gpu}" | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '-' | sed 's/-*$//')}
CAL=models/calibration/$NAME.ini
compute_profile

if [ "${BATCH:-0}" = 1 ]; then
	say "replaying the plan with cudaMemcpyBatchAsync"
	timeout 240 $KVREPLAY --backend "$BACKEND" "$OUT/plan.h5" --batch -q -o "$OUT/plan_meas_batch.h5" >"$OUT/replay_batch.txt" \
		|| die "kvreplay --batch"
fi

# 3. fit (on half the copies; held-out error on the other half)
say "fitting -> $CAL"
MEAS="$OUT/plan_meas.h5"
[ "${BATCH:-0}" = 1 ] && MEAS="$MEAS $OUT/plan_meas_batch.h5"
$KVSIM calibrate fit $MEAS -o "$CAL" >"$OUT/fit.txt" || die "fit"
cat "$OUT/fit.txt" >&2

# 4. one schedule of the default experiment
RUN=${RUN_H5:-}
if [ -z "$RUN" ]; then
	say "running the default kvsim experiment for a schedule"
	mkdir -p "$OUT/run"
	( cd "$OUT/run" && "$OLDPWD/$KVSIM" run ${KVSIM_RUN_ARGS:-} ) >"$OUT/run.txt" 2>&1 || say "kvsim run failed (see run.txt)"
	for f in $(find "$OUT/run" results -newer "$OUT/plan.h5" -name '*.h5' 2>/dev/null); do
		case $f in *plan*|*meas*) continue ;; esac
		RUN=$f
		break
	done
fi
RUNCHECK="no kvsim run schedule was available (set RUN_H5)"
if [ -n "$RUN" ] && [ -f "$RUN" ]; then
	say "replaying $RUN (first $RUN_LIMIT transfers, at most ${RUN_SPAN_S}s)"
	if timeout 90 $KVREPLAY --backend "$BACKEND" "$RUN" --limit "$RUN_LIMIT" --span-s "$RUN_SPAN_S" --reps 3 --warmup 1 \
		-o "$OUT/run_meas.h5" >"$OUT/run_replay.txt" 2>&1; then
		$KVSIM calibrate check "$RUN" "$OUT/run_meas.h5" --calibration "$CAL" >"$OUT/check.txt" 2>&1 \
			&& RUNCHECK=$(tail -3 "$OUT/check.txt") || RUNCHECK="check failed: $(tail -1 "$OUT/check.txt")"
	else
		RUNCHECK="replay of $RUN failed: $(tail -1 "$OUT/run_replay.txt")"
	fi
fi

# 5. the vendor's best-case copy test, when installed, as the bandwidth reference
REF="no reference tool (nvbandwidth or bandwidthTest) found"
if command -v nvbandwidth >/dev/null 2>&1; then
	timeout 60 nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce >"$OUT/nvbandwidth.txt" 2>&1 || true
	REF="nvbandwidth: $(grep -i -E 'SUM|memcpy_ce' "$OUT/nvbandwidth.txt" | tr '\n' ' ' | cut -c1-300)"
elif command -v bandwidthTest >/dev/null 2>&1; then
	timeout 60 bandwidthTest --memory=pinned >"$OUT/bandwidthTest.txt" 2>&1 || true
	REF="bandwidthTest: $(grep -E '^ *[0-9]+ +[0-9.]+' "$OUT/bandwidthTest.txt" | tr -s ' ' | tr '\n' ';')"
fi

# 6. report
{
	echo "# kvreplay on $DEVICE"
	echo
	echo "Written by gpu_validation/run_on_gpu.sh $(date -u '+%Y-%m-%d %H:%M UTC') in $(($(date +%s) - T0)) s."
	echo "$(grep -m1 'driver' "$OUT/replay.err" | sed 's/^kvreplay: //')"
	echo
	echo "## Peak copy bandwidth (lone contiguous copies)"
	grep '^peak' "$OUT/replay.txt" | sed 's/^/- /'
	echo "- reference: $REF"
	echo
	echo "## Fit ($CAL)"
	echo '```'
	cat "$OUT/fit.txt"
	echo '```'
	echo
	echo "## Compute profile fit ($CCAL)"
	echo '```'
	cat "$OUT/compute_fit.txt"
	echo '```'
	echo
	echo "## Replayed kvsim schedule"
	echo '```'
	echo "$RUNCHECK"
	echo '```'
	echo
	echo "Targets: large copies >= 90% of the reference bandwidth; held-out MAPE <= 5%, p95 <= 10%."
} >"$OUT/report.md"
say "report: $OUT/report.md; calibration: $CAL"
cat "$OUT/report.md"
