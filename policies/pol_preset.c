/* pol_preset — serving-framework presets, selected by `[policy] preset`:
 * how vLLM, SGLang, TensorRT-LLM, TGI, Dynamo, llm-d and Mooncake route,
 * keep KV (block size, eviction, offload, fetching a miss) and batch, as
 * data with the source of every value; Dynamo, llm-d and Mooncake also on
 * disaggregated prefill/decode pools (NAME-disagg: the base preset's values
 * plus cluster.disagg, the pool split and the handoff mode). cfg_finalize
 * applies the selected preset to the keys the user did not set (see cfg.h);
 * pol_preset_register checks every entry against the schema when the schema
 * is built, so a preset can only name keys that exist, with values that pass
 * their checks. A new preset is one entry in pol_presets (and its array of
 * values). Values marked "as recalled, not verified" could not be checked
 * against the framework's code or documentation. */
#include "policies/pol.h"

#include <string.h>

/* What a vLLM v1 engine does whatever router is in front of it (presets
 * vllm, dynamo, llm-d). */
/* clang-format off */
#define VLLM_ENGINE_KV \
	{"kvcache.block_tokens", "16", \
	 "vLLM engine args: --block-size defaults to 16 on CUDA (config/cache.py)"}, \
	{"policy.eviction.name", "lru", \
	 "vLLM v1 KV cache manager: the free block queue hands out the least recently " \
	 "used unreferenced cached block first (design doc: automatic prefix caching)"}, \
	{"scheduler.mode", "vllm", \
	 "vLLM v1's scheduler (vllm/v1/core/sched/scheduler.py, v0.11.0)"}, \
	{"scheduler.max_num_seqs", "0", \
	 "vLLM EngineArgs.get_batch_defaults (v0.11.0): max_num_seqs 1024 for the OpenAI " \
	 "server on GPUs with >= 70 GiB other than A100 (H100, H200), 256 on others; 0 " \
	 "resolves it from the GPU"}, \
	{"scheduler.max_batched_tokens", "0", \
	 "vLLM EngineArgs.get_batch_defaults (v0.11.0): max_num_batched_tokens 8192 for " \
	 "the OpenAI server on GPUs with >= 70 GiB other than A100, 2048 on others; 0 " \
	 "resolves it from the GPU"}, \
	{"scheduler.chunked_prefill", "true", "vLLM v1 always schedules with chunked prefill"}
/* clang-format on */

/* Sources shared by several presets. */
static const char src_no_host[] = "no host-memory KV tier unless one is configured";
static const char src_recompute[] =
    "a plain engine recomputes a prefix it does not hold itself: KV moves between "
    "instances only with an add-on (LMCache, NIXL/Mooncake connectors), off by default";

static const pol_preset_kv_t vllm_kv[] = {
    {"policy.routing.name", "round_robin",
     "vLLM has no prefix-aware router of its own: replicas sit behind a plain load "
     "balancer; the vLLM production-stack router's basic --routing-logic is roundrobin "
     "(session, kvaware, prefixaware are opt-in)"},
    {"kvcache.fetch", "never", src_recompute},
    {"kvcache.host_offload", "false", src_no_host},
    {"kvcache.host_kv_gb", "0", src_no_host},
    VLLM_ENGINE_KV,
};

