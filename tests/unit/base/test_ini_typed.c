/* Tests for sim/base/ini_typed.c: an INI file read into a struct by a table
 * of typed keys, with "FILE:LINE: [section] key: reason" for every mistake
 * (the reader under the spec files and calibrations of models/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/base/ini_typed.h"
#include "tests/fixtures/test_main.h"

/* A toy: one plain section, a family [point.N] (N in 1..3, at most two of
 * them), and a free-form [notes]. */
typedef struct toy_point {
	int n;
	double lat, eff;
} toy_point_t;

typedef struct toy {
	char name[8];
	uint32_t count;
	double rate;
	int64_t ns;
	int kind;
	toy_point_t pt[2];
	size_t npt;
	int finish_calls;
} toy_t;

static const cfg_enum_t kind_map[] = {{"alpha", 1}, {"beta", 2}, {NULL, 0}};

static int point_param(const char *arg, char *why, size_t n)
{
	if (strlen(arg) == 1 && arg[0] >= '1' && arg[0] <= '3')
		return arg[0] - '0';
	snprintf(why, n, "expected point.N, N in 1..3");
	return -1;
}

static void *point_instance(void *dst, int id, char *why, size_t n)
{
	toy_t *t = dst;
	for (size_t i = 0; i < t->npt; i++)
		if (t->pt[i].n == id)
			return &t->pt[i];
	if (t->npt == 2) {
		snprintf(why, n, "more than 2 points");
		return NULL;
	}
	t->pt[t->npt] = (toy_point_t){id, 0, 1};
	return &t->pt[t->npt++];
}

enum { R_NAME, R_COUNT, R_RATE, R_NS, R_KIND, R_LAT, R_EFF, R_N };
static const ini_key_t toy_keys[R_N] = {
    [R_NAME] = {{{"toy", "name", CFG_STR, "", 0, 0, NULL, "", "the toy's name", NULL},
                 {CFG_F_NONE, offsetof(toy_t, name), NULL, NULL, NULL}},
                INI_REQUIRED | INI_NONEMPTY,
                sizeof(((toy_t *)0)->name),
                NULL},
    [R_COUNT] = {{{"toy", "count", CFG_INT, "0", 0, 1000, NULL, "", "how many", NULL},
                  CFG_AT(U32, toy_t, count)},
                 INI_REQUIRED | INI_WHOLE_E,
                 0,
                 NULL},
    [R_RATE] = {{{"toy", "rate", CFG_FLOAT, "0", 0, 1, NULL, "", "a fraction", NULL},
                 CFG_AT(DOUBLE, toy_t, rate)},
                INI_ABOVE_MIN,
                0,
                NULL},
    [R_NS] = {{{"toy", "ns", CFG_INT, "0", 0, 1e9, NULL, "ns", "a time", NULL},
               CFG_AT(I64, toy_t, ns)},
              0,
              0,
              NULL},
    [R_KIND] = {{{"toy", "kind", CFG_ENUM, "alpha", 0, 0, NULL, "", "a kind", NULL},
                 CFG_AT_ENUM(toy_t, kind, kind_map)},
                0,
                0,
                NULL},
    [R_LAT] = {{{"point.N", "lat", CFG_FLOAT, "0", 0, 1e6, NULL, "ns", "a latency", NULL},
                CFG_AT(DOUBLE, toy_point_t, lat)},
               0,
               0,
               NULL},
    [R_EFF] = {{{"point.N", "eff", CFG_FLOAT, "1", 0, 1, NULL, "", "an efficiency", NULL},
                CFG_AT(DOUBLE, toy_point_t, eff)},
               INI_ABOVE_MIN,
               0,
               NULL},
};

/* Cross-key check: point 3 needs its lat below 100 (named at its line). */
static int toy_finish(void *dst, const ini_run_t *r, err_t *e)
{
	toy_t *t = dst;
	t->finish_calls++;
	for (size_t i = 0; i < t->npt; i++)
		if (t->pt[i].n == 3 && t->pt[i].lat >= 100) {
			int line = ini_line(r, R_LAT, 3);
			return err_set(e, KS_EINPUT, "%s:%d: [point.3] lat: at least 100 (section at %d)",
			               ini_origin(r), line, ini_section_line(r, R_LAT, 3));
		}
	return 0;
}

static const ini_section_t toy_sections[] = {
    {"toy", 0, 0, NULL, NULL},
    {"point.N", 6, 0, point_param, point_instance},
    {"notes", 0, INI_OPEN, NULL, NULL},
};
static const ini_rows_t toy_rows = {toy_keys, R_N, 0};
static const ini_table_t toy_table = {toy_sections, 3, &toy_rows, 1, toy_finish};

static const char GOOD[] = "; a toy\n"
                           "[toy]\n"
                           "name = tiny\n"
                           "count = 2e2      ; a whole number in e-notation\n"
                           "  rate = 0.25\n"
                           "ns = 1500\n"
                           "kind = beta\n"
                           "[point.3]\n"
                           "lat = 12.5\n"
                           "[notes]\n"
                           "anything = goes here\n"
                           "[point.1]\n"
                           "eff = 0.5\n";

