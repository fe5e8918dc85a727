/* Client workload specs (traces/tr_spec.h): an inference-perf profile read
 * under its own names, the JSON experiment records under another
 * simulator's, their refusals as file:line: field: reason, and the
 * requests' content under both readings of prompt reuse, against counts
 * worked out by hand. The reference records are read from
 * ../shared/reference/sim2real when present. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"
#include "traces/tr_spec.h"

static char dir[256];

static int setup(void **st)
{
	(void)st;
	return tmp_dir_make(dir, sizeof dir, "/tmp/kvsim_tr_spec_XXXXXX");
}

static int teardown(void **st)
{
	(void)st;
	return tmp_dir_remove(dir);
}

static const char *put(const char *name, const char *text)
{
	return tmp_put(dir, name, text);
}

static const char profile[] = "# an inference-perf profile\n"
			      "api:\n"
			      "  type: completion\n"
			      "  streaming: true\n"
			      "data:\n"
			      "  type: shared_prefix\n"
			      "  shared_prefix:\n"
			      "    num_groups: 3\n"
			      "    num_prompts_per_group: 2\n"
			      "    system_prompt_len: 64\n"
			      "    question_len: 40\n"
			      "    output_len: 8\n"
			      "    enable_multi_turn_chat: true\n"
			      "load:\n"
			      "  type: poisson\n"
			      "  interval: 2.5\n"
			      "  num_workers: 8\n"
			      "  stages:\n"
			      "    - rate: 2\n"
			      "      duration: 5\n"
			      "    - {rate: 4.5, duration: 10}\n"
			      "server:\n"
			      "  type: vllm\n";

static void test_profile_reads_under_inference_perf_names(void **st)
{
	(void)st;
	tr_spec_t s;
	err_t e = {0};
	int rc = tr_spec_load(put("p.yaml", profile), NULL, &s, &e);
	if (rc)
		fail_msg("%s", e.msg);
	assert_int_equal(s.groups, 3);
	assert_int_equal(s.per_group, 2);
	assert_int_equal(s.system_len, 64);
	assert_int_equal(s.question_len, 40);
	assert_int_equal(s.output_len, 8);
	assert_int_equal(s.poisson, 1);
	assert_true(s.interval_s == 2.5);
	assert_int_equal(s.n_stages, 2);
	assert_true(s.stages[0].rate == 2 && s.stages[0].duration_s == 5);
	assert_true(s.stages[1].rate == 4.5 && s.stages[1].duration_s == 10);
	assert_int_equal(tr_spec_stage_requests(&s.stages[0]), 10);
	assert_int_equal(tr_spec_stage_requests(&s.stages[1]), 45);
	assert_string_equal(s.experiment, "");
	tr_spec_free(&s);
}

/* inference-perf's config model takes the other simulator's names as
 * aliases; giving one field under both names is refused. */
static void test_profile_takes_the_alias_names(void **st)
{
	(void)st;
	tr_spec_t s;
	err_t e = {0};
	const char *p = put("a.yaml", "data:\n  type: shared_prefix\n  shared_prefix:\n"
				      "    num_unique_system_prompts: 4\n"
				      "    num_users_per_system_prompt: 5\n"
				      "    system_prompt_len: 100\n    question_len: 10\n"
				      "    output_len: 3\nload:\n  stages: [{rate: 1, duration: 2}]\n");
	assert_int_equal(tr_spec_load(p, NULL, &s, &e), 0);
	assert_int_equal(s.groups, 4);
	assert_int_equal(s.per_group, 5);
	assert_int_equal(s.poisson, 0); /* load.type absent: constant, inference-perf's default */
	assert_true(s.interval_s == 0);
	tr_spec_free(&s);
	p = put("b.yaml", "data:\n  type: shared_prefix\n  shared_prefix:\n"
			  "    num_groups: 4\n    num_unique_system_prompts: 4\n");
	assert_int_equal(tr_spec_load(p, NULL, &s, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "b.yaml:5: data.shared_prefix.num_unique_system_prompts: "
				      "given twice"));
}

static void expect_refused(const char *name, const char *text, const char *experiment,
			   const char *want)
{
	tr_spec_t s;
	err_t e = {0};
	const char *p = put(name, text);
	assert_int_equal(tr_spec_load(p, experiment, &s, &e), KS_EINPUT);
	if (!strstr(e.msg, want))
		fail_msg("%s: got '%s', want '%s'", name, e.msg, want);
}

