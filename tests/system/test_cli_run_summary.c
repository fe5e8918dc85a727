/* What `kvsim run` prints and exports (sim/cli/cli_run.c, cli_runs.c): a
 * summary that names what ran (workload, deployment, policies) and gives
 * each value in a unit and to the digits a reader takes in (%, GB/TB, 4
 * significant digits); `kvsim run --json`, the same summary as JSON with
 * every metric; `kvsim runs export ID --csv DIR`, a run's tables as CSV.
 * The binary is $KVSIM (or build/kvsim); the tests skip without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

/* A short default experiment that copies KV (bytes to show). */
#define SHORT "--set", "trace.fanout_bursts=3", "--set", "policy.replication.name=full"

/* The value text of the summary row whose label (after its indent) is
 * label, into val (n bytes). */
static void row_value(const char *out, const char *label, char *val, size_t n)
{
	char want[96];
	snprintf(want, sizeof want, "\n  %s  ", label);
	const char *l = strstr(out, want);
	if (!l)
		fail_msg("no row '%s' in:\n%s", label, out);
	l += strlen(want);
	l += strspn(l, " ");
	snprintf(val, n, "%.*s", (int)strcspn(l, "\n"), l);
}

/* Significant digits of a plain decimal number's text. */
static int sig_digits(const char *v)
{
	int n = 0, lead = 1;
	for (const char *p = v; *p; p++) {
		if (!isdigit((unsigned char)*p))
			continue;
		if (*p == '0' && lead)
			continue;
		lead = 0;
		n++;
	}
	return n;
}

/* The header names the workload, deployment and policies; shares are
 * percentages, bytes in GB or TB, latencies to 4 significant digits, and
 * no number runs to 12 digits (bytes printed raw). */
