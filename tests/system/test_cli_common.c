/* Tests for sim/run/cli_common.c: recognising CONFIG and --set arguments, and
 * building the resolved config with its error paths (and a trace file
 * given with --set replacing the default experiment's traffic). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"
#include "tests/fixtures/test_main.h"

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
	tmp_write(path, text);
}

/* Loads path (NULL: the default experiment) with n --set lines and checks
 * the trace kind it ends with. */
static void expect_trace_kind(const char *path, const char *const *sets, int n, const char *kind)
{
	cfg_t *c = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(path, sets, n, &c, &e), 0);
	assert_string_equal(cfg_str(c, "trace", "kind"), kind);
	cli_config_free(c);
}

/* A file that sets no key (empty, blank, comments, bare section headers)
 * means what no file means: the built-in default experiment, whose values
 * keep their default-experiment origins. */
static void test_file_setting_no_key_runs_the_default_experiment(void **state)
{
	(void)state;
	static const char *const texts[] = {"", "\n\n", "; only comments\n# and more\n",
	                                    "[cluster]\n[trace]\n"};
	cfg_t *d = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, NULL, 0, &d, &e), 0);
	char dd[65];
	cfg_digest(d, dd);
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		char dir[] = "/tmp/test_cli_common.XXXXXX", path[128];
		write_ini(dir, path, texts[i]);
		cfg_t *c = NULL;
		assert_int_equal(cli_load_config(path, NULL, 0, &c, &e), 0);
		char dc[65];
		cfg_digest(c, dc);
		assert_string_equal(dc, dd);
		assert_string_equal(cfg_str(c, "trace", "kind"), "gen");
		cli_config_free(c);
		/* --set still applies on top, and trace.path replaces the traffic */
		const char *sets[] = {"trace.path=t.jsonl"};
		expect_trace_kind(path, sets, 1, "auto");
		assert_int_equal(tmp_dir_remove(dir), 0);
	}
	/* one key set: that file is the experiment (schema defaults elsewhere) */
	char dir[] = "/tmp/test_cli_common.XXXXXX", path[128];
	write_ini(dir, path, "[experiment]\nseed = 7\n");
	cfg_t *c = NULL;
	assert_int_equal(cli_load_config(path, NULL, 0, &c, &e), 0);
	assert_string_equal(cfg_origin(c, "trace", "kind"), "default");
	cli_config_free(c);
	cli_config_free(d);
	assert_int_equal(tmp_dir_remove(dir), 0);
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
	expect_trace_kind(NULL, empty, 1, "gen");

	char dir[] = "/tmp/test_cli_common.XXXXXX", path[128];
	write_ini(dir, path, "[trace]\nkind = mooncake\n");
	expect_trace_kind(path, sets, 2, "mooncake");
	assert_int_equal(tmp_dir_remove(dir), 0);
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

/* cli_fail and cli_usage_error speak as "kvsim CMD: ...", the usage error
 * with the --help hint, and map codes to exit statuses. */
static void test_errors_speak_as_the_command(void **state)
{
	(void)state;
	FILE *saved = stderr;
	char *buf = NULL;
	size_t len = 0;
	stderr = open_memstream(&buf, &len);
	cli_set_command("trace gen");
	err_t e;
	err_set(&e, KS_EIO, "x.tsv: write error: No space left on device");
	int st1 = cli_fail(&e);
	int st2 = cli_usage_error("unknown option '%s'", "--frob");
	cli_set_command(NULL);
	int st3 = cli_usage_error("unknown command '%s'", "frob");
	fclose(stderr);
	stderr = saved;
	assert_int_equal(st1, 1);
	assert_int_equal(st2, 2);
	assert_int_equal(st3, 2);
	assert_string_equal(buf, "kvsim trace gen: x.tsv: write error: No space left on device\n"
	                         "kvsim trace gen: unknown option '--frob'\n"
	                         "Run 'kvsim trace gen --help' for usage.\n"
	                         "kvsim: unknown command 'frob'\n"
	                         "Run 'kvsim --help' for usage.\n");
	free(buf);
	assert_true(cli_is_help("-h") && cli_is_help("--help"));
	assert_false(cli_is_help("-help") || cli_is_help("help") || cli_is_help(NULL));
}

/* A rule between keys checked when the run is set up names the file and
 * line of whichever of its keys was set last. */
