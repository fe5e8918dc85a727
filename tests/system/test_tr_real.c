/* The real traces in ../shared/traces (skipped when the folder is absent):
 * stats run on every file, the CLI accepts them, the Mooncake
 * conversation trace's block reuse from the reader equals a plain
 * independent count over the raw hash_ids, and a gzip-compressed
 * Bursted-ART window reads with the reuse its generator built in. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <sys/stat.h>

#include "tests/fixtures/tr_fixture.h"
#include "tests/fixtures/test_main.h"

#define ROOT "../shared/traces"

static int have_root(void)
{
	struct stat sb;
	return stat(ROOT "/mooncake", &sb) == 0;
}

static void stats_of(const char *path, uint64_t limit, int reuse, tr_stats_t *s)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = path;
	o.limit = limit;
	tr_reader_t *r;
	err_t e = {0};
	if (tr_open(&o, 512, 1, &r, &e) || tr_stats_compute(r, reuse, s, &e))
		fail_msg("%s: %s", path, e.msg);
	tr_close(r);
}

static const char *const request_traces[] = {
    ROOT "/mooncake/conversation_trace.jsonl",
    ROOT "/mooncake/synthetic_trace.jsonl",
    ROOT "/azure_llm_2023/AzureLLMInferenceTrace_code.csv",
    ROOT "/azure_llm_2023/AzureLLMInferenceTrace_conv.csv",
    ROOT "/burstgpt/BurstGPT_1_first33.csv",
};
static const uint64_t request_rows[] = {12031, 3993, 8819, 19366, 33};

static void test_stats_on_every_request_trace(void **st)
{
	(void)st;
	if (!have_root())
		skip();
	for (size_t i = 0; i < sizeof request_traces / sizeof *request_traces; i++) {
		tr_stats_t s;
		stats_of(request_traces[i], 0, 1, &s);
		assert_int_equal(s.rows, request_rows[i]);
		assert_true(s.duration_s > 0 && s.mean_rate > 0 && s.in.mean > 0);
		assert_true(s.peak_to_mean[0] >= 1 && s.peak_to_mean[2] >= 1);
	}
}

static void test_burstgpt_sample_has_one_failure(void **st)
{
	(void)st;
	if (!have_root())
		skip();
	tr_stats_t s;
	stats_of(ROOT "/burstgpt/BurstGPT_1_first33.csv", 0, 0, &s);
	assert_int_equal(s.failed, 1);
	assert_true(fabs(s.duration_s - (2608 - 5)) < 1e-9);
}

static int servegen_walk(const char *dir, int *files)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		struct stat sb;
		if (stat(p, &sb))
			continue;
		if (S_ISDIR(sb.st_mode)) {
			servegen_walk(p, files);
		} else if (strstr(de->d_name, "-trace.csv")) {
			/* generated from the windows; bounded by a request limit */
			tr_stats_t s;
			stats_of(p, 2000, 0, &s);
			assert_true(s.rows > 0 && s.rows <= 2000);
			(*files)++;
		}
	}
	closedir(d);
	return 0;
}

static void test_stats_on_every_servegen_windows_file(void **st)
{
	(void)st;
	if (!have_root())
		skip();
	int files = 0;
	servegen_walk(ROOT "/servegen", &files);
	assert_true(files > 100);
}

static void test_cli_stats_on_every_request_trace(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!have_root() || !k)
		skip();
	for (size_t i = 0; i < sizeof request_traces / sizeof *request_traces; i++) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd, "%s trace stats %s --json >/dev/null", k,
		         request_traces[i]);
		assert_int_equal(system(cmd), 0);
	}
}

/* Independent count: scan the text for input_length and hash_ids, count the
 * full-block ids (the first input_length/512) already seen. */
static void independent_reuse(const char *path, uint64_t *blocks, uint64_t *reused)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t cap = 1u << 20;
	uint64_t *set = calloc(cap, sizeof *set); /* ids + 1; 0 = empty */
	char *line = NULL;
	size_t lcap = 0;
	*blocks = *reused = 0;
	while (getline(&line, &lcap, f) > 0) {
		char *p = strstr(line, "\"input_length\":");
		char *h = strstr(line, "\"hash_ids\":");
		assert_true(p && h);
		unsigned long len = strtoul(p + 15, NULL, 10);
		char *q = strchr(h, '[') + 1;
		for (unsigned long i = 0; i < len / 512; i++) {
			char *end;
			unsigned long long id = strtoull(q, &end, 10);
			assert_true(end != q);
			q = end + strspn(end, ", ");
			size_t j = (id * 0x9e3779b97f4a7c15ULL >> 40) & (cap - 1);
			while (set[j] && set[j] != id + 1)
				j = (j + 1) & (cap - 1);
			(*blocks)++;
			if (set[j])
				(*reused)++;
			else
				set[j] = id + 1;
		}
	}
	free(line);
	free(set);
	fclose(f);
}

static void test_mooncake_conversation_reuse_two_ways(void **st)
{
	(void)st;
	if (!have_root())
		skip();
	const char *p = ROOT "/mooncake/conversation_trace.jsonl";
	uint64_t blocks, reused;
	independent_reuse(p, &blocks, &reused);
	tr_stats_t s;
	stats_of(p, 0, 1, &s);
	assert_int_equal(s.blocks, blocks);
	assert_int_equal(s.reused_blocks, reused);
	assert_true(fabs(s.reuse_block - (double)reused / blocks) < 1e-12);
	assert_true(s.reuse_block > 0.3 && s.reuse_block < 0.5);
}

/* Bursted-ART window 0 (SOURCE.txt there): 8 jobs of 500 requests, each
 * request a job's 256-block prefix plus one block of its own, and 120
 * decoys of 257 blocks of their own; 256-token blocks. Read from the .gz,
 * every burst request after its job's first reuses exactly the 256 blocks
 * of the shared prefix: 8 * 499 * 256 reused blocks. */
static void test_bursted_art_window_reads_from_gzip(void **st)
{
	(void)st;
	const char *p = ROOT "/bursted_art/test_00.jsonl.gz";
	struct stat sb;
	if (stat(ROOT "/bursted_art", &sb) || stat(p, &sb))
		skip();
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = p;
	o.trace_block_tokens = 256;
	tr_reader_t *r;
	err_t e = {0};
	tr_stats_t s;
	if (tr_open(&o, 256, 1, &r, &e) || tr_stats_compute(r, 1, &s, &e))
		fail_msg("%s: %s", p, e.msg);
	assert_int_equal(tr_kind(r), TR_KIND_MOONCAKE);
	tr_close(r);
	assert_int_equal(s.rows, 4120);
	assert_int_equal(s.in.max, 65792);
	assert_int_equal(s.blocks, 4120ull * 257);
	assert_int_equal(s.reused_blocks, 8ull * 499 * 256);
	assert_int_equal(s.distinct_blocks, 8ull * 256 + 8 * 500 + 120ull * 257);
	const char *k = getenv("KVSIM");
	if (k) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd, "%s trace stats %s trace_block_tokens=256 >/dev/null", k,
		         p);
		assert_int_equal(system(cmd), 0);
	}
}

TEST_MAIN(cmocka_unit_test(test_stats_on_every_request_trace),
          cmocka_unit_test(test_burstgpt_sample_has_one_failure),
          cmocka_unit_test(test_stats_on_every_servegen_windows_file),
          cmocka_unit_test(test_cli_stats_on_every_request_trace),
          cmocka_unit_test(test_mooncake_conversation_reuse_two_ways),
          cmocka_unit_test(test_bursted_art_window_reads_from_gzip))
