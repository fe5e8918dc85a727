/* tr_csv — line reading, CSV field splitting and strict number parsing for
 * the trace readers. One reusable line buffer: memory is the longest line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "traces/tr_int.h"

int tr_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return KS_ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

gsl_rng *tr_rng_new(uint64_t seed, uint64_t stream)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	if (r)
		gsl_rng_set(r, (unsigned long)(tr_mix(tr_mix(TR_ROOT_ID, seed), stream) >> 32));
	return r;
}

int tr_lines_open(tr_lines_t *l, const char *path, err_t *e)
{
	memset(l, 0, sizeof *l);
	l->path = path;
	l->f = fopen(path, "rb");
	if (!l->f)
		return err_set(e, errno == ENOENT || errno == EISDIR ? KS_EINPUT : KS_EIO,
		               "%s: cannot open: %s", path, strerror(errno));
	return 0;
}

int tr_lines_next(tr_lines_t *l, err_t *e)
{
	errno = 0;
	ssize_t n = getline(&l->buf, &l->cap, l->f);
	if (n < 0) {
		if (ferror(l->f))
			return err_set(e, KS_EIO, "%s:%llu: read error: %s", l->path,
			               (unsigned long long)l->line + 1, strerror(errno));
		if (errno == ENOMEM)
			return err_set(e, KS_ENOMEM, "%s: out of memory", l->path);
		return 0;
	}
	l->line++;
	l->bytes += (uint64_t)n;
	l->no_newline = !(n > 0 && l->buf[n - 1] == '\n');
	if (!l->no_newline)
		n--;
	if (n > 0 && l->buf[n - 1] == '\r')
		n--;
	l->buf[n] = '\0';
	l->len = (size_t)n;
	if (memchr(l->buf, '\0', (size_t)n))
		return err_set(e, KS_EINPUT, "%s:%llu: line: contains a NUL byte (binary file?)",
		               l->path, (unsigned long long)l->line);
	return 1;
}

void tr_lines_close(tr_lines_t *l)
{
	if (l->f)
		fclose(l->f);
	free(l->buf);
	memset(l, 0, sizeof *l);
}

int tr_csv_split(tr_lines_t *l, tr_field_t *f, int max, err_t *e)
{
	char *p = l->buf, *end = l->buf + l->len;
	int n = 0;
	for (;;) {
		if (n == max)
			return n; /* extra columns are ignored */
		char *w = p, *start = p;
		if (p < end && *p == '"') {
			/* RFC 4180 quoted field: "" is a quote; unescape in place. */
			p++;
			for (;;) {
				if (p >= end)
					return err_set(e, KS_EINPUT,
					               "%s:%llu: field %d: unterminated quote",
					               l->path, (unsigned long long)l->line, n + 1);
				if (*p == '"') {
					if (p + 1 < end && p[1] == '"') {
						*w++ = '"';
						p += 2;
						continue;
					}
					p++;
					break;
				}
				*w++ = *p++;
			}
			if (p < end && *p != ',')
				return err_set(e, KS_EINPUT,
				               "%s:%llu: field %d: text after closing quote",
				               l->path, (unsigned long long)l->line, n + 1);
		} else {
			while (p < end && *p != ',')
				p++;
			w = p;
		}
		f[n].s = start;
		f[n].len = (size_t)(w - start);
		n++;
		if (p >= end) {
			*w = '\0';
			return n;
		}
		*w = '\0'; /* p points at the comma (w <= p) */
		p++;
	}
}

static const char *trim(const char *s, char *buf, size_t cap)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

int tr_parse_u32(const tr_lines_t *l, const char *name, const char *s, uint32_t max, uint32_t *out,
                 err_t *e)
{
	char buf[64];
	const char *t = trim(s, buf, sizeof buf);
	unsigned long long line = (unsigned long long)l->line;
	if (!*t)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: empty (expected a token count)", l->path,
		               line, name);
	/* Accept integral floats ("472.0") some exports write. */
	char *end;
	errno = 0;
	double v = strtod(t, &end);
	if (*end || end == t || isnan(v))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: '%s' is not a number", l->path, line,
		               name, t);
	if (v < 0)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: negative length %s", l->path, line, name,
		               t);
	if (v != floor(v))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: '%s' is not an integer", l->path, line,
		               name, t);
	if (v > (double)max || errno == ERANGE)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: %s out of range [0, %u]", l->path, line,
		               name, t, max);
	*out = (uint32_t)v;
	return 0;
}

int tr_parse_f64(const tr_lines_t *l, const char *name, const char *s, double *out, err_t *e)
{
	char buf[64];
	const char *t = trim(s, buf, sizeof buf);
	char *end;
	errno = 0;
	double v = strtod(t, &end);
	if (!*t || *end || end == t || !isfinite(v))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: '%s' is not a number", l->path,
		               (unsigned long long)l->line, name, t);
	*out = v;
	return 0;
}

int tr_seconds_ns(const tr_lines_t *l, const char *name, double s, int64_t *ns, err_t *e)
{
	/* < 4e9 s (epoch seconds up to 2096) keeps ns inside int64 and catches garbage. */
	if (!(s >= 0 && s < 4e9))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: %.17g s out of range [0, 4e9)", l->path,
		               (unsigned long long)l->line, name, s);
	*ns = (int64_t)llround(s * 1e9);
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil, http://howardhinnant.github.io/date_algorithms.html). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char **p, int n, int *v)
{
	int x = 0;
	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		x = x * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*v = x;
	return 0;
}

int tr_parse_datetime(const char *s, int64_t *ns)
{
	const char *p = s;
	int Y, M, D, h, m, sec;
	while (*p == ' ')
		p++;
	if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
	    digits(&p, 2, &D) || (*p != ' ' && *p != 'T'))
		return -1;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
	    digits(&p, 2, &sec))
		return -1;
	/* 1900..2200 keeps ns since the epoch inside int64 */
	if (Y < 1900 || Y > 2200 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 ||
	    sec > 60)
		return -1;
	int64_t frac = 0;
	if (*p == '.') {
		p++;
		int nd = 0;
		while (*p >= '0' && *p <= '9') {
			if (nd < 9) {
				frac = frac * 10 + (*p - '0');
				nd++;
			}
			p++;
		}
		if (nd == 0)
			return -1;
		for (; nd < 9; nd++)
			frac *= 10;
	}
	int64_t off = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh, om;
		p++;
		if (digits(&p, 2, &oh))
			return -1;
		if (*p == ':')
			p++;
		if (digits(&p, 2, &om) || oh > 23 || om > 59)
			return -1;
		off = sign * (oh * 3600 + om * 60);
	}
	while (*p == ' ')
		p++;
	if (*p)
		return -1;
	int64_t secs =
	    days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + m * 60 + sec - off;
	*ns = secs * 1000000000LL + frac;
	return 0;
}
