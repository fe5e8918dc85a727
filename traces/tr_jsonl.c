/* tr_jsonl — Mooncake and Qwen-Bailian JSONL readers, one line at a time:
 * rows of the usual shape through the scanner (tr_jscan_row), every other
 * line through jansson, which then also words the error. Both fill the same
 * field values, checked by one function (jsonl_row), so a row reads the
 * same either way (tests/fuzz/fuzz_jscan_diff.c compares them).
 *
 * Mooncake (FAST'25 release): {"timestamp": ms, "input_length": n,
 * "output_length": n, "hash_ids": [...]} with 512-token blocks and
 * len(hash_ids) = ceil(input_length / 512).
 * Qwen-Bailian: {"chat_id", "parent_chat_id" (-1: none), "timestamp" (float
 * s), "input_length", "output_length", "type", "turn", "hash_ids"} with
 * 16-token blocks. session_id = 1 + the root chat of the conversation,
 * followed through parent_chat_id in a direct-mapped table of 65536 recent
 * chats (constant memory; a parent older than that counts as the root).
 */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "traces/tr_int.h"

typedef struct jsonl_src {
	tr_src_t base;
	tr_lines_t l;
	int bailian;
	uint32_t max_tokens;
	int check_blocks;
	int slow; /* tr_opts_t json_slow */
	uint64_t *ids;
	size_t cap;
	struct chat {
		uint64_t id, root;
	} * chats; /* bailian: chat -> root chat */
} jsonl_src_t;

#define CHAT_SLOTS 65536u

#define LINE(s) (unsigned long long)(s)->l.line

/* The fields a row may have, in the order of the values below. */
enum { F_TS, F_IN, F_OUT, F_IDS, F_CHAT, F_PARENT, F_TYPE, F_TURN, N_FIELDS };
static const char *const field_name[N_FIELDS] = {
    "timestamp", "input_length", "output_length", "hash_ids",
    "chat_id",   "parent_chat_id", "type",       "turn",
};

/* A jansson value as the scanner would have given it; hash_ids go to ids. */
static int from_json(jsonl_src_t *s, json_t *x, int is_ids, tr_jv_t *v)
{
	memset(v, 0, sizeof *v);
	if (!x)
		return 0;
	if (json_is_integer(x)) {
		v->type = TR_JV_INT;
		v->i = json_integer_value(x);
		v->d = json_number_value(x);
	} else if (json_is_real(x)) {
		v->type = TR_JV_REAL;
		v->d = json_real_value(x);
	} else if (json_is_array(x)) {
		v->type = TR_JV_ARRAY;
		v->n = json_array_size(x);
		v->bad = v->n;
		if (is_ids && VEC_GROW(s->ids, s->cap, v->n, 16))
			return KS_ENOMEM;
		for (size_t i = 0; is_ids && i < v->n; i++) {
			json_t *e = json_array_get(x, i);
			if (!json_is_integer(e) || json_integer_value(e) < 0) {
				v->bad = i;
				break;
			}
			s->ids[i] = (uint64_t)json_integer_value(e);
		}
	} else {
		v->type = TR_JV_OTHER;
	}
	return 0;
}

static int get_num(jsonl_src_t *s, const tr_jv_t *x, const char *name, double *v, err_t *e)
{
	if (x->type == TR_JV_MISSING)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: missing", s->l.path, LINE(s), name);
	if (x->type != TR_JV_INT && x->type != TR_JV_REAL)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: not a number", s->l.path, LINE(s), name);
	*v = x->d;
	return 0;
}

static int get_len(jsonl_src_t *s, const tr_jv_t *x, const char *name, uint32_t *out, err_t *e)
{
	if (x->type == TR_JV_MISSING)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: missing", s->l.path, LINE(s), name);
	if (x->type != TR_JV_INT)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: not an integer", s->l.path, LINE(s),
		               name);
	if (x->i < 0)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: negative length %lld", s->l.path,
		               LINE(s), name, (long long)x->i);
	if (x->i > (int64_t)s->max_tokens)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: %lld out of range [0, %u]", s->l.path,
		               LINE(s), name, (long long)x->i, s->max_tokens);
	*out = (uint32_t)x->i;
	return 0;
}

