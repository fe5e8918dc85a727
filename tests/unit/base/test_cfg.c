/* Tests for sim/base/cfg.c: schema, INI loading, --set, checks and their exact
 * messages, policy-owned keys, write/load round trip and digest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/base/cfg.h"
#include "tests/fixtures/cfg_keys.h"
#include "tests/fixtures/tmp_fixture.h"
#include "sim/run/sim_schema.h"

/* Presets over test_keys (tests/fixtures/cfg_keys.h), for the preset tests (cfg_schema_set_presets). */
static const cfg_preset_kv_t small_kv[] = {
    {"cluster.nodes", "8", "small source", NULL},
    {"policy.routing.name", "least_loaded", "small routing", NULL},
    {"policy.routing.alpha", "0.9", "small alpha", NULL},
};
static const cfg_preset_kv_t big_kv[] = {
    {"cluster.link_gbps", "400", "big links", NULL},
};
static const cfg_preset_t test_presets[] = {
    {"small", "a small cluster", small_kv, 3},
    {"big", "fast links", big_kv, 1},
};

typedef struct fx {
	cfg_schema_t *s;
	cfg_t *c;
	err_t e;
	const void *arg; /* the test's initial state (a table row), or NULL */
	FILE *warn;      /* the schema's warnings (setup_warn), or NULL */
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->arg = *state;
	f->s = cfg_schema_new();
	assert_int_equal(cfg_schema_add(f->s, test_keys, sizeof test_keys / sizeof test_keys[0]),
	                 0);
	f->c = cfg_new(f->s);
	assert_non_null(f->c);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	cfg_free(f->c);
	cfg_schema_free(f->s);
	if (f->warn)
		fclose(f->warn);
	free(f);
	return 0;
}

/* Loads text as "t.ini" and expects KS_EINPUT with exactly msg. */
static void expect_load_error(fx_t *f, const char *text, const char *msg)
{
	int rc = cfg_load_string(f->c, "t.ini", text, &f->e);
	assert_int_equal(rc, KS_EINPUT);
	assert_int_equal(f->e.code, KS_EINPUT);
	assert_string_equal(f->e.msg, msg);
}

static void expect_set_error(fx_t *f, const char *set, const char *msg)
{
	assert_int_equal(cfg_set(f->c, set, &f->e), KS_EINPUT);
	assert_string_equal(f->e.msg, msg);
}

static void test_defaults_come_from_schema(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 4);
	assert_true(cfg_float(f->c, "cluster", "link_gbps") == 100.0);
	assert_true(cfg_float(f->c, "cluster", "nodes") == 4.0);
	assert_int_equal(cfg_bool(f->c, "cluster", "prefix_cache"), 1);
	assert_string_equal(cfg_str(f->c, "cluster", "label"), "");
	assert_string_equal(cfg_str(f->c, "cache", "eviction"), "lru");
	assert_string_equal(cfg_str(f->c, "cluster", "nodes"), "4");
	assert_string_equal(cfg_origin(f->c, "cluster", "nodes"), "default");
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_int_equal(cfg_schema_count(f->s), sizeof test_keys / sizeof test_keys[0]);
	assert_ptr_equal(cfg_schema_find(f->s, "policy.routing", "alpha"), &test_keys[8]);
	assert_null(cfg_schema_find(f->s, "policy", "routing.alpha"));
	assert_ptr_equal(cfg_schema_key(f->s, 0), &test_keys[0]);
	assert_null(cfg_schema_key(f->s, 99));
	assert_ptr_equal(cfg_schema(f->c), f->s);
}

static void test_load_sets_values_and_origins(void **state)
{
	fx_t *f = *state;
	const char *text = "; comment\n"
			   "# another\n"
			   "[cluster]\n"
			   "nodes = 16\n"
			   "  link_gbps = 2.5e1   ; inline comment\n"
			   "prefix_cache = Off\n"
			   "label = two words = ok\n"
			   "\n"
			   "[cache]\n"
			   "eviction: lfu\n"
			   "[sim]\n"
			   "seed = -7\n";
	assert_int_equal(cfg_load_string(f->c, "t.ini", text, &f->e), 0);
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 16);
	assert_true(cfg_float(f->c, "cluster", "link_gbps") == 25.0);
	assert_int_equal(cfg_bool(f->c, "cluster", "prefix_cache"), 0);
	assert_string_equal(cfg_str(f->c, "cluster", "label"), "two words = ok");
	assert_string_equal(cfg_str(f->c, "cache", "eviction"), "lfu");
	assert_int_equal(cfg_int(f->c, "sim", "seed"), -7);
	assert_string_equal(cfg_origin(f->c, "cluster", "nodes"), "t.ini:4");
	assert_string_equal(cfg_origin(f->c, "cluster", "link_gbps"), "t.ini:5");
	assert_string_equal(cfg_origin(f->c, "sim", "seed"), "t.ini:12");
	assert_string_equal(cfg_origin(f->c, "sim", "scale"), "default");
}

/* Loads that must fail (expect_load_error), each row a cmocka test of its
 * own that test_load_errors runs on one fixture: up to 4 texts, loaded in
 * order, and the exact message each load fails with. */
typedef struct load_errors {
	const char *name;
	struct {
		const char *text, *msg;
	} load[4];
} load_errors_t;

