/* Preset data files (policies/pol_preset.c, policies/presets/): a preset is
 * its file's entries in file order, includes expanded where they stand and
 * shared sources resolved; each malformed file is refused with
 * FILE:LINE: KEY: reason, by the reader (syntax, sources, includes, the
 * list) or by the schema check (unknown key, bad value); the built-in files
 * are all listed and keep each shared group in one file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/pol.h"
#include "sim/run/sim_schema.h"
#include "tests/fixtures/capture_fixture.h"
#include "tests/fixtures/test_main.h"

#define DIR "policies/presets/"

/* A two-preset tree: b is a plus pools; a ends with a shared part. */
static const char list_ab[] = "# order\na\n\nb\n";
static const char a_ini[] = "; preset a\n"
                            "[preset]\n"
                            "doc = first line\n"
                            "  second line\n"
                            "\n"
                            "[kvcache]\n"
                            "; source: @plain\n"
                            "fetch = never\n"
                            "; source: a long source\n"
                            ";   over two lines\n"
                            "block_tokens = 32\n"
                            "\n"
                            "[preset]\n"
                            "include = shared/engine\n";
static const char engine_ini[] = "[scheduler]\n"
                                 "; source: the engine's mode\n"
                                 "mode = vllm\n";
static const char sources_ini[] = "[source]\n"
                                  "plain = a plain engine\n"
                                  "  recomputes\n";
static const char b_ini[] = "[preset]\n"
                            "doc = b\n"
                            "include = a\n"
                            "[cluster]\n"
                            "; source: @plain\n"
                            "disagg = true\n";

/* The tree above with file path's text replaced by text (NULL: dropped). */
static int parse_with(const char *path, const char *text, pol_preset_set_t **set, err_t *e)
{
	pol_preset_file_t f[] = {
	    {DIR "a.ini", a_ini},          {DIR "b.ini", b_ini}, {DIR "list", list_ab},
	    {DIR "shared/engine.ini", engine_ini}, {DIR "shared/sources.ini", sources_ini},
	    {NULL, NULL},                  {NULL, NULL},
	};
	size_t n = 5, i = 0;
	while (i < n && path && strcmp(f[i].path, path))
		i++;
	if (path && i == n)
		f[n++] = (pol_preset_file_t){path, text};
	else if (path && text)
		f[i].text = text;
	else if (path)
		f[i] = f[--n], f[n] = (pol_preset_file_t){NULL, NULL};
	return pol_preset_set_parse(f, set, e);
}

static void expect_kv(const pol_preset_kv_t *kv, const char *key, const char *value,
                      const char *source, const char *where)
{
	assert_string_equal(kv->key, key);
	assert_string_equal(kv->value, value);
	assert_string_equal(kv->source, source);
	assert_string_equal(kv->where, where);
}

