/* The simulator on a real trace: the Mooncake conversation trace (skipped
 * when ../shared/traces/mooncake is absent) runs to completion on the
 * 16-instance experiment, and with one instance and an unbounded cache its
 * block-weighted hit rate equals the share of blocks in the file whose whole
 * prefix appeared in an earlier request (counted here independently of the
 * trace reader, from the raw hash_ids). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

#define TRACE "../shared/traces/mooncake/conversation_trace.jsonl"

/* A trie of (parent node, hash id) -> node, in an open-addressing table. */
typedef struct trie {
	uint64_t *key_parent, *key_id;
	uint64_t *node;
	size_t cap, n;
} trie_t;

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

/* Returns the child node, inserting it (and setting *fresh) when new. */
static uint64_t trie_step(trie_t *t, uint64_t parent, uint64_t id, int *fresh)
{
	size_t i = mix(parent, id) & (t->cap - 1);
	while (t->node[i]) {
		if (t->key_parent[i] == parent && t->key_id[i] == id) {
			*fresh = 0;
			return t->node[i];
		}
		i = (i + 1) & (t->cap - 1);
	}
	assert_true(t->n + 1 < t->cap / 2);
	t->key_parent[i] = parent;
	t->key_id[i] = id;
	t->node[i] = ++t->n;
	*fresh = 1;
	return t->node[i];
}

static int have_trace(void)
{
	return access(TRACE, R_OK) == 0;
}

static void test_reuse_fraction_equals_infinite_cache_hit_rate(void **st)
{
	(void)st;
	if (!have_trace())
		skip();
	trie_t t = {0};
	t.cap = 1u << 22;
	t.key_parent = calloc(t.cap, 8);
	t.key_id = calloc(t.cap, 8);
	t.node = calloc(t.cap, 8);
	FILE *f = fopen(TRACE, "r");
	assert_non_null(f);
	char *line = NULL;
	size_t cap = 0;
	uint64_t blocks = 0, reused = 0;
	while (getline(&line, &cap, f) > 0) {
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		assert_non_null(o);
		uint64_t in = (uint64_t)json_integer_value(json_object_get(o, "input_length"));
		json_t *ids = json_object_get(o, "hash_ids");
		uint64_t full = in / 512, parent = 0;
		for (size_t i = 0; i < full && i < json_array_size(ids); i++) {
			int fresh;
			parent = trie_step(&t, parent,
					   (uint64_t)json_integer_value(json_array_get(ids, i)), &fresh);
			blocks++;
			reused += !fresh;
		}
		json_decref(o);
	}
	free(line);
	fclose(f);
	double expect = (double)reused / (double)blocks;

	/* one instance whose KV pool holds the whole trace, keeping every request
	 * (far past its capacity, clients would abandon some: they look nothing up) */
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=1", "cluster.gpus_per_node=1",
			      "cluster.tp=1", "cluster.kv_blocks=400000",
			      "experiment.client_timeout_s=0"};
	sim_results_t r = sf_run("analysis/experiments/mooncake_conversation.ini", sets, 6);
	double got = sim_results_get(&r, "hit_rate_blocks");
	printf("blocks %llu, reused %llu: fraction %.6f; simulated hit rate %.6f\n",
	       (unsigned long long)blocks, (unsigned long long)reused, expect, got);
	assert_true(fabs(got - expect) < 1e-12);
	sim_results_free(&r);
	free(t.key_parent);
	free(t.key_id);
	free(t.node);
}

static void test_conversation_trace_completes_on_16_instances(void **st)
{
	(void)st;
	if (!have_trace())
		skip();
	cfg_t *cfg = NULL;
	err_t e = {0};
	assert_int_equal(
		cli_load_config("analysis/experiments/mooncake_conversation.ini", NULL, 0, &cfg, &e),
		0);
	sim_results_t r;
	int rc = sim_run(cfg, NULL, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_int_equal((int)sim_results_get(&r, "instances"), 16);
	double n = sim_results_get(&r, "requests");
	assert_true(n > 10000);
	assert_true(sim_results_get(&r, "completed") + sim_results_get(&r, "rejected") == n);
	assert_true(sim_results_get(&r, "kv_block_allocs") == sim_results_get(&r, "kv_block_frees"));
	assert_string_equal(r.trace_sha256[0] ? "set" : "unset", "set");
	sim_results_free(&r);
	cli_config_free(cfg);
}

/* A gzip-compressed Bursted-ART window (256-token blocks) on the default
 * experiment, named by --set trace.path alone plus its block size: on one
 * instance whose cache holds the whole window, the block-weighted hit rate
 * is the window's built-in reuse: every burst request after its job's first
 * reuses the job's 256 prefix blocks (8 jobs of 500; 4,120 requests of 257
 * blocks, SOURCE.txt beside the window). */
static void test_bursted_art_gz_window_reuses_each_job_prefix(void **st)
{
	(void)st;
	const char *w = "../shared/traces/bursted_art/test_00.jsonl.gz";
	if (access(w, R_OK))
		skip();
	char path[256];
	snprintf(path, sizeof path, "trace.path=%s", w);
	const char *sets[] = {path,
			      "trace.trace_block_tokens=256",
			      "kvcache.block_tokens=256",
			      "model.name=Llama-3-8B",
			      "cluster.nodes=1",
			      "cluster.gpus_per_node=1",
			      "cluster.tp=1",
			      "cluster.kv_blocks=40000",
			      "experiment.client_timeout_s=0"}; /* every request looks up */
	sim_results_t r = sf_run(NULL, sets, 9);
	assert_true(sim_results_get(&r, "requests") == 4120);
	double expect = 8.0 * 499 * 256 / (4120.0 * 257);
	assert_true(fabs(sim_results_get(&r, "hit_rate_blocks") - expect) < 1e-12);
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_reuse_fraction_equals_infinite_cache_hit_rate),
          cmocka_unit_test(test_conversation_trace_completes_on_16_instances),
          cmocka_unit_test(test_bursted_art_gz_window_reuses_each_job_prefix))
