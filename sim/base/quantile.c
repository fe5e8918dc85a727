/* quantile — see quantile.h. */
#include "sim/base/quantile.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>

double quantile_select(double *buf, size_t n, double f)
{
	/* GSL's own arithmetic (statistics/quantiles_source.c), so the result
	 * is the same double as on the sorted data */
	const double index = f * (double)(n - 1);
	const size_t lhs = (size_t)index;
	const double delta = index - (double)lhs;
	double lo = gsl_stats_select(buf, 1, n, lhs);
	if (lhs >= n - 1)
		return lo;
	double hi = gsl_stats_select(buf, 1, n, lhs + 1);
	if (isinf(hi) && hi > 0) /* GSL's arithmetic: NaN for inf - inf or 0 * inf */
		return delta > 0 ? hi : lo;
	return (1 - delta) * lo + delta * hi;
}