static const pol_preset_kv_t sglang_kv[] = {
    {"policy.routing.name", "cache_aware",
     "sgl-router (sglang_router): --policy cache_aware is its default"},
    {"policy.routing.cache_threshold", "0.3",
     "sglang_router RouterArgs default cache_threshold 0.3 (0.5 in early releases)"},
    {"policy.routing.balance_abs_threshold", "64",
     "sglang_router RouterArgs default balance_abs_threshold 64 (32 in early releases)"},
    {"policy.routing.balance_rel_threshold", "1.5",
     "sglang_router RouterArgs default balance_rel_threshold 1.5 (1.0001 in early releases)"},
    {"kvcache.block_tokens", "1",
     "SGLang --page-size defaults to 1: the radix cache matches single tokens "
     "(server_args.py)"},
    {"kvcache.fetch", "never", src_recompute},
    {"kvcache.host_offload", "false",
     "the hierarchical cache (--enable-hierarchical-cache) is off by default"},
    {"kvcache.host_kv_gb", "0", src_no_host},
    {"policy.eviction.name", "lru",
     "SGLang's radix cache evicts unreferenced leaves least recently used first "
     "(--radix-eviction-policy lru; as recalled, not verified)"},
    {"scheduler.mode", "sglang",
     "SGLang's scheduler: prefill first, never mixed with decodes, admission against a "
     "new_token_ratio output reserve, retraction of the fewest-output requests (v0.4.9 "
     "scheduler.py, schedule_policy.py, schedule_batch.py)"},
    {"scheduler.max_batched_tokens", "0",
     "SGLang chunked_prefill_size by GPU memory: 8192 on H100/H200-class GPUs, 16384 on "
     "B200 (server_args.py _handle_gpu_memory_settings); 0 resolves it from the GPU. A "
     "prefill batch is also capped by max_prefill_tokens 16384, never the binding limit "
     "under an 8192-token chunk"},
    {"scheduler.max_num_seqs", "0",
     "SGLang max_running_requests follows from its request pool (2048 here, see "
     "sim/cluster/cluster.h; as recalled, not verified)"},
    {"scheduler.chunked_prefill", "true", "SGLang chunks prefills by default (server_args.py)"},
};

static const pol_preset_kv_t trtllm_kv[] = {
    {"policy.routing.name", "round_robin",
     "trtllm-serve runs one engine with no prefix-aware router; replicas sit behind a "
     "plain load balancer; its disaggregated router defaults to round_robin (as "
     "recalled, not verified)"},
    {"kvcache.block_tokens", "32",
     "TensorRT-LLM KvCacheConfig.tokens_per_block defaults to 32 (llmapi/llm_args.py)"},
    {"kvcache.fetch", "never", src_recompute},
    {"kvcache.host_offload", "false",
     "TensorRT-LLM KvCacheConfig.host_cache_size defaults to None: no offload to host "
     "memory unless set (llmapi/llm_args.py)"},
    {"kvcache.host_kv_gb", "0", src_no_host},
    {"policy.eviction.name", "lru",
     "TensorRT-LLM evicts reusable blocks by retention priority (default 35 of 0-100), "
     "least recently used within a priority: LRU with default priorities (KV cache "
     "reuse docs; as recalled, not verified)"},
    {"scheduler.max_num_seqs", "2048",
     "TensorRT-LLM max_batch_size defaults to 2048 (llm_args.py)"},
    {"scheduler.max_batched_tokens", "8192",
     "TensorRT-LLM max_num_tokens defaults to 8192 (llm_args.py)"},
    {"scheduler.chunked_prefill", "false",
     "TensorRT-LLM enable_chunked_prefill defaults to False (llm_args.py)"},
};

static const pol_preset_kv_t tgi_kv[] = {
    {"policy.routing.name", "round_robin",
     "TGI serves one model per launcher without a cluster router: replicas sit behind a "
     "plain load balancer, taken as round robin (nginx's default; own choice)"},
    {"kvcache.block_tokens", "1",
     "TGI prefix caching needs the flashinfer attention backend, whose BLOCK_SIZE is 1 "
     "(server/text_generation_server/models/globals.py)"},
    {"kvcache.fetch", "never", src_recompute},
    {"kvcache.host_offload", "false", "TGI keeps KV in GPU memory only"},
    {"kvcache.host_kv_gb", "0", src_no_host},
    {"policy.eviction.name", "lru",
     "TGI v3's radix allocator frees unreferenced prefix blocks least recently used "
     "first (as recalled, not verified)"},
    {"scheduler.chunked_prefill", "true",
     "TGI v3 chunks long prefills (v3 release notes, Dec 2024; as recalled, not verified)"},
};

