/* The house rules (tests/check_house.py): no #include reaches up a layer and
 * no two source files call each other in a loop, on this tree and its build;
 * and the checks do fail, on a planted upward include and a planted loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "tests/test_main.h"

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
	int rc = run("/usr/bin/python3 tests/check_house.py layers . 2>&1", out, sizeof out);
	if (rc)
		printf("%s", out);
	assert_int_equal(rc, 0);
}

static void test_this_build_has_no_call_loops(void **st)
{
	(void)st;
	char cmd[512], out[8192];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/check_house.py cycles '%s' 2>&1",
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
	                             "/usr/bin/python3 tests/check_house.py layers $D 2>&1",
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
	                "/usr/bin/python3 tests/check_house.py cycles $D 2>&1",
	                out, sizeof out),
	    1);
	assert_non_null(strstr(out, "call loop: a <-> b"));
}

TEST_MAIN(cmocka_unit_test(test_this_tree_keeps_its_layers),
          cmocka_unit_test(test_this_build_has_no_call_loops),
          cmocka_unit_test(test_planted_upward_include_is_caught),
          cmocka_unit_test(test_planted_call_loop_is_caught))
