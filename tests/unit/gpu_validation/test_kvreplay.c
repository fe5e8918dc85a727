/* Tests for kvreplay and `kvsim calibrate` as programs: the host backend
 * replays a plan and a run schedule end to end (plan -> replay -> fit ->
 * check), the CUDA backend exists when nvcc does and skips cleanly (exit 77,
 * "SKIP: reason") without a GPU, and --compute works on the host. Binaries
 * come from $BUILD (default build/) and $KVSIM; copies stay a few MB. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu_validation/gv_meas.h"
#include "gpu_validation/gv_sched.h"
#include "models/mdl.h"
#include "models/mdl_xfer.h"
#include "tests/fixtures/tmp_fixture.h"

static char dir[64], build[1024], kvsim[1100], kvreplay[1100];
static char out[65536];

static int setup(void **state)
{
	(void)state;
	const char *b = getenv("BUILD"), *k = getenv("KVSIM");
	snprintf(build, sizeof build, "%s", b && *b ? b : "build");
	snprintf(kvsim, sizeof kvsim, "%s", k && *k ? k : "build/kvsim");
	snprintf(kvreplay, sizeof kvreplay, "%s/kvreplay", build);
	return tmp_dir_make(dir, sizeof dir, "/tmp/test_kvreplay_XXXXXX");
}

static int teardown(void **state)
{
	(void)state;
	return tmp_dir_remove(dir);
}

/* Runs a shell command, keeps its stdout+stderr in out, returns the exit code. */
static int run(const char *fmt, ...)
{
	char cmd[4096], log[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(log, sizeof log, "%s/log.txt", dir);
	char full[4300];
	snprintf(full, sizeof full, "%s >%s 2>&1", cmd, log);
	int st = system(full);
	FILE *f = fopen(log, "r");
	size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_rc(int got, int want, const char *what)
{
	if (got != want)
		fail_msg("%s: exit %d, expected %d; output:\n%s", what, got, want, out);
}

static void test_host_backend_replays_a_plan_then_fit_and_check_work(void **state)
{
	(void)state;
	expect_rc(run("%s calibrate plan -o %s/plan.h5 --max-bytes 256K --streams 4", kvsim, dir),
	          0, "plan");
	expect_rc(run("%s --backend host --reps 3 --warmup 1 -q %s/plan.h5 -o %s/meas.h5", kvreplay,
	              dir, dir),
	          0, "kvreplay host");
	char path[256];
	snprintf(path, sizeof path, "%s/plan.h5", dir);
	gv_sched_t s;
	gv_meas_t m;
	err_t e = {0};
	assert_int_equal(gv_sched_read(&s, path, &e), 0);
	assert_true(s.is_plan);
	snprintf(path, sizeof path, "%s/meas.h5", dir);
	assert_int_equal(gv_meas_read(&m, path, &e), 0);
	assert_int_equal(m.n_copy, s.n); /* every planned transfer was timed */
	assert_string_equal(m.backend, "host");
	assert_non_null(strstr(m.cmdline, "--reps 3 --warmup 1 -q ")); /* as typed */
	assert_non_null(strstr(m.cmdline, "plan.h5 -o "));
	assert_non_null(strstr(m.schedule, "plan.h5"));
	assert_true(m.device[0] != 0);
	int shapes = 0, kinds = 0, max_same = 0, opp = 0;
	for (size_t i = 0; i < m.n_copy; i++) {
		const gv_copy_t *c = &m.copy[i];
		assert_true(c->end_ns > c->start_ns);
		assert_int_equal(c->reps, 3);
		assert_true(c->min_ns <= c->end_ns - c->start_ns &&
		            c->end_ns - c->start_ns <= c->max_ns);
		assert_true(c->inner >= 1 && c->inner <= 64);
		shapes |= 1 << c->shape;
		kinds |= 1 << c->kind;
		max_same = c->m_same > max_same ? c->m_same : max_same;
		opp |= c->m_opp > 0;
	}
	assert_int_equal(shapes, (1 << MDL_SHAPE_CONTIG) | (1 << MDL_SHAPE_GRANULAR));
	/* two emulated devices: GPU-to-GPU copies are peer copies */
	assert_int_equal(kinds, (1 << GV_COPY_H2D) | (1 << GV_COPY_D2H) | (1 << GV_COPY_P2P));
	assert_int_equal(max_same, 4);
	assert_true(opp);
	gv_meas_free(&m);
	gv_sched_free(&s);

	/* the same plan with batched granular copies, fitted together */
	expect_rc(run("%s --backend host --batch --reps 1 --warmup 0 -q %s/plan.h5 -o %s/batch.h5",
	              kvreplay, dir, dir),
	          0, "kvreplay host --batch");
	expect_rc(
	    run("%s calibrate fit %s/meas.h5 %s/batch.h5 -o %s/host.ini", kvsim, dir, dir, dir), 0,
	    "fit");
	assert_non_null(strstr(out, "per-copy overhead (batch)"));
	assert_non_null(strstr(out, "held-out"));
	assert_non_null(strstr(out, "pcie_h2d: fit on"));
	mdl_xfer_t x;
	mdl_xfer_default(&x);
	snprintf(path, sizeof path, "%s/host.ini", dir);
	assert_int_equal(mdl_xfer_load(&x, path, &e), 0);
	for (int k = MDL_LINK_NVLINK; k <= MDL_LINK_PCIE_D2H; k++)
		for (int i = 0; i < x.link[k].n_pieces; i++)
			assert_true(x.link[k].piece[i].bw_gbps > 0);

	expect_rc(run("%s calibrate check %s/plan.h5 %s/meas.h5 --calibration %s/host.ini", kvsim,
	              dir, dir, dir),
	          0, "check");
	assert_non_null(strstr(out, "copies matched, 0 measured copies without"));
	assert_non_null(strstr(out, "model     n="));
}

static void test_host_backend_replays_a_run_schedule_at_its_offsets(void **state)
{
	(void)state;
	/* what a kvsim run writes: flows that overlap, one cancelled, one between
	 * two host tiers, a block-granular fetch. Columns in res_transfer_t order:
	 * id, src instance and GPU, dst instance and GPU, bytes, blocks, class,
	 * path, granular, start, end, cancelled, requested. */
	res_transfer_t t[6] = {
	    {100, -1, -1, 0, 0, 1 << 20, 16, 0, PATH_PCIE_H2D, 1, 5000000, 5400000, 0, 0},
	    {101, 0, 0, 1, 0, 512 << 10, 8, 0, PATH_NVLINK, 0, 5100000, 5300000, 0, 0},
	    {102, 1, 0, -1, -1, 256 << 10, 4, 0, PATH_PCIE_D2H, 0, 7000000, 7100000, 0, 0},
	    {103, 0, 0, 1, 0, 1 << 20, 16, 0, 0, 0, 5000000, 5050000, 1, 0},
	    {104, -1, -1, -1, -1, 4096, 1, 0, 0, 0, 6000000, 6100000, 0, 0},
	    {105, -1, -1, 0, 0, 64 << 10, 1, 0, 0, 0, 5200000, 5250000, 0, 0},
	};
	char path[256];
	err_t e = {0};
	snprintf(path, sizeof path, "%s/run.h5", dir);
	assert_int_equal(gv_sched_write(path, t, 6, 0, &e), 0);
	expect_rc(run("%s --backend host --reps 2 --warmup 0 --slices 2 %s/run.h5 -o %s/runmeas.h5",
	              kvreplay, dir, dir),
	          0, "kvreplay host run");
	assert_non_null(strstr(out, "skipped 1 cancelled, 1 host-to-host and 0 past"));
	gv_meas_t m;
	snprintf(path, sizeof path, "%s/runmeas.h5", dir);
	assert_int_equal(gv_meas_read(&m, path, &e), 0);
	assert_int_equal(m.n_copy, 4);
	int streams = 0;
	for (size_t i = 0; i < m.n_copy; i++) {
		const gv_copy_t *c = &m.copy[i];
		assert_int_equal(c->inner, 1);
		/* launched at its offset, never before */
		assert_true(c->start_ns >= c->planned_start_ns);
		streams |= 1 << c->stream;
		if (c->id == 100) {
			assert_int_equal(c->shape, MDL_SHAPE_GRANULAR);
			assert_int_equal(c->blocks, 32); /* 16 blocks x 2 slices */
			assert_int_equal(c->kind, GV_COPY_H2D);
		}
		if (c->id == 101)
			assert_int_equal(c->kind, GV_COPY_P2P);
		if (c->id == 102) /* instance 1 was the second device */
			assert_int_equal(c->src_dev, 1);
	}
	assert_int_equal(streams, 7); /* 100, 101 and 105 overlap */
	gv_meas_free(&m);
	expect_rc(run("%s calibrate check %s/run.h5 %s/runmeas.h5", kvsim, dir, dir), 0, "check");
	assert_non_null(strstr(out, "4 copies matched"));
}

static int have_nvcc(void)
{
	const char *home = getenv("CUDA_HOME");
	char p[1024];
	snprintf(p, sizeof p, "%s/bin/nvcc", home && *home ? home : "/usr/local/cuda");
	return access(p, X_OK) == 0 || system("command -v nvcc >/dev/null 2>&1") == 0;
}

static void test_cuda_backend_is_built_with_nvcc_and_skips_without_a_gpu(void **state)
{
	(void)state;
	char so[1200];
	snprintf(so, sizeof so, "%s/kvreplay_cuda.so", build);
	if (have_nvcc())
		assert_int_equal(access(so, R_OK), 0);
	res_transfer_t t = {.id = 1,
	                    .src_instance = -1,
	                    .src_gpu = -1,
	                    .dst_instance = 0,
	                    .bytes = 1 << 20,
	                    .blocks = 1,
	                    .start_ns = 0,
	                    .end_ns = 1000};
	char path[256];
	err_t e = {0};
	snprintf(path, sizeof path, "%s/one.h5", dir);
	assert_int_equal(gv_sched_write(path, &t, 1, 1, &e), 0);
	/* CUDA's runtime keeps allocations past a failed init: no leak report */
	int rc = run("ASAN_OPTIONS=detect_leaks=0 %s %s -o %s/cuda.h5", kvreplay, path, dir);
	if (rc == 77) {
		assert_true(!strncmp(out, "SKIP: ", 6));
		assert_true(strlen(out) > 12); /* a reason follows */
	} else {
		expect_rc(rc, 0, "kvreplay cuda");
		gv_meas_t m;
		snprintf(path, sizeof path, "%s/cuda.h5", dir);
		assert_int_equal(gv_meas_read(&m, path, &e), 0);
		assert_string_equal(m.backend, "cuda");
		assert_int_equal(m.n_copy, 1);
		gv_meas_free(&m);
	}
	expect_rc(run("%s --cuda-so %s/none.so %s/one.h5", kvreplay, dir, dir), 77, "missing so");
	assert_non_null(strstr(out, "SKIP: CUDA backend not loadable"));
}

static void test_host_compute_times_layer_gemms_and_a_read(void **state)
{
	(void)state;
	expect_rc(run("%s --backend host --compute --hidden 64 --ffn 128 --heads 2 --kv-heads 1 "
	              "--head-dim 32 --tokens 1,4 --read-bytes 1M --reps 3 --warmup 0 -q "
	              "--peak-tflops 1 -o %s/comp.h5",
	              kvreplay, dir),
	          0, "compute");
	gv_meas_t m;
	err_t e = {0};
	char path[256];
	snprintf(path, sizeof path, "%s/comp.h5", dir);
	assert_int_equal(gv_meas_read(&m, path, &e), 0);
	assert_int_equal(m.n_copy, 0);
	assert_int_equal(m.n_comp, 9); /* 2 token counts x 4 GEMMs + read */
	assert_true(m.peak_flops == 1e12);
	for (size_t i = 0; i < m.n_comp; i++) {
		const gv_compute_t *c = &m.comp[i];
		assert_true(c->time_ns > 0);
		if (!strcmp(c->op, "read")) {
			assert_true(c->bytes == 1 << 20);
			assert_true(c->bytes_per_s > 0);
		} else {
			assert_true(c->flops == 2.0 * c->m * c->n * c->k);
			assert_true(c->flops_per_s > 0);
		}
		if (!strcmp(c->op, "gemm_qkv"))
			assert_int_equal(c->n, 2 * 32 + 2 * 32); /* q + k + v heads x dim */
	}
	gv_meas_free(&m);
}

static void test_compute_shapes_and_peaks_come_from_the_specs(void **state)
{
	(void)state;
	/* a small model spec file (the CPU stand-in would be slow at 8B shapes) */
	mdl_llm_t llm;
	mdl_hw_t hw;
	err_t e = {0};
	char path[256];
	assert_int_equal(mdl_llm_builtin("Llama-3-8B", &llm, &e), 0);
	llm.hidden = 256;
	llm.intermediate = 384;
	llm.heads = 4;
	llm.kv_heads = 2;
	llm.head_dim = 64;
	snprintf(path, sizeof path, "%s/tiny.ini", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(mdl_llm_write(&llm, f), 0);
	fclose(f);
	expect_rc(run("%s --backend host --compute --model %s --gpu H200 --tokens 1 "
	              "--read-bytes 64K --reps 1 --warmup 0 -q -o %s/spec.h5",
	              kvreplay, path, dir),
	          0, "compute from specs");
	assert_int_equal(mdl_hw_builtin("H200", &hw, &e), 0);
	gv_meas_t m;
	snprintf(path, sizeof path, "%s/spec.h5", dir);
	assert_int_equal(gv_meas_read(&m, path, &e), 0);
	assert_true(m.peak_flops == hw.flops_bf16);
	assert_true(m.peak_bytes_per_s == hw.hbm_bw);
	int seen = 0;
	for (size_t i = 0; i < m.n_comp; i++) {
		if (!strcmp(m.comp[i].op, "gemm_down")) {
			assert_int_equal(m.comp[i].n, llm.hidden);
			assert_int_equal(m.comp[i].k, llm.intermediate);
			seen++;
		}
		if (!strcmp(m.comp[i].op, "gemm_qkv")) {
			assert_int_equal(m.comp[i].n,
			                 (llm.heads + 2 * llm.kv_heads) * llm.head_dim);
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	gv_meas_free(&m);
	expect_rc(run("%s --backend host --compute --model NoSuchModel -o %s/x.h5", kvreplay, dir),
	          2, "unknown model");
	assert_non_null(strstr(out, "Llama-3-8B")); /* the error lists the built-ins */
}

static void test_usage_errors_exit_2(void **state)
{
	(void)state;
	expect_rc(run("%s", kvreplay), 2, "no schedule");
	expect_rc(run("%s --backend tpu x.h5", kvreplay), 2, "bad backend");
	expect_rc(run("%s --reps 0 x.h5", kvreplay), 2, "zero reps");
	expect_rc(run("%s calibrate", kvsim), 2, "no subcommand");
	expect_rc(run("%s calibrate fit x.h5", kvsim), 2, "fit without -o");
	expect_rc(run("%s calibrate plan -o %s/p.h5 --max-bytes huge", kvsim, dir), 2, "bad size");
	assert_non_null(strstr(out, "max-bytes"));
	/* a file the user named that is missing, or not HDF5, is bad input */
	expect_rc(run("%s calibrate check %s/nothing.h5 %s/nothing.h5", kvsim, dir, dir), 2,
	          "missing files");
	assert_non_null(strstr(out, "kvsim calibrate check: "));
	assert_non_null(strstr(out, "nothing.h5: cannot open: No such file or directory"));
	expect_rc(run("%s --backend host %s/nothing.h5", kvreplay, dir), 2, "missing schedule");
	expect_rc(run("%s calibrate check %s %s", kvsim, dir, dir), 2, "a directory");
	assert_non_null(strstr(out, ": cannot open: Is a directory"));
	char noth5[300];
	snprintf(noth5, sizeof noth5, "%s/not.h5", dir);
	tmp_write(noth5, "plain text\n");
	expect_rc(run("%s calibrate check %s %s", kvsim, noth5, noth5), 2, "not HDF5");
	assert_non_null(strstr(out, "not.h5: not an HDF5 file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_backend_replays_a_plan_then_fit_and_check_work),
	    cmocka_unit_test(test_host_backend_replays_a_run_schedule_at_its_offsets),
	    cmocka_unit_test(test_cuda_backend_is_built_with_nvcc_and_skips_without_a_gpu),
	    cmocka_unit_test(test_host_compute_times_layer_gemms_and_a_read),
	    cmocka_unit_test(test_compute_shapes_and_peaks_come_from_the_specs),
	    cmocka_unit_test(test_usage_errors_exit_2),
	};
	const char *b = getenv("BUILD"), *k = getenv("KVSIM");
	char r[1100];
	snprintf(r, sizeof r, "%s/kvreplay", b && *b ? b : "build");
	if (access(r, X_OK) || access(k && *k ? k : "build/kvsim", X_OK)) {
		printf("SKIP: kvreplay or kvsim not built (run from the repository root)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
