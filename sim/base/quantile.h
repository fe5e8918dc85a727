/* quantile — exact sample quantiles by selection: the value that
 * gsl_stats_quantile_from_sorted_data(sorted, 1, n, f) gives (linear
 * interpolation between order statistics floor((n-1)f) and the next one),
 * found with gsl_stats_select in O(n) instead of a sort. +inf values (a
 * request that never got a first token) propagate: a quantile interpolated
 * towards +inf with a positive weight is +inf, one that falls exactly on a
 * finite order statistic is that value (where GSL's arithmetic gives NaN).
 * buf is reordered (its values kept); n >= 1, 0 <= f <= 1, no NaN. No
 * allocation, no errors. */
#ifndef KVSIM_QUANTILE_H
#define KVSIM_QUANTILE_H

#include <stddef.h>

double quantile_select(double *buf, size_t n, double f);

#endif
