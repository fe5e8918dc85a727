/* Tests for `kvsim config` (sim/cli/cli_config.c, sim/run/cli_common.c) through the
 * built binary named by $KVSIM (skipped when unset): bad config input of
 * every kind exits 2 with "kvsim config show: FILE:LINE: ..." on stderr and nothing on
 * stdout, and `config show` output loads back to the same text. Keys used
 * for type and range errors are taken from `kvsim config doc`, so the cases
 * follow whatever schema the modules define; those without a fitting key
 * are reported as skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

static const char *kvsim;
static char tmpdir[64];

typedef cli_result_t result_t;

/* Runs kvsim with the given arguments (NULL-terminated). */
#define run_kvsim(...) cli_run(kvsim, tmpdir, __VA_ARGS__)
#define result_free cli_result_free

/* Writes text to DIR/name and returns the path (static buffer). */
static const char *config_file(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	tmp_write(path, text);
	return path;
}

/* `config show FILE` must exit 2, print nothing on stdout and exactly
 * "kvsim config show: " + want + "\n" on stderr (want may contain one %s for the path). */
static void expect_bad_config(const char *text, const char *want_fmt)
{
	const char *path = config_file("bad.ini", text);
	result_t r = run_kvsim("config", "show", path, NULL);
	char want[1024];
	snprintf(want, sizeof want, want_fmt, path);
	char full[1100];
	snprintf(full, sizeof full, "kvsim config show: %s\n", want);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, full);
	result_free(&r);
}

/* Like expect_bad_config, but checks only that stderr starts with
 * "kvsim config show: PATH:LINE: [S] K: " (prefix built by the caller) and contains
 * reason. */
static void expect_bad_config_part(const char *text, const char *prefix_fmt, const char *reason)
{
	const char *path = config_file("bad.ini", text);
	result_t r = run_kvsim("config", "show", path, NULL);
	char prefix[1024];
	snprintf(prefix, sizeof prefix, prefix_fmt, path);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, "");
	if (strncmp(r.err, prefix, strlen(prefix)) || !strstr(r.err, reason))
		fail_msg("stderr '%s' does not start with '%s' and contain '%s'", r.err, prefix,
		         reason);
	result_free(&r);
}

/* ---- keys from `kvsim config doc` ---------------------------------------- */

typedef struct doc_key {
	char section[64], name[64], type[16], owner[64], def[128];
	int ranged;
	double min, max;
} doc_key_t;

static doc_key_t keys[4096];
static int nkeys;

static void load_doc(void)
{
	result_t r = run_kvsim("config", "doc", NULL);
	assert_int_equal(r.status, 0);
	char *save = NULL;
	for (char *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '[' && nkeys < 4096) {
			doc_key_t *k = &keys[nkeys++];
			memset(k, 0, sizeof *k);
			if (sscanf(l, "[%63[^]]] %63s", k->section, k->name) != 2)
				nkeys--;
		} else if (nkeys && !strncmp(l, "    type ", 9) && !keys[nkeys - 1].type[0]) {
			doc_key_t *k = &keys[nkeys - 1];
			sscanf(l, "    type %15[^,], default '%127[^']'", k->type, k->def);
			const char *rg = strstr(l, "range [");
			if (rg && sscanf(rg, "range [%lf, %lf]", &k->min, &k->max) == 2)
				k->ranged = 1;
			const char *ow = strstr(l, "only with name = ");
			if (ow)
				sscanf(ow, "only with name = %63s", k->owner);
		}
	}
	result_free(&r);
}

static const doc_key_t *find_key(const char *type, int ranged)
{
	for (int i = 0; i < nkeys; i++)
		if ((!type || !strcmp(keys[i].type, type)) && (!ranged || keys[i].ranged) &&
		    !keys[i].owner[0])
			return &keys[i];
	return NULL;
}

