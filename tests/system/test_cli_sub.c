/* Tests of sim/cli/cli_sub.c: a subcommand table's lookup, dispatch and listing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim/base/cli_voice.h"
#include "sim/cli/cli_sub.h"

static int seen_argc;
static const char *seen_argv0, *seen_cmd;

static int sub_ok(int argc, char **argv)
{
	seen_argc = argc;
	seen_argv0 = argv[0];
	seen_cmd = cli_command();
	return 0;
}

static int sub_fails(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 1;
}

static int usage_calls;
static void usage(FILE *f)
{
	(void)f;
	usage_calls++;
}

/* Each test starts with nothing recorded and leaves the CLI voice plain. */
static int reset(void **state)
{
	(void)state;
	seen_argc = usage_calls = 0;
	seen_argv0 = seen_cmd = NULL;
	cli_set_command(NULL);
	return 0;
}

static const cli_sub_t subs[] = {
	{"alpha", sub_ok, "first row"},
	{"beta", sub_fails, "second row"},
};
#define N_SUBS (sizeof subs / sizeof subs[0])

static void test_known_row_runs_with_argv_shifted_and_command_named(void **st)
{
	(void)st;
	char *argv[] = {"tool", "alpha", "x", "y"};
	assert_int_equal(cli_sub_main("tool", subs, N_SUBS, usage, 4, argv), 0);
	assert_int_equal(seen_argc, 3);
	assert_string_equal(seen_argv0, "alpha");
	assert_string_equal(seen_cmd, "tool alpha");
	char *argv2[] = {"tool", "beta"};
	assert_int_equal(cli_sub_main("tool", subs, N_SUBS, usage, 2, argv2), 1);
	assert_ptr_equal(cli_sub_find(subs, N_SUBS, "beta"), &subs[1]);
	assert_null(cli_sub_find(subs, N_SUBS, "gamma"));
	assert_int_equal(cli_sub_run(&subs[0], NULL, 2, argv), 0);
	assert_string_equal(seen_cmd, "alpha");
}

static void test_missing_or_unknown_row_is_a_usage_error_and_help_prints_usage(void **st)
{
	(void)st;
	char *none[] = {"tool"};
	assert_int_equal(cli_sub_main("tool", subs, N_SUBS, usage, 1, none), 2);
	char *unknown[] = {"tool", "gamma"};
	assert_int_equal(cli_sub_main("tool", subs, N_SUBS, usage, 2, unknown), 2);
	char *help[] = {"tool", "--help"};
	assert_int_equal(cli_sub_main("tool", subs, N_SUBS, usage, 2, help), 0);
	assert_int_equal(usage_calls, 1);
}

static void test_usage_lists_every_row_between_head_and_tail(void **st)
{
	(void)st;
	char buf[512] = {0};
	FILE *f = fmemopen(buf, sizeof buf - 1, "w");
	assert_non_null(f);
	cli_sub_usage(f, "HEAD\n", subs, N_SUBS, "TAIL\n");
	fclose(f);
	const char *a = strstr(buf, "  alpha      first row\n");
	const char *b = strstr(buf, "  beta       second row\n");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(strstr(buf, "HEAD\n") == buf && a < b && strstr(buf, "TAIL\n") > b);
	assert_non_null(strstr(buf, CLI_EXIT_STATUS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_known_row_runs_with_argv_shifted_and_command_named, reset, reset),
		cmocka_unit_test_setup_teardown(
		    test_missing_or_unknown_row_is_a_usage_error_and_help_prints_usage, reset, reset),
		cmocka_unit_test_setup_teardown(test_usage_lists_every_row_between_head_and_tail, reset,
						reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