static int read_toy(const char *text, toy_t *t, err_t *e)
{
	memset(t, 0, sizeof *t);
	err_clear(e);
	return ini_read(&toy_table, "t.ini", text, t, e);
}

/* text is refused with a message holding want. */
static void expect_refused(const char *text, const char *want)
{
	toy_t t;
	err_t e;
	assert_int_equal(read_toy(text, &t, &e), KS_EINPUT);
	if (!strstr(e.msg, want))
		fail_msg("message '%s' lacks '%s'", e.msg, want);
}

static void test_good_file_fills_every_field(void **st)
{
	(void)st;
	toy_t t;
	err_t e;
	assert_int_equal(read_toy(GOOD, &t, &e), 0);
	assert_string_equal(t.name, "tiny");
	assert_int_equal(t.count, 200);
	assert_true(t.rate == 0.25); /* an indented line is an ordinary one */
	assert_int_equal(t.ns, 1500);
	assert_int_equal(t.kind, 2);
	/* family instances in the order their first keys came */
	assert_int_equal(t.npt, 2);
	assert_int_equal(t.pt[0].n, 3);
	assert_true(t.pt[0].lat == 12.5 && t.pt[0].eff == 1);
	assert_int_equal(t.pt[1].n, 1);
	assert_true(t.pt[1].lat == 0 && t.pt[1].eff == 0.5);
	assert_int_equal(t.finish_calls, 1);
}

static void test_unknown_key_suggests_the_nearest_else_lists_the_known(void **st)
{
	(void)st;
	expect_refused("[toy]\nname = a\ncuont = 3\n",
	               "t.ini:3: [toy] cuont: unknown key (did you mean 'count'?)");
	expect_refused("[toy]\nname = a\nzzzzzzz = 3\n",
	               "t.ini:3: [toy] zzzzzzz: unknown key (known: name, count, rate, ns, kind)");
	expect_refused("[point.2]\nlatt = 3\n",
	               "t.ini:2: [point.2] latt: unknown key (did you mean 'lat'?)");
	expect_refused("[toyy]\n", "t.ini:1: [toyy]: unknown section (did you mean 'toy'?)");
	expect_refused("[qqqqqqqqq]\n",
	               "t.ini:1: [qqqqqqqqq]: unknown section (known: [toy], [point.N], [notes])");
	expect_refused("[toy]\nkind = betta\n",
	               "t.ini:2: [toy] kind: 'betta' is not one of: alpha,beta (did you mean 'beta'?)");
}

static void test_bad_numbers_are_refused_with_the_value(void **st)
{
	(void)st;
	expect_refused("[toy]\nname = a\ncount = 3x\n",
	               "t.ini:3: [toy] count: expected an integer, got '3x'");
	expect_refused("[toy]\nname = a\ncount = 2.5\n",
	               "t.ini:3: [toy] count: expected an integer, got '2.5'");
	expect_refused("[toy]\nrate = fast\n", "t.ini:2: [toy] rate: expected a number, got 'fast'");
	expect_refused("[toy]\nrate = nan\n",
	               "t.ini:2: [toy] rate: expected a finite number, got 'nan'");
	expect_refused("[toy]\nname =\n", "t.ini:2: [toy] name: empty value");
	expect_refused("[toy]\nname = eightchr\n",
	               "t.ini:2: [toy] name: 'eightchr...' is too long (at most 7 characters)");
	expect_refused("[toy]\nname =;x\n", "t.ini:2: [toy] name: value cannot begin with ';'");
}

static void test_values_out_of_range_name_the_range_and_unit(void **st)
{
	(void)st;
	expect_refused("[toy]\ncount = 1001\n", "t.ini:2: [toy] count: 1001 is out of range [0, 1000]");
	expect_refused("[toy]\ncount = 1e4\n", "t.ini:2: [toy] count: 1e4 is out of range [0, 1000]");
	expect_refused("[toy]\nns = -1\n", "t.ini:2: [toy] ns: -1 ns is out of range [0, 1000000000]");
	/* a range open at its minimum */
	expect_refused("[toy]\nrate = 0\n", "t.ini:2: [toy] rate: 0 is out of range (0, 1]");
	expect_refused("[toy]\nrate = 1.5\n", "t.ini:2: [toy] rate: 1.5 is out of range (0, 1]");
}

static void test_a_key_given_twice_is_refused_naming_the_first(void **st)
{
	(void)st;
	expect_refused("[toy]\nname = a\ncount = 1\n\n[toy]\ncount = 2\n",
	               "t.ini:6: [toy] count: duplicate key (first set on line 3)");
	expect_refused("[point.1]\nlat = 1\n[point.1]\nlat = 2\n",
	               "t.ini:4: [point.1] lat: duplicate key (first set on line 2)");
	/* the same key in two instances of a family is two keys */
	toy_t t;
	err_t e;
	assert_int_equal(read_toy("[toy]\nname = a\ncount = 1\n[point.1]\nlat = 1\n[point.2]\nlat = 2\n",
	                          &t, &e),
	                 0);
	assert_true(t.npt == 2 && t.pt[1].lat == 2);
}

