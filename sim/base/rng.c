/* rng — see rng.h. */
#include "sim/base/rng.h"

uint64_t sim_seed_for(uint64_t master, uint64_t stream)
{
	return rng_fmix64(master + RNG_GOLDEN * (stream + 1));
}
