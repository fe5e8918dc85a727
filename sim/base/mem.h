/* mem — freeing several allocations at once.
 *
 * FREE_ALL(p, q, ...) calls free() on each pointer given, in order (NULL
 * ones included, as free allows), so a destructor reads as the list of what
 * its object owns. The pointers are evaluated once each. Header-only.
 */
#ifndef KVSIM_MEM_H
#define KVSIM_MEM_H

#include <stddef.h>
#include <stdlib.h>

static inline void mem_free_all_(void *const *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
}

#define FREE_ALL(...)                                                                              \
	mem_free_all_((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) /          \
	                                                sizeof(void *))

#endif