/* Bailian: the conversation a chat belongs to (its root chat). */
static int session_of(jsonl_src_t *s, const tr_jv_t *f, tr_raw_t *raw, err_t *e)
{
	const tr_jv_t *c = &f[F_CHAT], *p = &f[F_PARENT];
	if (c->type == TR_JV_MISSING)
		return err_set(e, KS_EINPUT, "%s:%llu: chat_id: missing", s->l.path, LINE(s));
	if (c->type != TR_JV_INT || c->i < 0)
		return err_set(e, KS_EINPUT, "%s:%llu: chat_id: not a non-negative integer",
		               s->l.path, LINE(s));
	uint64_t id = (uint64_t)c->i, root = id;
	if (p->type != TR_JV_MISSING && p->type != TR_JV_INT)
		return err_set(e, KS_EINPUT, "%s:%llu: parent_chat_id: not an integer", s->l.path,
		               LINE(s));
	if (p->type == TR_JV_INT && p->i >= 0) {
		uint64_t par = (uint64_t)p->i;
		struct chat *pc = &s->chats[tr_mix(0, par) & (CHAT_SLOTS - 1)];
		root = pc->id == par + 1 ? pc->root : par;
	}
	struct chat *cc = &s->chats[tr_mix(0, id) & (CHAT_SLOTS - 1)];
	cc->id = id + 1; /* 0 marks an empty slot */
	cc->root = root;
	raw->session_id = root + 1;
	return 0;
}

/* One row from its fields (hash ids already in s->ids), whichever parser
 * read them: the checks and messages are the same for both. */
static int jsonl_row(jsonl_src_t *s, const tr_jv_t *f, tr_raw_t *raw, err_t *e)
{
	double ts = 0;
	int rc;
	if ((rc = get_num(s, &f[F_TS], "timestamp", &ts, e)))
		return rc;
	double sec = s->bailian ? ts : ts / 1000.0;
	if ((rc = tr_seconds_ns(&s->l, "timestamp", sec, &raw->t_ns, e)))
		return rc;
	if ((rc = get_len(s, &f[F_IN], "input_length", &raw->input_len, e)) ||
	    (rc = get_len(s, &f[F_OUT], "output_length", &raw->output_len, e)))
		return rc;
	raw->session_id = 0;
	if (s->bailian && (rc = session_of(s, f, raw, e)))
		return rc;
	const tr_jv_t *h = &f[F_IDS];
	if (h->type == TR_JV_MISSING)
		return err_set(e, KS_EINPUT, "%s:%llu: hash_ids: missing", s->l.path, LINE(s));
	if (h->type != TR_JV_ARRAY)
		return err_set(e, KS_EINPUT, "%s:%llu: hash_ids: not an array", s->l.path, LINE(s));
	size_t n = h->n;
	uint32_t bt = s->base.block_tokens;
	uint64_t want = ((uint64_t)raw->input_len + bt - 1) / bt;
	if (s->check_blocks && n != want)
		return err_set(e, KS_EINPUT,
		               "%s:%llu: hash_ids: %zu ids for input_length %u (expected "
		               "ceil(%u/%u) = %llu; set trace.check_blocks=false to accept)",
		               s->l.path, LINE(s), n, raw->input_len, raw->input_len, bt,
		               (unsigned long long)want);
	if (h->bad < n)
		return err_set(e, KS_EINPUT, "%s:%llu: hash_ids[%zu]: not a non-negative integer",
		               s->l.path, LINE(s), h->bad);
	raw->ids = s->ids;
	raw->n_ids = (uint32_t)n;
	raw->ids_prefix = 0;
	raw->status = 0;
	return 0;
}