static void test_run_setup_errors_name_the_line_set_last(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_cli_common.XXXXXX", path[128];
	write_ini(dir, path, "[cluster]\ntp = 4\ngpus_per_node = 6\n[trace]\nkind = gen\n");
	cfg_t *c = NULL;
	err_t e = {0};
	sim_results_t r;
	assert_int_equal(cli_load_config(path, NULL, 0, &c, &e), 0);
	assert_int_equal(sim_run(c, NULL, &r, &e), KS_EINPUT);
	char want[256];
	snprintf(want, sizeof want,
	         "%s:3: [cluster] gpus_per_node: tp = 4 does not divide "
	         "gpus_per_node = 6",
	         path);
	assert_string_equal(e.msg, want);
	cli_config_free(c);
	const char *sets[] = {"cluster.tp=5"};
	assert_int_equal(cli_load_config(path, sets, 1, &c, &e), 0);
	assert_int_equal(sim_run(c, NULL, &r, &e), KS_EINPUT);
	assert_string_equal(e.msg, "--set: [cluster] tp: tp = 5 does not divide gpus_per_node = 6");
	cli_config_free(c);
	/* a check on one key in the trace reader gets that key's place */
	tmp_write(path, "[trace]\nkind = gen\nstart_s = 10\nend_s = 5\n");
	assert_int_equal(cli_load_config(path, NULL, 0, &c, &e), 0);
	assert_int_equal(sim_run(c, NULL, &r, &e), KS_EINPUT);
	snprintf(want, sizeof want, "%s:4: [trace] end_s: ", path);
	assert_memory_equal(e.msg, want, strlen(want));
	cli_config_free(c);
	assert_int_equal(tmp_dir_remove(dir), 0);
}

/* ---- the binary: every command in one voice ------------------------------ */

/* Words that follow "kvsim PATH " in the usage lines of help text, and the
 * names listed under a "kinds:" or "commands:" heading: the subcommands. */
static size_t subcommands_of(const char *help, const char *path, char out[][32], size_t cap)
{
	size_t n = 0;
	char pre[96];
	snprintf(pre, sizeof pre, "kvsim %s ", path);
	int in_list = 0;
	for (const char *l = help; *l && n < cap;) {
		size_t len = strcspn(l, "\n");
		const char *u = strstr(l, pre);
		if (u && u < l + len && (!strncmp(l, "usage: ", 7) || !strncmp(l, "       ", 7))) {
			const char *w = u + strlen(pre);
			size_t wl = strspn(w, "abcdefghijklmnopqrstuvwxyz");
			if (wl && wl < 32 && (w[wl] == ' ' || w[wl] == '\n')) {
				memcpy(out[n], w, wl);
				out[n][wl] = '\0';
				int dup = 0;
				for (size_t i = 0; i < n; i++)
					dup |= !strcmp(out[i], out[n]);
				n += !dup;
			}
		}
		if (!strncmp(l, "kinds:", 6) || !strncmp(l, "commands:", 9))
			in_list = 1;
		else if (!len)
			in_list = 0;
		else if (in_list && l[0] == ' ' && l[1] == ' ') {
			const char *w = l + 2;
			size_t wl = strspn(w, "abcdefghijklmnopqrstuvwxyz");
			if (wl && wl < 32) {
				memcpy(out[n], w, wl);
				out[n][wl] = '\0';
				n++;
			}
		}
		l += len + (l[len] == '\n');
	}
	return n;
}

/* PATH --help and -h print the same help on stdout (usage first, the exit
 * status line last) and exit 0; an unknown option exits 2 with "kvsim PATH:
 * ..." naming it and the hint to --help, nothing on stdout. */