#define SP_HEAD "data:\n  type: shared_prefix\n  shared_prefix:\n"
#define SP_OK                                                                                      \
	"    num_groups: 2\n    num_prompts_per_group: 2\n    system_prompt_len: 32\n"                \
	"    question_len: 16\n    output_len: 4\n"

static void test_profile_refusals_name_file_line_and_field(void **st)
{
	(void)st;
	expect_refused("r1.yaml", "data:\n  type: random\n", NULL,
		       "r1.yaml:2: data.type: 'random' is not supported: shared_prefix only");
	expect_refused("r2.yaml", SP_HEAD SP_OK "    question_distribution: Normal(5, 1)\n"
			  "load:\n  stages: [{rate: 1, duration: 1}]\n",
		       NULL, "r2.yaml:9: data.shared_prefix.question_distribution: not supported");
	expect_refused("r3.yaml", SP_HEAD "    num_groups: 2\nload:\n  stages: [{rate: 1, duration: 1}]\n",
		       NULL, "r3.yaml:4: data.shared_prefix.num_prompts_per_group: missing");
	expect_refused("r4.yaml", SP_HEAD SP_OK "load:\n  stages:\n    - rate: 1\n"
			  "      concurrency_level: 4\n",
		       NULL, "r4.yaml:12: load.stages[0].concurrency_level: not supported");
	expect_refused("r5.yaml", SP_HEAD SP_OK "load:\n  type: burst\n  stages: [{rate: 1, duration: 1}]\n",
		       NULL, "r5.yaml:10: load.type: 'burst' is not supported: constant or poisson");
	expect_refused("r6.yaml", SP_HEAD SP_OK "load:\n  stages: [{rate: 0, duration: 1}]\n", NULL,
		       "r6.yaml:10: load.stages[0].rate: 0 must be > 0");
	expect_refused("r7.yaml", SP_HEAD SP_OK "load:\n  type: constant\n", NULL,
		       "r7.yaml:10: load.stages: missing or empty");
	expect_refused("r8.yaml", SP_HEAD "    num_groups: 2.5\n", NULL,
		       "r8.yaml:4: data.shared_prefix.num_groups: 2.5 is not a whole number");
	expect_refused("r9.yaml", "data: [1\n", NULL, "r9.yaml:2: yaml: ");
	expect_refused("r10.yaml", SP_HEAD SP_OK "load:\n  stages: [{rate: 1, duration: 1}]\n"
			   "  sweep: {type: linear}\n",
		       NULL, "r10.yaml:11: load.sweep: unknown");
	expect_refused("r11.yaml", SP_HEAD SP_OK "load:\n  stages: [{rate: 1, duration: 1}]\n",
		       "exp-1", "r11.yaml:1: trace.spec_experiment: 'exp-1' names a JSON record");
}

static const char records[] =
    "{\n"
    "  \"source\": \"hand-made\",\n"
    "  \"experiments\": [\n"
    "    {\n"
    "      \"id\": \"a\",\n"
    "      \"stages\": [{\"duration\": 10, \"rate\": 2.5}, {\"duration\": 4, \"rate\": 1}],\n"
    "      \"workload\": {\n"
    "        \"load_type\": \"constant (see README)\",\n"
    "        \"num_requests\": 29,\n"
    "        \"seed\": 42,\n"
    "        \"shared_prefix\": {\n"
    "          \"enable_multi_turn_chat\": true,\n"
    "          \"num_unique_system_prompts\": 9,\n"
    "          \"num_users_per_system_prompt\": 5,\n"
    "          \"output_len\": 248,\n"
    "          \"question_len\": 447,\n"
    "          \"system_prompt_len\": 100\n"
    "        },\n"
    "        \"type\": \"shared_prefix\"\n"
    "      }\n"
    "    },\n"
    "    {\n"
    "      \"id\": \"b\",\n"
    "      \"stages\": [{\"duration\": 10, \"rate\": 1}],\n"
    "      \"workload\": {\n"
    "        \"num_requests\": 11,\n"
    "        \"shared_prefix\": {\n"
    "          \"num_unique_system_prompts\": 1,\n"
    "          \"num_users_per_system_prompt\": 1,\n"
    "          \"output_len\": 1,\n"
    "          \"question_len\": 1,\n"
    "          \"system_prompt_len\": 1\n"
    "        },\n"
    "        \"type\": \"shared_prefix\"\n"
    "      }\n"
    "    }\n"
    "  ]\n"
    "}\n";