/* clang-format off */
#define DYNAMO_KV \
	{"policy.routing.name", "kv_cost", \
	 "NVIDIA Dynamo KV router: cost = overlap_score_weight x blocks to prefill + active " \
	 "decode blocks, lowest cost wins (docs: KV cache routing)"}, \
	{"policy.routing.overlap_score_weight", "1", \
	 "Dynamo --kv-overlap-score-weight defaults to 1.0"}, \
	{"kvcache.fetch", "never", \
	 "Dynamo with the KV router routes to cached KV but does not pull prefixes between " \
	 "workers; KVBM/NIXL prefix transfer between workers is opt-in"}, \
	{"kvcache.transfer_engine", "nixl", "Dynamo moves KV with NIXL (docs: architecture)"}, \
	VLLM_ENGINE_KV /* Dynamo's vLLM workers; its router hashes their 16-token blocks */
/* clang-format on */

static const pol_preset_kv_t dynamo_kv[] = {DYNAMO_KV};

/* Disaggregated variants: the base preset's values plus the pools (half
 * the nodes prefill in each; the share's source is per preset). */
#define POOLS_KV(src_disagg, src_share, handoff, src_handoff) \
	{"cluster.disagg", "true", src_disagg}, {"cluster.prefill_share", "0.5", src_share}, \
	{"cluster.handoff", handoff, src_handoff}
static const char src_half[] =
    "own choice: half the nodes (the framework sizes its pools per deployment; its "
    "examples pair one prefill with one decode worker, as recalled, not verified)";
/* vLLM's NixlConnector, which Dynamo's and llm-d's vLLM workers use: the
 * decode worker reads the prompt's KV blocks once the prefill request has
 * finished, not layer by layer. */
static const char src_nixl_after[] =
    "vLLM NixlConnector (v1 KV connector) as used by Dynamo and llm-d: the decode worker "
    "reads the prompt's KV blocks from the prefill worker after the prefill request "
    "finishes, whole blocks, not layer by layer (as recalled, not verified)";

static const pol_preset_kv_t dynamo_disagg_kv[] = {
    DYNAMO_KV,
    POOLS_KV("Dynamo disaggregated serving: prefill and decode workers, KV moved over NIXL "
	     "(docs: disaggregated serving)",
	     src_half, "after_prefill", src_nixl_after),
};

/* clang-format off */
#define LLMD_KV \
	{"policy.routing.name", "weighted_score", \
	 "llm-d inference scheduler: the endpoint with the best weighted sum of scorers " \
	 "(queue, KV-cache utilization, prefix cache) wins"}, \
	{"policy.routing.queue_weight", "2", "llm-d default scheduling profile: queue-scorer 2"}, \
	{"policy.routing.kv_util_weight", "2", \
	 "llm-d samples: kv-cache-utilization-scorer 2 (as recalled, not verified)"}, \
	{"policy.routing.prefix_weight", "3", \
	 "llm-d default scheduling profile: prefix-cache-scorer 3"}, \
	{"kvcache.fetch", "never", \
	 "llm-d's inference-scheduling path routes to cached KV but does not move it; KV " \
	 "offload/sharing is another, opt-in path"}, \
	{"kvcache.transfer_engine", "nixl", \
	 "llm-d's KV transfer (prefill/decode disaggregation) uses vLLM's NIXL connector"}, \
	VLLM_ENGINE_KV
/* clang-format on */

static const pol_preset_kv_t llmd_kv[] = {LLMD_KV};

static const pol_preset_kv_t llmd_disagg_kv[] = {
    LLMD_KV,
    POOLS_KV("llm-d P/D disaggregation: the scheduler picks a prefill and a decode pod, the "
	     "decode pod's sidecar runs the prefill remotely and pulls its KV (llm-d "
	     "architecture docs, as recalled, not verified)",
	     src_half, "after_prefill", src_nixl_after),
};

