/* size — see size.h. */
#include "sim/base/size.h"

#include <math.h>
#include <stdlib.h>

int size_parse(const char *text, uint64_t max, uint64_t *out)
{
	char *end;
	double v = strtod(text, &end), mul = 1;
	if (end == text || isnan(v))
		return SIZE_NOT_SIZE;
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M')
		mul = 1048576, end++;
	else if (*end == 'G')
		mul = 1073741824.0, end++;
	if (*end)
		return SIZE_NOT_SIZE;
	/* -0 reads as 0; 2^64 is the first double past UINT64_MAX (and inf is past it) */
	double x = round(v * mul);
	if (v < 0 || x >= 18446744073709551616.0 || (uint64_t)x > max)
		return SIZE_OUT_OF_RANGE;
	*out = (uint64_t)x;
	return 0;
}
