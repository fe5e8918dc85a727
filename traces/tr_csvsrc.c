/* tr_csvsrc — BurstGPT and Azure CSV readers and the native-format reader.
 *
 * BurstGPT (both releases): Timestamp (s), Model, Request tokens, Response
 * tokens, Total tokens, Log Type [, Session ID, Elapsed time]. A row with
 * zero response tokens is a failed request in that dataset: status 1.
 * session_id = a 64-bit hash of the Session ID text (never 0).
 * Azure LLM inference 2023/2024 (and the 2025 multimodal file):
 * TIMESTAMP (absolute, "2023-11-16 18:17:03.9799600" or with "+00:00"),
 * ContextTokens, GeneratedTokens. Columns are found by header name (case and
 * surrounding spaces ignored); extra columns are ignored.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "traces/tr_int.h"

#define MAX_COLS 64

typedef struct csv_src {
	tr_src_t base;
	tr_lines_t l;
	int ncols;
	tr_field_t f[MAX_COLS];
	int azure;
	/* column indexes, -1 when absent */
	int c_ts, c_in, c_out, c_total, c_sess, c_elapsed;
	uint32_t max_tokens;
} csv_src_t;

#define LINE(s) (unsigned long long)(s)->l.line

static int find_col(csv_src_t *s, tr_field_t *h, int n, const char *name, int required, int *idx,
                    err_t *e)
{
	for (int i = 0; i < n; i++) {
		const char *p = h[i].s;
		size_t len = h[i].len;
		while (len && isspace((unsigned char)*p))
			p++, len--;
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		if (len == strlen(name) && !strncasecmp(p, name, len)) {
			*idx = i;
			return 0;
		}
	}
	*idx = -1;
	if (required)
		return err_set(e, KS_EINPUT, "%s:1: header: missing column '%s'", s->l.path, name);
	return 0;
}

static int read_header(csv_src_t *s, err_t *e)
{
	int rc = tr_lines_next(&s->l, e);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return err_set(e, KS_EINPUT, "%s:1: header: empty file", s->l.path);
	/* A UTF-8 byte-order mark is not part of the first column's name. */
	if (s->l.len >= 3 && !memcmp(s->l.buf, "\xef\xbb\xbf", 3)) {
		memmove(s->l.buf, s->l.buf + 3, s->l.len - 2);
		s->l.len -= 3;
	}
	tr_field_t h[MAX_COLS];
	int n = tr_csv_split(&s->l, h, MAX_COLS, e);
	if (n < 0)
		return n;
	s->ncols = n;
	if (s->azure) {
		if ((rc = find_col(s, h, n, "TIMESTAMP", 1, &s->c_ts, e)) ||
		    (rc = find_col(s, h, n, "ContextTokens", 1, &s->c_in, e)) ||
		    (rc = find_col(s, h, n, "GeneratedTokens", 1, &s->c_out, e)))
			return rc;
		s->c_total = s->c_sess = s->c_elapsed = -1;
	} else {
		if ((rc = find_col(s, h, n, "Timestamp", 1, &s->c_ts, e)) ||
		    (rc = find_col(s, h, n, "Request tokens", 1, &s->c_in, e)) ||
		    (rc = find_col(s, h, n, "Response tokens", 1, &s->c_out, e)) ||
		    (rc = find_col(s, h, n, "Total tokens", 0, &s->c_total, e)) ||
		    (rc = find_col(s, h, n, "Session ID", 0, &s->c_sess, e)) ||
		    (rc = find_col(s, h, n, "Elapsed time", 0, &s->c_elapsed, e)))
			return rc;
	}
	return 0;
}

static const char *const *col_names(const csv_src_t *s)
{
	static const char *const az[] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
	static const char *const bg[] = {"Timestamp", "Request tokens", "Response tokens"};
	return s->azure ? az : bg;
}

