/* Tests for sim/cli_common.c: recognising CONFIG and --set arguments, and
 * building the resolved config with its error paths (and a trace file
 * given with --set replacing the default experiment's traffic). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/cli_common.h"

static void test_cfg_arg_takes_set_forms_and_one_config(void **state)
{
	(void)state;
	char *argv[] = {"show", "--set", "a.b=1",   "exp.ini", "--set=c.d=2",
	                "-s",   "e.f=3", "--other", NULL};
	int argc = 8;
	const char *sets[8];
	cli_cfg_args_t a = {.sets = sets};
	err_t e = {0};
	int i = 1;
	assert_int_equal(cli_cfg_arg(&a, argc, argv, &i, &e), 1);
	assert_int_equal(i, 3);
	assert_int_equal(cli_cfg_arg(&a, argc, argv, &i, &e), 1);
	assert_int_equal(i, 4);
	assert_int_equal(cli_cfg_arg(&a, argc, argv, &i, &e), 1);
	assert_int_equal(cli_cfg_arg(&a, argc, argv, &i, &e), 1);
	assert_int_equal(i, 7);
	/* Not ours: left for the subcommand. */
	assert_int_equal(cli_cfg_arg(&a, argc, argv, &i, &e), 0);
	assert_int_equal(i, 7);
	assert_string_equal(a.path, "exp.ini");
	assert_int_equal(a.nsets, 3);
	assert_string_equal(a.sets[0], "a.b=1");
	assert_string_equal(a.sets[1], "c.d=2");
	assert_string_equal(a.sets[2], "e.f=3");
}

static void test_cfg_arg_errors(void **state)
{
	(void)state;
	char *argv[] = {"run", "one.ini", "two.ini", "--set", NULL};
	const char *sets[4];
	cli_cfg_args_t a = {.sets = sets};
	err_t e = {0};
	int i = 1;
	assert_int_equal(cli_cfg_arg(&a, 4, argv, &i, &e), 1);
	assert_int_equal(cli_cfg_arg(&a, 4, argv, &i, &e), KS_EINPUT);
	assert_string_equal(e.msg, "more than one CONFIG given ('one.ini', 'two.ini')");
	i = 3;
	assert_int_equal(cli_cfg_arg(&a, 4, argv, &i, &e), KS_EINPUT);
	assert_string_equal(e.msg, "--set needs SECTION.KEY=VALUE");
}

static void test_load_config_defaults_and_free(void **state)
{
	(void)state;
	cfg_t *c = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, NULL, 0, &c, &e), 0);
	assert_non_null(c);
	char *t = cfg_text(c);
	assert_non_null(t);
	free(t);
	cli_config_free(c);
	cli_config_free(NULL);
}

static void test_load_config_errors_leave_no_config(void **state)
{
	(void)state;
	cfg_t *c = (cfg_t *)1;
	err_t e = {0};
	const char *sets[] = {"zzzz_no_such.key=1"};
	assert_int_equal(cli_load_config(NULL, sets, 1, &c, &e), KS_EINPUT);
	assert_null(c);
	assert_string_equal(e.msg, "--set: [zzzz_no_such] key: unknown section");
	assert_int_equal(cli_load_config("/nonexistent/x.ini", NULL, 0, &c, &e), KS_EINPUT);
	assert_null(c);
	assert_string_equal(e.msg, "/nonexistent/x.ini: cannot open: No such file or directory");
	const char *bad[] = {"nodot"};
	assert_int_equal(cli_load_config(NULL, bad, 1, &c, &e), KS_EINPUT);
	assert_string_equal(e.msg, "--set: 'nodot': expected SECTION.KEY=VALUE");
}

/* Makes the temporary directory dir (a mkdtemp template) and writes text
 * to dir/e.ini, whose name goes to path (128 bytes). */