/* The same, skipping the test when the schema has no such key. */
static const doc_key_t *key_or_skip(const char *type, int ranged)
{
	const doc_key_t *k = find_key(type, ranged);
	if (!k)
		skip();
	return k;
}

static int setup(void **state)
{
	(void)state;
	kvsim = getenv("KVSIM");
	if (!kvsim || !*kvsim || access(kvsim, X_OK))
		return 0;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/test_cli_config.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	load_doc();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (!tmpdir[0])
		return 0;
	const char *names[] = {"stdout", "stderr", "bad.ini", "a.ini", "b.ini"};
	char p[256];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
		unlink(p);
	}
	rmdir(tmpdir);
	return 0;
}

static void need_kvsim(void)
{
	if (!kvsim || !tmpdir[0])
		skip();
}

/* ---- tests ---------------------------------------------------------------- */

static void test_help_exits_zero(void **state)
{
	(void)state;
	need_kvsim();
	result_t r = run_kvsim("config", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "usage: kvsim config show [CONFIG] [--set"));
	assert_non_null(strstr(r.out, "--set SECTION.KEY=VALUE"));
	result_free(&r);
	r = run_kvsim("config", "show", "--help", NULL);
	assert_int_equal(r.status, 0);
	result_free(&r);
}

/* A command line kvsim must refuse with exit 2 and nothing on stdout; its
 * stderr is err exactly (exact), contains it, or (NULL) is not checked. */
typedef struct usage_case {
	const char *args[6]; /* after "kvsim", NULL-terminated */
	const char *err;
	int exact;
} usage_case_t;

static void expect_usage_errors(const usage_case_t *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *argv[8] = {kvsim};
		for (int k = 0; c[i].args[k]; k++)
			argv[k + 1] = c[i].args[k];
		result_t r = cli_run_argv(kvsim, NULL, tmpdir, argv);
		assert_int_equal(r.status, 2);
		assert_string_equal(r.out, "");
		if (c[i].err && c[i].exact)
			assert_string_equal(r.err, c[i].err);
		else if (c[i].err && !strstr(r.err, c[i].err))
			fail_msg("stderr '%s' does not contain '%s'", r.err, c[i].err);
		result_free(&r);
	}
}

static void test_usage_errors_exit_two(void **state)
{
	(void)state;
	need_kvsim();
	static const usage_case_t cases[] = {
	    {{"config"}, NULL, 0},
	    {{"config", "frobnicate"}, "unknown subcommand 'frobnicate'", 0},
	    {{"config", "show", "--bogus"}, "unknown option '--bogus'", 0},
	    {{"config", "show", "a.ini", "b.ini"},
	     "kvsim config show: more than one CONFIG given ('a.ini', 'b.ini')\n",
	     1},
	    {{"config", "show", "--set"}, "kvsim config show: --set needs SECTION.KEY=VALUE\n", 1},
	};
	expect_usage_errors(cases, sizeof cases / sizeof cases[0]);
}

static void test_show_round_trips(void **state)
{
	(void)state;
	need_kvsim();
	result_t a = run_kvsim("config", "show", NULL);
	assert_int_equal(a.status, 0);
	const char *pa = config_file("a.ini", a.out);
	char path_a[256];
	snprintf(path_a, sizeof path_a, "%s", pa);
	result_t b = run_kvsim("config", "show", path_a, NULL);
	assert_int_equal(b.status, 0);
	assert_string_equal(a.out, b.out);
	result_t da = run_kvsim("config", "digest", NULL);
	result_t db = run_kvsim("config", "digest", path_a, NULL);
	assert_int_equal(da.status, 0);
	assert_int_equal(strlen(da.out), 65);
	assert_string_equal(da.out, db.out);
	result_free(&a);
	result_free(&b);
	result_free(&da);
	result_free(&db);
}

