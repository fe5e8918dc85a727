/* Tests of sim/cli/net_cli.c: the `kvsim net run` scenario format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/cli/cli.h"
#include "sim/cli/net_cli.h"

static char path[64];

static const char *write_scenario(const char *text)
{
	snprintf(path, sizeof path, "/tmp/kvsim_net_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Runs text; returns status, output in out (malloc'd), message in e. */
static int run(const char *text, char **out, err_t *e)
{
	const char *p = write_scenario(text);
	char *buf = NULL;
	size_t n = 0;
	FILE *o = open_memstream(&buf, &n);
	assert_non_null(o);
	int rc = net_scenario_run(p, o, 1, e);
	fclose(o);
	unlink(p);
	*out = buf;
	return rc;
}

/* Runs text, which must succeed; returns its output (malloc'd). */
static char *run_ok(const char *text)
{
	char *out;
	err_t e = {0};
	if (run(text, &out, &e))
		fail_msg("%s", e.msg);
	return out;
}

static void test_scenario_dumbbell_prints_exact_times_and_rates(void **st)
{
	(void)st;
	char *out = run_ok("# dumbbell: three flows through one 3 GB/s bottleneck\n"
	                   "link a 10e9 0\nlink b 3e9 100   # bottleneck\n"
	                   "flow f1 3000 0 fg a b\n"
	                   "flow f2 6000 0 fg b\n"
	                   "flow f3 9000 0 fg b\n");
	assert_string_equal(out,
			    "flow f1 start=0 join=100 finish=3100 bytes=3000 mean_rate=1e+09\n"
			    "flow f2 start=0 join=100 finish=5100 bytes=6000 mean_rate=1.2e+09\n"
			    "flow f3 start=0 join=100 finish=6100 bytes=9000 mean_rate=1.5e+09\n"
			    "link a bytes_fg=3000 bytes_bg=0 busy_fg=3000 busy_bg=0\n"
			    "link b bytes_fg=18000 bytes_bg=0 busy_fg=6000 busy_bg=0\n");
	free(out);
}

static void test_scenario_options_cap_background_and_share(void **st)
{
	(void)st;
	char *out = run_ok("share weighted 0.25\nbackground immediate\nlink l 2e9 0\n"
	                   "flow fg1 1600 0 fg l\nflow bg1 400 0 bg l\n"
	                   "flow c 500 5000 fg cap=0.5e9 copies=2 overhead=10 l\n");
	/* fg 1.6 B/ns and bg 0.4 B/ns: both end at 1000; c joins at 5020 */
	assert_non_null(strstr(out, "flow fg1 start=0 join=0 finish=1000 "));
	assert_non_null(strstr(out, "flow bg1 start=0 join=0 finish=1000 "));
	assert_non_null(strstr(out, "flow c start=5000 join=5020 finish=6020 "));
	free(out);
}

static void expect_error(const char *text, int line, const char *needle)
{
	char *out;
	err_t e = {0};
	int rc = run(text, &out, &e);
	assert_string_equal(out ? out : "", ""); /* nothing printed for a bad scenario */
	free(out);
	assert_int_equal(rc, KS_EINPUT);
	char want[128];
	snprintf(want, sizeof want, "%s:%d: ", path, line);
	if (strncmp(e.msg, want, strlen(want)) || !strstr(e.msg, needle)) {
		print_error("got '%s', want prefix '%s' and '%s'\n", e.msg, want, needle);
		fail();
	}
}

static void test_scenario_errors_name_file_and_line(void **st)
{
	(void)st;
	expect_error("link a 1e9 0\nflow f 10 0 fg b\n", 2, "unknown link 'b'");
	expect_error("link a 1e9 0\nlink a 1e9 0\n", 2, "defined twice");
	expect_error("\n\nlink a fast 0\n", 3, "capacity 'fast'");
	expect_error("link a 1e9 -5\n", 1, "latency '-5'");
	expect_error("link a 1e9 0\nflow f 1.5 0 fg a\n", 2, "size '1.5'");
	expect_error("link a 1e9 0\nflow f 10 0 mid a\n", 2, "class 'mid'");
	expect_error("link a 1e9 0\nflow f 10 0 fg cap=0 a\n", 2, "cap '0'");
	expect_error("link a 1e9 0\nflow f 10 0 fg speed=3 a\n", 2, "unknown flow option");
	expect_error("link a 1e9 0\nflow f 10 0 fg cap=1e9\n", 2, "crosses no link");
	expect_error("link a 1e9 0\nflow f 10 0\n", 2, "flow needs");
	expect_error("link a 1e9 0\nflow f 10 0 fg a a\n", 2, "twice");
	expect_error("link a 1e9 0\nflow f 10 0 fg a\nflow f 10 0 fg a\n", 3, "defined twice");
	expect_error("share weighted 2\n", 1, "share needs");
	expect_error("background idle_window\n", 1, "background needs");
	expect_error("# ok\nroute a b\n", 2, "unknown directive 'route'");
}

/* Simulated time is int64 ns: a flow that cannot finish by then is an input
 * error on its line, never an overflow reported as out of memory. */
