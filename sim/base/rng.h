/* rng — the one definition of kvsim's 64-bit mixing and seed derivation.
 *
 * rng_fmix64 is splitmix64's finaliser (Steele, Lea, Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014): a bijective 64-bit
 * avalanche mix, used to hash block ids and derive seeds. rng_splitmix64
 * adds splitmix64's increment first. sim_seed_for derives the seed of
 * random stream `stream` from the master seed, so that adding a component
 * never perturbs another: the trace generator and prefix model use
 * SIM_STREAM_TRACE, policy family f uses SIM_STREAM_POLICY + f. Pure
 * functions; no state.
 */
#ifndef KVSIM_RNG_H
#define KVSIM_RNG_H

#include <stdint.h>

#define RNG_GOLDEN 0x9e3779b97f4a7c15ULL /* 2^64 / golden ratio */

static inline uint64_t rng_fmix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline uint64_t rng_splitmix64(uint64_t x)
{
	return rng_fmix64(x + RNG_GOLDEN);
}

enum { SIM_STREAM_TRACE = 0, SIM_STREAM_POLICY = 16 };
uint64_t sim_seed_for(uint64_t master, uint64_t stream);

#endif
