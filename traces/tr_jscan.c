/* tr_jscan — see tr_int.h. A strict subset of JSON (RFC 8259) scanned in
 * one pass: anything outside it is not an error here but a fallback, so
 * jansson (the reference) decides and words the error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/vec.h"
#include "traces/tr_int.h"

typedef struct scan {
	const char *p, *end;
} scan_t;

static void ws(scan_t *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A string without escapes, control characters or non-ASCII bytes (which
 * jansson would have to check as UTF-8): its body in [*b, *b + *n). */
static int string(scan_t *s, const char **b, size_t *n)
{
	if (s->p >= s->end || *s->p != '"')
		return -1;
	const char *q = ++s->p;
	while (q < s->end && *q != '"') {
		unsigned char c = (unsigned char)*q;
		if (c == '\\' || c < 0x20 || c >= 0x80)
			return -1;
		q++;
	}
	if (q >= s->end)
		return -1;
	*b = s->p;
	*n = (size_t)(q - s->p);
	s->p = q + 1;
	return 0;
}

/* A JSON number: an integer of at most 18 digits (jansson's json_int_t
 * holds it exactly), or a real that strtod reads to a finite value (jansson
 * refuses an overflow). */
static int number(scan_t *s, tr_jv_t *v)
{
	const char *b = s->p, *q = s->p;
	int neg = q < s->end && *q == '-';
	q += neg;
	if (q >= s->end || !digit(*q))
		return -1;
	/* the integer part's value as it is scanned: at most 18 digits fit an
	 * int64 whatever they are (a longer one falls back) */
	int64_t iv = 0;
	const char *d0 = q;
	if (*q == '0')
		q++;
	else
		for (; q < s->end && digit(*q) && q - d0 < 18; q++)
			iv = 10 * iv + (*q - '0');
	int real = 0;
	if (q < s->end && *q == '.') {
		real = 1;
		if (++q >= s->end || !digit(*q))
			return -1;
		while (q < s->end && digit(*q))
			q++;
	}
	if (q < s->end && (*q == 'e' || *q == 'E')) {
		real = 1;
		if (++q < s->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= s->end || !digit(*q))
			return -1;
		while (q < s->end && digit(*q))
			q++;
	}
	if (!real) {
		if (q < s->end && digit(*q)) /* a 19th digit */
			return -1;
		v->type = TR_JV_INT;
		v->i = neg ? -iv : iv;
		v->d = (double)v->i;
		s->p = q;
		return 0;
	}
	size_t len = (size_t)(q - b);
	char buf[64];
	if (len >= sizeof buf)
		return -1;
	memcpy(buf, b, len);
	buf[len] = 0;
	v->type = TR_JV_REAL;
	v->d = strtod(buf, NULL);
	if (!isfinite(v->d))
		return -1;
	s->p = q;
	return 0;
}

static int literal(scan_t *s, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
		return -1;
	s->p += n;
	return 0;
}

/* The digits at q[0..7] read as one little-endian word: how many lead (0-8)
 * and, when fewer than 8, their value. A byte is a digit when its high
 * nibble is 3 and adding 6 leaves it so; a carry out of a non-digit byte
 * only reaches the bytes after it, which are not used. The value comes
 * from pairs, quads, then the eight (the usual SWAR reduction), with the
 * digits shifted up so the bytes below them read as leading zeros. */
static unsigned digits8(const char *q, uint64_t *value)
{
	const uint64_t hi = 0xF0F0F0F0F0F0F0F0ULL, ones = 0x0101010101010101ULL;
	uint64_t w;
	memcpy(&w, q, 8);
	uint64_t other = ((w & hi) | ((w + 6 * ones) & hi) >> 4) ^ 0x33 * ones;
	if (!other)
		return 8;
	unsigned nd = (unsigned)__builtin_ctzll(other) / 8;
	if (!nd)
		return 0;
	uint64_t x = (w - 0x30 * ones) << (64 - 8 * nd);
	x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL;
	x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL;
	x = (x * 10000 + (x >> 32)) & 0xFFFFFFFFULL;
	*value = x;
	return nd;
}

/* A non-negative integer id: plain digits (the usual case, read in place),
 * else whatever number() reads, which must be a non-negative integer. The
 * fast path takes exactly what number() would read as such an integer: at
 * most 18 digits, no leading zero, not followed by a digit, fraction or
 * exponent. */
