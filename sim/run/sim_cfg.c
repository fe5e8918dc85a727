/* Config keys of the simulator core: [experiment], [cluster], [kvcache],
 * [scheduler], [slo], [output] (see sim/base/cfg.h), each row filling its
 * field of sim_params_t (sim_params.h). Defaults follow vLLM's engine
 * arguments where one exists (batch limits resolved per GPU as vLLM V1 does,
 * chunked prefill on). */
#include "models/mdl.h"
#include "sim/cluster/cluster.h"
#include "sim/run/sim_params.h"

static const cfg_enum_t busy_map[] = {{"wait", BUSY_WAIT}, {"recompute", BUSY_RECOMPUTE}, {NULL, 0}};
static const cfg_enum_t fetch_map[] = {
    {"never", SIM_FETCH_NEVER}, {"cost", SIM_FETCH_COST}, {"always", SIM_FETCH_ALWAYS}, {NULL, 0}};
static const cfg_enum_t resident_map[] = {{"computed", 0}, {"admission", 1}, {NULL, 0}};
static const cfg_enum_t copy_from_map[] = {{"computed", 0}, {"uncomputed", 1}, {NULL, 0}};
#define SCHED_MAP(M, name, ops) {name, SCHED_##M},
static const cfg_enum_t mode_map[] = {CLUSTER_SCHED_LIST(SCHED_MAP){NULL, 0}};
#undef SCHED_MAP
static const cfg_enum_t ttft_map[] = {{"first_token", 0}, {"prefill_end", 1}, {NULL, 0}};
static const cfg_enum_t handoff_map[] = {
    {"after_prefill", SIM_HANDOFF_AFTER_PREFILL}, {"layerwise", SIM_HANDOFF_LAYERWISE}, {NULL, 0}};
static const cfg_enum_t droute_map[] = {
    {"least_loaded", SIM_DROUTE_LEAST_LOADED}, {"kv_capacity", SIM_DROUTE_KV_CAPACITY},
    {"prefix_aware", SIM_DROUTE_PREFIX_AWARE}, {NULL, 0}};
static const cfg_enum_t decode_map[] = {
    {"step", DECODE_STEP}, {"segment", DECODE_SEGMENT}, {NULL, 0}};

/* When a key acts (cfg_when_t): pools of a disaggregated cluster, a KV
 * tier's link once the tier exists. The pool keys that fill a cluster
 * (prefill_nodes, ...) are refused without disagg (sim_disagg.c) instead. */
static const cfg_when_t when_disagg = {"cluster.disagg = true", NULL};
static const cfg_when_t when_share = {
    "cluster.disagg = true and cluster.prefill_nodes = 0 and cluster.decode_nodes = 0",
    NULL};
static const cfg_when_t when_nvme = {"kvcache.nvme_kv_gb > 0", NULL};
static const cfg_when_t when_pool = {"kvcache.pool_kv_gb > 0", NULL};