/* A row naming a key twice is refused: jansson would keep the last value,
 * and which one a trace meant is unknowable. The key is the raw token that
 * jansson quotes in its message ("duplicate object key near '"KEY"'"). */
static int duplicate_key(const jsonl_src_t *s, const json_error_t *je, err_t *e)
{
	const char *k = strstr(je->text, "near '\"");
	size_t n = k ? strlen(k += 7) : 0;
	if (n < 2 || strcmp(k + n - 2, "\"'"))
		return err_set(e, KS_EINPUT, "%s:%llu: json: duplicate key (column %d)", s->l.path,
		               LINE(s), je->column);
	return err_set(e, KS_EINPUT, "%s:%llu: %.*s: duplicate key (a row gives each field once)",
	               s->l.path, LINE(s), (int)(n - 2), k);
}

static int jsonl_next(tr_src_t *b, tr_raw_t *raw, err_t *e)
{
	jsonl_src_t *s = (jsonl_src_t *)b;
	for (;;) {
		int rc = tr_lines_next(&s->l, e);
		b->bytes = s->l.bytes;
		if (rc <= 0)
			return rc;
		const char *p = s->l.buf;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			continue; /* blank lines are allowed */
		tr_jv_t f[N_FIELDS];
		memset(raw, 0, sizeof *raw);
		raw->line = s->l.line;
		if (!s->slow && tr_jscan_row(s->l.buf, s->l.len, field_name, N_FIELDS, F_IDS, f,
		                             &s->ids, &s->cap) == TR_JSCAN_OK)
			return (rc = jsonl_row(s, f, raw, e)) ? rc : 1;
		json_error_t je;
		json_t *o = json_loadb(s->l.buf, s->l.len, JSON_REJECT_DUPLICATES, &je);
		if (!o) {
			if (json_error_code(&je) == json_error_duplicate_key)
				return duplicate_key(s, &je, e);
			if (s->l.no_newline)
				return err_set(e, KS_EINPUT,
				               "%s:%llu: line: truncated line (no newline at end "
				               "of file): %s",
				               s->l.path, LINE(s), je.text);
			return err_set(e, KS_EINPUT, "%s:%llu: json: %s (column %d)", s->l.path,
			               LINE(s), je.text, je.column);
		}
		rc = 0;
		if (!json_is_object(o))
			rc = err_set(e, KS_EINPUT, "%s:%llu: line: not a JSON object", s->l.path,
			             LINE(s));
		for (int k = 0; !rc && k < N_FIELDS; k++)
			if (from_json(s, json_object_get(o, field_name[k]), k == F_IDS, &f[k]))
				rc = err_set(e, KS_ENOMEM, "%s: out of memory", s->l.path);
		if (!rc)
			rc = jsonl_row(s, f, raw, e);
		json_decref(o);
		return rc ? rc : 1;
	}
}

static void jsonl_close(tr_src_t *b)
{
	jsonl_src_t *s = (jsonl_src_t *)b;
	tr_lines_close(&s->l);
	free(s->ids);
	free(s->chats);
	free(s);
}

int tr_src_jsonl(const tr_opts_t *o, const char *path, int bailian, tr_src_t **out, err_t *e)
{
	int rc;
	jsonl_src_t *s = tr_lines_src_new(sizeof *s, offsetof(jsonl_src_t, l), path, &rc, e);
	if (!s)
		return rc;
	s->l.max_line = tr_max_line(o);
	s->bailian = bailian;
	if (bailian && !(s->chats = calloc(CHAT_SLOTS, sizeof *s->chats))) {
		tr_lines_close(&s->l);
		free(s);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	s->max_tokens = o->max_tokens;
	s->check_blocks = o->check_blocks;
	s->slow = o->json_slow;
	s->base.next = jsonl_next;
	s->base.close = jsonl_close;
	s->base.block_tokens = o->trace_block_tokens ? o->trace_block_tokens : (bailian ? 16 : 512);
	*out = &s->base;
	return 0;
}