static int id_value(scan_t *s, uint64_t *out)
{
	const char *q = s->p;
	uint64_t v = 0;
	int nd = 0;
	for (; q < s->end && digit(*q) && nd < 18; q++, nd++)
		v = 10 * v + (uint64_t)(*q - '0');
	if (nd && (nd == 1 || *s->p != '0') &&
	    !(q < s->end && (digit(*q) || *q == '.' || *q == 'e' || *q == 'E'))) {
		s->p = q;
		*out = v;
		return 0;
	}
	tr_jv_t x;
	if (number(s, &x) || x.type != TR_JV_INT || x.i < 0)
		return -1;
	*out = (uint64_t)x.i;
	return 0;
}

/* An array of non-negative integers into *ids. Elements written as the
 * traces write them, 1-7 digits without a leading zero and then ", ", are
 * read eight bytes at a time (digits8); any other element, separator or
 * end goes through id_value and ws, which read the same text the same way. */
static int id_array(scan_t *s, tr_jv_t *v, uint64_t **ids, size_t *cap)
{
	s->p++; /* '[' */
	size_t n = 0, c = *cap;
	uint64_t *out = *ids;
	ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
	} else {
		for (;;) {
			uint64_t x;
			int fast = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			unsigned nd;
			if (s->end - s->p >= 10 && (nd = digits8(s->p, &x)) - 1u < 7u &&
			    (nd == 1 || *s->p != '0') && s->p[nd] == ',' && s->p[nd + 1] == ' ') {
				s->p += nd + 2;
				fast = 1;
			}
#endif
			if (!fast && id_value(s, &x))
				return -1;
			if (n + 1 > c) {
				if (VEC_GROW(*ids, *cap, n + 1, 16))
					return -1;
				out = *ids;
				c = *cap;
			}
			out[n++] = x;
			ws(s);
			if (fast)
				continue;
			if (s->p < s->end && *s->p == ',') {
				s->p++;
				ws(s);
				continue;
			}
			if (s->p < s->end && *s->p == ']') {
				s->p++;
				break;
			}
			return -1;
		}
	}
	v->type = TR_JV_ARRAY;
	v->n = n;
	v->bad = n;
	return 0;
}

static int value(scan_t *s, tr_jv_t *v, int want_ids, uint64_t **ids, size_t *cap)
{
	if (s->p >= s->end)
		return -1;
	char c = *s->p;
	if (c == '[')
		return want_ids ? id_array(s, v, ids, cap) : -1;
	if (c == '"') {
		const char *b;
		size_t n;
		v->type = TR_JV_OTHER;
		return string(s, &b, &n);
	}
	if (c == 't' || c == 'f' || c == 'n') {
		v->type = TR_JV_OTHER;
		return literal(s, c == 't' ? "true" : c == 'f' ? "false" : "null");
	}
	return number(s, v);
}

int tr_jscan_row(const char *line, size_t len, const char *const *keys, size_t n_keys,
		 size_t ids_key, tr_jv_t *vals, uint64_t **ids, size_t *cap)
{
	scan_t s = {line, line + len};
	for (size_t k = 0; k < n_keys; k++)
		vals[k].type = TR_JV_MISSING;
	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return TR_JSCAN_FALLBACK;
	s.p++;
	ws(&s);
	if (s.p < s.end && *s.p == '}') {
		s.p++;
	} else {
		for (;;) {
			const char *kb;
			size_t kn, k;
			if (string(&s, &kb, &kn))
				return TR_JSCAN_FALLBACK;
			for (k = 0; k < n_keys; k++)
				if (strlen(keys[k]) == kn && !memcmp(keys[k], kb, kn))
					break;
			/* an unknown key or a repeated one: jansson decides */
			if (k == n_keys || vals[k].type != TR_JV_MISSING)
				return TR_JSCAN_FALLBACK;
			ws(&s);
			if (s.p >= s.end || *s.p != ':')
				return TR_JSCAN_FALLBACK;
			s.p++;
			ws(&s);
			if (value(&s, &vals[k], k == ids_key, ids, cap))
				return TR_JSCAN_FALLBACK;
			ws(&s);
			if (s.p < s.end && *s.p == ',') {
				s.p++;
				ws(&s);
				continue;
			}
			if (s.p < s.end && *s.p == '}') {
				s.p++;
				break;
			}
			return TR_JSCAN_FALLBACK;
		}
	}
	ws(&s);
	return s.p == s.end ? TR_JSCAN_OK : TR_JSCAN_FALLBACK;
}
