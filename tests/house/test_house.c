/* The house rules (tests/house/check_house.py): no #include reaches up a layer, no
 * two source files call each other in a loop, no header promises a symbol
 * that only a higher layer defines, and no production file runs over 1,000
 * lines or function over 100 (but the listed exceptions), on this tree and
 * its build; and each check does fail on a planted case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "tests/fixtures/test_main.h"

/* Runs a shell command; its exit status, its output in out. */
static int run(const char *cmd, char *out, size_t n)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t k = fread(out, 1, n - 1, p);
	out[k] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *build_dir(void)
{
	const char *b = getenv("BUILD");
	return b && *b ? b : "build";
}

static void test_this_tree_keeps_its_layers(void **st)
{
	(void)st;
	char out[8192];
	int rc = run("/usr/bin/python3 tests/house/check_house.py layers . 2>&1", out, sizeof out);
	if (rc)
		printf("%s", out);
	assert_int_equal(rc, 0);
}

static void test_this_build_has_no_call_loops(void **st)
{
	(void)st;
	char cmd[512], out[8192];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/house/check_house.py cycles '%s' 2>&1",
	         build_dir());
	int rc = run(cmd, out, sizeof out);
	if (rc)
		printf("%s", out);
	assert_int_equal(rc, 0);
}

/* Runs script with $D set to a fresh scratch directory, removed after;
 * returns the script's exit status, its output in out. */
static int run_planted(const char *script, char *out, size_t n)
{
	char dir[] = "/tmp/kvsim_house_XXXXXX", cmd[2048];
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof cmd, "D='%s'; %s", dir, script);
	int rc = run(cmd, out, n);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return rc;
}

static void test_planted_upward_include_is_caught(void **st)
{
	(void)st;
	char out[8192];
	assert_int_equal(run_planted("mkdir -p $D/sim/base $D/sim/run && "
	                             "printf '#include \"sim/run/sim.h\"\\n' > $D/sim/base/x.c && "
	                             "printf '#include \"sim/base/err.h\"\\n' > $D/sim/run/y.c && "
	                             "/usr/bin/python3 tests/house/check_house.py layers $D 2>&1",
	                             out, sizeof out),
	                 1);
	assert_non_null(strstr(out, "sim/base/x.c:1: includes sim/run/sim.h"));
	assert_null(strstr(out, "y.c")); /* downward is fine */
}

static void test_planted_call_loop_is_caught(void **st)
{
	(void)st;
	char out[8192];
	assert_int_equal(
	    run_planted("cd $D && printf 'int b(void);\\nint a(void){return b();}\\n' > a.c && "
	                "printf 'int a(void);\\nint b(void){return 0;}\\nint c(void){return a();}\\n' "
	                "> b.c && gcc -c a.c b.c && cd - >/dev/null && "
	                "/usr/bin/python3 tests/house/check_house.py cycles $D 2>&1",
	                out, sizeof out),
	    1);
	assert_non_null(strstr(out, "call loop: a <-> b"));
}

static void test_this_tree_keeps_its_budgets_and_promises(void **st)
{
	(void)st;
	char cmd[512], out[8192];
	int rc = run("/usr/bin/python3 tests/house/check_house.py budgets . 2>&1", out, sizeof out);
	if (rc)
		printf("%s", out);
	assert_int_equal(rc, 0);
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/house/check_house.py promises . '%s' 2>&1",
	         build_dir());
	rc = run(cmd, out, sizeof out);
	if (rc)
		printf("%s", out);
	assert_int_equal(rc, 0);
}

static void test_planted_promise_from_a_lower_header_is_caught(void **st)
{
	(void)st;
	char out[8192];
	assert_int_equal(
	    run_planted("mkdir -p $D/sim/base $D/sim/run $D/b/sim/run && "
	                "printf '/* higher(): see */\nint higher(void);\n' > $D/sim/base/x.h && "
	                "printf 'int same(void);\n' > $D/sim/run/y.h && "
	                "printf 'int higher(void){return 1;}\nint same(void){return 2;}\n' "
	                "> $D/sim/run/y.c && gcc -c $D/sim/run/y.c -o $D/b/sim/run/y.o && "
	                "/usr/bin/python3 tests/house/check_house.py promises $D $D/b 2>&1",
	                out, sizeof out),
	    1);
	assert_non_null(strstr(out, "sim/base/x.h: promises higher(), which sim/run/y.c"));
	assert_null(strstr(out, "same")); /* a header of its own layer may */
}

static void test_planted_long_file_and_function_are_caught(void **st)
{
	(void)st;
	char out[8192];
	/* f: signature + '{' + 98 body lines + '}' = 101 lines; g: 100. */
	assert_int_equal(
	    run_planted("mkdir -p $D/sim/base && cd $D/sim/base && "
	                "{ printf 'int f(void)\n{\n'; for i in $(seq 98); do echo '\t;'; done; "
	                "echo '}'; printf 'int g(int a,\n      int b)\n{\n'; "
	                "for i in $(seq 96); do echo '\t;'; done; echo '}'; } > fn.c && "
	                "for i in $(seq 1001); do echo; done > big.h && cd - >/dev/null && "
	                "/usr/bin/python3 tests/house/check_house.py budgets $D 2>&1",
	                out, sizeof out),
	    1);
	assert_non_null(strstr(out, "sim/base/fn.c:1: f() is 101 lines (budget 100)"));
	assert_null(strstr(out, "g()"));
	assert_non_null(strstr(out, "sim/base/big.h: 1001 lines (budget 1000)"));
}

TEST_MAIN(cmocka_unit_test(test_this_tree_keeps_its_layers),
          cmocka_unit_test(test_this_tree_keeps_its_budgets_and_promises),
          cmocka_unit_test(test_planted_promise_from_a_lower_header_is_caught),
          cmocka_unit_test(test_planted_long_file_and_function_are_caught),
          cmocka_unit_test(test_this_build_has_no_call_loops),
          cmocka_unit_test(test_planted_upward_include_is_caught),
          cmocka_unit_test(test_planted_call_loop_is_caught))
