/* near — see near.h. */
#include "sim/base/near.h"

#include <ctype.h>
#include <string.h>

size_t near_distance(const char *a, const char *b)
{
	enum { L = 64 };
	size_t na = strnlen(a, L), nb = strnlen(b, L);
	size_t prev2[L + 1], prev[L + 1], cur[L + 1];
	for (size_t j = 0; j <= nb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= na; i++) {
		int ai = tolower((unsigned char)a[i - 1]);
		cur[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			int bj = tolower((unsigned char)b[j - 1]);
			size_t sub = prev[j - 1] + (ai != bj);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			/* two neighbours swapped ("shwo") is one slip, not two */
			if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == bj && prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
		memcpy(prev2, prev, (nb + 1) * sizeof prev[0]);
		memcpy(prev, cur, (nb + 1) * sizeof prev[0]);
	}
	return prev[nb];
}

int near_close(const char *typed, size_t d)
{
	return d <= 1 || 3 * d <= strlen(typed);
}

void near_offer(near_t *n, const char *typed, const char *cand)
{
	size_t d = near_distance(typed, cand);
	if (d < n->d) {
		n->d = d;
		n->best = cand;
	}
}

const char *near_pick(const near_t *n, const char *typed)
{
	return n->best && near_close(typed, n->d) ? n->best : NULL;
}
