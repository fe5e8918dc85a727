#!/bin/sh
# Trace reading speed and memory: one generated trace rewritten in every
# format (native, Mooncake JSONL, Qwen-Bailian JSONL, BurstGPT CSV, Azure
# CSV), read fully with `kvsim trace validate` at 100K and 1M rows. Prints
# rows/s, MB/s and peak RSS; the RSS must not grow with the file (the run
# fails if 1M rows need more than 1.5x the memory of 100K rows + 4 MiB).
# Usage (make bench sets these): KVSIM=path/to/kvsim BUILD=build-dir
set -eu
KVSIM=${KVSIM:-build/kvsim}
BUILD=${BUILD:-build}
ROWS=${BENCH_TRACE_ROWS:-1000000}
SMALL=$((ROWS / 10))
D=$BUILD/bench-traces
rm -rf "$D"
mkdir -p "$D"
trap 'rm -rf "$D"' EXIT

echo "== bench_30_traces: generating $ROWS rows per format"
# Base: Poisson arrivals, 1000 req/s, lognormal inputs (mean 1024, at most
# 4096 tokens), 512-token blocks with a shared-prompt prefix model.
"$KVSIM" trace gen poisson rate=1000 duration_s=0 requests="$ROWS" in_mean=1024 in_sigma=0.5 \
	in_max=4096 out_mean=200 prefix_shared_prob=0.5 --block-tokens 512 -o "$D/big.native"

# The other formats from the native rows (awk; ids are synthetic but shaped
# like the real files: ceil(L/B) hash ids, a few shared leading ones).
awk -F'\t' '/^#/ {next} {
	L = $2; n = int((L + 511) / 512); s = "";
	for (j = 0; j < n; j++) s = s (j ? ", " : "") (j < 1 ? (NR % 50) : NR * 16 + j);
	printf "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [%s]}\n", $1 / 1000000, L, $3, s
}' "$D/big.native" > "$D/big.mooncake"
awk -F'\t' '/^#/ {next} {
	L = $2; n = int((L + 255) / 256); s = "";
	for (j = 0; j < n; j++) s = s (j ? ", " : "") (j < 1 ? (NR % 50) : NR * 16 + j);
	printf "{\"chat_id\": %d, \"parent_chat_id\": -1, \"timestamp\": %.6f, \"input_length\": %d, \"output_length\": %d, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [%s]}\n", NR, $1 / 1e9, L, $3, s
}' "$D/big.native" > "$D/big.bailian"
awk -F'\t' 'BEGIN { print "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type" }
/^#/ {next} {
	printf "%.3f,%s,%d,%d,%d,%s\n", $1 / 1e9, (NR % 3 ? "ChatGPT" : "GPT-4"), $2, $3, $2 + $3, (NR % 2 ? "Conversation log" : "API log")
}' "$D/big.native" > "$D/big.burstgpt"
awk -F'\t' 'BEGIN { print "TIMESTAMP,ContextTokens,GeneratedTokens" }
/^#/ {next} {
	t = $1 / 1e9; h = int(t / 3600); m = int((t - h * 3600) / 60); s = t - h * 3600 - m * 60;
	d = 16 + int((18 + h) / 24);
	printf "2023-11-%02d %02d:%02d:%010.7f,%d,%d\n", d, (18 + h) % 24, m, s, $2, $3
}' "$D/big.native" > "$D/big.azure"

for f in native mooncake bailian burstgpt azure; do
	# the first SMALL requests (+ header lines)
	head -n $((SMALL + 2)) "$D/big.$f" > "$D/small.$f"
	extra=""
	[ $f = bailian ] && extra="trace_block_tokens=256"
	small=$("$KVSIM" trace validate "$D/small.$f" --kind $f $extra)
	big=$("$KVSIM" trace validate "$D/big.$f" --kind $f $extra)
	echo "$f small: $small" | sed "s|$D/||"
	echo "$f big:   $big" | sed "s|$D/||"
	rs=$(echo "$small" | sed 's/.*peak RSS \([0-9]*\) KiB.*/\1/')
	rb=$(echo "$big" | sed 's/.*peak RSS \([0-9]*\) KiB.*/\1/')
	if [ "$rb" -gt $((rs * 3 / 2 + 4096)) ]; then
		echo "bench_30_traces: FAIL: $f peak RSS grew from $rs KiB to $rb KiB" >&2
		exit 1
	fi
done
echo "== bench_30_traces: ok (peak RSS flat from $SMALL to $ROWS rows in every format)"
