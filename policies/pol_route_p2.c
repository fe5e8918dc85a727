/* pol_route_p2 — power_of_two routing: sample two distinct instances
 * uniformly from the router's own stream and send the request to the less
 * loaded (waiting + running requests), a tie going to either with
 * probability 1/2. The "power of two choices" of Mitzenmacher (IEEE TPDS
 * 12(10), 2001) and Azar et al. (SIAM J. Comput. 29(1), 1999): two samples
 * instead of one cut the maximum queue from log n / log log n to
 * log log n / log 2, without reading every instance's load as least_load
 * does. It ignores the cache. One instance: that one, with no draw. */
#include "policies/pol_int.h"

static int p2_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)r;
	if (v->n_inst < 2) {
		*inst = 0;
		return POL_ACCEPT;
	}
	/* Two distinct instances: b is drawn from the n - 1 others. */
	uint32_t a = (uint32_t)gsl_rng_uniform_int(st, v->n_inst);
	uint32_t b = (uint32_t)gsl_rng_uniform_int(st, v->n_inst - 1);
	b += b >= a;
	pol_inst_t x;
	pol_pick_t pk;
	pol_pick_start(&pk, st);
	v->inst(v->ctx, a, &x);
	pol_pick_offer(&pk, a, 0, pol_inst_load(&x));
	v->inst(v->ctx, b, &x);
	pol_pick_offer(&pk, b, 0, pol_inst_load(&x));
	*inst = pk.inst;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_power_of_two = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "power_of_two",
             "The less loaded of two instances sampled at random (Mitzenmacher 2001), "
             "ignoring cache.",
             POL_NO_PARAMS, pol_rng_state_init, pol_rng_state_free},
    .route = p2_route,
};