#define AT(kind, member) CFG_AT(kind, sim_params_t, member)
#define AT_IF(kind, member, w) CFG_AT_WHEN(kind, sim_params_t, member, w)
#define AT_ENUM(member, map) CFG_AT_ENUM(sim_params_t, member, map)
#define AT_ENUM_IF(member, map, w) CFG_AT_ENUM_WHEN(sim_params_t, member, map, w)
/* One row per key: the key, then the sim_params_t field it fills. */
const cfg_tkey_t sim_cfg_keys[] = {
	{{"experiment", "name", CFG_STR, "default", 0, 0, NULL, "", "label of the experiment", NULL},
	 AT(STR, name)},
	{{"experiment", "base", CFG_STR, "", 0, 0, NULL, "",
	 "what a config file changes: default = the built-in default experiment (kvsim config "
	 "show prints it), or the path of another experiment file (relative to this one, e.g. "
	 "analysis/experiments/fanout_65k.ini; its own base applies first); the file's keys "
	 "then change it exactly as the same keys given by --set would (a trace.path of its own "
	 "replaces the default experiment's generated traffic). Empty (default): the file is the "
	 "whole experiment over the schema defaults (and one that sets no key at all means the "
	 "default experiment)",
	 NULL},
	 CFG_LOAD},
	{{"experiment", "seed", CFG_INT, "1", 0, 9.2e18, NULL, "",
	 "master seed; every random stream (arrivals, each policy) derives from it", NULL},
	 AT(U64, seed)},
	{{"experiment", "until_s", CFG_FLOAT, "0", 0, 1e9, NULL, "s",
	 "stop simulated time here (0 = when the trace ends and every request drains)", NULL},
	 AT(DOUBLE, until_s)},
	{{"experiment", "max_pending", CFG_INT, "10000", 0, 1e9, NULL, "requests",
	 "most requests waiting (queued, not yet admitted) per instance; an arrival routed to "
	 "a full queue is rejected with status overload (counted in rejected_overload); 0 = no "
	 "cap. Default: own choice; at the few to tens of admissions per second an instance "
	 "sustains, 10,000 waiting requests are minutes of queueing, past any TTFT SLO, and "
	 "they bound the queues' memory (a request and its block ids) under overload", NULL},
	 AT(U32, max_pending)},
	{{"experiment", "client_timeout_s", CFG_FLOAT, "60", 0, 1e9, NULL, "s",
	 "a request still waiting in its instance's queue without a first token this long after "
	 "it arrived is abandoned by its client: it leaves the queue with status abandoned "
	 "(counted in the abandoned metric and as an SLO miss), checked whenever its instance "
	 "schedules a step; 0 = clients wait forever. Default 60 s: vLLM and SGLang admit "
	 "without limit, so what bounds a real queue is the client or the gateway in front, "
	 "and nginx's proxy_read_timeout and an AWS ALB's idle timeout both default to 60 s "
	 "without a byte (a streamed response's first byte is its first token)", NULL},
	 AT(DOUBLE, client_timeout_s)},
	{{"experiment", "max_rss_gb", CFG_FLOAT, "0", 0, 1e6, NULL, "GB",
	 "stop the run with an error, writing nothing, once this process's peak resident "
	 "memory since the run began passes this (VmHWM of /proc/self/status, read every "
	 "65,536 events, once the trace is opened, at each setup step and after collecting; "
	 "a cluster whose KV stores, instances x blocks and the tiers', would pass it is "
	 "refused before they are allocated); 0 = half of physical "
	 "memory, or of a lower cgroup memory.max (own choice: a run needing more is almost "
	 "surely runaway, and the rest leaves room for writing outputs and for other "
	 "processes)", NULL},
	 AT(DOUBLE, max_rss_gb)},
	{{"cluster", "nodes", CFG_INT, "4", 1, 4096, NULL, "", "nodes in the cluster", NULL},
	 AT(U32, nodes)},
	{{"cluster", "gpus_per_node", CFG_INT, "8", 1, 64, NULL, "", "GPUs per node", NULL},
	 AT(U32, gpus_per_node)},
	{{"cluster", "tp", CFG_INT, "4", 1, 64, NULL, "",
	 "tensor-parallel degree: GPUs per instance (divides gpus_per_node)", NULL},
	 AT(U32, tp)},
	{{"cluster", "reserve_fraction", CFG_FLOAT, "0.1", 0, 0.9, NULL, "",
	 "share of each GPU's HBM kept for activations and the runtime (vLLM's "
	 "gpu_memory_utilization 0.9 leaves 0.1)", NULL},
	 AT(DOUBLE, reserve_fraction)},
	{{"cluster", "kv_blocks", CFG_INT, "0", 0, 1e9, NULL, "blocks",
	 "KV pool per instance in blocks; 0 = what HBM leaves after weights and reserve", NULL},
	 AT(U32, kv_blocks)},
	{{"cluster", "disagg", CFG_BOOL, "false", 0, 0, NULL, "",
	 "disaggregated prefill and decode: the first prefill_nodes nodes run prefill "
	 "instances, the next decode_nodes decode instances; a request is routed to a prefill "
	 "instance, which emits its first token, and its KV then moves to a decode instance "
	 "(Mooncake, Qin et al. FAST '25; DistServe, Zhong et al. OSDI '24; NVIDIA Dynamo). "
	 "false (default): every instance is mixed, as in vLLM and SGLang (sim/run/sim_disagg.h)",
	 NULL},
	 AT(BOOL, dg.on)},
	{{"cluster", "prefill_nodes", CFG_INT, "0", 0, 4096, NULL, "",
	 "disagg: nodes of the prefill pool; prefill_nodes + decode_nodes = nodes (own choice: "
	 "pools are whole nodes, as Mooncake's and DistServe's deployments are)", NULL},
	 AT(U32, dg.prefill_nodes)},
	{{"cluster", "decode_nodes", CFG_INT, "0", 0, 4096, NULL, "",
	 "disagg: nodes of the decode pool (after the prefill pool's)", NULL},
	 AT(U32, dg.decode_nodes)},
	{{"cluster", "prefill_share", CFG_FLOAT, "0", 0, 0.99, NULL, "",
	 "disagg: share of the nodes in the prefill pool, used when prefill_nodes and "
	 "decode_nodes are both 0: prefill_nodes = nodes x share rounded half up, at least 1 "
	 "and at most nodes - 1, the rest decode (own choice: lets a preset split any cluster; "
	 "the disaggregated presets cite theirs). 0 (default): the counts decide; ignored "
	 "with disagg = false", NULL},
	 AT_IF(DOUBLE, dg.prefill_share, &when_share)},
	{{"cluster", "prefill_tp", CFG_INT, "0", 0, 64, NULL, "",
	 "disagg: tensor-parallel degree of prefill instances; 0 = tp", NULL},
	 AT(U32, dg.prefill_tp)},
	{{"cluster", "decode_tp", CFG_INT, "0", 0, 64, NULL, "",
	 "disagg: tensor-parallel degree of decode instances; 0 = tp", NULL},
	 AT(U32, dg.decode_tp)},
	{{"cluster", "prefill_gpu", CFG_STR, "", 0, 0, NULL, "",
	 "disagg: built-in GPU of the prefill pool (as gpu.name); empty = the [gpu] spec", NULL},
	 AT(STR, dg.prefill_gpu)},
	{{"cluster", "decode_gpu", CFG_STR, "", 0, 0, NULL, "",
	 "disagg: built-in GPU of the decode pool (e.g. H200 under H100 prefill); empty = the "
	 "[gpu] spec", NULL},
	 AT(STR, dg.decode_gpu)},
	{{"cluster", "handoff", CFG_ENUM, "layerwise", 0, 0, NULL, "",
	 "disagg: when the KV leaves the prefill instance. layerwise (default): each layer's KV "
	 "leaves once computed, overlapping the prefill (Mooncake's layer-wise transfer, Qin et "
	 "al. FAST '25; Dynamo over NIXL; as recalled), modelled as all but the last layer's "
	 "share leaving when the request's last prefill iteration starts and the last layer's "
	 "share when it ends; after_prefill: the whole KV leaves when the prefill ends "
	 "(DistServe, Zhong et al. OSDI '24; Splitwise, Patel et al. ISCA '24; as recalled). "
	 "Handoff flows always share links (whatever network.contention says)", NULL},
	 AT_ENUM_IF(dg.handoff, handoff_map, &when_disagg)},
	{{"cluster", "decode_routing", CFG_ENUM, "least_loaded", 0, 0, NULL, "",
	 "disagg: the decode instance of a prefilled request. least_loaded (default, own "
	 "choice): fewest decode tokens (running, plus those of handoffs headed there), then "
	 "fewest requests; kv_capacity: most free or evictable KV blocks less those promised "
	 "to handoffs (own choice, after Mooncake's Conductor, which weighs a decode "
	 "instance's KV room, as recalled); prefix_aware: most leading prompt blocks held in "
	 "the decode instance's prefix cache (needs decode_prefix_cache), then least_loaded's "
	 "keys (own choice, after Mooncake's Conductor, which weighs the prefix a decode "
	 "instance holds, as recalled). Ties at random from the decode router's own "
	 "seeded stream, never by index", NULL},
	 AT_ENUM_IF(dg.decode_routing, droute_map, &when_disagg)},
	{{"cluster", "decode_prefix_cache", CFG_BOOL, "false", 0, 0, NULL, "",
	 "disagg: decode instances keep a handed-off request's full prompt blocks as prefix "
	 "cache (LRU, as every store) after it completes, and a handoff moves only the prompt "
	 "blocks its decode instance does not hold (whose references it takes when routed) "
	 "plus the partial last block; speculative pre-placement (replication.speculative "
	 "spec_decode_targets) fills these caches. false (default, own choice: results as "
	 "before): decode instances keep no prefix cache and every handoff moves the whole "
	 "prompt KV", NULL},
	 AT(BOOL, dg.decode_prefix_cache)},
	{{"cluster", "join_instances", CFG_INT, "0", 0, 1e6, NULL, "",
	 "cold join: the last join_instances instances (by index) start absent and join at "
	 "join_at_s or every join_every_s, as a cluster scaling out under a load ramp; before "
	 "its join time an instance is in no policy's view (no request, no copy, no KV), at it "
	 "it becomes routable with an empty cache (sim/run/sim_join.h). 0 (default): every "
	 "instance serves from the start. Needs disagg = false", NULL},
	 AT(U32, jn.instances)},
	{{"cluster", "join_at_s", CFG_STR, "", 0, 0, NULL, "s",
	 "cold join: one time per joining instance, comma-separated and non-decreasing "
	 "(e.g. 20,40): instance nodes x gpus_per_node / tp - join_instances + k joins at "
	 "entry k; \"\" (default): use join_every_s", NULL},
	 AT(STR, jn.at_s)},
	{{"cluster", "join_every_s", CFG_FLOAT, "0", 0, 4e9, NULL, "s",
	 "cold join: joining instance k (from 0) joins at (k + 1) x join_every_s; 0 (default): "
	 "use join_at_s", NULL},
	 AT(DOUBLE, jn.every_s)},
	{{"kvcache", "block_tokens", CFG_INT, "512", 1, 65536, NULL, "tokens",
	 "tokens per KV block (the Mooncake traces hash 512-token blocks; vLLM uses 16)", NULL},
	 AT(U32, block_tokens)},
	{{"kvcache", "busy_rule", CFG_ENUM, "wait", 0, 0, NULL, "",
	 "a needed block still being computed or copied here: wait for it, or recompute "
	 "the rest of the prompt privately", NULL},
	 AT_ENUM(busy_rule, busy_map)},
	{{"kvcache", "fetch", CFG_ENUM, "never", 0, 0, NULL, "",
	 "peer pull (a global KV store: Mooncake Store, LMCache, NIXL): a routed request "
	 "missing blocks another instance holds fetches them when the estimated copy time "
	 "beats recomputing (cost), always, or never (plain vLLM, SGLang, TensorRT-LLM and TGI "
	 "recompute a miss)", NULL},
	 AT_ENUM(fetch, fetch_map)},
	{{"kvcache", "host_fetch", CFG_ENUM, "cost", 0, 0, NULL, "",
	 "blocks in the node's host tier (host_kv_gb > 0): fetch back over PCIe when that "
	 "beats recomputing (cost; vLLM's CPU offload and LMCache load them), always, or never",
	 NULL},
	 AT_ENUM(host_fetch, fetch_map)},
	{{"kvcache", "transfer_engine", CFG_ENUM, "mooncake", 0, 0, "mooncake,nixl,lmcache,ideal",
	 "", "costs every KV copy between instances pays over the NIC: per-copy and per-block "
	 "overheads, NIC efficiency, and (lmcache) a source-side staging read that occupies the "
	 "source's compute; ideal: none (sources in sim/run/sim_copy.c)", NULL},
	 AT(STR, transfer_engine)},
	{{"kvcache", "resident_at", CFG_ENUM, "computed", 0, 0, NULL, "",
	 "when a prefill's prompt blocks count as resident (matchable, copyable): once computed, "
	 "or at admission (the original study's assumption)", NULL},
	 AT_ENUM(resident_at_admission, resident_map)},
	{{"kvcache", "copy_from", CFG_ENUM, "computed", 0, 0, NULL, "",
	 "which source blocks a copy may read: computed ones only, or also blocks whose prefill "
	 "has not produced them yet (the original study's assumption)", NULL},
	 AT_ENUM(copy_uncomputed, copy_from_map)},
	{{"kvcache", "copy_deferred", CFG_BOOL, "true", 0, 0, NULL, "",
	 "a replication copy whose source blocks are still being computed reserves its "
	 "blocks at the target and starts when they are ready (and a request meeting blocks "
	 "in flight waits only when their estimated landing beats recomputing them); false: "
	 "such copies are refused and retried, and requests always wait (own choice: the "
	 "causal form of copying at trigger time in the original proposal)", NULL},
	 AT(BOOL, copy_deferred)},
	{{"kvcache", "host_kv_gb", CFG_FLOAT, "0", 0, 1e6, NULL, "GB",
	 "host-memory KV tier per node (0 = none); fetched back over PCIe", NULL},
	 AT(DOUBLE, host_kv_gb)},
	{{"kvcache", "host_offload", CFG_BOOL, "false", 0, 0, NULL, "",
	 "write blocks evicted from HBM to the node's host tier (background PCIe flows)", NULL},
	 AT(BOOL, host_offload)},
	/* deeper KV tiers: a node's NVMe drive and a pooled store (sim/run/sim_tiers.h) */
	{{"kvcache", "nvme_kv_gb", CFG_FLOAT, "0", 0, 1e6, NULL, "GB",
	 "NVMe KV tier per node below host memory (0 = none): blocks evicted from the host tier "
	 "(host_offload) are written to it, LRU as the host tier, and fetched back NVMe -> host "
	 "bounce buffer -> GPU over the GPU's PCIe link under host_fetch's rule (own choice: no "
	 "GPUDirect Storage, as LMCache's local disk backend and vLLM's CPU offload read "
	 "through host memory)", NULL},
	 AT(DOUBLE, nvme_kv_gb)},
	{{"kvcache", "nvme_read_bw", CFG_FLOAT, "13e9", 1e6, 1e12, NULL, "bytes/s",
	 "sequential read of the node's NVMe drive (the tier's read link, shared by the "
	 "node's shards). Default: Samsung PM1743 PCIe Gen5 x4 enterprise SSD datasheet, "
	 "sequential read 13,000 MB/s (as recalled, not verified)", NULL},
	 AT_IF(DOUBLE, nvme_read_bw, &when_nvme)},
	{{"kvcache", "nvme_write_bw", CFG_FLOAT, "6.6e9", 1e6, 1e12, NULL, "bytes/s",
	 "sequential write of the node's NVMe drive. Default: Samsung PM1743 datasheet, "
	 "sequential write 6,600 MB/s (as recalled, not verified)", NULL},
	 AT_IF(DOUBLE, nvme_write_bw, &when_nvme)},
	{{"kvcache", "nvme_lat_us", CFG_FLOAT, "80", 0, 1e6, NULL, "us",
	 "per-I/O latency of the NVMe drive, paid once per copy (on the read and the write "
	 "link). Default: own rounding of enterprise TLC NVMe 4 KiB random-read latency, "
	 "70-90 us typical (e.g. Micron 9400 and Samsung PM1743 product briefs, as recalled)",
	 NULL},
	 AT_IF(DOUBLE, nvme_lat_us, &when_nvme)},
	{{"kvcache", "pool_kv_gb", CFG_FLOAT, "0", 0, 1e9, NULL, "GB",
	 "pooled KV store of the whole cluster reached over the NICs (Mooncake Store, "
	 "LMCache remote backend; 0 = none): blocks evicted from a node's lowest tier (NVMe, "
	 "else host, else HBM) are put there from any node, LRU, and fetched back over the "
	 "GPU's NIC under host_fetch's rule", NULL},
	 AT(DOUBLE, pool_kv_gb)},
	{{"kvcache", "pool_bw", CFG_FLOAT, "100e9", 1e6, 1e13, NULL, "bytes/s",
	 "the pool's bandwidth per direction, all its servers together (one link each way). "
	 "Default: Mooncake (Qin et al., FAST '25) nodes with 4 x 200 Gb/s RoCE NICs, "
	 "100 GB/s (as recalled); own choice for a pool of one such node's worth", NULL},
	 AT_IF(DOUBLE, pool_bw, &when_pool)},
	{{"kvcache", "pool_lat_us", CFG_FLOAT, "50", 0, 1e6, NULL, "us",
	 "per-access latency of the pool (metadata lookup, RDMA setup), paid on its link each "
	 "way. Default: own choice, the tens of microseconds of a Mooncake Transfer Engine "
	 "batch transfer (FAST '25 sec. 5, as recalled)", NULL},
	 AT_IF(DOUBLE, pool_lat_us, &when_pool)},
	{{"scheduler", "max_num_seqs", CFG_INT, "0", 0, 65536, NULL, "",
	 "most sequences in one iteration (vLLM max_num_seqs, SGLang max_running_requests); "
	 "0 = the engine's default on this GPU: vLLM 1024 on GPUs with >= 70 GiB other than "
	 "A100 (H100, H200), else 256 (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults, "
	 "v0.11.0); SGLang 2048 (see sim/cluster/cluster.h)", NULL},
	 AT(U32, max_num_seqs)},
	{{"scheduler", "max_batched_tokens", CFG_INT, "0", 0, 1048576, NULL, "tokens",
	 "most tokens in one iteration (vLLM max_num_batched_tokens, SGLang "
	 "chunked_prefill_size); 0 = the engine's default on this GPU: vLLM 8192 on GPUs with "
	 ">= 70 GiB other than A100, else 2048 (EngineArgs.get_batch_defaults); SGLang 8192 "
	 "from 60 to 160 GB, 16384 above, 4096 / 2048 below (server_args.py "
	 "_handle_gpu_memory_settings)", NULL},
	 AT(U32, max_batched_tokens)},
	{{"scheduler", "chunked_prefill", CFG_BOOL, "true", 0, 0, NULL, "",
	 "split long prefills over iterations; off: a prompt runs whole (vLLM v1 always "
	 "chunks: off under mode = vllm is warned about)", NULL},
	 AT(BOOL, chunked_prefill)},
	{{"scheduler", "mode", CFG_ENUM, "vllm", 0, 0, NULL, "",
	 "vllm: continuous batching as vLLM v1 (v0.11.0 scheduler); sglang: SGLang v0.4.9's "
	 "scheduler (prefill batches before decode, never mixed; admission against a reserve "
	 "for future output scaled by new_token_ratio; decode out of memory retracts the "
	 "requests with the fewest output tokens); btb: the original study's admission (FIFO "
	 "with head-of-line blocking, input+output reserved up front without prefix dedup, a "
	 "separate prefix-cache budget, one whole prefill at a time before any decode)", NULL},
	 AT_ENUM(sched_mode, mode_map)},
	{{"scheduler", "schedule_conservativeness", CFG_FLOAT, "1", 0, 100, NULL, "",
	 "mode = sglang: SGLang's --schedule-conservativeness; new_token_ratio starts at "
	 "min(0.7 x this, 1) and decays to 0.14 of that over 600 decode steps (default 1.0: "
	 "server_args.py, global_config.py v0.4.9)", NULL},
	 AT(DOUBLE, conservativeness)},
	{{"scheduler", "ttft", CFG_ENUM, "first_token", 0, 0, NULL, "",
	 "first_token: the prefill emits the first token and TTFT ends there (vLLM); "
	 "prefill_end: every token comes from a decode step and TTFT excludes the first one "
	 "(the original study's metric)", NULL},
	 AT_ENUM(ttft_prefill_end, ttft_map)},
	{{"scheduler", "decode", CFG_ENUM, "segment", 0, 0, NULL, "",
	 "segment (default): a decode-only "
	 "batch that nothing joins or leaves advances in one event up to its next completion, "
	 "block allocation or cached block, with the same per-iteration costs and results "
	 "(mode = vllm, sglang; btb always steps); step: one event per decode iteration, the "
	 "validation mode (tests/unit/cluster/test_cluster_segment.c: both give the same results) (own "
	 "choice)", NULL},
	 AT_ENUM(decode_mode, decode_map)},
	{{"scheduler", "frontend_ms", CFG_FLOAT, "-1", -1, 1e6, NULL, "ms",
	 "time a request spends outside the engine, added to its TTFT and end-to-end latency as "
	 "a client measures them: the server's front-end (HTTP handling, tokenization, handing "
	 "the request to the engine process and the first streamed token back) and the client's "
	 "own; TPOT and the engine's queueing are unchanged, and closed-loop clients hear an "
	 "answer this much later. -1 (default): by scheduler.mode, 0 under btb (the original "
	 "study's metric is the engine's), under vllm and sglang the value fitted on five "
	 "measured vLLM v0.15.1 runs on H100 (models/README.md, \"How accurate is kvsim?\"; "
	 "SGLang not measured, same value)", NULL},
	 AT(DOUBLE, frontend_ms)},
	{{"slo", "ttft_ms", CFG_FLOAT, "2000", 0, 1e9, NULL, "ms",
	 "time-to-first-token target for SLO attainment and goodput", NULL},
	 AT(DOUBLE, ttft_ms)},
	{{"slo", "tpot_ms", CFG_FLOAT, "100", 0, 1e9, NULL, "ms",
	 "time-per-output-token target for SLO attainment and goodput", NULL},
	 AT(DOUBLE, tpot_ms)},
};
#undef AT
#undef AT_IF
#undef AT_ENUM
#undef AT_ENUM_IF
const size_t sim_cfg_keys_n = sizeof sim_cfg_keys / sizeof sim_cfg_keys[0];