static void test_records_read_under_the_other_simulators_names(void **st)
{
	(void)st;
	tr_spec_t s;
	err_t e = {0};
	int rc = tr_spec_load(put("x.json", records), "a", &s, &e);
	if (rc)
		fail_msg("%s", e.msg);
	assert_string_equal(s.experiment, "a");
	assert_int_equal(s.groups, 9);
	assert_int_equal(s.per_group, 5);
	assert_int_equal(s.system_len, 100);
	assert_int_equal(s.question_len, 447);
	assert_int_equal(s.output_len, 248);
	assert_int_equal(s.poisson, 0);
	assert_int_equal(s.n_stages, 2);
	/* 2.5 x 10 + 1 x 4 = 29 = num_requests */
	assert_int_equal(tr_spec_stage_requests(&s.stages[0]) + tr_spec_stage_requests(&s.stages[1]),
			 29);
	tr_spec_free(&s);
	/* record b: num_requests 11, but 1 req/s x 10 s sends 10 */
	expect_refused("y.json", records, "b",
		       "y.json:26: workload.num_requests: 11, but the stages send 10");
	expect_refused("z.json", records, "c", "z.json:1: experiments: no record has this id "
					      "(trace.spec_experiment: one of a, b)");
	expect_refused("w.json", records, NULL, "w.json:1: experiments: several records");
	expect_refused("v.json", "{\"experiments\": [\n{\"id\": \"q\",\n \"workload\": {\"type\": "
				 "\"shared_prefix\", \"shared_prefix\": {\"num_groups\": 1,\n"
				 "\"question_len_std\": 4}}}]}\n",
		       NULL, "v.json:4: workload.shared_prefix.question_len_std: not supported");
	expect_refused("u.json", "{\"experiments\": [\n", NULL, "u.json:2: json: ");
}

/* The reference records (when ../shared is there): each loads, and its
 * stages send its num_requests (checked by the reader). */
static void test_reference_records_load(void **st)
{
	(void)st;
	const char *path = "../shared/reference/sim2real/experiments.json";
	FILE *f = fopen(path, "r");
	if (!f)
		skip();
	fclose(f);
	static const char *const ids[] = {"17-llama-4-scout-17b-16e-tp2-general-lite-2-1",
					  "20260217-155451-llama-2-7b-tp1-codegen",
					  "64-qwen2-5-7b-instruct-tp1-roleplay-1-1"};
	static const uint64_t sent[] = {5100, 9000, 7200};
	for (size_t i = 0; i < 3; i++) {
		tr_spec_t s;
		err_t e = {0};
		int rc = tr_spec_load(path, ids[i], &s, &e);
		if (rc)
			fail_msg("%s", e.msg);
		uint64_t n = 0;
		for (uint32_t k = 0; k < s.n_stages; k++)
			n += tr_spec_stage_requests(&s.stages[k]);
		assert_int_equal(n, sent[i]);
		assert_int_equal(s.poisson, 0);
		tr_spec_free(&s);
	}
}

/* G = 3 groups of M = 2 prompts, system prompt 64 tokens, question 40, at
 * S = 16: a prompt is 104 tokens, 6 full blocks (the 8-token tail is not
 * hashed): 4 of system prompt, 2 of question. */
static tr_spec_t small_spec(void)
{
	return (tr_spec_t){.groups = 3, .per_group = 2, .system_len = 64, .question_len = 40,
			   .output_len = 8};
}

static size_t distinct(uint64_t *ids, size_t n)
{
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < d && ids[j] != ids[i])
			j++;
		if (j == d)
			ids[d++] = ids[i];
	}
	return d;
}