static void test_a_preset_is_its_entries_in_file_order(void **st)
{
	(void)st;
	pol_preset_set_t *set;
	err_t e = {0};
	assert_int_equal(parse_with(NULL, NULL, &set, &e), 0);
	size_t n;
	const pol_preset_t *p = pol_preset_set_list(set, &n);
	assert_int_equal(n, 2);
	assert_string_equal(p[0].name, "a");
	assert_string_equal(p[0].doc, "first line second line");
	assert_int_equal(p[0].n, 3);
	expect_kv(&p[0].kv[0], "kvcache.fetch", "never", "a plain engine recomputes",
	          DIR "a.ini:8");
	expect_kv(&p[0].kv[1], "kvcache.block_tokens", "32", "a long source over two lines",
	          DIR "a.ini:11");
	expect_kv(&p[0].kv[2], "scheduler.mode", "vllm", "the engine's mode",
	          DIR "shared/engine.ini:3");
	/* b: a's entries where the include stands, then its own */
	assert_string_equal(p[1].name, "b");
	assert_string_equal(p[1].doc, "b");
	assert_int_equal(p[1].n, 4);
	for (size_t i = 0; i < 3; i++)
		expect_kv(&p[1].kv[i], p[0].kv[i].key, p[0].kv[i].value, p[0].kv[i].source,
		          p[0].kv[i].where);
	expect_kv(&p[1].kv[3], "cluster.disagg", "true", "a plain engine recomputes",
	          DIR "b.ini:6");
	/* and they select like any preset */
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	assert_int_equal(pol_preset_set_register(s, set), 0);
	cfg_t *c = cfg_new(s);
	assert_int_equal(cfg_set(c, "policy.preset=b", &e), 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	assert_int_equal(cfg_int(c, "kvcache", "block_tokens"), 32);
	assert_string_equal(cfg_origin(c, "cluster", "disagg"), "preset b");
	cfg_free(c);
	cfg_schema_free(s);
	pol_preset_set_free(set);
}

/* Malformed files the reader refuses: {file, its text, the error}. */
static const struct {
	const char *path, *text, *msg;
} bad[] = {
    {DIR "a.ini", "[preset]\ndoc = a\n[kvcache]\nfetch = never\n",
     DIR "a.ini:4: fetch: no source: write '; source: ...' directly above the key"},
    {DIR "a.ini", "[preset]\ndoc = a\n[kvcache]\n; source: s\n\nfetch = never\n",
     DIR "a.ini:5: a source must sit directly above its key"},
    {DIR "a.ini", "[preset]\ndoc = a\n; source: s\n[kvcache]\nfetch = never\n",
     DIR "a.ini:4: a source must sit directly above its key"},
    {DIR "a.ini", "[preset]\ndoc = a\n[kvcache]\n; source: s\n",
     DIR "a.ini:4: a source with no key below it"},
    {DIR "a.ini", "[preset]\ndoc = a\n[kvcache]\n; source:\nfetch = never\n",
     DIR "a.ini:4: an empty source"},
    {DIR "a.ini", "[preset]\ndoc = a\n[kvcache]\n; source: s\n; source: t\nfetch = never\n",
     DIR "a.ini:5: a second source above one key"},
    {DIR "a.ini", "[preset]\n; source: s\ndoc = a\n",
     DIR "a.ini:3: doc: a source belongs above a config key"},
    {DIR "a.ini", "[preset]\ndoc = a\ndoc = b\n", DIR "a.ini:3: doc: defined twice"},
    {DIR "a.ini", "[preset]\ndoc = a\nbase = b\n",
     DIR "a.ini:3: base: unknown key of [preset] (doc, include)"},
    {DIR "a.ini", "; source: s\nfetch = never\n", DIR "a.ini:2: fetch: a key outside any section"},
    {DIR "a.ini", "[preset]\ndoc = a\n[kvcache]\nfetch never\n",
     DIR "a.ini:4: expected KEY = VALUE, [SECTION] or a comment"},
    {DIR "a.ini", "[kv cache]\n", DIR "a.ini:1: a section name is 1-63 of [A-Za-z0-9_.-]"},
    {DIR "a.ini", "[kvcache\n", DIR "a.ini:1: expected [SECTION]"},
    {DIR "a.ini", "[kvcache]\n  more\n",
     DIR "a.ini:2: an indented line continues a doc or a [source] text, and none is above "
         "it"},
    {DIR "a.ini", "[preset]\ninclude = a\n", DIR "list:2: a: its file has no [preset] doc"},
    {DIR "a.ini", "[preset]\ndoc = a\ninclude = shared/nope\n",
     DIR "a.ini:3: include: no file " DIR "shared/nope.ini"},
    {DIR "a.ini", "[preset]\ndoc = a\ninclude = b\n", DIR "b.ini:3: include: a includes itself"},
    {DIR "a.ini", "[preset]\ndoc = a\n[kvcache]\n; source: @nope\nfetch = never\n",
     DIR "a.ini:5: kvcache.fetch: no [source] entry 'nope'"},
    {DIR "shared/more.ini", "[source]\nplain = again\n",
     DIR "shared/more.ini:2: source plain: defined twice (first at " DIR
         "shared/sources.ini:2)"},
    {DIR "c.ini", "[preset]\ndoc = c\n", DIR "c.ini: not in " DIR "list"},
    {"other/c.ini", "", "other/c.ini: not under " DIR},
    {DIR "list", "a\nb\nzz\n", DIR "list:3: zz: no file " DIR "NAME.ini"},
    {DIR "list", "a\nshared/engine\n", DIR "list:2: shared/engine: no file " DIR "NAME.ini"},
    {DIR "list", NULL, DIR "list: missing"},
};

static void test_malformed_files_are_refused_with_file_line_key_reason(void **st)
{
	(void)st;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		pol_preset_set_t *set = (pol_preset_set_t *)&set;
		err_t e = {0};
		if (parse_with(bad[i].path, bad[i].text, &set, &e) != KS_EINPUT)
			fail_msg("case %zu (%s) was accepted", i, bad[i].msg);
		assert_null(set);
		assert_string_equal(e.msg, bad[i].msg);
	}
}