/* clang-format off */
#define MOONCAKE_KV \
	{"policy.routing.name", "min_ttft", \
	 "Mooncake Conductor: the prefill instance with the lowest estimated TTFT (queue + " \
	 "prefill of what it lacks + KV transfer) (Qin et al., FAST'25, Algorithm 1)"}, \
	{"policy.routing.ttft_early_reject", "true", \
	 "Conductor rejects a request predicted to miss its SLO (early rejection in Qin et " \
	 "al., FAST'25, overload-oriented scheduling)"}, \
	{"kvcache.block_tokens", "512", \
	 "the Mooncake traces hash 512-token blocks (FAST'25 trace release); the engine's " \
	 "own page size as recalled, not verified"}, \
	{"kvcache.fetch", "cost", \
	 "Mooncake Store: an instance pulls reusable KV from the cluster-wide pool over RDMA " \
	 "instead of recomputing it (Qin et al., FAST'25, KVCache-centric design); kvsim's " \
	 "cost rule decides fetch or recompute"}, \
	{"kvcache.transfer_engine", "mooncake", \
	 "Mooncake Transfer Engine costs: per-copy and per-block overheads, 0.87 of the NIC " \
	 "line rate (FAST'25 sec. 8; see sim/run/sim_copy.c)"}, \
	{"policy.eviction.name", "lru", \
	 "Mooncake evicts KV blocks LRU (FAST'25; as recalled, not verified)"}
/* clang-format on */

static const pol_preset_kv_t mooncake_kv[] = {MOONCAKE_KV};

static const pol_preset_kv_t mooncake_disagg_kv[] = {
    MOONCAKE_KV,
    POOLS_KV("Mooncake's deployment separates prefill and decode pools, KV moving between "
	     "them over RDMA (Qin et al., FAST'25, sec. 3)",
	     "Qin et al., FAST'25, sec. 8: the real-workload replay runs Mooncake-[10P+10D] "
	     "against vLLM-[20M], half the nodes prefill (as recalled, not verified)",
	     "layerwise",
	     "Mooncake's layer-wise prefill streams each layer's KV out while the next computes "
	     "(Qin et al., FAST'25, sec. 5)"),
};

/* The original study's simulator (Infer-Sim at 547d2d5 with the
 * bite-the-bullet harness; the reference notes describe it): its 70b_h100x4
 * setup and every compatibility switch. */