static void test_set_changes_show_and_digest(void **state)
{
	(void)state;
	need_kvsim();
	const doc_key_t *k = key_or_skip("int", 0);
	char set[256];
	snprintf(set, sizeof set, "%s.%s=%lld", k->section, k->name,
	         k->ranged ? (long long)k->min : 12345LL);
	result_t a = run_kvsim("config", "digest", NULL);
	result_t b = run_kvsim("config", "digest", "--set", set, NULL);
	result_t c = run_kvsim("config", "show", "--set", set, NULL);
	assert_int_equal(b.status, 0);
	assert_int_equal(c.status, 0);
	char line[256];
	snprintf(line, sizeof line, "\n%s = %lld\n", k->name,
	         k->ranged ? (long long)k->min : 12345LL);
	assert_non_null(strstr(c.out, line));
	(void)a;
	result_free(&a);
	result_free(&b);
	result_free(&c);
}

static void test_unknown_section(void **state)
{
	(void)state;
	need_kvsim();
	expect_bad_config("\n[zzzz_no_such_section_zzzz]\nx = 1\n",
	                  "%s:2: [zzzz_no_such_section_zzzz]: unknown section");
}

static void test_malformed_line(void **state)
{
	(void)state;
	need_kvsim();
	expect_bad_config("; a comment\nthis is not ini\n",
	                  "%s:2: malformed line (expected '[section]', 'key = value' or a "
	                  "comment): 'this is not ini'");
	expect_bad_config("[unterminated\n", "%s:1: section header without ']': '[unterminated'");
	expect_bad_config("x = 1\n", "%s:1: x: key outside any [section]");
}

static void test_missing_file(void **state)
{
	(void)state;
	need_kvsim();
	result_t r = run_kvsim("config", "show", "/nonexistent/kvsim/exp.ini", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err,
	                    "kvsim config show: /nonexistent/kvsim/exp.ini: cannot open: No such "
	                    "file or directory\n");
	result_free(&r);
}

static void test_bad_set(void **state)
{
	(void)state;
	need_kvsim();
	static const usage_case_t cases[] = {
	    {{"config", "show", "--set", "nodot=1"},
	     "kvsim config show: --set: 'nodot=1': expected SECTION.KEY=VALUE\n",
	     1},
	    {{"config", "show", "--set=zzzz_nope.key=1"},
	     "kvsim config show: --set: [zzzz_nope] key: unknown section\n",
	     1},
	};
	expect_usage_errors(cases, sizeof cases / sizeof cases[0]);
}

/* A string value starting with ';' would be written as "key = ;..." and
 * read back empty (the digest would change): refused from a file and from
 * --set, exit 2, nothing on stdout. */
static void test_string_value_starting_with_semicolon_exits_two(void **state)
{
	(void)state;
	need_kvsim();
	const doc_key_t *k = key_or_skip("string", 0);
	char text[256], prefix[256], set[256];
	snprintf(text, sizeof text, "[%s]\n%s =;x\n", k->section, k->name);
	snprintf(prefix, sizeof prefix, "kvsim config show: %%s:2: [%s] %s: ", k->section, k->name);
	expect_bad_config_part(text, prefix, "value cannot begin with ';'");
	snprintf(set, sizeof set, "%s.%s=;x", k->section, k->name);
	result_t r = run_kvsim("config", "show", "--set", set, NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "value cannot begin with ';'"));
	result_free(&r);
}

static void test_unknown_key(void **state)
{
	(void)state;
	need_kvsim();
	const doc_key_t *k = key_or_skip(NULL, 0);
	char text[256], want[512];
	snprintf(text, sizeof text, "[%s]\nzzzz_no_such_key_zzzz = 1\n", k->section);
	snprintf(want, sizeof want,
	         "kvsim config show: %%s:2: [%s] zzzz_no_such_key_zzzz: ", k->section);
	expect_bad_config_part(text, want, "unknown key");
	/* A one-letter typo gets a suggestion. */
	snprintf(text, sizeof text, "[%s]\n%sx = 1\n", k->section, k->name);
	snprintf(want, sizeof want, "kvsim config show: %%s:2: [%s] %sx: ", k->section, k->name);
	char sug[128];
	snprintf(sug, sizeof sug, "(did you mean '");
	expect_bad_config_part(text, want, sug);
}

