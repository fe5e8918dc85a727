/* near — "did you mean": the nearest of a set of names to what was typed.
 *
 * One measure for every suggestion kvsim makes (config sections, keys and
 * enum values, command-line options and subcommands): edit distance with
 * adjacent swaps (optimal string alignment: Levenshtein's insertions,
 * deletions and substitutions, plus a transposition of two neighbours),
 * case-insensitive, on the first 64 bytes of each word. A candidate is worth
 * showing when it is one edit away or at most a third of the typed word
 * away; further off it is noise ('arc' is not a typo of 'lru'). Nothing here
 * allocates; a near_t points at the caller's candidate strings.
 */
#ifndef KVSIM_NEAR_H
#define KVSIM_NEAR_H

#include <stddef.h>

/* Edits (insert, delete, substitute, swap two neighbours) between a and b,
 * case-insensitive. */
size_t near_distance(const char *a, const char *b);
/* Whether a candidate d edits away from typed is worth suggesting. */
int near_close(const char *typed, size_t d);

/* The best candidate offered so far: start from NEAR_INIT, offer each
 * candidate, then near_pick. Ties keep the first offered. */
typedef struct near {
	const char *best;
	size_t d;
} near_t;
#define NEAR_INIT {NULL, (size_t)-1}
void near_offer(near_t *n, const char *typed, const char *cand);
/* The best candidate when it is close enough to typed, else NULL. */
const char *near_pick(const near_t *n, const char *typed);

#endif
