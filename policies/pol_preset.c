/* pol_preset — serving-framework presets: how vLLM, SGLang, TensorRT-LLM and
 * TGI keep KV (block size, matching granularity, eviction order, offload),
 * as data with the source of each setting. pol_preset_apply sets a key
 * only while its value is still the schema default, so anything the user
 * set (file or --set) wins; keys the schema does not have yet are skipped
 * (kvcache.match_granularity and kvcache.host_offload belong to the KV
 * store and appear once it defines them). */
#include "policies/pol.h"

#include <stdio.h>
#include <string.h>

static const pol_preset_kv_t vllm_kv[] = {
    {"kvcache.block_tokens", "16", "vLLM engine args: --block-size defaults to 16 on CUDA"},
    {"kvcache.match_granularity", "block",
     "vLLM automatic prefix caching hashes full blocks only (design doc: prefix caching)"},
    {"policy.eviction.name", "lru",
     "vLLM evicts unreferenced cached blocks least recently used first (free block queue)"},
    {"kvcache.host_offload", "false", "vLLM keeps prefix cache in GPU memory by default"},
};

static const pol_preset_kv_t sglang_kv[] = {
    {"kvcache.block_tokens", "1",
     "SGLang --page-size defaults to 1: the radix cache matches single tokens"},
    {"kvcache.match_granularity", "token", "SGLang RadixAttention (Zheng et al. 2024)"},
    {"policy.eviction.name", "lru", "SGLang evicts radix-tree leaves in LRU order"},
    {"kvcache.host_offload", "false",
     "hierarchical cache (--enable-hierarchical-cache) is off by default"},
};

static const pol_preset_kv_t trtllm_kv[] = {
    {"kvcache.block_tokens", "32",
     "TensorRT-LLM tokens_per_block (power of two > 1; 32 as recalled from trtllm-build "
     "defaults, not verified)"},
    {"kvcache.match_granularity", "block",
     "TensorRT-LLM block reuse matches whole blocks in a radix search tree"},
    {"policy.eviction.name", "lru",
     "TensorRT-LLM evicts by retention priority (default 35 of 0-100), least recently used "
     "within a priority; with default priorities that is LRU"},
    {"kvcache.host_offload", "true",
     "TensorRT-LLM offloads evicted blocks to host memory when host_cache_size is set "
     "(KV cache system docs: offloading)"},
};

static const pol_preset_kv_t tgi_kv[] = {
    {"kvcache.block_tokens", "1",
     "TGI v3 prefix caching over a radix trie; block size 1 with the flashinfer backend "
     "(as recalled, not verified)"},
    {"kvcache.match_granularity", "token", "TGI v3 prefix caching (release notes, Dec 2024)"},
    {"policy.eviction.name", "lru", "TGI frees unreferenced prefix blocks LRU first"},
    {"kvcache.host_offload", "false", "TGI keeps KV in GPU memory"},
};

#define N(a) (sizeof a / sizeof a[0])
const pol_preset_t pol_presets[] = {
    {"vllm",
     "vLLM: 16-token blocks, automatic prefix caching over hashed full blocks, LRU "
     "over unreferenced blocks, no offload",
     vllm_kv, N(vllm_kv)},
    {"sglang", "SGLang: radix tree at token granularity (page size 1), LRU over leaves", sglang_kv,
     N(sglang_kv)},
    {"trtllm", "TensorRT-LLM: block reuse with priority-based eviction and host offload", trtllm_kv,
     N(trtllm_kv)},
    {"tgi", "Text Generation Inference v3: prefix caching (radix trie), LRU", tgi_kv, N(tgi_kv)},
};
const size_t pol_presets_n = N(pol_presets);

int pol_preset_apply(cfg_t *c, const char *name, err_t *e)
{
	const pol_preset_t *p = NULL;
	for (size_t i = 0; i < pol_presets_n; i++)
		if (name && !strcmp(pol_presets[i].name, name))
			p = &pol_presets[i];
	if (!p)
		return err_set(e, KS_EINPUT, "preset: unknown '%s' (vllm, sglang, trtllm or tgi)",
		               name ? name : "");
	for (size_t i = 0; i < p->n; i++) {
		const char *dot = strrchr(p->kv[i].key, '.');
		char sec[64], key[64], text[256], origin[80];
		snprintf(sec, sizeof sec, "%.*s", (int)(dot - p->kv[i].key), p->kv[i].key);
		snprintf(key, sizeof key, "%s", dot + 1);
		if (!cfg_schema_find(cfg_schema(c), sec, key))
			continue;
		if (strcmp(cfg_origin(c, sec, key), "default"))
			continue; /* the user's value wins */
		snprintf(text, sizeof text, "[%s]\n%s = %s\n", sec, key, p->kv[i].value);
		snprintf(origin, sizeof origin, "preset %s", p->name);
		int rc = cfg_load_string(c, origin, text, e);
		if (rc)
			return err_prefix(e, "preset %s", p->name);
	}
	return 0;
}
