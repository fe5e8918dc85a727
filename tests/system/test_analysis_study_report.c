/* Tests for analysis/study_report.py and the loader, mean_ci and pair_gain
 * of analysis/kvsim_results.py, on a tiny study the group setup makes with
 * `kvsim sweep` on the default experiment (5 s of traffic): E1's heatmap
 * (presets none and mooncake x replication none/speculative x oracle recall
 * 0.3, 1 x FP rate 0, 2) and its gamma panel (trace CV 1, 20); E2 three
 * policies x two rate scales; E5 the preset btb with three switches lifted
 * one at a time and all together, labelled by experiment.name as
 * analysis/study/e5_lift.sweep does; E8 replication none/speculative x
 * predictor oracle/repeat_count with the oracle bound at a 0.2 GB/s copy
 * budget; E1's runs carry the bound too; E3 skipped, E4 and E7 absent (E7's
 * figure is checked on a synthetic frame, as its keys may be missing from
 * kvsim). The checks recompute what
 * they compare from the catalog and run files (tests/system/check_study_report.py).
 * Skipped when /usr/bin/python3 lacks h5py, pandas or matplotlib, or when
 * no kvsim binary is built. */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[256], out[300];

static int setup(void **st)
{
	(void)st;
	const char *k = tmp_kvsim_with_python("h5py, pandas, matplotlib");
	if (!k)
		return 0; /* tests skip */
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_study_XXXXXX"))
		return -1;
	snprintf(out, sizeof out, "%s/study", tmpdir);
	const char *common = "--set trace.duration_s=5 --seeds 2 -j 2 --no-progress";
	FILE *f;
	int rc = tmp_sh("%s sweep %s --set policy.predictor.name=oracle "
	            "--grid experiment.name=heatmap --grid policy.preset=none,mooncake "
	            "--grid policy.replication.name=none,speculative "
	            "--grid policy.predictor.oracle_recall=0.3,1 "
	            "--grid policy.predictor.oracle_fp_rate=0,2 --set output.oracle_bound=true "
	            "-o %s/e1_breakeven >/dev/null 2>&1",
	            k, common, out) ||
	         /* one axis panel beside the heatmap (axes.png) */
	         tmp_sh("%s sweep %s --set policy.predictor.name=oracle "
	            "--grid experiment.name=gamma --grid policy.preset=none "
	            "--grid policy.replication.name=none,speculative --grid trace.gen=gamma "
	            "--grid trace.cv=1,20 -o %s/e1_breakeven >/dev/null 2>&1",
	            k, common, out) ||
	         tmp_sh("%s sweep %s --grid policy.replication.name=none,speculative,early_rdma "
	            "--grid trace.rate_scale=0.5,1 -o %s/e2_traces >/dev/null 2>&1",
	            k, common, out) ||
	         /* published, each of three switches lifted, all lifted */
	         tmp_sh("%s sweep %s --set policy.preset=btb "
	            "--grid policy.replication.name=none,early_rdma "
	            "--zip experiment.name=btb,lift_network.contention,lift_compute.model,"
	            "lift_scheduler.ttft,all_off "
	            "--zip network.contention=none,maxmin,none,none,maxmin "
	            "--zip compute.model=linear,linear,roofline,linear,roofline "
	            "--zip scheduler.ttft=prefill_end,prefill_end,prefill_end,first_token,first_token "
	            "-o %s/e5_lift >/dev/null 2>&1",
	            k, common, out) ||
	         /* each policy with its oracle twin, the bound within its copy budget */
	         tmp_sh("%s sweep %s --set output.oracle_bound=true --set output.bound_bw_gbps=0.2 "
	            "--set policy.replication.spec_bw_gbps=0.2 "
	            "--grid policy.replication.name=none,speculative "
	            "--grid policy.predictor.name=oracle,repeat_count -o %s/e8_oracle_gap "
	            ">/dev/null 2>&1",
	            k, common, out);
	if (rc)
		return -1;
	char path[400];
	snprintf(path, sizeof path, "%s/study.json", out);
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, "{\"size\": \"tiny\", \"revision\": \"test\", \"experiments\": {"
	           "\"e1_breakeven\": {\"commands\": [\"kvsim sweep ...\"], \"skipped\": null},"
	           "\"e2_traces\": {\"commands\": [], \"skipped\": null},"
	           "\"e3_interference\": {\"commands\": [], \"skipped\": \"no trace here\"},"
	           "\"e5_lift\": {\"commands\": [], \"skipped\": null},"
	           "\"e8_oracle_gap\": {\"commands\": [], \"skipped\": null}}}\n");
	fclose(f);
	return tmp_sh("/usr/bin/python3 analysis/study_report.py %s --figures %s/copied >/dev/null", out,
	          out)
	               ? -1
	               : 0;
}

static int teardown(void **st)
{
	(void)st;
	return *tmpdir ? tmp_dir_remove(tmpdir) : 0;
}

static void check(const char *what)
{
	if (!*tmpdir)
		skip();
	assert_int_equal(tmp_sh("/usr/bin/python3 tests/system/check_study_report.py %s %s", out, what), 0);
}