static int csv_next(tr_src_t *b, tr_raw_t *raw, err_t *e)
{
	csv_src_t *s = (csv_src_t *)b;
	int rc, n;
	do {
		rc = tr_lines_next(&s->l, e);
		b->bytes = s->l.bytes;
		if (rc <= 0)
			return rc;
	} while (s->l.len == 0);
	if ((n = tr_csv_split(&s->l, s->f, MAX_COLS, e)) < 0)
		return n;
	memset(raw, 0, sizeof *raw);
	raw->line = s->l.line;
	const char *const *names = col_names(s);
	int need[3] = {s->c_ts, s->c_in, s->c_out};
	for (int i = 0; i < 3; i++)
		if (need[i] >= n)
			return err_set(e, KS_EINPUT,
			               "%s:%llu: %s: missing column (row has %d of %d fields)%s",
			               s->l.path, LINE(s), names[i], n, s->ncols,
			               s->l.no_newline ? "; truncated line at end of file" : "");
	if (s->azure) {
		int dt = tr_parse_datetime(s->f[s->c_ts].s, &raw->t_ns);
		if (dt == -2)
			return err_set(
			    e, KS_EINPUT,
			    "%s:%llu: TIMESTAMP: '%s' names a day its month does not have",
			    s->l.path, LINE(s), s->f[s->c_ts].s);
		if (dt)
			return err_set(e, KS_EINPUT,
			               "%s:%llu: TIMESTAMP: '%s' is not a date-time "
			               "(YYYY-MM-DD HH:MM:SS[.fffffff][+00:00])",
			               s->l.path, LINE(s), s->f[s->c_ts].s);
		if (raw->t_ns < 0)
			return err_set(e, KS_EINPUT, "%s:%llu: TIMESTAMP: before 1970", s->l.path,
			               LINE(s));
	} else {
		double t;
		if ((rc = tr_parse_f64(&s->l, "Timestamp", s->f[s->c_ts].s, &t, e)) ||
		    (rc = tr_seconds_ns(&s->l, "Timestamp", t, &raw->t_ns, e)))
			return rc;
	}
	if ((rc = tr_parse_u32(&s->l, names[1], s->f[s->c_in].s, s->max_tokens, &raw->input_len,
	                       e)) ||
	    (rc = tr_parse_u32(&s->l, names[2], s->f[s->c_out].s, s->max_tokens, &raw->output_len,
	                       e)))
		return rc;
	if (s->c_total >= 0 && s->c_total < n && s->f[s->c_total].len) {
		uint32_t tot;
		if ((rc = tr_parse_u32(&s->l, "Total tokens", s->f[s->c_total].s, UINT32_MAX, &tot,
		                       e)))
			return rc;
	}
	if (s->c_elapsed >= 0 && s->c_elapsed < n && s->f[s->c_elapsed].len) {
		double el;
		if ((rc = tr_parse_f64(&s->l, "Elapsed time", s->f[s->c_elapsed].s, &el, e)))
			return rc;
	}
	if (s->c_sess >= 0 && s->c_sess < n && s->f[s->c_sess].len) {
		uint64_t h = TR_ROOT_ID;
		for (size_t i = 0; i < s->f[s->c_sess].len; i++)
			h = tr_mix(h, (unsigned char)s->f[s->c_sess].s[i]);
		raw->session_id = h ? h : 1;
	}
	/* BurstGPT marks failed requests by zero response tokens. */
	raw->status = (!s->azure && raw->output_len == 0) ? 1 : 0;
	return 1;
}

static void csv_close(tr_src_t *b)
{
	csv_src_t *s = (csv_src_t *)b;
	tr_lines_close(&s->l);
	free(s);
}

static int csv_open(const tr_opts_t *o, const char *path, int azure, tr_src_t **out, err_t *e)
{
	int rc;
	csv_src_t *s = tr_lines_src_new(sizeof *s, offsetof(csv_src_t, l), path, &rc, e);
	if (!s)
		return rc;
	s->l.max_line = tr_max_line(o);
	s->azure = azure;
	s->max_tokens = o->max_tokens;
	s->base.next = csv_next;
	s->base.close = csv_close;
	s->base.block_tokens = 0;
	if ((rc = read_header(s, e))) {
		csv_close(&s->base);
		return rc;
	}
	s->base.bytes = s->l.bytes;
	*out = &s->base;
	return 0;
}

int tr_src_burstgpt(const tr_opts_t *o, const char *path, tr_src_t **out, err_t *e)
{
	return csv_open(o, path, 0, out, e);
}

int tr_src_azure(const tr_opts_t *o, const char *path, tr_src_t **out, err_t *e)
{
	return csv_open(o, path, 1, out, e);
}

/* ---- native ------------------------------------------------------------- */