static const char src_btb_cfg[] = "Infer-Sim config.py / bite_the_bullet.py 70b_h100x4";
static const pol_preset_kv_t btb_kv[] = {
    {"cluster.nodes", "4", "70b_h100x4: 4 replicas"},
    {"cluster.gpus_per_node", "4", "70b_h100x4: 4 H100 per replica"},
    {"cluster.tp", "4", "a replica is one tensor-parallel node (gpu.py Node)"},
    {"cluster.reserve_fraction", "0",
     "KV budget = (HBM - weights) / kv_per_token: nothing held back"},
    {"cluster.kv_blocks", "0", "the KV pool follows from HBM and weights"},
    {"gpu.name", "H100-SXM", src_btb_cfg},
    {"gpu.flops_bf16", "989e12", "config.py H100: 989e12 dense BF16 FLOP/s"},
    {"gpu.hbm_bw", "3.35e12", "config.py H100: 3.35e12 B/s"},
    {"gpu.hbm_bytes", "80e9", "config.py H100: 80 GB"},
    {"gpu.pcie_bw", "55e9", "config.py H100: ram_bw 55e9 B/s"},
    {"gpu.nic_bw", "50e9", "config.py H100: rdma_bw 50e9 B/s (400G)"},
    {"model.name", "Llama-3-70B", "bite_the_bullet.py MODEL_PRESETS 70b (Llama-3.3-70B shapes)"},
    {"model.params_total", "70.6e9", "MODEL_PRESETS 70b: PARAMS 70.6e9"},
    {"model.params_active", "70.6e9", "MODEL_PRESETS 70b: ACTIVE_PARAMS 70.6e9"},
    {"compute.model", "linear", "gpu.py: prefill 2 P tokens / (flops mfu), decode memory-bound"},
    {"compute.mfu", "0.5", "config.py MFU 0.5"},
    {"compute.mbu", "0.8", "config.py MBU 0.8"},
    {"kvcache.block_tokens", "256", "bite_the_bullet.py BLOCK 256"},
    {"trace.trace_block_tokens", "256", "Bursted-ART hash_ids name 256-token blocks"},
    {"kvcache.resident_at", "admission",
     "simulate.py inserts a request's blocks into the cache when it is admitted"},
    {"kvcache.copy_from", "uncomputed", "a warming copy reads an admitted source"},
    {"kvcache.fetch", "never", "simulate.py at 133331b: a miss is recomputed"},
    {"kvcache.host_fetch", "never", "no kvsim host tier (the study's RAM tier is not modelled)"},
    {"kvcache.host_kv_gb", "0", "no kvsim host tier"},
    {"kvcache.transfer_engine", "ideal", "a copy takes bytes / rdma_bw, nothing else"},
    {"network.contention", "none", "no link, switch or source-NIC model (PAPER.md, BLOG.md)"},
    {"network.copy_charge", "target_compute",
     "bite_the_bullet.py: the warming push advances the target node's clock"},
    {"scheduler.mode", "btb",
     "simulate.py advance(): FIFO with head-of-line blocking, input + output reserved "
     "without dedup, a separate prefix-cache budget, whole prefills before decode"},
    {"scheduler.ttft", "prefill_end", "simulate.py: TTFT = start - arrival + reuse + prefill"},
    {"scheduler.max_num_seqs", "256", "config.py MAX_BATCH 256"},
    {"scheduler.chunked_prefill", "false", "no chunked prefill"},
    {"policy.routing.name", "cache_aware", "bite_the_bullet.py: the baseline and the fallback"},
    {"policy.routing.balance_rule", "btb",
     "router.py CacheAware: imbalanced iff max load > ABS and > REL x min; else the most "
     "matched blocks (HBM + RAM), then the lower load, then random"},
    {"policy.routing.view", "computed",
     "the study's routers read each node's cache (filled at admission), not a tree of "
     "their own"},
    {"policy.routing.balance_abs_threshold", "64", "config.py IMBALANCE_ABS 64"},
    {"policy.routing.balance_rel_threshold", "1.5", "config.py IMBALANCE_REL 1.5"},
    {"policy.replication.early_trigger", "arrival",
     "bite_the_bullet.py EarlyRdma: X repeats of the Y-block key within Z s, on arrival"},
    {"policy.replication.early_replicas", "4", "bite_the_bullet.py M_WARM_COPIES 4"},
    {"policy.replication.early_key_blocks", "256", "bite_the_bullet.py Y_PREFIX_BLOCKS 256"},
    {"policy.replication.early_min_count", "2", "bite_the_bullet.py X_THRESHOLD 2"},
    {"policy.replication.early_window_s", "1", "bite_the_bullet.py Z_WINDOW_S 1"},
    {"policy.eviction.name", "lru", "gpu.py: HBM is an LRU ordered map"},
    {"experiment.seed", "42", "bite_the_bullet.py SEED 42 (kvsim's streams differ)"},
};