/* The figures exist as PNG in fig/ and in the --figures copy, the
 * report shows each, and names the skipped and the absent experiment. */
static void test_report_draws_every_figure_and_names_missing_experiments(void **st)
{
	(void)st;
	check("figures");
}

/* Each table cell (mean ± 95% CI over seeds) equals the one recomputed from
 * the catalog's rows, and each configuration of the catalog has its row. */
static void test_report_tables_come_from_the_catalog(void **st)
{
	(void)st;
	check("tables");
}

/* load() of a directory, of run files and with requests=True: the rows,
 * parameters, metrics and joined per-request rows of the catalog/files. */
static void test_loader_returns_catalog_rows_and_joined_requests(void **st)
{
	(void)st;
	check("loader");
}

/* The heatmap's best cell against the best fair baseline, as the report
 * states it under breakeven.png, is the one recomputed from the catalog
 * (per seed: best speculative preset of the cell vs best replication-none
 * run of any preset). */
static void test_breakeven_best_cell_is_best_speculative_vs_best_fair_baseline(void **st)
{
	(void)st;
	check("breakeven");
}

/* The waterfall's pooled mean TTFT per policy and variant, as the report
 * states it under lift.png, is the mean over the /requests of the run
 * files of that experiment.name. */
static void test_lift_waterfall_pools_requests_by_experiment_name(void **st)
{
	(void)st;
	check("lift");
}

/* axes.png's largest gain, as the report states it, is the mean over seeds
 * of speculative against the same preset's none at equal trace CV. */
static void test_axes_largest_gain_is_speculative_vs_own_preset(void **st)
{
	(void)st;
	check("axes");
}

/* The CDF shows the trace where the policies' p95 differ the most,
 * recomputed from the catalog, and its labels carry no raw nan/None. */
static void test_cdf_shows_the_trace_where_policies_differ_most(void **st)
{
	(void)st;
	check("cdf");
}

/* oracle_gap.png's smallest and largest gap per policy, as the report
 * states them, are the means over seeds of bound.place_hit_rate_blocks -
 * hit_rate_blocks from the catalog, with the misprediction share the
 * oracle twin's hit rate minus the run's. */
static void test_oracle_gap_splits_each_policys_gap_with_its_oracle_twin(void **st)
{
	(void)st;
	check("oracle_gap");
}

/* staleness.png on a synthetic E7 frame (the view.* metrics): drawn, its
 * text names the worst p95 and misrouted share of each column, and a frame
 * without the metrics (or no E7 at all) is one line saying so. */
static void test_staleness_figure_on_a_synthetic_catalog(void **st)
{
	(void)st;
	check("staleness");
}

/* mean_ci against a hand computation and against the catalog's seeds. */
static void test_mean_ci_is_student_t_over_seeds(void **st)
{
	(void)st;
	check("mean_ci");
}

/* pair_gain pairs by seed with the best baseline at equal parameters. */
static void test_pair_gain_pairs_each_seed_with_its_best_baseline(void **st)
{
	(void)st;
	check("pair_gain");
}

/* The report refuses a directory that does not exist (no half-written
 * report), and a study with no catalog at all still writes one that says so. */
static void test_report_of_empty_study_names_every_experiment_missing(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	assert_int_not_equal(tmp_sh("/usr/bin/python3 analysis/study_report.py %s/nope 2>/dev/null",
	                        tmpdir),
	                     0);
	assert_int_equal(tmp_sh("mkdir -p %s/empty && /usr/bin/python3 analysis/study_report.py "
	                    "%s/empty >/dev/null 2>&1",
	                    tmpdir, tmpdir),
	                 0);
	assert_int_equal(tmp_sh("test $(grep -c 'absent (no e._[a-z]*/catalog.sqlite)' "
	                    "%s/empty/REPORT.md) -ge 10",
	                    tmpdir),
	                 0);
}

TEST_MAIN_FIXTURE(setup, teardown,
                  cmocka_unit_test(test_report_draws_every_figure_and_names_missing_experiments),
                  cmocka_unit_test(test_report_tables_come_from_the_catalog),
                  cmocka_unit_test(test_loader_returns_catalog_rows_and_joined_requests),
                  cmocka_unit_test(test_mean_ci_is_student_t_over_seeds),
                  cmocka_unit_test(test_breakeven_best_cell_is_best_speculative_vs_best_fair_baseline),
                  cmocka_unit_test(test_lift_waterfall_pools_requests_by_experiment_name),
                  cmocka_unit_test(test_axes_largest_gain_is_speculative_vs_own_preset),
                  cmocka_unit_test(test_cdf_shows_the_trace_where_policies_differ_most),
                  cmocka_unit_test(test_pair_gain_pairs_each_seed_with_its_best_baseline),
                  cmocka_unit_test(test_oracle_gap_splits_each_policys_gap_with_its_oracle_twin),
                  cmocka_unit_test(test_staleness_figure_on_a_synthetic_catalog),
                  cmocka_unit_test(test_report_of_empty_study_names_every_experiment_missing))