/* clang-format off */
static const load_errors_t load_errors[] = {
    {"test_unknown_section_suggests_nearest", {
        {"[cluster]\nnodes = 2\n[clustr]\nnodes = 3\n",
         "t.ini:3: [clustr]: unknown section (did you mean 'cluster'?)"},
    }},
    {"test_empty_unknown_section_is_an_error", {
        {"[zzzzzzzzzz]\n", "t.ini:1: [zzzzzzzzzz]: unknown section"},
    }},
    {"test_unknown_key_suggests_nearest", {
        {"[cluster]\nnodez = 2\n", "t.ini:2: [cluster] nodez: unknown key (did you mean 'nodes'?)"},
    }},
    {"test_unknown_key_suggests_other_section", {
        {"[cluster]\nseed = 2\n",
         "t.ini:2: [cluster] seed: unknown key (did you mean 'seed' in [sim]?)"},
    }},
    {"test_wrong_type_int", {
        {"[cluster]\nnodes = 4x\n", "t.ini:2: [cluster] nodes: expected an integer, got '4x'"},
        {"[cluster]\nnodes = 2.0\n", "t.ini:2: [cluster] nodes: expected an integer, got '2.0'"},
        {"[cluster]\nnodes =\n", "t.ini:2: [cluster] nodes: expected an integer, got ''"},
        /* whole but past 64 bits: out of range, not a type error */
        {"[sim]\nseed = 99999999999999999999\n",
         "t.ini:2: [sim] seed: 99999999999999999999 is out of range "
         "[-9223372036854775808, 9223372036854775807]"},
    }},
    {"test_huge_integer_is_out_of_range_not_a_type_error", {
        /* past 64 bits, on a key with a range: the key's range is named */
        {"[cluster]\nnodes = 99999999999999999999\n",
         "t.ini:2: [cluster] nodes: 99999999999999999999 nodes is out of range "
         "[1, 1024]"},
        {"[cluster]\nnodes = -99999999999999999999\n",
         "t.ini:2: [cluster] nodes: -99999999999999999999 nodes is out of range "
         "[1, 1024]"},
        {"[cluster]\nnodes = 1e3\n", "t.ini:2: [cluster] nodes: expected an integer, got '1e3'"},
    }},
    {"test_wrong_type_float", {
        {"[cluster]\nlink_gbps = fast\n",
         "t.ini:2: [cluster] link_gbps: expected a number, got 'fast'"},
        {"[sim]\nscale = inf\n", "t.ini:2: [sim] scale: expected a finite number, got 'inf'"},
        {"[sim]\nscale = nan\n", "t.ini:2: [sim] scale: expected a finite number, got 'nan'"},
    }},
    {"test_wrong_type_bool", {
        {"[cluster]\nprefix_cache = maybe\n",
         "t.ini:2: [cluster] prefix_cache: expected a boolean (true/false, "
         "yes/no, on/off, 1/0), got 'maybe'"},
    }},
    {"test_bad_enum_choice", {
        {"[cache]\neviction = lrv\n",
         "t.ini:2: [cache] eviction: 'lrv' is not one of: lru,lfu,fifo (did "
         "you mean 'lru'?)"},
        {"[cache]\neviction = belady_optimal\n",
         "t.ini:2: [cache] eviction: 'belady_optimal' is not one of: "
         "lru,lfu,fifo"},
    }},
    {"test_duplicate_key", {
        {"[cluster]\nnodes = 2\n[sim]\nseed=1\n[cluster]\nnodes = 3\n",
         "t.ini:6: [cluster] nodes: duplicate key (first set on line 2)"},
    }},
    {"test_malformed_lines", {
        {"[cluster]\nnodes 4\n",
         "t.ini:2: malformed line (expected '[section]', 'key = value' or a "
         "comment): 'nodes 4'"},
        {"[cluster\nnodes = 4\n", "t.ini:1: section header without ']': '[cluster'"},
        {"nodes = 4\n[cluster]\n", "t.ini:1: nodes: key outside any [section]"},
    }},
    {"test_first_error_wins", {
        {"[cluster]\nnodes = x\nbogus line\n",
         "t.ini:2: [cluster] nodes: expected an integer, got 'x'"},
        {"[cluster]\nbogus line\nnodes = x\n",
         "t.ini:2: malformed line (expected '[section]', 'key = value' or a "
         "comment): 'bogus line'"},
    }},
};
/* clang-format on */

static void test_load_errors(void **state)
{
	fx_t *f = *state;
	const load_errors_t *k = f->arg;
	for (size_t i = 0; i < sizeof k->load / sizeof k->load[0] && k->load[i].text; i++)
		expect_load_error(f, k->load[i].text, k->load[i].msg);
}

static void test_bool_spellings(void **state)
{
	fx_t *f = *state;
	const char *yes[] = {"true", "YES", "on", "1"}, *no[] = {"False", "no", "OFF", "0"};
	char buf[64];
	for (int i = 0; i < 4; i++) {
		snprintf(buf, sizeof buf, "cluster.prefix_cache=%s", no[i]);
		assert_int_equal(cfg_set(f->c, buf, &f->e), 0);
		assert_int_equal(cfg_bool(f->c, "cluster", "prefix_cache"), 0);
		snprintf(buf, sizeof buf, "cluster.prefix_cache=%s", yes[i]);
		assert_int_equal(cfg_set(f->c, buf, &f->e), 0);
		assert_int_equal(cfg_bool(f->c, "cluster", "prefix_cache"), 1);
	}
}