static void test_summary_names_what_ran_with_units_and_digits(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", SHORT, NULL);
	assert_int_equal(r.status, 0);
	const char *want[] = {
	    "\n  workload    gen:fanout: ",
	    " requests, offered ",
	    "\n  deployment  4 nodes x 8 H100-SXM, Llama-3-70B at TP 4 (8 instances), preset "
	    "none\n",
	    "\n  policies    routing least_load, replication full, predictor repeat_count, "
	    "eviction lru, transfer immediate, admission accept_all, fetch never\n",
	    "\n  TBT p99 of per-request p90s (ms) (completed)  ",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (!strstr(r.out, want[i]))
			fail_msg("'%s' missing from:\n%s", want[i], r.out);
	char v[64];
	row_value(r.out, "SLO attainment (TTFT and TPOT) (%)", v, sizeof v);
	assert_true(atof(v) > 1 && atof(v) <= 100);
	row_value(r.out, "TTFT p99 (ms)", v, sizeof v);
	assert_true(sig_digits(v) <= 4);
	assert_true(strstr(r.out, "bytes copied, background (TB)  ") ||
	            strstr(r.out, "bytes copied, background (GB)  "));
	for (const char *p = r.out; *p; p++) /* no raw byte counts */
		assert_false(isdigit((unsigned char)*p) && strspn(p, "0123456789") >= 12);
	cli_result_free(&r);
}

/* Each part of the header comes from its own setting: every one set away
 * from its default (and from the others' values), so a field read from the
 * wrong key or enum shows. */
static void test_header_names_each_setting(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	cli_result_t r = cli_run(
	    kvsim, tmp_dir, "run", "--set", "trace.fanout_bursts=1", "--set", "cluster.nodes=2",
	    "--set", "cluster.gpus_per_node=4", "--set", "cluster.tp=2", "--set", "gpu.name=H200",
	    "--set", "model.name=Llama-3-8B", "--set", "policy.preset=vllm", "--set",
	    "policy.routing.name=random", "--set", "policy.replication.name=speculative", "--set",
	    "policy.predictor.name=oracle", "--set", "policy.eviction.name=lfu", "--set",
	    "policy.transfer.name=idle_window", "--set", "policy.admission.name=slo_reject",
	    "--set", "kvcache.fetch=cost", "--set", "cluster.disagg=true", "--set",
	    "cluster.prefill_nodes=1", "--set", "cluster.decode_nodes=1", "--set",
	    "experiment.seed=7", "--set", "experiment.name=named", NULL);
	assert_int_equal(r.status, 0);
	const char *want[] = {
	    "kvsim run: named (seed 7, trace gen:fanout)\n",
	    "\n  deployment  2 nodes x 4 H200, Llama-3-8B at TP 2 (4 instances), preset vllm, "
	    "prefill and decode disaggregated\n",
	    "\n  policies    routing random, replication speculative, predictor oracle, eviction "
	    "lfu, transfer idle_window, admission slo_reject, fetch cost\n",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (!strstr(r.out, want[i]))
			fail_msg("'%s' missing from:\n%s", want[i], r.out);
	cli_result_free(&r);
}

/* --json: one object with what ran, every metric (whole ones as integers,
 * +inf as "inf") and its unit, the run's id and file with -o. */
static void test_json_summary_holds_every_metric(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char out[128];
	snprintf(out, sizeof out, "%s/json", tmp_dir);
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", "--json", "-o", out, SHORT, "--set",
	                         "experiment.max_pending=1", NULL);
	assert_int_equal(r.status, 0);
	json_error_t je;
	json_t *o = json_loads(r.out, 0, &je);
	if (!o)
		fail_msg("not JSON (%s):\n%s", je.text, r.out);
	json_t *m = json_object_get(o, "metrics"), *u = json_object_get(o, "units");
	assert_true(json_is_integer(json_object_get(m, "requests")));
	assert_true(json_integer_value(json_object_get(m, "requests")) > 0);
	assert_true(json_is_real(json_object_get(m, "offered_rps")));
	assert_string_equal(json_string_value(json_object_get(m, "ttft_p99_ms")), "inf");
	assert_string_equal(json_string_value(json_object_get(u, "ttft_p99_ms")), "ms");
	assert_true(json_object_size(m) > 50 && json_object_size(m) == json_object_size(u));
	assert_string_equal(json_string_value(json_object_get(o, "trace")), "gen:fanout");
	assert_int_equal(json_integer_value(json_object_get(o, "seed")), 1);
	const char *id = json_string_value(json_object_get(o, "id"));
	assert_non_null(id);
	assert_int_equal(strlen(id), 64);
	const char *file = json_string_value(json_object_get(o, "results"));
	assert_non_null(file);
	assert_int_equal(access(file, R_OK), 0);
	assert_non_null(
	    strstr(json_string_value(json_object_get(o, "policies")), "replication full"));
	json_decref(o);
	cli_result_free(&r);
}

/* The number of lines of file dir/name (-1: none). */
static int lines_of(const char *dir, const char *name, char *first, size_t n)
{
	char p[400], line[4096];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	int k = 0;
	while (fgets(line, sizeof line, f))
		if (k++ == 0 && first)
			snprintf(first, n, "%.*s", (int)strcspn(line, "\n"), line);
	fclose(f);
	return k;
}

/* runs export: one CSV per table, a header and one line per row, the
 * summary's metrics and the config; a run that is not done has nothing to
 * export, and --parquet says there is no writer. */
static void test_export_writes_a_runs_tables_as_csv(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char out[128], csv[160], head[4096];
	snprintf(out, sizeof out, "%s/exp", tmp_dir);
	snprintf(csv, sizeof csv, "%s/csv/deep", out);
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", "--json", "-o", out, SHORT, NULL);
	assert_int_equal(r.status, 0);
	json_t *o = json_loads(r.out, 0, NULL);
	assert_non_null(o);
	char id[17];
	snprintf(id, sizeof id, "%.16s", json_string_value(json_object_get(o, "id")));
	json_int_t n_req =
	    json_integer_value(json_object_get(json_object_get(o, "metrics"), "requests"));
	json_decref(o);
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "runs", "export", id, out, "--csv", csv, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "requests.csv ("));
	cli_result_free(&r);
	assert_int_equal(lines_of(csv, "requests.csv", head, sizeof head), (int)n_req + 1);
	assert_memory_equal(head, "id,arrival_ns,instance,status,ttft_ns,", 37);
	assert_true(lines_of(csv, "transfers.csv", head, sizeof head) > 1);
	assert_memory_equal(head, "id,src_instance,src_gpu,dst_instance,dst_gpu,bytes,", 50);
	assert_true(lines_of(csv, "timeline.csv", NULL, 0) > 1);
	assert_true(lines_of(csv, "summary.csv", head, sizeof head) > 50);
	assert_string_equal(head, "metric,unit,value");
	assert_true(lines_of(csv, "config.ini", head, sizeof head) > 10);
	assert_string_equal(head, "[experiment]");
	assert_int_equal(lines_of(csv, "decisions.csv", NULL, 0), -1); /* not recorded */
	r = cli_run(kvsim, tmp_dir, "runs", "export", id, out, "--parquet", csv, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no Parquet writer"));
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "runs", "export", "ffff", out, "--csv", csv, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no run id starts with 'ffff'"));
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_summary_names_what_ran_with_units_and_digits),
	    cmocka_unit_test(test_header_names_each_setting),
	    cmocka_unit_test(test_json_summary_holds_every_metric),
	    cmocka_unit_test(test_export_writes_a_runs_tables_as_csv),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}