#define N(a) (sizeof a / sizeof a[0])
const pol_preset_t pol_presets[] = {
    {"vllm",
     "vLLM v1 replicas behind a plain load balancer: 16-token blocks, automatic prefix "
     "caching per instance, LRU, a miss is recomputed, the GPU's batch defaults. Engine "
     "rules: vLLM v0.11.0 (v1 scheduler)",
     vllm_kv, N(vllm_kv)},
    {"sglang",
     "SGLang workers behind sgl-router's cache_aware policy: radix cache at page size 1, "
     "LRU, a miss is recomputed. Page size 1 is faithful but slow here, as every block "
     "is a KV-store lookup when routing and admitting: the default experiment took "
     "3.5 s against 0.1 s with 16-token blocks, fanout_65k 31 s against 0.7 s "
     "(measured); add --set kvcache.block_tokens=16 for quick sweeps. Engine rules: SGLang "
     "v0.4.9 scheduler (mode sglang)",
     sglang_kv, N(sglang_kv)},
    {"trtllm",
     "TensorRT-LLM (trtllm-serve) replicas behind a plain load balancer: 32-token blocks "
     "with reuse, LRU within priority, no host offload, a miss is recomputed, no chunked "
     "prefill. Without chunking, a prompt longer than max_batched_tokens waits here for an "
     "iteration with nothing else in it (the default experiment's 16K-token prompts: 13 s "
     "mean TTFT); TensorRT-LLM itself refuses such prompts unless max_num_tokens is raised "
     "or chunked prefill is on. Engine rules: TensorRT-LLM 0.x llm_args defaults; its "
     "batching approximated by vLLM v1's scheduler (its capacity scheduler is not "
     "modelled)",
     trtllm_kv, N(trtllm_kv)},
    {"tgi",
     "Text Generation Inference v3 replicas behind a plain load balancer: radix prefix "
     "cache at block size 1 (flashinfer), LRU, a miss is recomputed. Block size 1 is slow "
     "here, as for sglang. Engine rules: TGI v3 defaults; its batching approximated by "
     "vLLM v1's scheduler",
     tgi_kv, N(tgi_kv)},
    {"dynamo",
     "NVIDIA Dynamo, aggregated, KV router over vLLM workers: KV-cost routing, 16-token "
     "blocks, no KV movement between workers yet. Engine rules: vLLM v0.11.0 workers",
     dynamo_kv, N(dynamo_kv)},
    {"llm-d",
     "llm-d inference scheduling over vLLM: weighted queue, KV-utilization and prefix "
     "scorers, 16-token blocks, no KV movement between instances. Engine rules: vLLM "
     "v0.11.0 workers",
     llmd_kv, N(llmd_kv)},
    {"mooncake",
     "Mooncake (Kimi): Conductor routes to the lowest estimated TTFT with early "
     "rejection, 512-token blocks, misses fetched from the cluster's KV pool. Engine rules: "
     "FAST'25 paper; batching by vLLM v1's scheduler (Mooncake's serving engine is "
     "vLLM-based)",
     mooncake_kv, N(mooncake_kv)},
    {"dynamo-disagg",
     "NVIDIA Dynamo, disaggregated: the dynamo preset on prefill and decode pools (half the "
     "nodes each), the KV pulled by the decode worker over NIXL after the prefill. Engine "
     "rules: vLLM v0.11.0 workers",
     dynamo_disagg_kv, N(dynamo_disagg_kv)},
    {"llm-d-disagg",
     "llm-d P/D disaggregation: the llm-d preset on prefill and decode pools (half the "
     "nodes each), the KV pulled by the decode pod over NIXL after the prefill. Engine "
     "rules: vLLM v0.11.0 workers",
     llmd_disagg_kv, N(llmd_disagg_kv)},
    {"mooncake-disagg",
     "Mooncake in its native deployment: the mooncake preset on prefill and decode pools "
     "(half the nodes each, as its 10P+10D replay), KV streamed layer by layer to the "
     "decode instance. Engine rules: FAST'25 paper; batching by vLLM v1's scheduler",
     mooncake_disagg_kv, N(mooncake_disagg_kv)},
    {"btb",
     "The original early-replication study's simulator (Infer-Sim + bite-the-bullet, "
     "70b_h100x4): 4 x 4 H100 TP4, Llama-3-70B, 256-token blocks, linear compute, its "
     "scheduler, KV resident at admission, copies from uncomputed KV charged to the "
     "target's compute, no contention, TTFT to the end of the prefill, its cache_aware "
     "and early_rdma rules. Pick the policy with policy.routing.name or "
     "policy.replication.name=early_rdma. Engine rules: Infer-Sim 547d2d5 (mode btb)",
     btb_kv, N(btb_kv)},
};
const size_t pol_presets_n = N(pol_presets);

int pol_preset_register(cfg_schema_t *s)
{
	return cfg_schema_set_presets(s, "policy", "preset", pol_presets, pol_presets_n);
}
