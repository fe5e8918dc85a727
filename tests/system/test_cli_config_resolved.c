/* `kvsim config show` ends with comments saying what the engine-default
 * batch limits (0) and compute.calibration = auto resolve to on the
 * configured GPU, as the run resolves them; the comments do not change the
 * config (it loads back to the same digest), and an explicit limit is not
 * listed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/test_main.h"

static void test_show_names_resolved_engine_defaults_and_calibration(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char dir[] = "/tmp/kvsim-cfgres-XXXXXX";
	assert_non_null(mkdtemp(dir));
	cli_result_t r = cli_run(kvsim, dir, "config", "show", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "#   scheduler.max_num_seqs = 0: the engine's default on "
	                              "H100-SXM, 1024\n"));
	assert_non_null(strstr(r.out, "#   scheduler.max_batched_tokens = 0: the engine's default "
	                              "on H100-SXM, 8192\n"));
	assert_non_null(strstr(r.out, "compute terms from: models/calibration/compute-H100-SXM.ini"));
	/* the scheduler named from the run's own (typed) mode */
	assert_non_null(
	    strstr(r.out, "#   compute.allreduce = auto: custom under scheduler.mode = vllm\n"));
	/* the shown text loads back to the config's own digest */
	char path[96];
	snprintf(path, sizeof path, "%s/shown.ini", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(r.out, f);
	fclose(f);
	cli_result_t d0 = cli_run(kvsim, dir, "config", "digest", NULL);
	cli_result_t d1 = cli_run(kvsim, dir, "config", "digest", path, NULL);
	assert_int_equal(d1.status, 0);
	assert_string_equal(d0.out, d1.out);
	/* an explicit limit and no calibration: only the source line, defaults */
	cli_result_t x = cli_run(kvsim, dir, "config", "show", "--set", "scheduler.max_num_seqs=64",
	                         "--set", "compute.calibration=none", "--set", "gpu.name=A100-80GB",
	                         NULL);
	assert_int_equal(x.status, 0);
	assert_null(strstr(x.out, "max_num_seqs = 0:"));
	assert_non_null(strstr(x.out, "max_batched_tokens = 0: the engine's default on A100-80GB"));
	assert_non_null(strstr(x.out, "compute terms from: the built-in defaults"));
	cli_result_t g = cli_run(kvsim, dir, "config", "show", "--set", "scheduler.mode=sglang", NULL);
	assert_int_equal(g.status, 0);
	assert_non_null(
	    strstr(g.out, "#   compute.allreduce = auto: custom under scheduler.mode = sglang\n"));
	cli_result_free(&g);
	cli_result_free(&r);
	cli_result_free(&d0);
	cli_result_free(&d1);
	cli_result_free(&x);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

TEST_MAIN(cmocka_unit_test(test_show_names_resolved_engine_defaults_and_calibration))