static void test_parse_whole_tells_not_whole_from_out_of_range(void **state)
{
	(void)state;
	int64_t v = 7;
	const int E = CFG_WHOLE_ENOTATION;
	assert_int_equal(cfg_parse_whole("42", 0, 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(cfg_parse_whole("-3", 0, -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(cfg_parse_whole("9223372036854775807", 0, 0, INT64_MAX, &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(cfg_parse_whole("9223372036854775808", 0, 0, INT64_MAX, &v),
	                 CFG_OUT_OF_RANGE);
	assert_int_equal(cfg_parse_whole("101", 0, 0, 100, &v), CFG_OUT_OF_RANGE);
	assert_int_equal(cfg_parse_whole("-1", 0, 0, 100, &v), CFG_OUT_OF_RANGE);
	/* e-notation only when asked for, and only whole values */
	assert_int_equal(cfg_parse_whole("1e9", 0, 0, INT64_MAX, &v), CFG_NOT_WHOLE);
	assert_int_equal(cfg_parse_whole("1e9", E, 0, INT64_MAX, &v), 0);
	assert_true(v == 1000000000);
	assert_int_equal(cfg_parse_whole("2.5e3", E, 0, INT64_MAX, &v), 0);
	assert_int_equal(v, 2500);
	assert_int_equal(cfg_parse_whole("1.5", E, 0, INT64_MAX, &v), CFG_NOT_WHOLE);
	assert_int_equal(cfg_parse_whole("1e-400", E, 0, INT64_MAX, &v), CFG_NOT_WHOLE);
	assert_int_equal(cfg_parse_whole("1e19", E, 0, INT64_MAX, &v), CFG_OUT_OF_RANGE);
	assert_int_equal(cfg_parse_whole("9.3e18", E, 0, INT64_MAX, &v), CFG_OUT_OF_RANGE);
	assert_int_equal(cfg_parse_whole("1e400", E, 0, INT64_MAX, &v), CFG_OUT_OF_RANGE);
	assert_int_equal(cfg_parse_whole("-1e3", E, 0, INT64_MAX, &v), CFG_OUT_OF_RANGE);
	/* no hex, inf, nan, blanks or empty text */
	static const char *const bad[] = {"", " 1", "1 ", "0x10", "inf", "nan", "+", "1e", "4x"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(cfg_parse_whole(bad[i], E, INT64_MIN, INT64_MAX, &v),
		                 CFG_NOT_WHOLE);
}

static void test_out_of_range(void **state)
{
	expect_load_error(*state, "[cluster]\nnodes = 2000\n",
	                  "t.ini:2: [cluster] nodes: 2000 nodes is out of range [1, 1024]");
	expect_load_error(*state, "[cluster]\n\nlink_gbps = 0.25\n",
	                  "t.ini:3: [cluster] link_gbps: 0.25 Gbit/s is out of range [0.5, "
	                  "1000000]");
	/* Bounds are inclusive. */
	fx_t *f = *state;
	assert_int_equal(cfg_load_string(f->c, "t.ini", "[cluster]\nnodes = 1024\n", &f->e), 0);
	assert_int_equal(cfg_set(f->c, "cluster.nodes=1", &f->e), 0);
	assert_int_equal(cfg_set(f->c, "cluster.link_gbps=0.5", &f->e), 0);
	/* min >= max: no range. */
	assert_int_equal(cfg_set(f->c, "sim.seed=-99999999", &f->e), 0);
}

/* Lines longer than inih's buffer (long paths) are read by the same rules. */
static void test_long_lines_are_read(void **state)
{
	fx_t *f = *state;
	char text[2048], longv[601];
	memset(longv, 'x', 600);
	longv[600] = '\0';
	snprintf(text, sizeof text, "# %s\n[cluster]\n  label : %s   ; comment\nnodes = 5\n", longv,
	         longv);
	assert_int_equal(cfg_load_string(f->c, "t.ini", text, &f->e), 0);
	assert_string_equal(cfg_str(f->c, "cluster", "label"), longv);
	assert_string_equal(cfg_origin(f->c, "cluster", "label"), "t.ini:3");
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 5);
	/* Round trip through cfg_text. */
	char *t = cfg_text(f->c);
	cfg_t *d = cfg_new(f->s);
	assert_int_equal(cfg_load_string(d, "out.ini", t, &f->e), 0);
	assert_string_equal(cfg_str(d, "cluster", "label"), longv);
	cfg_free(d);
	free(t);
	/* The same checks apply. */
	snprintf(text, sizeof text, "[cluster]\n\nlabel%s = 1\n", longv);
	assert_int_equal(cfg_load_string(f->c, "t.ini", text, &f->e), KS_EINPUT);
	assert_non_null(strstr(f->e.msg, "t.ini:3: [cluster] labelxxx"));
	assert_non_null(strstr(f->e.msg, ": unknown key"));
	snprintf(text, sizeof text, "[cluster]\nnodes = 4\nnodes = %s\n", longv);
	expect_load_error(f, text, "t.ini:3: [cluster] nodes: duplicate key (first set on line 2)");
	snprintf(text, sizeof text, "[cluster]\n%s\n", longv);
	expect_load_error(f, text,
	                  "t.ini:2: malformed line (expected '[section]', 'key = value' or a "
	                  "comment)");
	snprintf(text, sizeof text, "[sim]\nseed = 1\n[cluster]\nlabel = %s\n[sim]\nseed = 2\n",
	         longv);
	expect_load_error(f, text, "t.ini:6: [sim] seed: duplicate key (first set on line 2)");
}

/* A line is split the same whether inih's buffer holds it or long_line
 * does: leading \v, \f or \r are blanks to both (inih's lskip uses
 * isspace), so "\v nodes = 3" is the key nodes and a line of "\f" and a
 * comment is blank, short or long (found by fuzz_cfg_diff). */
static void test_long_and_short_lines_strip_the_same_blanks(void **state)
{
	fx_t *f = *state;
	char pad[301], text[1024];
	memset(pad, 'x', 300);
	pad[300] = '\0';
	for (int lng = 0; lng < 2; lng++) {
		const char *c = lng ? pad : "c";
		snprintf(text, sizeof text, "[cluster]\n\v\f\r nodes = 3 ;%s\n\f ;%s\n", c, c);
		assert_int_equal(cfg_load_string(f->c, "t.ini", text, &f->e), 0);
		assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 3);
		assert_string_equal(cfg_origin(f->c, "cluster", "nodes"), "t.ini:2");
	}
}

static void test_bom_is_skipped_and_checked(void **state)
{
	fx_t *f = *state;
	assert_int_equal(
	    cfg_load_string(f->c, "t.ini", "\xEF\xBB\xBF[cluster]\nnodes = 9\n", &f->e), 0);
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 9);
	expect_load_error(f, "\xEF\xBB\xBF[clustr]\nnodes = 9\n",
	                  "t.ini:1: [clustr]: unknown section (did you mean 'cluster'?)");
}

static void test_indented_line_is_not_a_continuation(void **state)
{
	fx_t *f = *state;
	assert_int_equal(
	    cfg_load_string(f->c, "t.ini", "[cluster]\nlabel = a\n   nodes = 8\n", &f->e), 0);
	assert_string_equal(cfg_str(f->c, "cluster", "label"), "a");
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 8);
}

static void test_failed_load_changes_nothing(void **state)
{
	fx_t *f = *state;
	expect_load_error(f, "[cluster]\nnodes = 8\nlink_gbps = x\n",
	                  "t.ini:3: [cluster] link_gbps: expected a number, got 'x'");
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 4);
	assert_string_equal(cfg_origin(f->c, "cluster", "nodes"), "default");
}

/* The schema's warnings, read from the tmpfile setup_warn gave it. */
static char *warnings(FILE *w)
{
	static char buf[4096];
	fflush(w);
	long n = ftell(w);
	rewind(w);
	size_t got = fread(buf, 1, n > 0 && n < (long)sizeof buf ? (size_t)n : 0, w);
	buf[got] = '\0';
	fseek(w, 0, SEEK_END);
	return buf;
}

/* setup, with the schema's warnings going to a tmpfile (f->warn). */
static int setup_warn(void **state)
{
	setup(state);
	fx_t *f = *state;
	f->warn = tmpfile();
	assert_non_null(f->warn);
	cfg_schema_set_warnings(f->s, f->warn);
	return 0;
}

static void test_parameter_of_unselected_policy_is_ignored_with_one_warning(void **state)
{
	fx_t *f = *state;
	char *before = cfg_text(f->c);
	assert_int_equal(cfg_load_string(f->c, "t.ini", "[policy.routing]\nalpha = 0.25\n", &f->e),
	                 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_string_equal(warnings(f->warn),
	                    "kvsim: warning: t.ini:2: [policy.routing] alpha: ignored: "
	                    "parameter of 'least_loaded', but name = round_robin\n");
	/* Ignored means absent from what a run sees, so the config (and its
	 * digest) equals the one without the key. */
	char *after = cfg_text(f->c);
	assert_string_equal(before, after);
	/* Once per key: a clone finalized again (a sweep point) says nothing. */
	cfg_t *d = cfg_clone(f->c);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_int_equal(strlen(warnings(f->warn)),
	                 strlen("kvsim: warning: t.ini:2: [policy.routing] "
	                        "alpha: ignored: parameter of 'least_loaded', "
	                        "but name = round_robin\n"));
	/* Selecting the owner makes it count (section names with a dot, split
	 * at the last). */
	assert_int_equal(cfg_set(d, "policy.routing.name=least_loaded", &f->e), 0);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	assert_true(cfg_float(d, "policy.routing", "alpha") == 0.25);
	cfg_free(d);
	free(before);
	free(after);
}

static void test_ignored_parameter_via_set_names_set(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_set(f->c, "policy.routing.alpha=0.75", &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_string_equal(warnings(f->warn),
	                    "kvsim: warning: --set: [policy.routing] alpha: ignored: "
	                    "parameter of 'least_loaded', but name = round_robin\n");
	/* Without a warning stream, nothing is written and nothing fails. */
	cfg_schema_set_warnings(f->s, NULL);
	cfg_t *d = cfg_clone(f->c);
	assert_int_equal(cfg_set(d, "policy.routing.alpha=0.5", &f->e), 0);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	cfg_free(d);
}

static void test_typo_in_policy_parameter_is_still_an_error(void **state)
{
	fx_t *f = *state;
	expect_set_error(f, "policy.routing.alpa=0.3",
	                 "--set: [policy.routing] alpa: unknown key (did you mean 'alpha'?)");
	expect_load_error(f, "[policy.routing]\nname = least_loaded\nalph = 0.3\n",
	                  "t.ini:3: [policy.routing] alph: unknown key (did you mean 'alpha'?)");
}

static void fx_presets(fx_t *f)
{
	assert_int_equal(cfg_schema_set_presets(f->s, "policy", "preset", test_presets, 2), 0);
}

static void test_preset_sets_keys_not_given_explicitly(void **state)
{
	fx_t *f = *state;
	fx_presets(f);
	/* The explicit key comes before the preset in one text, after it in
	 * another, and from --set on either side: it wins every time. */
	const char *texts[] = {"[cluster]\nnodes = 3\n[policy]\npreset = small\n",
	                       "[policy]\npreset = small\n[cluster]\nnodes = 3\n"};
	for (int i = 0; i < 4; i++) {
		cfg_t *c = cfg_new(f->s);
		if (i < 2) {
			assert_int_equal(cfg_load_string(c, "t.ini", texts[i], &f->e), 0);
		} else {
			const char *a = i == 2 ? "cluster.nodes=3" : "policy.preset=small";
			const char *b = i == 2 ? "policy.preset=small" : "cluster.nodes=3";
			assert_int_equal(cfg_set(c, a, &f->e), 0);
			assert_int_equal(cfg_set(c, b, &f->e), 0);
		}
		assert_int_equal(cfg_finalize(c, &f->e), 0);
		assert_int_equal(cfg_int(c, "cluster", "nodes"), 3);
		assert_string_equal(cfg_str(c, "policy.routing", "name"), "least_loaded");
		assert_true(cfg_float(c, "policy.routing", "alpha") == 0.9);
		assert_string_equal(cfg_origin(c, "policy.routing", "alpha"), "preset small");
		assert_true(cfg_float(c, "cluster", "link_gbps") == 100);
		assert_string_equal(cfg_preset(c)->name, "small");
		cfg_free(c);
	}
	/* Without a selected preset nothing changes. */
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_null(cfg_preset(f->c));
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 4);
}

static void test_preset_parameter_of_replaced_policy_is_left_out(void **state)
{
	fx_t *f = *state;
	fx_presets(f);
	assert_int_equal(cfg_set(f->c, "policy.preset=small", &f->e), 0);
	assert_int_equal(cfg_set(f->c, "policy.routing.name=round_robin", &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_string_equal(cfg_origin(f->c, "policy.routing", "alpha"), "default");
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 8);
	assert_string_equal(warnings(f->warn), ""); /* the user said nothing to ignore */
}

static void test_refinalizing_a_clone_switches_presets_cleanly(void **state)
{
	fx_t *f = *state;
	fx_presets(f);
	assert_int_equal(cfg_set(f->c, "policy.preset=small", &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	/* A sweep point: the base's preset values must not leak into it. */
	cfg_t *d = cfg_clone(f->c);
	assert_int_equal(cfg_set(d, "policy.preset=big", &f->e), 0);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	assert_int_equal(cfg_int(d, "cluster", "nodes"), 4);
	assert_string_equal(cfg_str(d, "policy.routing", "name"), "round_robin");
	assert_true(cfg_float(d, "cluster", "link_gbps") == 400);
	assert_string_equal(cfg_origin(d, "cluster", "nodes"), "default");
	assert_int_equal(cfg_set(d, "policy.preset=none", &f->e), 0);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	assert_true(cfg_float(d, "cluster", "link_gbps") == 100);
	/* and the base is as it was */
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 8);
	cfg_free(d);
}

static void test_unknown_preset_names_file_and_line(void **state)
{
	fx_t *f = *state;
	fx_presets(f);
	expect_load_error(f, "[cluster]\nnodes = 2\n[policy]\npreset = smal\n",
	                  "t.ini:4: [policy] preset: 'smal' is not one of: none,small,big "
	                  "(did you mean 'small'?)");
}

static void test_preset_write_marks_origins_and_loads_back(void **state)
{
	fx_t *f = *state;
	fx_presets(f);
	assert_int_equal(cfg_set(f->c, "policy.preset=small", &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	assert_int_equal(cfg_write_ex(f->c, m, CFG_WRITE_ORIGINS), 0);
	fclose(m);
	assert_non_null(strstr(buf, "# from preset small: small source\nnodes = 8\n"));
	assert_non_null(strstr(buf, "[policy]\n# preset\npreset = small\n"));
	/* The plain text (what the digest covers) has no origin comments. */
	char *t = cfg_text(f->c);
	assert_null(strstr(t, "from preset"));
	/* Loaded back, every value is explicit and the same: same digest. */
	cfg_t *d = cfg_new(f->s);
	assert_int_equal(cfg_load_string(d, "show.ini", buf, &f->e), 0);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	char *t2 = cfg_text(d);
	assert_string_equal(t, t2);
	char da[65], db[65];
	cfg_digest(f->c, da);
	cfg_digest(d, db);
	assert_string_equal(da, db);
	assert_string_equal(cfg_origin(d, "cluster", "nodes"), "show.ini:4");
	free(t);
	free(t2);
	free(buf);
	cfg_free(d);
}

/* Preset tables cfg_schema_set_presets must refuse, one fault each. */
static const cfg_preset_kv_t unknown_kv[] = {{"cluster.nodez", "8", "s", NULL}};
static const cfg_preset_kv_t range_kv[] = {{"cluster.nodes", "0", "s", NULL}};
static const cfg_preset_kv_t choice_kv[] = {{"cache.eviction", "arc", "s", NULL}};
static const cfg_preset_kv_t self_kv[] = {{"policy.preset", "none", "s", NULL}};
static const cfg_preset_kv_t twice_kv[] = {{"cluster.nodes", "8", "s", NULL},
                                           {"cluster.nodes", "9", "s", NULL}};
static const cfg_preset_kv_t nosource_kv[] = {{"cluster.nodes", "8", "", NULL}};
static const cfg_preset_t bad_presets[] = {
    {"p", "", unknown_kv, 1}, {"p", "", range_kv, 1}, {"p", "", choice_kv, 1},
    {"p", "", self_kv, 1},    {"p", "", twice_kv, 2}, {"p", "", nosource_kv, 1},
    {"none", "", NULL, 0},    {"a b", "", NULL, 0},
};

static void test_bad_preset_tables_are_refused(void **state)
{
	fx_t *f = *state;
	for (size_t i = 0; i < sizeof bad_presets / sizeof bad_presets[0]; i++)
		assert_int_equal(
		    cfg_schema_set_presets(f->s, "policy", "preset", &bad_presets[i], 1),
		    KS_EINPUT);
	assert_int_equal(cfg_schema_set_presets(f->s, "policy", "preset", test_presets, 0), 0);
	static const cfg_preset_t dup[] = {{"x", "", NULL, 0}, {"x", "", NULL, 0}};
	assert_int_equal(cfg_schema_set_presets(f->s, "policy", "preset", dup, 2), KS_EINPUT);
	/* the selector must be an enum defaulting to none */
	assert_int_equal(cfg_schema_set_presets(f->s, "cluster", "nodes", test_presets, 2),
	                 KS_EINPUT);
}

static void test_bad_set_syntax(void **state)
{
	fx_t *f = *state;
	expect_set_error(f, "nodes=4", "--set: 'nodes=4': expected SECTION.KEY=VALUE");
	expect_set_error(f, "cluster.nodes", "--set: 'cluster.nodes': expected SECTION.KEY=VALUE");
	expect_set_error(f, ".nodes=4", "--set: '.nodes=4': expected SECTION.KEY=VALUE");
	expect_set_error(f, "cluster.=4", "--set: 'cluster.=4': expected SECTION.KEY=VALUE");
	expect_set_error(f, "clustr.nodes=4",
	                 "--set: [clustr] nodes: unknown section (did you mean 'cluster'?)");
	expect_set_error(f, "cluster.nodez=4",
	                 "--set: [cluster] nodez: unknown key (did you mean 'nodes'?)");
	expect_set_error(f, "cluster.nodes=four",
	                 "--set: [cluster] nodes: expected an integer, got 'four'");
	expect_set_error(f, "cluster.nodes=0",
	                 "--set: [cluster] nodes: 0 nodes is out of range [1, 1024]");
	expect_set_error(f, "cluster.label=a ;b",
	                 "--set: [cluster] label: value cannot contain ' ;' (it starts a "
	                 "comment)");
	expect_set_error(f, "cluster.label=a\nb",
	                 "--set: [cluster] label: value cannot contain control characters");
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 4);
}

static void test_set_overrides_file(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_load_string(f->c, "t.ini", "[cluster]\nnodes = 8\n", &f->e), 0);
	assert_int_equal(cfg_set(f->c, " cluster.nodes = 32 ", &f->e), 0);
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 32);
	assert_string_equal(cfg_origin(f->c, "cluster", "nodes"), "--set");
	assert_int_equal(cfg_set(f->c, "cluster.label=x=y", &f->e), 0);
	assert_string_equal(cfg_str(f->c, "cluster", "label"), "x=y");
}

static void test_load_file_reports_path_and_line(void **state)
{
	fx_t *f = *state;
	char dir[] = "/tmp/test_cfg.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/exp.ini", dir);
	FILE *fp = fopen(path, "w");
	fputs("[cluster]\nnodes = 8\n[cache]\neviction = lfu\n", fp);
	fclose(fp);
	assert_int_equal(cfg_load_file(f->c, path, &f->e), 0);
	char want[600];
	snprintf(want, sizeof want, "%s:4", path);
	assert_string_equal(cfg_origin(f->c, "cache", "eviction"), want);
	fp = fopen(path, "w");
	fputs("[cluster]\nnodes = 8\n[cache]\neviction = mru\n", fp);
	fclose(fp);
	assert_int_equal(cfg_load_file(f->c, path, &f->e), KS_EINPUT);
	snprintf(want, sizeof want,
	         "%s:4: [cache] eviction: 'mru' is not one of: lru,lfu,fifo (did you mean 'lru'?)",
	         path);
	assert_string_equal(f->e.msg, want);
	unlink(path);
	assert_int_equal(cfg_load_file(f->c, path, &f->e), KS_EINPUT);
	assert_non_null(strstr(f->e.msg, "cannot open"));
	rmdir(dir);
}

static void test_write_load_round_trip(void **state)
{
	fx_t *f = *state;
	const char *sets[] = {"cluster.nodes=17",        "cluster.link_gbps=0.7",
	                      "cluster.prefix_cache=no", "cluster.label=a; b # c [d]",
	                      "cache.eviction=fifo",     "sim.seed=-3",
	                      "sim.scale=1e-300",        "policy.routing.name=least_loaded",
	                      "policy.routing.alpha=0.3"};
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
		assert_int_equal(cfg_set(f->c, sets[i], &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	char *t1 = cfg_text(f->c);
	assert_non_null(t1);
	cfg_t *d = cfg_new(f->s);
	assert_int_equal(cfg_load_string(d, "out.ini", t1, &f->e), 0);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	char *t2 = cfg_text(d);
	assert_string_equal(t1, t2);
	for (size_t i = 0; i < cfg_schema_count(f->s); i++) {
		const cfg_key_t *k = cfg_schema_key(f->s, i);
		assert_string_equal(cfg_str(d, k->section, k->name),
		                    cfg_str(f->c, k->section, k->name));
	}
	assert_true(cfg_float(d, "sim", "scale") == 1e-300);
	assert_true(cfg_float(d, "cluster", "link_gbps") == 0.7);
	assert_string_equal(cfg_str(d, "cluster", "label"), "a; b # c [d]");
	/* Every key was written: each is set from the file, none by default. */
	for (size_t i = 0; i < cfg_schema_count(f->s); i++) {
		const cfg_key_t *k = cfg_schema_key(f->s, i);
		assert_string_not_equal(cfg_origin(d, k->section, k->name), "default");
	}
	free(t1);
	free(t2);
	cfg_free(d);
}

/* "label =;x" keeps the ';' (no blank before it), but cfg_write's
 * "label = ;x" reads back as an empty value: such a value is refused from a
 * file, from --set and as a schema default, with the place named, and the
 * config keeps its old value. A ';' after a non-blank stays allowed. */
static void test_value_starting_with_comment_char_is_refused(void **state)
{
	fx_t *f = *state;
	expect_load_error(f, "[cluster]\nnodes = 8\nlabel =;x\n",
	                  "t.ini:3: [cluster] label: value cannot begin with ';' (written back "
	                  "as 'key = ;...', it reads as a comment)");
	expect_load_error(f, "[cluster]\nlabel = a\001b\n",
	                  "t.ini:2: [cluster] label: value cannot contain control characters");
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 4);
	expect_set_error(f, "cluster.label=;x",
	                 "--set: [cluster] label: value cannot begin with ';' (written back as "
	                 "'key = ;...', it reads as a comment)");
	expect_set_error(f, "cluster.label= ;x",
	                 "--set: [cluster] label: value cannot begin with ';' (written back as "
	                 "'key = ;...', it reads as a comment)");
	assert_string_equal(cfg_str(f->c, "cluster", "label"), "");
	static const cfg_key_t bad_def[] = {
	    {"x", "label", CFG_STR, ";x", 0, 0, NULL, "", "free text", NULL}};
	cfg_schema_t *s = cfg_schema_new();
	assert_int_equal(cfg_schema_add(s, bad_def, 1), KS_EINPUT);
	cfg_schema_free(s);

	assert_int_equal(cfg_load_string(f->c, "t.ini", "[cluster]\nlabel =x;y\n", &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	char *t1 = cfg_text(f->c);
	cfg_t *d = cfg_new(f->s);
	assert_int_equal(cfg_load_string(d, "out.ini", t1, &f->e), 0);
	assert_string_equal(cfg_str(d, "cluster", "label"), "x;y");
	free(t1);
	cfg_free(d);
}

static void test_write_skips_keys_of_unselected_policy(void **state)
{
	fx_t *f = *state;
	char *t = cfg_text(f->c);
	assert_null(strstr(t, "alpha"));
	assert_non_null(strstr(t, "[policy.routing]\n# routing policy\nname = round_robin\n"));
	assert_non_null(strstr(t, "# number of nodes [nodes]\nnodes = 4\n"));
	cfg_t *d = cfg_new(f->s);
	assert_int_equal(cfg_load_string(d, "out.ini", t, &f->e), 0);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	cfg_free(d);
	free(t);
}

static int is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	return strspn(s, "0123456789abcdef") == 64;
}

static void test_digest_stable_and_sensitive(void **state)
{
	fx_t *f = *state;
	char a[65], b[65], c[65];
	cfg_digest(f->c, a);
	assert_true(is_hex64(a));
	cfg_t *d = cfg_clone(f->c);
	cfg_digest(d, b);
	assert_string_equal(a, b);
	/* Same value from another source: same digest. */
	assert_int_equal(cfg_set(d, "cluster.nodes=4", &f->e), 0);
	cfg_digest(d, b);
	assert_string_equal(a, b);
	assert_int_equal(cfg_set(d, "cluster.nodes=5", &f->e), 0);
	cfg_digest(d, c);
	assert_string_not_equal(a, c);
	assert_int_equal(cfg_int(f->c, "cluster", "nodes"), 4); /* clone is independent */
	cfg_free(d);
}

static void test_set_choices_extends_enum(void **state)
{
	fx_t *f = *state;
	expect_set_error(f, "cache.eviction=arc",
	                 "--set: [cache] eviction: 'arc' is not one of: lru,lfu,fifo");
	assert_int_equal(cfg_schema_set_choices(f->s, "cache", "eviction", "lru,lfu,fifo,arc"), 0);
	assert_int_equal(cfg_set(f->c, "cache.eviction=arc", &f->e), 0);
	assert_int_equal(cfg_schema_set_choices(f->s, "cluster", "nodes", "a,b"), KS_EINPUT);
	assert_int_equal(cfg_schema_set_choices(f->s, "cache", "nope", "a,b"), KS_EINPUT);
}

static void test_schema_rejects_bad_keys(void **state)
{
	(void)state;
	static const cfg_key_t twice[] = {
	    {"a", "k", CFG_INT, "1", 0, 0, NULL, "", "", NULL},
	    {"a", "k", CFG_INT, "2", 0, 0, NULL, "", "", NULL},
	};
	static const cfg_key_t bad_def[] = {
	    {"a", "k", CFG_INT, "x", 0, 0, NULL, "", "", NULL},
	};
	static const cfg_key_t bad_range[] = {
	    {"a", "k", CFG_INT, "0", 1, 5, NULL, "", "", NULL},
	};
	static const cfg_key_t dotted_name[] = {
	    {"a", "k.j", CFG_INT, "0", 0, 0, NULL, "", "", NULL},
	};
	static const cfg_key_t bad_enum[] = {
	    {"a", "k", CFG_ENUM, "z", 0, 0, "x,y", "", "", NULL},
	};
	static const cfg_key_t bad_str[] = {
	    {"a", "k", CFG_STR, " padded", 0, 0, NULL, "", "", NULL},
	};
	const cfg_key_t *sets[] = {twice, bad_def, bad_range, dotted_name, bad_enum, bad_str};
	size_t ns[] = {2, 1, 1, 1, 1, 1};
	/* The schema names the bad key on stderr; keep the test output clean. */
	fflush(stderr);
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 2);
	int rcs[6];
	for (size_t i = 0; i < 6; i++) {
		cfg_schema_t *s = cfg_schema_new();
		rcs[i] = cfg_schema_add(s, sets[i], ns[i]);
		cfg_schema_free(s);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(devnull);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(rcs[i], KS_EINPUT);
}

/* Enough keys, added in several batches, to grow every internal table. */
static void test_many_keys_all_found(void **state)
{
	(void)state;
	enum { N = 1000 };
	static cfg_key_t many[N];
	static char names[N][16], sections[N][16];
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "k%d", i);
		snprintf(sections[i], sizeof sections[i], "s%d", i % 37);
		many[i] =
		    (cfg_key_t){sections[i], names[i], CFG_INT, "0", 0, 0, NULL, "", "", NULL};
	}
	cfg_schema_t *s = cfg_schema_new();
	for (int i = 0; i < N; i += 100)
		assert_int_equal(cfg_schema_add(s, many + i, 100), 0);
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	assert_int_equal(cfg_set(c, "s5.k5=42", &e), 0);
	assert_int_equal(cfg_set(c, "s0.k999=-1", &e), 0);
	for (int i = 0; i < N; i++)
		assert_ptr_equal(cfg_schema_find(s, sections[i], names[i]), &many[i]);
	assert_null(cfg_schema_find(s, "s1", "k0"));
	assert_int_equal(cfg_int(c, "s5", "k5"), 42);
	assert_int_equal(cfg_int(c, "s0", "k999"), -1);
	assert_int_equal(cfg_int(c, "s0", "k0"), 0);
	cfg_free(c);
	cfg_schema_free(s);
}

/* Plugins add parameters after configs exist; those take their defaults. */
static void test_keys_added_after_cfg_new_take_defaults(void **state)
{
	fx_t *f = *state;
	static const cfg_key_t later[] = {
	    {"policy.routing", "beta", CFG_INT, "7", 0, 10, NULL, "", "plugin knob", "plug"},
	    {"plugin", "mode", CFG_ENUM, "fast", 0, 0, "fast,slow", "", "plugin mode", NULL},
	};
	cfg_t *old = cfg_clone(f->c);
	assert_int_equal(cfg_schema_add(f->s, later, 2), 0);
	assert_int_equal(cfg_int(f->c, "policy.routing", "beta"), 7);
	assert_string_equal(cfg_origin(f->c, "policy.routing", "beta"), "default");
	assert_string_equal(cfg_str(old, "plugin", "mode"), "fast");
	assert_int_equal(cfg_load_string(old, "t.ini", "[plugin]\nmode = slow\n", &f->e), 0);
	assert_string_equal(cfg_str(old, "plugin", "mode"), "slow");
	assert_int_equal(cfg_set(f->c, "policy.routing.name=plug", &f->e), KS_EINPUT);
	assert_int_equal(
	    cfg_schema_set_choices(f->s, "policy.routing", "name", "round_robin,least_loaded,plug"),
	    0);
	assert_int_equal(cfg_set(f->c, "policy.routing.name=plug", &f->e), 0);
	assert_int_equal(cfg_set(f->c, "policy.routing.beta=3", &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	char *t = cfg_text(f->c);
	assert_non_null(strstr(t, "\nbeta = 3\n"));
	assert_non_null(strstr(t, "[plugin]\n# plugin mode\nmode = fast\n"));
	free(t);
	cfg_free(old);
}

/* cfg_int on [cluster] key, in a child: the child must die of it. */
static void assert_cfg_int_aborts(const cfg_t *c, const char *key)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Quiet the expected message ("not in the config schema", ...). */
		freopen("/dev/null", "w", stderr);
		(void)cfg_int(c, "cluster", key);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0));
}

static void test_unknown_key_accessor_aborts(void **state)
{
	fx_t *f = *state;
	assert_cfg_int_aborts(f->c, "no_such_key");
}

static void test_wrong_type_accessor_aborts(void **state)
{
	fx_t *f = *state;
	assert_cfg_int_aborts(f->c, "link_gbps");
}

static void test_doc_lists_every_key(void **state)
{
	fx_t *f = *state;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	assert_int_equal(cfg_write_doc(f->s, fp), 0);
	fclose(fp);
	assert_non_null(strstr(buf, "[cluster] nodes\n    type int, default '4', range [1, 1024], "
	                            "unit nodes\n    number of nodes\n"));
	assert_non_null(strstr(buf, "[cache] eviction\n    type enum, default 'lru', one of: "
	                            "lru,lfu,fifo\n"));
	assert_non_null(strstr(buf, "only with name = least_loaded"));
	free(buf);
}

/* The real schema, as every module contributes to it: valid, and its
 * defaults survive a round trip. */
static void test_default_schema_is_valid(void **state)
{
	(void)state;
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	cfg_t *c = cfg_new(s);
	assert_non_null(c);
	err_t e = {0};
	assert_int_equal(cfg_finalize(c, &e), 0);
	char *t = cfg_text(c);
	cfg_t *d = cfg_new(s);
	assert_int_equal(cfg_load_string(d, "defaults", t, &e), 0);
	char *t2 = cfg_text(d);
	assert_string_equal(t, t2);
	free(t);
	free(t2);
	cfg_free(c);
	cfg_free(d);
	cfg_schema_free(s);
}

/* A rule between keys names the one set last: the later line of a file,
 * the later --set, and no place while every key holds its default. */
static void test_cross_field_error_names_the_key_set_last(void **state)
{
	fx_t *f = *state;
	assert_int_equal(
	    cfg_err_keys(f->c, &f->e, "cluster.nodes,cluster.link_gbps", "%d vs %d", 1, 2),
	    KS_EINPUT);
	assert_string_equal(f->e.msg, "[cluster] nodes: 1 vs 2");
	assert_int_equal(
	    cfg_load_string(f->c, "t.ini", "[cluster]\nlink_gbps = 200\nnodes = 8\n", &f->e), 0);
	cfg_err_keys(f->c, &f->e, "cluster.link_gbps,cluster.nodes", "bad pair");
	assert_string_equal(f->e.msg, "t.ini:3: [cluster] nodes: bad pair");
	assert_int_equal(cfg_set(f->c, "cluster.link_gbps=300", &f->e), 0);
	cfg_err_keys(f->c, &f->e, "cluster.nodes,cluster.link_gbps", "bad pair");
	assert_string_equal(f->e.msg, "--set: [cluster] link_gbps: bad pair");
	/* a key never set loses to one that was, whatever the order given */
	cfg_err_keys(f->c, &f->e, "sim.seed,cluster.nodes", "x");
	assert_string_equal(f->e.msg, "t.ini:3: [cluster] nodes: x");
	/* a clone keeps the order */
	cfg_t *d = cfg_clone(f->c);
	assert_int_equal(cfg_set(d, "cluster.nodes=2", &f->e), 0);
	cfg_err_keys(d, &f->e, "cluster.nodes,cluster.link_gbps", "y");
	assert_string_equal(f->e.msg, "--set: [cluster] nodes: y");
	cfg_free(d);
}

/* A value a preset set counts as set when its selector was. */
static void test_cross_field_error_names_the_preset_selector_line(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_schema_set_presets(f->s, "policy", "preset", test_presets, 2), 0);
	assert_int_equal(cfg_load_string(f->c, "t.ini",
	                                 "[cluster]\nlink_gbps = 200\n[policy]\npreset = small\n",
	                                 &f->e),
	                 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	cfg_err_keys(f->c, &f->e, "cluster.link_gbps,cluster.nodes", "z");
	assert_string_equal(f->e.msg, "preset small: [cluster] nodes: z");
}

/* cfg_err_locate on an error saying msg turns it into located. */
static void expect_located(fx_t *f, const char *msg, const char *located)
{
	err_set(&f->e, KS_EINPUT, "%s", msg);
	cfg_err_locate(f->c, &f->e);
	assert_string_equal(f->e.msg, located);
}

static void test_error_about_one_key_gets_its_place(void **state)
{
	fx_t *f = *state;
	assert_int_equal(
	    cfg_load_string(f->c, "t.ini", "[policy.routing]\nname = least_loaded\n", &f->e), 0);
	expect_located(f, "[policy.routing] name: no such thing",
	               "t.ini:2: [policy.routing] name: no such thing");
	/* a default has no place; other messages are left alone */
	expect_located(f, "[cluster] nodes: too many", "[cluster] nodes: too many");
	expect_located(f, "[cluster] nodez: unknown", "[cluster] nodez: unknown");
	expect_located(f, "trace.jsonl:3: input_length: negative",
	               "trace.jsonl:3: input_length: negative");
}

/* A value given with its own label (a command's KEY=V argument). */
static void test_set_as_labels_errors_and_origin(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_set_as(f->c, "cluster.nodes=x", "nodes=x", &f->e), KS_EINPUT);
	assert_string_equal(f->e.msg, "nodes=x: [cluster] nodes: expected an integer, got 'x'");
	assert_int_equal(cfg_set_as(f->c, "cluster.nodes=5", "nodes=5", &f->e), 0);
	assert_string_equal(cfg_origin(f->c, "cluster", "nodes"), "nodes=5");
}

/* A relative path set in a config file names a file beside that file when
 * there is one, else it is as given; --set and absolute paths are as given. */
static void test_path_resolves_beside_the_config_file_that_set_it(void **state)
{
	fx_t *f = *state;
	char dir[] = "/tmp/test_cfg_path.XXXXXX", ini[128], data[128], out[256];
	assert_non_null(mkdtemp(dir));
	snprintf(ini, sizeof ini, "%s/exp.ini", dir);
	snprintf(data, sizeof data, "%s/data.txt", dir);
	tmp_write(ini, "[cluster]\nlabel = data.txt\n");
	assert_int_equal(cfg_load_file(f->c, ini, &f->e), 0);
	assert_int_equal(cfg_path(f->c, "cluster", "label", out, sizeof out, &f->e), 0);
	assert_string_equal(out, "data.txt"); /* nothing beside the file yet */
	tmp_write(data, "");
	assert_int_equal(cfg_path(f->c, "cluster", "label", out, sizeof out, &f->e), 0);
	assert_string_equal(out, data);
	assert_int_equal(cfg_path(f->c, "cluster", "label", out, 8, &f->e), KS_EINPUT);
	assert_non_null(strstr(f->e.msg, ":2: [cluster] label: path longer than 7 bytes"));
	assert_int_equal(cfg_set(f->c, "cluster.label=data.txt", &f->e), 0);
	assert_int_equal(cfg_path(f->c, "cluster", "label", out, sizeof out, &f->e), 0);
	assert_string_equal(out, "data.txt");
	unlink(data);
	unlink(ini);
	rmdir(dir);
}

/* One name per type, shared by the store's messages and kvsim policy list. */
static void test_type_names_for_messages_and_listings(void **state)
{
	(void)state;
	assert_string_equal(cfg_type_name(CFG_INT), "int");
	assert_string_equal(cfg_type_name(CFG_FLOAT), "float");
	assert_string_equal(cfg_type_name(CFG_BOOL), "bool");
	assert_string_equal(cfg_type_name(CFG_STR), "string");
	assert_string_equal(cfg_type_name(CFG_ENUM), "enum");
	assert_string_equal(cfg_type_name((cfg_type_t)99), "?");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TW(fn) cmocka_unit_test_setup_teardown(fn, setup_warn, teardown)
/* load_errors[k] as a test under its own name */
/* clang-format off */
#define LOAD_ERRORS(k) \
	{load_errors[k].name, test_load_errors, setup, teardown, (void *)&load_errors[k]}
/* clang-format on */

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_defaults_come_from_schema),
	    cmocka_unit_test(test_type_names_for_messages_and_listings),
	    T(test_load_sets_values_and_origins),
	    T(test_bool_spellings),
	    LOAD_ERRORS(0),
	    LOAD_ERRORS(1),
	    LOAD_ERRORS(2),
	    LOAD_ERRORS(3),
	    LOAD_ERRORS(4),
	    LOAD_ERRORS(6),
	    LOAD_ERRORS(7),
	    T(test_out_of_range),
	    LOAD_ERRORS(5),
	    T(test_parse_whole_tells_not_whole_from_out_of_range),
	    LOAD_ERRORS(8),
	    LOAD_ERRORS(9),
	    LOAD_ERRORS(10),
	    LOAD_ERRORS(11),
	    T(test_long_lines_are_read),
	    T(test_long_and_short_lines_strip_the_same_blanks),
	    T(test_bom_is_skipped_and_checked),
	    T(test_indented_line_is_not_a_continuation),
	    T(test_failed_load_changes_nothing),
	    TW(test_parameter_of_unselected_policy_is_ignored_with_one_warning),
	    TW(test_ignored_parameter_via_set_names_set),
	    T(test_typo_in_policy_parameter_is_still_an_error),
	    T(test_preset_sets_keys_not_given_explicitly),
	    TW(test_preset_parameter_of_replaced_policy_is_left_out),
	    T(test_refinalizing_a_clone_switches_presets_cleanly),
	    T(test_unknown_preset_names_file_and_line),
	    T(test_preset_write_marks_origins_and_loads_back),
	    T(test_bad_preset_tables_are_refused),
	    T(test_bad_set_syntax),
	    T(test_set_overrides_file),
	    T(test_load_file_reports_path_and_line),
	    T(test_write_load_round_trip),
	    T(test_value_starting_with_comment_char_is_refused),
	    T(test_write_skips_keys_of_unselected_policy),
	    T(test_digest_stable_and_sensitive),
	    T(test_set_choices_extends_enum),
	    T(test_schema_rejects_bad_keys),
	    T(test_many_keys_all_found),
	    T(test_keys_added_after_cfg_new_take_defaults),
	    T(test_unknown_key_accessor_aborts),
	    T(test_wrong_type_accessor_aborts),
	    T(test_doc_lists_every_key),
	    T(test_default_schema_is_valid),
	    T(test_cross_field_error_names_the_key_set_last),
	    T(test_cross_field_error_names_the_preset_selector_line),
	    T(test_error_about_one_key_gets_its_place),
	    T(test_set_as_labels_errors_and_origin),
	    T(test_path_resolves_beside_the_config_file_that_set_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