static void write_ini(char *dir, char *path, const char *text)
{
	assert_non_null(mkdtemp(dir));
	snprintf(path, 128, "%s/e.ini", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_load_config_reads_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_cli_common.XXXXXX", path[128];
	write_ini(dir, path, "; only comments: every key keeps its default\n");
	cfg_t *c = NULL, *d = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(path, NULL, 0, &c, &e), 0);
	assert_int_equal(cli_load_config(NULL, NULL, 0, &d, &e), 0);
	char dc[65], dd[65];
	cfg_digest(c, dc);
	cfg_digest(d, dd);
	/* Equal unless the built-in default experiment changes something. */
	const cfg_schema_t *s = cfg_schema(d);
	int same = 1;
	for (size_t i = 0; i < cfg_schema_count(s); i++) {
		const cfg_key_t *k = cfg_schema_key(s, i);
		if (strcmp(cfg_origin(d, k->section, k->name), "default"))
			same = 0;
	}
	if (same)
		assert_string_equal(dc, dd);
	cli_config_free(c);
	cli_config_free(d);
	unlink(path);
	rmdir(dir);
}

/* --set trace.path on the default experiment reads that file: the
 * experiment's generated [trace] section is left out (every trace key back
 * at its schema default), the rest of the experiment stays, and an explicit
 * trace key still applies. A CONFIG file keeps its own [trace]. */
static void test_trace_path_replaces_default_traffic(void **state)
{
	(void)state;
	cfg_t *c = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, NULL, 0, &c, &e), 0);
	assert_string_equal(cfg_str(c, "trace", "kind"), "gen");
	int64_t nodes = cfg_int(c, "cluster", "nodes");
	cli_config_free(c);

	const char *sets[] = {"trace.path = t.jsonl.gz", "trace.trace_block_tokens=256"};
	assert_int_equal(cli_load_config(NULL, sets, 2, &c, &e), 0);
	assert_string_equal(cfg_str(c, "trace", "path"), "t.jsonl.gz");
	const cfg_schema_t *s = cfg_schema(c);
	for (size_t i = 0; i < cfg_schema_count(s); i++) {
		const cfg_key_t *k = cfg_schema_key(s, i);
		if (!strcmp(k->section, "trace") && strcmp(k->name, "path") &&
		    strcmp(k->name, "trace_block_tokens"))
			assert_string_equal(cfg_origin(c, "trace", k->name), "default");
	}
	assert_string_equal(cfg_str(c, "trace", "kind"), "auto");
	assert_int_equal(cfg_int(c, "trace", "trace_block_tokens"), 256);
	assert_int_equal(cfg_int(c, "cluster", "nodes"), nodes);
	assert_string_not_equal(cfg_origin(c, "cluster", "nodes"), "default");
	cli_config_free(c);

	const char *empty[] = {"trace.path="};
	assert_int_equal(cli_load_config(NULL, empty, 1, &c, &e), 0);
	assert_string_equal(cfg_str(c, "trace", "kind"), "gen");
	cli_config_free(c);

	char dir[] = "/tmp/test_cli_common.XXXXXX", path[128];
	write_ini(dir, path, "[trace]\nkind = mooncake\n");
	assert_int_equal(cli_load_config(path, sets, 2, &c, &e), 0);
	assert_string_equal(cfg_str(c, "trace", "kind"), "mooncake");
	cli_config_free(c);
	unlink(path);
	rmdir(dir);
}

static void test_fail_maps_exit_status(void **state)
{
	(void)state;
	err_t e = {0};
	FILE *saved = stderr;
	char *buf = NULL;
	size_t len = 0;
	stderr = open_memstream(&buf, &len);
	err_set(&e, KS_EINPUT, "f.ini:3: [a] b: bad");
	int st2 = cli_fail(&e);
	err_set(&e, KS_EIO, "disk");
	int st1 = cli_fail(&e);
	fclose(stderr);
	stderr = saved;
	assert_int_equal(st2, 2);
	assert_int_equal(st1, 1);
	assert_string_equal(buf, "kvsim: f.ini:3: [a] b: bad\nkvsim: disk\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cfg_arg_takes_set_forms_and_one_config),
	    cmocka_unit_test(test_cfg_arg_errors),
	    cmocka_unit_test(test_load_config_defaults_and_free),
	    cmocka_unit_test(test_load_config_errors_leave_no_config),
	    cmocka_unit_test(test_load_config_reads_file),
	    cmocka_unit_test(test_trace_path_replaces_default_traffic),
	    cmocka_unit_test(test_fail_maps_exit_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