static void check_command_shape(const char *kvsim, const char *scratch, const char *path)
{
	const char *argv[8] = {kvsim};
	int n = 1;
	char words[96];
	snprintf(words, sizeof words, "%s", path);
	for (char *sv = NULL, *w = strtok_r(words, " ", &sv); w; w = strtok_r(NULL, " ", &sv))
		argv[n++] = w;
	argv[n + 1] = NULL;
	argv[n] = "--help";
	cli_result_t h = cli_run_argv(kvsim, NULL, scratch, argv);
	argv[n] = "-h";
	cli_result_t h2 = cli_run_argv(kvsim, NULL, scratch, argv);
	argv[n] = "--no-such-option";
	cli_result_t bad = cli_run_argv(kvsim, NULL, scratch, argv);
	const char *end = "\n\n" CLI_EXIT_STATUS;
	size_t lo = strlen(h.out), le = strlen(end);
	if (h.status || strncmp(h.out, "usage: kvsim ", 13) || lo < le ||
	    strcmp(h.out + lo - le, end) || *h.err)
		fail_msg("'kvsim %s --help': exit %d, stdout:\n%s\nstderr:\n%s", path, h.status,
		         h.out, h.err);
	if (h2.status || strcmp(h.out, h2.out))
		fail_msg("'kvsim %s -h' differs from --help", path);
	char head[160], hint[160];
	snprintf(head, sizeof head, "kvsim %s: ", path);
	snprintf(hint, sizeof hint, "\nRun 'kvsim %s --help' for usage.\n", path);
	size_t lb = strlen(bad.err), lh = strlen(hint);
	if (bad.status != 2 || *bad.out || strncmp(bad.err, head, strlen(head)) ||
	    !strstr(bad.err, "'--no-such-option'") || lb < lh || strcmp(bad.err + lb - lh, hint) ||
	    memchr(bad.err, '\n', lb - lh))
		fail_msg("'kvsim %s --no-such-option': exit %d, stderr:\n%s", path, bad.status,
		         bad.err);
	cli_result_free(&h);
	cli_result_free(&h2);
	cli_result_free(&bad);
}

static void test_every_command_has_one_help_and_error_shape(void **state)
{
	(void)state;
	const char *kvsim = cli_kvsim_or_skip();
	char scratch[] = "/tmp/test_cli_voice.XXXXXX";
	assert_non_null(mkdtemp(scratch));
	cli_result_t top = cli_run(kvsim, scratch, "--help", NULL);
	assert_int_equal(top.status, 0);
	char cmds[32][32];
	size_t nc = subcommands_of(top.out, "", cmds, 32), checked = 0;
	assert_true(nc >= 9); /* run config trace net policies sweep runs calibrate bench */
	cli_result_t none = cli_run(kvsim, scratch, "--no-such-option", NULL);
	assert_int_equal(none.status, 2);
	assert_string_equal(none.err, "kvsim: unknown option '--no-such-option'\n"
	                              "Run 'kvsim --help' for usage.\n");
	for (size_t i = 0; i < nc; i++) {
		check_command_shape(kvsim, scratch, cmds[i]);
		checked++;
		cli_result_t h = cli_run(kvsim, scratch, cmds[i], "--help", NULL);
		char subs[32][32];
		size_t ns = subcommands_of(h.out, cmds[i], subs, 32);
		for (size_t j = 0; j < ns; j++) {
			char path[96];
			snprintf(path, sizeof path, "%s %s", cmds[i], subs[j]);
			check_command_shape(kvsim, scratch, path);
			checked++;
		}
		cli_result_free(&h);
	}
	assert_true(checked >= 9 + 16); /* the subcommands of config, trace, net, ... */
	cli_result_free(&top);
	cli_result_free(&none);
	assert_int_equal(tmp_dir_remove(scratch), 0);
}

/* A directory where a file is expected is bad input (exit 2) naming it,
 * wherever a file is read; so is a sweep whose points all fail on bad
 * input. */
static void test_directories_given_as_files_exit_two(void **state)
{
	(void)state;
	const char *kvsim = cli_kvsim_or_skip();
	char d[] = "/tmp/test_cli_voice.XXXXXX";
	assert_non_null(mkdtemp(d));
	char set_gpu[160], set_model[160], set_trace[160], out[160];
	snprintf(set_gpu, sizeof set_gpu, "gpu.file=%s", d);
	snprintf(set_model, sizeof set_model, "model.file=%s", d);
	snprintf(set_trace, sizeof set_trace, "trace.path=%s", d);
	const char *cases[][6] = {
	    {"run", d, NULL},
	    {"config", "show", d, NULL},
	    {"run", "--set", set_gpu, NULL},
	    {"run", "--set", set_model, NULL},
	    {"run", "--set", set_trace, NULL},
	    {"trace", "stats", d, NULL},
	    {"net", "run", d, NULL},
	    {"calibrate", "check", d, d, NULL},
	};
	char want[200];
	snprintf(want, sizeof want, "%s: cannot open: Is a directory", d);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *argv[8] = {kvsim};
		for (int k = 0; cases[i][k]; k++)
			argv[k + 1] = cases[i][k];
		cli_result_t r = cli_run_argv(kvsim, NULL, d, argv);
		if (r.status != 2 || !strstr(r.err, want))
			fail_msg("'kvsim %s %s': exit %d, stderr: %s", cases[i][0], cases[i][1],
			         r.status, r.err);
		cli_result_free(&r);
	}
	snprintf(out, sizeof out, "%s/results", d);
	cli_result_t r = cli_run(kvsim, d, "sweep", "--grid", "cluster.tp=3,5", "-o", out, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "kvsim sweep: 2 point(s) failed"));
	cli_result_free(&r);
	r = cli_run(kvsim, d, "runs", out, "--columns", "error", NULL);
	assert_non_null(strstr(r.out, "--grid: [cluster] tp: tp = 3 does not divide"));
	cli_result_free(&r);
	assert_int_equal(tmp_dir_remove(d), 0);
}

