/* tr_formats — the built-in trace file formats (TR_FORMAT_LIST in tr.h):
 * how each is recognised from its first line and which source reads it,
 * and the tables derived from the list. Detection tests run in list order
 * and the first that accepts wins; the two JSONL formats are told apart by
 * Bailian's chat_id field, so neither depends on the order. */
#include <string.h>

#include "traces/tr_int.h"

static int is_jsonl(const char *b)
{
	return *b == '{';
}

static int detect_mooncake(const char *b)
{
	return is_jsonl(b) && !strstr(b, "\"chat_id\"");
}

static int detect_bailian(const char *b)
{
	return is_jsonl(b) && strstr(b, "\"chat_id\"");
}

/* BurstGPT's header: Timestamp,Model,Request tokens,Response tokens,... */
static int detect_burstgpt(const char *b)
{
	return strstr(b, "Request tokens") || strstr(b, "Response tokens");
}

/* Azure LLM inference traces: TIMESTAMP,ContextTokens,GeneratedTokens. */
static int detect_azure(const char *b)
{
	return strstr(b, "ContextTokens") || strstr(b, "TIMESTAMP");
}

static int detect_native(const char *b)
{
	return !strncmp(b, "#kvsim-trace", 12);
}

/* A headerless numeric CSV: ServeGen windows. */
static int detect_servegen(const char *b)
{
	return *b >= '0' && *b <= '9' && strchr(b, ',');
}

static int open_mooncake(tr_opts_t *o, const char *path, uint64_t seed, tr_src_t **out, err_t *e)
{
	(void)seed;
	return tr_src_jsonl(o, path, 0, out, e);
}

static int open_bailian(tr_opts_t *o, const char *path, uint64_t seed, tr_src_t **out, err_t *e)
{
	(void)seed;
	return tr_src_jsonl(o, path, 1, out, e);
}

static int open_burstgpt(tr_opts_t *o, const char *path, uint64_t seed, tr_src_t **out, err_t *e)
{
	(void)seed;
	return tr_src_burstgpt(o, path, out, e);
}

static int open_azure(tr_opts_t *o, const char *path, uint64_t seed, tr_src_t **out, err_t *e)
{
	(void)seed;
	return tr_src_azure(o, path, out, e);
}

static int open_native(tr_opts_t *o, const char *path, uint64_t seed, tr_src_t **out, err_t *e)
{
	(void)seed;
	return tr_src_native(o, path, out, e);
}

/* The ServeGen generator reads its windows from path (o->path). */
static int open_servegen(tr_opts_t *o, const char *path, uint64_t seed, tr_src_t **out, err_t *e)
{
	(void)path;
	o->gen = TR_GEN_SERVEGEN;
	return tr_src_gen(o, seed, out, e);
}

const tr_format_t tr_fmt_mooncake = {detect_mooncake, open_mooncake};
const tr_format_t tr_fmt_bailian = {detect_bailian, open_bailian};
const tr_format_t tr_fmt_burstgpt = {detect_burstgpt, open_burstgpt};
const tr_format_t tr_fmt_azure = {detect_azure, open_azure};
const tr_format_t tr_fmt_native = {detect_native, open_native};
const tr_format_t tr_fmt_servegen = {detect_servegen, open_servegen};

/* ---- derived from TR_FORMAT_LIST ------------------------------------------ */

#define TR_FORMAT_EXTERN(K, name, fmt) extern const tr_format_t fmt;
TR_FORMAT_LIST(TR_FORMAT_EXTERN)
#undef TR_FORMAT_EXTERN

#define TR_FORMAT_ENTRY(K, name, fmt) [TR_KIND_##K] = &fmt,
const tr_format_t *const tr_formats[TR_KIND_GEN + 1] = {TR_FORMAT_LIST(TR_FORMAT_ENTRY)};
#undef TR_FORMAT_ENTRY

#define TR_FORMAT_NAME(K, name, fmt) name,
static const char *const kind_names[TR_KIND_SPEC + 1] = {
    "auto", TR_FORMAT_LIST(TR_FORMAT_NAME) "gen", "spec"};
#undef TR_FORMAT_NAME

const char *tr_kind_name(tr_kind_t k)
{
	return (unsigned)k <= TR_KIND_SPEC ? kind_names[k] : "?";
}

int tr_kind_parse(const char *s, tr_kind_t *k)
{
	for (int i = TR_KIND_AUTO; i <= TR_KIND_SPEC; i++)
		if (!strcmp(s, tr_kind_name((tr_kind_t)i))) {
			*k = (tr_kind_t)i;
			return 0;
		}
	return KS_EINPUT;
}