static void test_wrong_types(void **state)
{
	(void)state;
	need_kvsim();
	int done = 0;
	static const char *const cases[][3] = {
	    {"int", "notanint", "expected an integer, got 'notanint'"},
	    {"float", "fast", "expected a number, got 'fast'"},
	    {"bool", "maybe", "expected a boolean"},
	    {"enum", "zzzz_no_such_choice", "'zzzz_no_such_choice' is not one of: "},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const doc_key_t *k = find_key(cases[i][0], 0);
		if (!k)
			continue;
		char text[256], want[512];
		snprintf(text, sizeof text, "[%s]\n\n%s = %s\n", k->section, k->name, cases[i][1]);
		snprintf(want, sizeof want, "kvsim config show: %%s:3: [%s] %s: ", k->section,
		         k->name);
		expect_bad_config_part(text, want, cases[i][2]);
		done++;
	}
	if (!done)
		skip();
}

static void test_out_of_range_and_duplicate(void **state)
{
	(void)state;
	need_kvsim();
	const doc_key_t *k = NULL;
	for (int i = 0; i < nkeys && !k; i++)
		if (!strcmp(keys[i].type, "int") && keys[i].ranged && keys[i].max < 9e15 &&
		    !keys[i].owner[0])
			k = &keys[i];
	if (!k)
		skip();
	long long ok = (long long)k->min, bad = (long long)k->max + 1;
	char text[256], want[512];
	snprintf(text, sizeof text, "[%s]\n%s = %lld\n", k->section, k->name, bad);
	snprintf(want, sizeof want, "kvsim config show: %%s:2: [%s] %s: ", k->section, k->name);
	expect_bad_config_part(text, want, "is out of range");
	snprintf(text, sizeof text, "[%s]\n%s = %lld\n%s = %lld\n", k->section, k->name, ok,
	         k->name, ok);
	snprintf(want, sizeof want,
	         "kvsim config show: %%s:3: [%s] %s: duplicate key (first set on line 2)",
	         k->section, k->name);
	expect_bad_config_part(text, want, "duplicate");
}

/* The value of [section] name in `kvsim config show` output, or "". */
static void shown_name(const char *show, const char *section, char *out, size_t len)
{
	char head[128];
	snprintf(head, sizeof head, "[%s]\n", section);
	out[0] = '\0';
	const char *p = strstr(show, head);
	if (!p)
		return;
	for (p += strlen(head); *p && *p != '['; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
		if (!strncmp(p, "name = ", 7)) {
			size_t n = strcspn(p + 7, "\n");
			snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p + 7);
			return;
		}
	}
}

static void test_policy_key_under_other_policy_warns(void **state)
{
	(void)state;
	need_kvsim();
	result_t show = run_kvsim("config", "show", NULL);
	assert_int_equal(show.status, 0);
	const doc_key_t *k = NULL;
	char sel[128] = "";
	for (int i = 0; i < nkeys && !k; i++) {
		if (!keys[i].owner[0])
			continue;
		shown_name(show.out, keys[i].section, sel, sizeof sel);
		if (strcmp(sel, keys[i].owner))
			k = &keys[i];
	}
	result_free(&show);
	if (!k)
		skip();
	/* Ignored with one warning line, so one file can be swept over the
	 * policy name; the output is the config without the key. */
	char set[256], want[512];
	snprintf(set, sizeof set, "%s.%s=%s", k->section, k->name, k->def);
	snprintf(want, sizeof want,
	         "kvsim: warning: --set: [%s] %s: ignored: parameter of '%s', but name = %s\n",
	         k->section, k->name, k->owner, sel);
	result_t r = run_kvsim("config", "show", "--set", set, NULL);
	result_t plain = run_kvsim("config", "show", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, want);
	assert_string_equal(r.out, plain.out);
	result_free(&r);
	result_free(&plain);
	/* In a file, the warning names the line that set it. */
	char text[512];
	snprintf(text, sizeof text, "[%s]\n%s = %s\n", k->section, k->name, k->def);
	const char *path = config_file("bad.ini", text);
	r = run_kvsim("config", "digest", path, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof want,
	         "kvsim: warning: %s:2: [%s] %s: ignored: parameter of '%s', but name = %s\n", path,
	         k->section, k->name, k->owner, sel);
	assert_string_equal(r.err, want);
	result_free(&r);
}