static void collect(tr_spec_gen_t *g, uint64_t n, uint64_t *ids, uint32_t *group,
		    uint32_t *prompt)
{
	for (uint64_t k = 0; k < n; k++) {
		tr_spec_req_t q;
		tr_spec_gen_request(g, k, &q);
		assert_int_equal(q.input_len, 104);
		assert_int_equal(q.output_len, 8);
		assert_int_equal(q.n_blocks, 6);
		assert_int_equal(q.group, q.prompt / 2);
		memcpy(ids + 6 * k, q.blocks, 6 * sizeof *ids);
		group[k] = q.group;
		prompt[k] = q.prompt;
	}
}

/* Cycle: the first G x M = 6 requests take each prompt once; request k + 6
 * repeats request k's blocks; within a group the 4 system-prompt blocks are
 * the same ids, across groups not. Over 12 requests the distinct ids are 3
 * groups x 4 system blocks + 6 prompts x 2 question blocks = 24. */
static void test_cycle_repeats_the_list_and_shares_each_groups_prompt(void **st)
{
	(void)st;
	tr_spec_t s = small_spec();
	tr_spec_gen_t *g;
	err_t e = {0};
	assert_int_equal(tr_spec_gen_new(&s, TR_SPEC_CYCLE, 16, 7, &g, &e), 0);
	uint64_t ids[12 * 6];
	uint32_t group[12], prompt[12];
	collect(g, 12, ids, group, prompt);
	int seen[6] = {0};
	for (int k = 0; k < 6; k++)
		seen[prompt[k]]++;
	for (int p = 0; p < 6; p++)
		assert_int_equal(seen[p], 1);
	for (int k = 0; k < 6; k++) {
		assert_int_equal(prompt[k + 6], prompt[k]);
		assert_memory_equal(ids + 6 * k, ids + 6 * (k + 6), 6 * sizeof *ids);
	}
	for (int a = 0; a < 6; a++)
		for (int b = 0; b < 6; b++) {
			int same = !memcmp(ids + 6 * a, ids + 6 * b, 4 * sizeof *ids);
			assert_int_equal(same, group[a] == group[b]);
			if (prompt[a] != prompt[b])
				assert_true(ids[6 * a + 4] != ids[6 * b + 4]);
		}
	assert_int_equal(distinct(ids, 12 * 6), 24);
	tr_spec_gen_free(g);
}

/* Fresh: the same groups in the same order, the system prompt's blocks the
 * same as under cycle, but every request's question its own: over 12
 * requests 3 x 4 + 12 x 2 = 36 distinct ids. */
static void test_fresh_shares_only_the_system_prompt(void **st)
{
	(void)st;
	tr_spec_t s = small_spec();
	tr_spec_gen_t *gc, *gf;
	err_t e = {0};
	assert_int_equal(tr_spec_gen_new(&s, TR_SPEC_CYCLE, 16, 7, &gc, &e), 0);
	assert_int_equal(tr_spec_gen_new(&s, TR_SPEC_FRESH, 16, 7, &gf, &e), 0);
	uint64_t ic[12 * 6], idf[12 * 6];
	uint32_t gcy[12], pcy[12], gfr[12], pfr[12];
	collect(gc, 12, ic, gcy, pcy);
	collect(gf, 12, idf, gfr, pfr);
	for (int k = 0; k < 12; k++) {
		assert_int_equal(gfr[k], gcy[k]);
		assert_memory_equal(idf + 6 * k, ic + 6 * k, 4 * sizeof *ic);
		assert_true(idf[6 * k + 4] != ic[6 * k + 4]);
	}
	for (int k = 0; k < 6; k++)
		assert_true(idf[6 * k + 4] != idf[6 * (k + 6) + 4]);
	assert_int_equal(distinct(idf, 12 * 6), 36);
	tr_spec_gen_free(gc);
	tr_spec_gen_free(gf);
}

TEST_MAIN_FIXTURE(setup, teardown,
		  cmocka_unit_test(test_profile_reads_under_inference_perf_names),
		  cmocka_unit_test(test_profile_takes_the_alias_names),
		  cmocka_unit_test(test_profile_refusals_name_file_line_and_field),
		  cmocka_unit_test(test_records_read_under_the_other_simulators_names),
		  cmocka_unit_test(test_reference_records_load),
		  cmocka_unit_test(test_cycle_repeats_the_list_and_shares_each_groups_prompt),
		  cmocka_unit_test(test_fresh_shares_only_the_system_prompt))
