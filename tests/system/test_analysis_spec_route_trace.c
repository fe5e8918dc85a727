/* analysis/study/spec_route_trace.py on two runs the group setup makes
 * (the default experiment under the llm-d preset, decision trace on,
 * replication none and speculative with the oracle): its counts agree with
 * the runs' own summaries (hinted routes = spec.hint_routed, routes =
 * completed requests, the summed TTFT change = the change of the mean x
 * the requests). Skipped when /usr/bin/python3 lacks h5py or numpy, or when
 * no kvsim binary is built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <jansson.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[64];
static int ready;

#define SETS                                                                                       \
	"--set policy.preset=llm-d --set policy.predictor.name=oracle --set output.decisions=true " \
	"--no-progress"

static int setup(void **st)
{
	(void)st;
	const char *k = tmp_kvsim_with_python("h5py, numpy");
	if (!k)
		return 0; /* tests skip */
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_srt_XXXXXX"))
		return -1;
	if (tmp_sh("%s run " SETS " -o %s/none --json > %s/none.json 2>/dev/null", k, tmpdir,
	           tmpdir) ||
	    tmp_sh("%s run " SETS " --set policy.replication.name=speculative -o %s/spec "
	           "--json > %s/spec.json 2>/dev/null",
	           k, tmpdir, tmpdir) ||
	    tmp_sh("/usr/bin/python3 analysis/study/spec_route_trace.py %s/none/runs/*.h5 "
	           "%s/spec/runs/*.h5 > %s/out.txt",
	           tmpdir, tmpdir, tmpdir))
		return -1;
	ready = 1;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return tmpdir[0] ? tmp_dir_remove(tmpdir) : 0;
}

/* Metric `metric` of the run whose `kvsim run --json` summary is file name
 * (in tmpdir). */
static double summary_value(const char *name, const char *metric)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	json_error_t je;
	json_t *o = json_load_file(path, 0, &je);
	if (!o)
		fail_msg("%s: %s", path, je.text);
	json_t *v = json_object_get(json_object_get(o, "metrics"), metric);
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	json_decref(o);
	assert_false(isnan(x));
	return x;
}

/* The value of key=... on the script's line. */
static double field(const char *key)
{
	char path[128], line[2048], pat[64];
	snprintf(path, sizeof path, "%s/out.txt", tmpdir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof line, f));
	fclose(f);
	snprintf(pat, sizeof pat, " %s=", key);
	const char *p = strstr(line, pat);
	assert_non_null(p);
	return atof(p + strlen(pat));
}

static void test_counts_agree_with_the_runs_summaries(void **st)
{
	(void)st;
	if (!ready)
		skip();
	double n = summary_value("spec.json", "completed");
	assert_true(n == summary_value("none.json", "completed"));
	assert_true(summary_value("spec.json", "rejected") == 0);
	assert_true(field("routes") == n);
	double hinted = field("hinted");
	assert_true(hinted > 0);
	assert_true(hinted == summary_value("spec.json", "spec.hint_routed"));
	double d = n *
	           (summary_value("spec.json", "ttft_completed_mean_ms") -
	            summary_value("none.json", "ttft_completed_mean_ms")) /
	           1e3;
	printf("TTFT change summed: script %.1f s, from the means %.2f s\n", field("dttft_s"), d);
	assert_true(fabs(field("dttft_s") - d) <= 0.06); /* the script rounds to 0.1 s */
	assert_true(field("onto_pending") >= 0 && field("onto_pending") <= n);
	assert_true(field("groups") >= 0);
}

TEST_MAIN_FIXTURE(setup, teardown, cmocka_unit_test(test_counts_agree_with_the_runs_summaries))
