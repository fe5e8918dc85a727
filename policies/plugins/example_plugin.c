/* example_plugin — a minimal external policy, built as a shared object and
 * loaded with `kvsim run --plugin example_plugin.so` (or `kvsim policies
 * --plugin ...`). It adds one routing policy, `most_free_kv`: the instance
 * with the most free KV blocks, keeping a reserve.
 *
 * Build: cc -std=c17 -I<kvsim source> -fPIC -shared example_plugin.c -o
 * example_plugin.so. It uses only the types of policies/pol.h and calls no
 * kvsim function except through the pol_host_api_t it is given.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policies/pol.h"

/* The policy's parameters: each key says which field it fills. */
typedef struct mfk_params {
	uint64_t reserve;
} mfk_params_t;

static const cfg_tkey_t params[] = {
    {{"policy.routing", "free_kv_reserve", CFG_INT, "0", 0, 1e9, NULL, "blocks",
      "instances with fewer free blocks than this are skipped unless all are", "most_free_kv"},
     CFG_AT(U64, mfk_params_t, reserve)},
};

static int mfk_init(const void *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	uint64_t *reserve = malloc(sizeof *reserve);
	if (!reserve) { /* a failure says why: code and message, as err_set would */
		e->code = KS_ENOMEM;
		snprintf(e->msg, sizeof e->msg, "out of memory");
		return KS_ENOMEM;
	}
	*reserve = ((const mfk_params_t *)p)->reserve;
	*state = reserve;
	return 0;
}

static int mfk_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)r;
	uint64_t reserve = *(uint64_t *)st, best = 0;
	int found = 0;
	*inst = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		pol_inst_t x;
		v->inst(v->ctx, i, &x);
		uint64_t free_blocks =
		    x.kv_cap_blocks > x.kv_used_blocks ? x.kv_cap_blocks - x.kv_used_blocks : 0;
		if (free_blocks < reserve)
			continue;
		if (!found || free_blocks > best) {
			best = free_blocks;
			*inst = i;
			found = 1;
		}
	}
	return POL_ACCEPT;
}

static const struct pol_routing_ops most_free_kv = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "most_free_kv",
             "Example plugin: the instance with the most free KV blocks.", params,
             sizeof params / sizeof params[0], sizeof(mfk_params_t), mfk_init, free},
    .route = mfk_route,
};

int kvsim_plugin_register(const pol_host_api_t *api)
{
	if (api->version < 3) /* typed parameters: ABI 3 or later */
		return KS_EINPUT;
	return api->add(api->reg, &most_free_kv.base, api->err);
}
