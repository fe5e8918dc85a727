/* tr_jsonl — Mooncake and Qwen-Bailian JSONL readers (jansson, one line at a
 * time).
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
	uint64_t *ids;
	size_t cap;
	struct chat {
		uint64_t id, root;
	} * chats; /* bailian: chat -> root chat */
} jsonl_src_t;

#define CHAT_SLOTS 65536u

#define LINE(s) (unsigned long long)(s)->l.line

static int get_num(jsonl_src_t *s, json_t *o, const char *name, double *v, err_t *e)
{
	json_t *x = json_object_get(o, name);
	if (!x)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: missing", s->l.path, LINE(s), name);
	if (!json_is_number(x))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: not a number", s->l.path, LINE(s), name);
	*v = json_number_value(x);
	return 0;
}

static int get_len(jsonl_src_t *s, json_t *o, const char *name, uint32_t *out, err_t *e)
{
	json_t *x = json_object_get(o, name);
	if (!x)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: missing", s->l.path, LINE(s), name);
	if (!json_is_integer(x))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: not an integer", s->l.path, LINE(s),
		               name);
	json_int_t v = json_integer_value(x);
	if (v < 0)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: negative length %lld", s->l.path,
		               LINE(s), name, (long long)v);
	if (v > (json_int_t)s->max_tokens)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: %lld out of range [0, %u]", s->l.path,
		               LINE(s), name, (long long)v, s->max_tokens);
	*out = (uint32_t)v;
	return 0;
}

static int jsonl_row(jsonl_src_t *s, json_t *o, tr_raw_t *raw, err_t *e)
{
	if (!json_is_object(o))
		return err_set(e, KS_EINPUT, "%s:%llu: line: not a JSON object", s->l.path,
		               LINE(s));
	double ts = 0;
	int rc;
	if ((rc = get_num(s, o, "timestamp", &ts, e)))
		return rc;
	double sec = s->bailian ? ts : ts / 1000.0;
	if ((rc = tr_seconds_ns(&s->l, "timestamp", sec, &raw->t_ns, e)))
		return rc;
	if ((rc = get_len(s, o, "input_length", &raw->input_len, e)) ||
	    (rc = get_len(s, o, "output_length", &raw->output_len, e)))
		return rc;
	raw->session_id = 0;
	if (s->bailian) {
		json_t *c = json_object_get(o, "chat_id");
		if (!c)
			return err_set(e, KS_EINPUT, "%s:%llu: chat_id: missing", s->l.path,
			               LINE(s));
		if (!json_is_integer(c) || json_integer_value(c) < 0)
			return err_set(e, KS_EINPUT, "%s:%llu: chat_id: not a non-negative integer",
			               s->l.path, LINE(s));
		uint64_t id = (uint64_t)json_integer_value(c), root = id;
		json_t *p = json_object_get(o, "parent_chat_id");
		if (p && !json_is_integer(p))
			return err_set(e, KS_EINPUT, "%s:%llu: parent_chat_id: not an integer",
			               s->l.path, LINE(s));
		if (p && json_integer_value(p) >= 0) {
			uint64_t par = (uint64_t)json_integer_value(p);
			struct chat *pc = &s->chats[tr_mix(0, par) & (CHAT_SLOTS - 1)];
			root = pc->id == par + 1 ? pc->root : par;
		}
		struct chat *cc = &s->chats[tr_mix(0, id) & (CHAT_SLOTS - 1)];
		cc->id = id + 1; /* 0 marks an empty slot */
		cc->root = root;
		raw->session_id = root + 1;
	}
	json_t *h = json_object_get(o, "hash_ids");
	if (!h)
		return err_set(e, KS_EINPUT, "%s:%llu: hash_ids: missing", s->l.path, LINE(s));
	if (!json_is_array(h))
		return err_set(e, KS_EINPUT, "%s:%llu: hash_ids: not an array", s->l.path, LINE(s));
	size_t n = json_array_size(h);
	uint32_t bt = s->base.block_tokens;
	uint64_t want = ((uint64_t)raw->input_len + bt - 1) / bt;
	if (s->check_blocks && n != want)
		return err_set(e, KS_EINPUT,
		               "%s:%llu: hash_ids: %zu ids for input_length %u (expected "
		               "ceil(%u/%u) = %llu; set trace.check_blocks=false to accept)",
		               s->l.path, LINE(s), n, raw->input_len, raw->input_len, bt,
		               (unsigned long long)want);
	if (VEC_GROW(s->ids, s->cap, n, 16))
		return err_set(e, KS_ENOMEM, "%s: out of memory", s->l.path);
	for (size_t i = 0; i < n; i++) {
		json_t *x = json_array_get(h, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return err_set(e, KS_EINPUT,
			               "%s:%llu: hash_ids[%zu]: not a non-negative integer",
			               s->l.path, LINE(s), i);
		s->ids[i] = (uint64_t)json_integer_value(x);
	}
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
		memset(raw, 0, sizeof *raw);
		raw->line = s->l.line;
		rc = jsonl_row(s, o, raw, e);
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
	s->bailian = bailian;
	if (bailian && !(s->chats = calloc(CHAT_SLOTS, sizeof *s->chats))) {
		tr_lines_close(&s->l);
		free(s);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	s->max_tokens = o->max_tokens;
	s->check_blocks = o->check_blocks;
	s->base.next = jsonl_next;
	s->base.close = jsonl_close;
	s->base.block_tokens = o->trace_block_tokens ? o->trace_block_tokens : (bailian ? 16 : 512);
	*out = &s->base;
	return 0;
}