static void test_missing_required_key_is_named_at_its_section(void **st)
{
	(void)st;
	expect_refused("; nothing\n\n[toy]\nname = a\n", "t.ini:3: [toy] count: missing required key");
	/* no [toy] at all: the text's last line */
	expect_refused("[notes]\nx = 1\n\n", "t.ini:3: [toy] name: missing required key");
	expect_refused("", "t.ini:1: [toy] name: missing required key");
}

static void test_section_with_a_parameter(void **st)
{
	(void)st;
	/* the parameter is checked at its header */
	expect_refused("[toy]\nname = a\ncount = 1\n[point.7]\n",
	               "t.ini:4: [point.7]: expected point.N, N in 1..3");
	expect_refused("[point.]\n", "t.ini:1: [point.]: expected point.N");
	/* an instance is made at its first key: an empty section makes none */
	toy_t t;
	err_t e;
	assert_int_equal(read_toy("[toy]\nname = a\ncount = 1\n[point.2]\n[point.1]\neff = 1\n", &t, &e),
	                 0);
	assert_true(t.npt == 1 && t.pt[0].n == 1);
	/* no room for a third */
	expect_refused("[toy]\nname = a\ncount = 1\n[point.1]\nlat = 1\n[point.2]\nlat = 1\n"
	               "[point.3]\nlat = 1\n",
	               "t.ini:9: [point.3] lat: more than 2 points");
	/* the finish hook names a key of an instance by its line */
	expect_refused("[toy]\nname = a\ncount = 1\n[point.3]\neff = 0.5\nlat = 150\n",
	               "t.ini:6: [point.3] lat: at least 100 (section at 4)");
}

static void test_syntax_errors_and_keys_outside_a_section(void **st)
{
	(void)st;
	expect_refused("name = a\n[toy]\n", "t.ini:1: name: key outside any [section]");
	expect_refused("[toy]\njust words\n",
	               "t.ini:2: malformed line (expected '[section]', 'key = value' or a comment)");
	expect_refused("[toy\n", "t.ini:1: section header without ']'");
	/* the first error is the one reported */
	expect_refused("[toy]\ncount = x\ncount = y\nbogus = 1\n",
	               "t.ini:2: [toy] count: expected an integer, got 'x'");
}

/* Rows may be members of a larger struct (a config key beside the file's):
 * the table walks them by stride, and several groups number on. */
typedef struct wide_row {
	const char *note;
	ini_key_t file;
	double pad[3];
} wide_row_t;

static void test_rows_by_stride_and_groups(void **st)
{
	(void)st;
	static const wide_row_t wide[] = {
	    {"first", toy_keys[R_NAME], {0}},
	    {"second", toy_keys[R_COUNT], {0}},
	};
	const ini_rows_t groups[] = {{&wide[0].file, 2, sizeof wide[0]}, {&toy_keys[R_RATE], 1, 0}};
	const ini_table_t t2 = {toy_sections, 1, groups, 2, NULL};
	toy_t t;
	err_t e = {0};
	memset(&t, 0, sizeof t);
	assert_int_equal(ini_read(&t2, "w.ini", "[toy]\nname = w\ncount = 7\nrate = 1\n", &t, &e), 0);
	assert_string_equal(t.name, "w");
	assert_int_equal(t.count, 7);
	assert_true(t.rate == 1);
	memset(&t, 0, sizeof t);
	assert_int_equal(ini_read(&t2, "w.ini", "[toy]\nname = w\nns = 7\n", &t, &e), KS_EINPUT);
	if (!strstr(e.msg, "w.ini:3: [toy] ns: unknown key (known: name, count, rate)"))
		fail_msg("%s", e.msg);
}

static void test_file_with_a_nul_byte_is_refused(void **st)
{
	(void)st;
	char path[] = "/tmp/test_ini_typed_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char text[] = "[toy]\nname = a\0b\ncount = 1\n";
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	toy_t t;
	err_t e = {0};
	memset(&t, 0, sizeof t);
	assert_int_equal(ini_read_file(&toy_table, path, &t, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, ":2: NUL byte in a text file"));
	unlink(path);
	assert_int_equal(ini_read_file(&toy_table, path, &t, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "cannot open"));
}

TEST_MAIN(cmocka_unit_test(test_good_file_fills_every_field),
          cmocka_unit_test(test_unknown_key_suggests_the_nearest_else_lists_the_known),
          cmocka_unit_test(test_bad_numbers_are_refused_with_the_value),
          cmocka_unit_test(test_values_out_of_range_name_the_range_and_unit),
          cmocka_unit_test(test_a_key_given_twice_is_refused_naming_the_first),
          cmocka_unit_test(test_missing_required_key_is_named_at_its_section),
          cmocka_unit_test(test_section_with_a_parameter),
          cmocka_unit_test(test_syntax_errors_and_keys_outside_a_section),
          cmocka_unit_test(test_rows_by_stride_and_groups),
          cmocka_unit_test(test_file_with_a_nul_byte_is_refused))