typedef struct native_src {
	tr_src_t base;
	tr_lines_t l;
	uint32_t max_tokens;
	uint64_t *ids;
	size_t cap;
} native_src_t;

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int native_next(tr_src_t *b, tr_raw_t *raw, err_t *e)
{
	native_src_t *s = (native_src_t *)b;
	int rc;
	do {
		rc = tr_lines_next(&s->l, e);
		b->bytes = s->l.bytes;
		if (rc <= 0)
			return rc;
	} while (s->l.len == 0 || s->l.buf[0] == '#');
	memset(raw, 0, sizeof *raw);
	raw->line = s->l.line;
	static const char *const names[] = {"arrival_ns", "input_len",  "output_len",
	                                    "status",     "session_id", "blocks"};
	char *fld[6];
	char *p = s->l.buf;
	for (int i = 0; i < 6; i++) {
		if (!p)
			return err_set(e, KS_EINPUT, "%s:%llu: %s: missing column%s", s->l.path,
			               LINE(s), names[i],
			               s->l.no_newline ? "; truncated line at end of file" : "");
		fld[i] = p;
		p = strchr(p, '\t');
		if (p)
			*p++ = '\0';
	}
	char *end;
	errno = 0;
	long long t = strtoll(fld[0], &end, 10);
	if (*end || end == fld[0])
		return err_set(e, KS_EINPUT, "%s:%llu: arrival_ns: '%s' is not an integer",
		               s->l.path, LINE(s), fld[0]);
	if (t < 0 || errno == ERANGE)
		return err_set(e, KS_EINPUT, "%s:%llu: arrival_ns: %s out of range", s->l.path,
		               LINE(s), fld[0]);
	raw->t_ns = t;
	uint32_t st;
	if ((rc = tr_parse_u32(&s->l, "input_len", fld[1], s->max_tokens, &raw->input_len, e)) ||
	    (rc = tr_parse_u32(&s->l, "output_len", fld[2], s->max_tokens, &raw->output_len, e)) ||
	    (rc = tr_parse_u32(&s->l, "status", fld[3], 1, &st, e)))
		return rc;
	raw->status = (int32_t)st;
	errno = 0;
	unsigned long long sid = strtoull(fld[4], &end, 10);
	if (*end || end == fld[4] || fld[4][0] == '-' || errno == ERANGE)
		return err_set(e, KS_EINPUT, "%s:%llu: session_id: '%s' is not an unsigned integer",
		               s->l.path, LINE(s), fld[4]);
	raw->session_id = sid;
	uint32_t bt = b->block_tokens, want = raw->input_len / bt;
	if (!strcmp(fld[5], "-")) {
		/* '-' says "no full block"; a prompt that has some must list them, or
		 * its prefix sharing would silently come from the prefix model */
		if (want)
			return err_set(e, KS_EINPUT,
			               "%s:%llu: blocks: '-' but input_len %u holds floor(%u/%u) = "
			               "%u full blocks (list their ids)",
			               s->l.path, LINE(s), raw->input_len, raw->input_len, bt,
			               want);
		return 1;
	}
	if (VEC_GROW(s->ids, s->cap, want ? want : 1, 16))
		return err_set(e, KS_ENOMEM, "%s: out of memory", s->l.path);
	uint32_t n = 0;
	p = fld[5];
	while (*p) {
		uint64_t v = 0;
		int nd = 0;
		for (; *p && *p != ','; p++, nd++) {
			int h = hexval((unsigned char)*p);
			if (h < 0 || nd >= 16)
				return err_set(e, KS_EINPUT,
				               "%s:%llu: blocks[%u]: not a 64-bit hex id",
				               s->l.path, LINE(s), n);
			v = v << 4 | (uint64_t)h;
		}
		if (nd == 0)
			return err_set(e, KS_EINPUT, "%s:%llu: blocks[%u]: empty id", s->l.path,
			               LINE(s), n);
		if (n >= want)
			return err_set(e, KS_EINPUT,
			               "%s:%llu: blocks: more than floor(input_len/%u) = %u ids",
			               s->l.path, LINE(s), bt, want);
		s->ids[n++] = v;
		if (*p == ',')
			p++;
	}
	if (n != want)
		return err_set(e, KS_EINPUT,
		               "%s:%llu: blocks: %u ids for input_len %u (expected floor(%u/%u) "
		               "= %u)",
		               s->l.path, LINE(s), n, raw->input_len, raw->input_len, bt, want);
	raw->ids = s->ids;
	raw->n_ids = n;
	raw->ids_prefix = 1;
	return 1;
}

static void native_close(tr_src_t *b)
{
	native_src_t *s = (native_src_t *)b;
	tr_lines_close(&s->l);
	free(s->ids);
	free(s);
}

int tr_src_native(const tr_opts_t *o, const char *path, tr_src_t **out, err_t *e)
{
	int rc;
	native_src_t *s = tr_lines_src_new(sizeof *s, offsetof(native_src_t, l), path, &rc, e);
	if (!s)
		return rc;
	s->l.max_line = tr_max_line(o);
	s->max_tokens = o->max_tokens;
	s->base.next = native_next;
	s->base.close = native_close;
	rc = tr_lines_next(&s->l, e);
	if (rc == 0)
		rc = err_set(e, KS_EINPUT, "%s:1: header: empty file", path);
	/* digits, then range-checked: %u would wrap 4294967808 to 512 */
	char ver[24] = "", bt_s[24] = "", ids[16] = "";
	unsigned long long bt = 0;
	if (rc > 0 && (sscanf(s->l.buf, "#kvsim-trace %23[0-9] block_tokens=%23[0-9] ids=%15s", ver,
	                      bt_s, ids) != 3 ||
	               strcmp(ver, "1") || strcmp(ids, "prefix")))
		rc = err_set(e, KS_EINPUT,
		             "%s:1: header: expected '#kvsim-trace 1 block_tokens=N ids=prefix'",
		             path);
	if (rc > 0) {
		errno = 0;
		bt = strtoull(bt_s, NULL, 10);
		if (errno == ERANGE || bt < 1 || bt > TR_MAX_BLOCK_TOKENS)
			rc = err_set(e, KS_EINPUT, "%s:1: block_tokens: %s out of range [1, %u]",
			             path, bt_s, TR_MAX_BLOCK_TOKENS);
	}
	if (rc < 0) {
		native_close(&s->base);
		return rc;
	}
	s->base.block_tokens = (uint32_t)bt;
	s->base.bytes = s->l.bytes;
	*out = &s->base;
	return 0;
}