static void test_scenario_time_overflow_names_the_flow_line(void **st)
{
	(void)st;
	/* 100 bytes at 1e-8 B/s: 1e19 ns even alone */
	expect_error("link slow 1e-8 0\nflow f 100 0 fg slow\n", 2,
		     "flow 'f' cannot finish within simulated time");
	/* a start or a latency that alone passes 2^63 ns */
	expect_error("link l 1e9 0\n\nflow f 10 9.3e18 fg l\n", 3, "flow start '9.3e18' is out of range");
	expect_error("link a 1e9 5e18\nlink b 1e9 5e18\nflow f 1 0 fg a b\n", 3,
		     "cannot finish within simulated time");
	expect_error("link a 1e9 0\nflow f 1 0 fg copies=4000000000 overhead=4e9 a\n", 2,
		     "cannot finish within simulated time");
	/* alone each would end at 5e18 ns; sharing the link they would at 1e19 */
	expect_error("link l 2e-8 0\nflow f 100 0 fg l\nflow g 100 0 fg l\n", 2,
		     "flow 'f' cannot finish within simulated time");
	/* no output at all for a failed scenario */
	char *out;
	err_t e = {0};
	assert_int_equal(run("link l 1 0\nflow ok 1 0 fg l\nlink s 1e-8 0\nflow f 100 0 fg s\n",
			     &out, &e),
			 KS_EINPUT);
	assert_string_equal(out, "");
	free(out);
}

/* A whole number too large for its field is "out of range", text that is no
 * whole number is "not a whole number". */
static void test_scenario_numbers_out_of_range_are_not_malformed(void **st)
{
	(void)st;
	expect_error("link a 1e9 0\nflow f 99999999999999999999 0 fg a\n", 2,
		     "flow size '99999999999999999999' is out of range [0, 9223372036854775807]");
	expect_error("link a 1e9 0\nflow f 1e30 0 fg a\n", 2, "flow size '1e30' is out of range");
	expect_error("link a 1e9 1e400\n", 1, "link latency '1e400' is out of range");
	expect_error("link a 1e9 0\nflow f 10 0 fg copies=5e9 a\n", 2,
		     "copies '5e9' is out of range [1, 4294967295]");
	expect_error("link a 1e9 0\nflow f 10 0 fg copies=0 a\n", 2, "copies '0' is out of range");
	expect_error("link a 1e9 0\nflow f 1.5 0 fg a\n", 2,
		     "flow size '1.5' is not a whole number of bytes");
	expect_error("link a 1e9 0x10\n", 1, "link latency '0x10' is not a whole number of ns");
	/* e-notation that is whole is a number like any other */
	char *out;
	err_t e = {0};
	assert_int_equal(run("link a 1e9 1e2\nflow f 2e3 0 fg a\n", &out, &e), 0);
	assert_non_null(strstr(out, "flow f start=0 join=100 finish=2100 bytes=2000 "));
	free(out);
}

/* A background weight of 1e-300 made capacity / weight infinite in the
 * solver, which then froze a capped flow past the end of its list (a crash
 * found by fuzz_net): weights below NET_BG_WEIGHT_MIN, the floor of the
 * network.bg_weight key, are refused on their line; the floor itself runs. */
static void test_tiny_background_weight_is_refused(void **st)
{
	(void)st;
	const char *flows = "link l 2e9 0\nflow b 400 0 bg l\n"
	                    "flow c 5 0 fg cap=0.5e9 copies=2 overhead=10 l\n";
	char text[256];
	snprintf(text, sizeof text, "share weighted 0.251e-300\n%s", flows);
	expect_error(text, 1, "share needs: share strict | share weighted W (0.001<=W<=1)");
	snprintf(text, sizeof text, "share weighted 0.0009\n%s", flows);
	expect_error(text, 1, "share needs");
	snprintf(text, sizeof text, "share weighted 0.001\n%s", flows);
	char *out;
	err_t e = {0};
	assert_int_equal(run(text, &out, &e), 0);
	/* c joins at 20 (2 copies x 10 ns) and moves at its cap: 5 B in 10 ns */
	assert_non_null(strstr(out, "flow c start=0 join=20 finish=30 bytes=5 "));
	assert_non_null(strstr(out, "flow b start=0 join=0 finish="));
	free(out);
}

static void test_net_run_exit_status_is_2_on_bad_input(void **st)
{
	(void)st;
	const char *p = write_scenario("link a 1e9 0\nflow f 10 0 fg nowhere\n");
	char *argv[] = {"net", "run", (char *)p, NULL};
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	int rc = net_cli_main(3, argv);
	fclose(stderr);
	stderr = saved;
	unlink(p);
	assert_int_equal(rc, 2);
	char *argv2[] = {"net", "run", "/nonexistent/scenario", NULL};
	stderr = fopen("/dev/null", "w");
	rc = net_cli_main(3, argv2);
	fclose(stderr);
	stderr = saved;
	assert_int_equal(rc, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scenario_dumbbell_prints_exact_times_and_rates),
		cmocka_unit_test(test_scenario_options_cap_background_and_share),
		cmocka_unit_test(test_scenario_errors_name_file_and_line),
		cmocka_unit_test(test_scenario_time_overflow_names_the_flow_line),
		cmocka_unit_test(test_scenario_numbers_out_of_range_are_not_malformed),
		cmocka_unit_test(test_tiny_background_weight_is_refused),
		cmocka_unit_test(test_net_run_exit_status_is_2_on_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
