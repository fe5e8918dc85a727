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

#include "tests/test_main.h"
#include "tests/tmp_fixture.h"

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
	if (tmp_sh("%s run " SETS " -o %s/none > %s/none.txt 2>/dev/null", k, tmpdir, tmpdir) ||
	    tmp_sh("%s run " SETS " --set policy.replication.name=speculative -o %s/spec "
	           "> %s/spec.txt 2>/dev/null",
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

/* The number ending the line of file name (in tmpdir) that starts, after
 * blanks, with label. */
static double summary_value(const char *name, const char *label)
{
	char path[128], line[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	double v = NAN;
	while (fgets(line, sizeof line, f)) {
		const char *p = line + strspn(line, " ");
		if (!strncmp(p, label, strlen(label))) {
			const char *end = line + strlen(line);
			while (end > line && (end[-1] == '\n' || end[-1] == ' '))
				end--;
			while (end > line && end[-1] != ' ')
				end--;
			v = atof(end);
			break;
		}
	}
	fclose(f);
	assert_false(isnan(v));
	return v;
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
	double n = summary_value("spec.txt", "completed");
	assert_true(n == summary_value("none.txt", "completed"));
	assert_true(summary_value("spec.txt", "rejected") == 0);
	assert_true(field("routes") == n);
	double hinted = field("hinted");
	assert_true(hinted > 0);
	assert_true(hinted == summary_value("spec.txt", "requests placed by the routing hint"));
	double d = n *
	           (summary_value("spec.txt", "TTFT mean (ms)") -
	            summary_value("none.txt", "TTFT mean (ms)")) /
	           1e3;
	printf("TTFT change summed: script %.1f s, from the means %.2f s\n", field("dttft_s"), d);
	assert_true(fabs(field("dttft_s") - d) <= 0.06); /* the script rounds to 0.1 s */
	assert_true(field("onto_pending") >= 0 && field("onto_pending") <= n);
	assert_true(field("groups") >= 0);
}

TEST_MAIN_FIXTURE(setup, teardown, cmocka_unit_test(test_counts_agree_with_the_runs_summaries))