/* A mistyped command or option names the nearest one (the distance the
 * config keys' suggestions use), a subcommand's list when none is near. */
static void test_mistyped_commands_and_options_suggest_the_nearest(void **state)
{
	(void)state;
	const char *kvsim = cli_kvsim_or_skip();
	char scratch[] = "/tmp/test_cli_voice.XXXXXX";
	assert_non_null(mkdtemp(scratch));
	static const struct {
		const char *argv[4], *err;
	} cases[] = {
	    {{"swep"}, "kvsim: unknown command 'swep' (did you mean 'sweep'?)\n"},
	    {{"run", "--sett", "experiment.seed=2"},
	     "kvsim run: unknown option '--sett' (did you mean '--set'?)\n"},
	    {{"run", "--sett=experiment.seed=2"},
	     "kvsim run: unknown option '--sett=experiment.seed=2' (did you mean '--set'?)\n"},
	    {{"sweep", "--gird", "cluster.tp=2,4"},
	     "kvsim sweep: unknown option '--gird' (did you mean '--grid'?)\n"},
	    {{"run", "--trace-event", "x.json"},
	     "kvsim run: unknown option '--trace-event' (did you mean '--trace-events'?)\n"},
	    {{"config", "shwo"}, "kvsim config: unknown subcommand 'shwo' (did you mean 'show'?)\n"},
	    {{"trace", "stat"}, "kvsim trace: unknown command 'stat' (did you mean 'stats'?)\n"},
	    {{"trace", "gen", "poisson", "--sed"},
	     "kvsim trace gen: unknown option '--sed' (did you mean '--seed'?)\n"},
	    {{"--hlep"}, "kvsim: unknown option '--hlep' (did you mean '--help'?)\n"},
	    {{"run", "-x"}, "kvsim run: unknown option '-x'\n"}, /* one letter: no guess */
	    {{"frob"}, "kvsim: unknown command 'frob' (run, config, trace, net, policies, sweep, "
	               "runs, plot, metrics, calibrate, model, validate, bench)\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *argv[6] = {kvsim};
		for (int k = 0; k < 4 && cases[i].argv[k]; k++)
			argv[k + 1] = cases[i].argv[k];
		cli_result_t r = cli_run_argv(kvsim, NULL, scratch, argv);
		if (r.status != 2 || strncmp(r.err, cases[i].err, strlen(cases[i].err)))
			fail_msg("'kvsim %s %s': exit %d, stderr: %s", cases[i].argv[0],
			         cases[i].argv[1] ? cases[i].argv[1] : "", r.status, r.err);
		cli_result_free(&r);
	}
	assert_int_equal(tmp_dir_remove(scratch), 0);
}

TEST_MAIN(cmocka_unit_test(test_cfg_arg_takes_set_forms_and_one_config),
          cmocka_unit_test(test_cfg_arg_errors),
          cmocka_unit_test(test_load_config_defaults_and_free),
          cmocka_unit_test(test_load_config_errors_leave_no_config),
          cmocka_unit_test(test_file_setting_no_key_runs_the_default_experiment),
          cmocka_unit_test(test_trace_path_replaces_default_traffic),
          cmocka_unit_test(test_fail_maps_exit_status),
          cmocka_unit_test(test_errors_speak_as_the_command),
          cmocka_unit_test(test_run_setup_errors_name_the_line_set_last),
          cmocka_unit_test(test_every_command_has_one_help_and_error_shape),
          cmocka_unit_test(test_directories_given_as_files_exit_two),
          cmocka_unit_test(test_mistyped_commands_and_options_suggest_the_nearest))