/* What the schema check refuses, with the entry's FILE:LINE on stderr. */
static void expect_schema_refuses(const char *a_text, const char *msg)
{
	pol_preset_set_t *set;
	err_t e = {0};
	assert_int_equal(parse_with(DIR "a.ini", a_text, &set, &e), 0);
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	capture(2);
	int rc = pol_preset_set_register(s, set);
	char *out = captured(2);
	assert_int_equal(rc, KS_EINPUT);
	assert_string_equal(out, msg);
	free(out);
	cfg_schema_free(s);
	pol_preset_set_free(set);
}

static void test_unknown_keys_and_bad_values_name_their_line(void **st)
{
	(void)st;
	expect_schema_refuses("[preset]\ndoc = a\n[kvcache]\n; source: s\nfetchh = never\n",
	                      "kvsim: config schema: preset a: " DIR
	                      "a.ini:5: kvcache.fetchh: not in the config schema\n");
	expect_schema_refuses("[preset]\ndoc = a\n[kvcache]\n; source: s\nblock_tokens = 0\n",
	                      "kvsim: config schema: preset a: " DIR
	                      "a.ini:5: kvcache.block_tokens: 0 tokens is out of range [1, "
	                      "65536]\n");
	expect_schema_refuses("[preset]\ndoc = a\n[kvcache]\n; source: s\nfetch = sometimes\n",
	                      "kvsim: config schema: preset a: " DIR
	                      "a.ini:5: kvcache.fetch: 'sometimes' is not one of: "
	                      "never,cost,always\n");
	/* a sets scheduler.mode through shared/engine, then itself: the second
	 * setting is the one named */
	expect_schema_refuses("[preset]\ndoc = a\ninclude = shared/engine\n[scheduler]\n"
	                      "; source: s\nmode = vllm\n",
	                      "kvsim: config schema: preset a: " DIR
	                      "a.ini:6: scheduler.mode: set twice\n");
}

/* The built-in files parse, and each entry names the file and line that
 * define it: the vLLM engine's keys come from their one shared file. */
static void test_builtin_entries_name_their_file_and_line(void **st)
{
	(void)st;
	size_t n, shared = 0;
	const pol_preset_t *p = pol_presets(&n);
	assert_true(n >= 11);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < p[i].n; j++) {
			const char *w = p[i].kv[j].where;
			assert_non_null(w);
			assert_true(!strncmp(w, DIR, strlen(DIR)));
			assert_non_null(strstr(w, ".ini:"));
			if (!strcmp(p[i].kv[j].key, "scheduler.max_num_seqs") &&
			    !strncmp(w, DIR "shared/vllm-engine.ini:", strlen(DIR "shared/vllm-engine.ini:")))
				shared++;
		}
	assert_int_equal(shared, 5); /* vllm, dynamo, llm-d and two -disagg */
}

TEST_MAIN(cmocka_unit_test(test_a_preset_is_its_entries_in_file_order),
          cmocka_unit_test(test_malformed_files_are_refused_with_file_line_key_reason),
          cmocka_unit_test(test_unknown_keys_and_bad_values_name_their_line),
          cmocka_unit_test(test_builtin_entries_name_their_file_and_line))