/* [output]: the sweep's -o overrides dir; the run samples /timeline every
 * timeline_interval_ms. Its own table, after the models', traces' and
 * network's in the schema (sim_schema.c), so configs are written in the same
 * section order as before. */
static const cfg_enum_t tl_map[] = {{"changed", SIM_TL_CHANGED}, {"every", SIM_TL_EVERY}, {NULL, 0}};
#define AT(kind, member) CFG_AT(kind, sim_out_params_t, member)
#define AT_ENUM(member, map) CFG_AT_ENUM(sim_out_params_t, member, map)
const cfg_tkey_t out_cfg_keys[] = {
	{{"output", "dir", CFG_STR, "results", 0, 0, NULL, "",
	 "results directory: HDF5 files under runs/ and the catalog.sqlite", NULL},
	 AT(STR, dir)},
	{{"output", "timeline_interval_ms", CFG_FLOAT, "100", 0.001, 3.6e6, NULL, "ms",
	 "sampling interval of /timeline (queue length, batch, KV used, link use)", NULL},
	 AT(DOUBLE, timeline_interval_ms)},
	{{"output", "timeline", CFG_ENUM, "changed", 0, 0, NULL, "",
	 "which samples are /timeline rows. changed (default): an instance's row only when its "
	 "queue, batch, KV used or speculative KV differs from its last row, a link's only "
	 "when its use does (links without flows are never visited; one zero row when a link "
	 "goes idle), so each series is a step function holding until the next row and the "
	 "cost follows the busy part of the cluster; every: a row per instance and per busy "
	 "link at every tick (the per-tick rule, the reference) (own choice)", NULL},
	 AT_ENUM(timeline, tl_map)},
	{{"output", "compression", CFG_INT, "1", 0, 9, NULL, "",
	 "deflate level of the HDF5 tables (0 = chunked, uncompressed; own choice: 1, whose "
	 "files were 4% larger than level 4's on the Mooncake conversation run (587 vs 566 kB) for "
	 "0.11 instead of 0.14 CPU-s per run, means of 3 runs)",
	 NULL},
	 AT(U32, compression)},
	{{"output", "chunk_rows", CFG_INT, "4096", 1, 1e7, NULL, "rows",
	 "rows per HDF5 chunk", NULL},
	 AT(U64, chunk_rows)},
	{{"output", "oracle_bound", CFG_BOOL, "false", 0, 0, NULL, "",
	 "record each instance's block stream and report bound.* in /summary: the block hit "
	 "rate of Belady's MIN on that stream with the instance's KV pool (sim/run/bound.h); "
	 "off by default so runs keep their /summary (own choice)", NULL},
	 AT(BOOL, oracle_bound)},
	{{"output", "bound_bw_gbps", CFG_FLOAT, "0", 0, 1e6, NULL, "GB/s",
	 "copy bandwidth into each instance that the placement bound (bound.place_*) may use "
	 "over the run, 1e9 bytes/s, speculative copies and fetches together; 0 = unlimited, as "
	 "the speculative policy's spec_bw_gbps default (set it to the online policy's budget "
	 "to compare within it)", NULL},
	 AT(DOUBLE, bound_bw_gbps)},
	{{"output", "trace_events", CFG_STR, "", 0, 0, NULL, "",
	 "kvsim run writes the run's timeline here as Chrome/Perfetto trace-event JSON "
	 "(iterations per instance, flows per link class, KV and queue counters; opens in "
	 "ui.perfetto.dev); empty: none; --trace-events overrides it; results are the same "
	 "either way (own choice: off, as the file grows with the run)", NULL},
	 AT(STR, trace_events)},
	{{"output", "decisions", CFG_BOOL, "false", 0, 0, NULL, "",
	 "write /decisions: a row per routing decision with the chosen instance, the four "
	 "options of lowest estimated TTFT (min_ttft's estimate, Mooncake FAST '25 Alg. 1) and "
	 "the regret, chosen minus best estimate; a row per copy a policy asks for, per block "
	 "evicted (HBM and tiers) and per admission call of a selected admission policy "
	 "(sim/run/sim_decisions.h); results are the same either way (own choice: off, as it costs a scan of every instance per request)",
	 NULL},
	 AT(BOOL, decisions)},
	{{"output", "view_quality", CFG_BOOL, "false", 0, 0, NULL, "",
	 "report view.* in /summary: how often the routers' view believed more (misrouted: "
	 "stale or never held) or less (unseen) of the chosen instance's prefix than it held, "
	 "and the true-state regret (sim/run/sim_rquality.h); on by itself with "
	 "[policy.routing] view = events or replicas > 1 (own choice: off, so runs keep their "
	 "/summary)", NULL},
	 AT(BOOL, view_quality)},
	{{"output", "windows", CFG_STR, "", 0, 0, NULL, "s",
	 "time windows for per-window summaries, as increasing edges t0,t1,... in seconds of "
	 "arrival: each [t_i, t_i+1) gets every /summary metric over the requests that "
	 "arrived in it (same definitions), in /windows and the catalog's windows table; "
	 "empty: a spec workload's stages, else none; set, it replaces the stages (own choice)",
	 NULL},
	 AT(STR, windows)},
};
#undef AT
#undef AT_ENUM
const size_t out_cfg_keys_n = sizeof out_cfg_keys / sizeof out_cfg_keys[0];

const char *sim_fetch_name(int fetch)
{
	return cfg_enum_name(fetch_map, fetch);
}

void sim_params_compute(const sim_params_t *p, mdl_compute_params_t *cp)
{
	if (cp->allreduce_impl == MDL_AR_AUTO)
		cp->allreduce_impl = cluster_sched_flags(p->sched_mode) & CL_SCHED_F_CUSTOM_AR
					     ? MDL_AR_CUSTOM
					     : MDL_AR_NCCL;
}

int64_t sim_params_frontend_ns(const sim_params_t *p)
{
	if (p->frontend_ms >= 0)
		return (int64_t)(p->frontend_ms * 1e6 + 0.5);
	return cluster_sched_flags(p->sched_mode) & CL_SCHED_F_FRONTEND
		       ? (int64_t)(SIM_FRONTEND_MS * 1e6 + 0.5)
		       : 0;
}