/* The preset names, from the choices `kvsim config doc` lists. */
static int preset_names(char names[16][64])
{
	result_t d = run_kvsim("config", "doc", NULL);
	const char *p =
	    strstr(d.out, "[policy] preset\n    type enum, default 'none', one of: none,");
	assert_non_null(p);
	p = strstr(p, "none,") + 5;
	int n = 0;
	while (n < 16 && *p && *p != '\n') {
		size_t l = strcspn(p, ",\n");
		snprintf(names[n++], 64, "%.*s", (int)l, p);
		p += l + (p[l] == ',');
	}
	result_free(&d);
	return n;
}

static void test_preset_show_loads_back_to_the_same_config(void **state)
{
	(void)state;
	need_kvsim();
	char names[16][64];
	int n = preset_names(names);
	assert_true(n >= 7);
	for (int i = 0; i < n; i++) {
		char set[128];
		snprintf(set, sizeof set, "policy.preset=%.60s", names[i]);
		result_t a = run_kvsim("config", "show", "--set", set, NULL);
		assert_int_equal(a.status, 0);
		assert_string_equal(a.err, "");
		/* the resolved values, with where each preset value comes from */
		char line[128];
		snprintf(line, sizeof line, "\npreset = %.60s\n", names[i]);
		assert_non_null(strstr(a.out, line));
		snprintf(line, sizeof line, "\n# from preset %.60s: ", names[i]);
		assert_non_null(strstr(a.out, line));
		const char *pa = config_file("a.ini", a.out);
		char path_a[256];
		snprintf(path_a, sizeof path_a, "%s", pa);
		result_t da = run_kvsim("config", "digest", "--set", set, NULL);
		result_t db = run_kvsim("config", "digest", path_a, NULL);
		assert_int_equal(db.status, 0);
		assert_string_equal(da.out, db.out);
		/* loaded back, the same resolved values (now all explicit) */
		result_t b = run_kvsim("config", "show", path_a, NULL);
		assert_int_equal(b.status, 0);
		assert_null(strstr(b.out, "# from preset"));
		result_free(&a);
		result_free(&b);
		result_free(&da);
		result_free(&db);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help_exits_zero),
	    cmocka_unit_test(test_usage_errors_exit_two),
	    cmocka_unit_test(test_show_round_trips),
	    cmocka_unit_test(test_set_changes_show_and_digest),
	    cmocka_unit_test(test_unknown_section),
	    cmocka_unit_test(test_malformed_line),
	    cmocka_unit_test(test_missing_file),
	    cmocka_unit_test(test_bad_set),
	    cmocka_unit_test(test_string_value_starting_with_semicolon_exits_two),
	    cmocka_unit_test(test_unknown_key),
	    cmocka_unit_test(test_wrong_types),
	    cmocka_unit_test(test_out_of_range_and_duplicate),
	    cmocka_unit_test(test_policy_key_under_other_policy_warns),
	    cmocka_unit_test(test_preset_show_loads_back_to_the_same_config),
	};
	if (!getenv("KVSIM")) {
		fprintf(stderr, "test_cli_config: KVSIM not set, skipping\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
