/* The decode-side prefix cache and speculative pre-placement on the decode
 * pool (sim/run/sim_disagg.h, cluster.h CL_ROLE_DECODE, pol_repl_spec.c
 * spec_decode_targets): a handoff moves only the prompt blocks its decode
 * instance lacks; prefix_aware decode routing finds the instance holding
 * the prefix; a pre-placed prefix makes a handoff move only its suffix and
 * counts as a used replica, an unused one as wasted with its VRAM-time.
 * Hand scenarios of 16-token blocks: a prompt of 127 shared blocks and
 * one block of its own, on one H100 prefill instance (TP4) and one or two
 * decode instances, nodes apart. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"

#define SHARED 127 /* prefix blocks; a prompt is SHARED + 1 blocks */
#define GAP_NS 5000000000LL

static const char *base_sets[] = {
    "gpu.name=H100-SXM",       "model.name=Llama-3-70B",       "cluster.gpus_per_node=4",
    "cluster.tp=4",            "cluster.disagg=true",          "cluster.prefill_nodes=1",
    "kvcache.block_tokens=16", "kvcache.transfer_engine=ideal", "scheduler.decode=step",
};
#define BASE_N ((int)(sizeof base_sets / sizeof base_sets[0]))
#define MAX_SETS 24

/* The summary metric called name (every run records the recorder's list). */
static double metric(const sim_results_t *r, const char *name)
{
	size_t i = 0;
	while (i < r->n_metric && strcmp(r->metric[i].name, name))
		i++;
	assert_true(i < r->n_metric);
	return r->metric[i].value;
}

/* The base scenario with decode_nodes decode nodes and the extra sets. */
static sim_results_t run(int decode_nodes, const char *const *extra, int n_extra,
			 sim_source_t *src)
{
	const char *sets[MAX_SETS];
	char nodes[64], dec[64];
	assert_true(BASE_N + 2 + n_extra <= MAX_SETS);
	memcpy(sets, base_sets, sizeof base_sets);
	snprintf(nodes, sizeof nodes, "cluster.nodes=%d", 1 + decode_nodes);
	snprintf(dec, sizeof dec, "cluster.decode_nodes=%d", decode_nodes);
	sets[BASE_N] = nodes;
	sets[BASE_N + 1] = dec;
	for (int i = 0; i < n_extra; i++)
		sets[BASE_N + 2 + i] = extra[i];
	return sf_run_source(NULL, sets, BASE_N + 2 + n_extra, src);
}

/* Handoff bytes of the flows that started in [from, to). */
static uint64_t handoff_bytes(const sim_results_t *r, int64_t from, int64_t to)
{
	uint64_t b = 0;
	for (size_t i = 0; i < r->n_xfer; i++)
		if (r->xfer[i].klass == XFER_HANDOFF && r->xfer[i].start_ns >= from &&
		    r->xfer[i].start_ns < to)
			b += r->xfer[i].bytes;
	return b;
}

/* Two requests of one prefix, GAP_NS apart (the first completes before
 * the second arrives), with 2 output tokens each. */
static sim_results_t two_of_one_prefix(int decode_nodes, const char *const *extra, int n_extra)
{
	sf_prefix_t b = sf_prefix(2, SHARED, 1000, 9000, 2);
	b.gap_ns = GAP_NS;
	sim_source_t src = {sf_prefix_next, &b, "prefix"};
	sim_results_t r = run(decode_nodes, extra, n_extra, &src);
	assert_int_equal(r.n_req, 2);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
	assert_true(r.req[0].e2e_ns < GAP_NS);
	return r;
}

static void second_moves_only_its_own_block(const char *mode)
{
	const char *on[] = {mode, "cluster.decode_prefix_cache=true"};
	sim_results_t r = two_of_one_prefix(1, on, 2);
	uint64_t first = handoff_bytes(&r, 0, GAP_NS), second = handoff_bytes(&r, GAP_NS, INT64_MAX);
	/* the first moves its whole prompt, SHARED + 1 blocks; the second
	 * (prompt - prefix) = 1 block */
	assert_true(first > 0);
	assert_int_equal(first % (SHARED + 1), 0);
	assert_int_equal(second, first / (SHARED + 1));
	assert_int_equal(metric(&r, "disagg.handoff_bytes"), first + second);
	sim_results_free(&r);
	/* and without the cache, both move it all */
	sim_results_t off = two_of_one_prefix(1, on, 1);
	assert_int_equal(handoff_bytes(&off, 0, GAP_NS), first);
	assert_int_equal(handoff_bytes(&off, GAP_NS, INT64_MAX), first);
	sim_results_free(&off);
}

static void test_second_handoff_of_a_prefix_moves_prompt_minus_prefix_after_prefill(void **st)
{
	(void)st;
	second_moves_only_its_own_block("cluster.handoff=after_prefill");
}

static void test_second_handoff_of_a_prefix_moves_prompt_minus_prefix_layerwise(void **st)
{
	(void)st;
	second_moves_only_its_own_block("cluster.handoff=layerwise");
}

/* Two decode instances: prefix_aware sends the second request where the
 * first left the prefix, whatever the seed's tie draws; least_loaded, with
 * both idle, draws at random and sometimes does not. */
static void test_prefix_aware_decode_routing_finds_the_cached_prefix(void **st)
{
	(void)st;
	int elsewhere = 0;
	for (int seed = 1; seed <= 8; seed++) {
		char sd[64];
		snprintf(sd, sizeof sd, "experiment.seed=%d", seed);
		const char *pa[] = {sd, "cluster.decode_prefix_cache=true",
				    "cluster.decode_routing=prefix_aware"};
		sim_results_t r = two_of_one_prefix(2, pa, 3);
		assert_int_equal(r.req[1].decode_instance, r.req[0].decode_instance);
		uint64_t first = handoff_bytes(&r, 0, GAP_NS);
		assert_int_equal(handoff_bytes(&r, GAP_NS, INT64_MAX), first / (SHARED + 1));
		sim_results_free(&r);
		sim_results_t ll = two_of_one_prefix(2, pa, 2);
		elsewhere += ll.req[1].decode_instance != ll.req[0].decode_instance;
		sim_results_free(&ll);
	}
	assert_true(elsewhere > 0);
}

static void test_prefix_aware_without_the_cache_is_an_error(void **st)
{
	(void)st;
	const char *sets[] = {"cluster.disagg=true", "cluster.prefill_share=0.5",
			      "cluster.decode_routing=prefix_aware"};
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config(NULL, sets, 3, &cfg, &e);
	sim_results_t r;
	if (!rc)
		rc = sim_run(cfg, NULL, &r, &e);
	cli_config_free(cfg);
	assert_int_not_equal(rc, 0);
	assert_non_null(strstr(e.msg, "decode_prefix_cache"));
}

/* ---- pre-placement ---------------------------------------------------------- */

/* Request 0 (1 output token: it ends on the prefill instance, no handoff)
 * computes the prefix at t = 0; request 1 of the same prefix arrives at
 * 2 s with out1 output tokens. */
typedef struct pre_src {
	sf_prefix_t b;
	uint32_t out1;
} pre_src_t;

static int pre_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	pre_src_t *p = ctx;
	int n = p->b.n, rc = sf_prefix_next(&p->b, a, e);
	if (rc == 1)
		a->out_len = n ? p->out1 : 1;
	return rc;
}

static const char *pre_sets[] = {
    "cluster.decode_prefix_cache=true",       "policy.replication.name=speculative",
    "policy.predictor.name=oracle",           "policy.replication.spec_decode_targets=1",
    "policy.replication.spec_route_hint=off",
};
#define PRE_N ((int)(sizeof pre_sets / sizeof pre_sets[0]))

static sim_results_t pre_run(uint32_t out1, int n_sets)
{
	pre_src_t p = {sf_prefix(2, SHARED, 1000, 9000, 1), out1};
	p.b.gap_ns = 2000000000LL;
	sim_source_t src = {pre_next, &p, "prefix"};
	sim_results_t r = run(1, pre_sets, n_sets, &src);
	assert_int_equal(r.n_req, 2);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
	return r;
}

/* The background copies to the decode instance (1): their blocks. */
static uint32_t preplaced_blocks(const sim_results_t *r)
{
	uint32_t n = 0;
	for (size_t i = 0; i < r->n_xfer; i++) {
		const res_transfer_t *x = &r->xfer[i];
		if (x->klass == XFER_BACKGROUND) {
			assert_int_equal(x->src_instance, 0);
			assert_int_equal(x->dst_instance, 1);
			assert_int_equal(x->cancelled, 0);
			n += x->blocks;
		}
	}
	return n;
}

static void test_preplaced_prefix_leaves_only_the_suffix_to_the_handoff(void **st)
{
	(void)st;
	sim_results_t r = pre_run(2, PRE_N);
	/* one replica of the prefix request 0 computed (its own block is not
	 * request 1's), sharded over the 4 GPUs' flows */
	assert_int_equal(metric(&r, "spec.replicas_created"), 1);
	assert_int_equal(preplaced_blocks(&r), 4 * SHARED);
	assert_int_equal(metric(&r, "spec.replicas_used"), 1);
	assert_int_equal(metric(&r, "spec.replicas_wasted"), 0);
	assert_true(metric(&r, "spec.bytes_bg") > 0);
	/* the handoff moved request 1's own block only */
	assert_int_equal(r.req[1].decode_instance, 1);
	uint64_t hoff = handoff_bytes(&r, 0, INT64_MAX);
	assert_true(hoff > 0);
	assert_int_equal((uint64_t)metric(&r, "spec.bytes_bg"), hoff * SHARED);
	sim_results_free(&r);
	/* without pre-placement it moves the whole prompt */
	sim_results_t off = pre_run(2, PRE_N - 2);
	assert_int_equal(metric(&off, "spec.replicas_created"), 0);
	assert_int_equal(handoff_bytes(&off, 0, INT64_MAX), hoff * (SHARED + 1));
	sim_results_free(&off);
}

/* Request 1 ends on the prefill instance too: the replica is never used,
 * and its VRAM-time from its allocation to the end of the run is wasted. */
static void test_unused_preplaced_prefix_is_wasted_with_its_vram_time(void **st)
{
	(void)st;
	sim_results_t r = pre_run(1, PRE_N);
	assert_int_equal(handoff_bytes(&r, 0, INT64_MAX), 0);
	assert_int_equal(metric(&r, "spec.replicas_created"), 1);
	assert_int_equal(metric(&r, "spec.replicas_used"), 0);
	assert_int_equal(metric(&r, "spec.replicas_wasted"), 1);
	int64_t start = INT64_MAX, end = 0;
	for (size_t i = 0; i < r.n_xfer; i++)
		if (r.xfer[i].klass == XFER_BACKGROUND) {
			start = r.xfer[i].requested_ns < start ? r.xfer[i].requested_ns : start;
			end = r.xfer[i].end_ns > end ? r.xfer[i].end_ns : end;
		}
	/* bytes x seconds from the reservation on: at least to the landing */
	double bytes = metric(&r, "spec.bytes_bg");
	double lo = bytes * (double)(end - start) * 1e-9 / 1e9;
	double got = metric(&r, "spec.unused_vram_gb_s");
	assert_true(got >= lo && got > 0);
	sim_results_free(&r);
}

/* ---- all off: results as before ------------------------------------------- */

/* FNV-1a, 64 bits (Fowler, Noll, Vo), over the exact values of a run: every
 * request row (the disaggregation columns included), every transfer row
 * and every summary metric but sim_events (how the run was stepped). */
static void fnv(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ULL;
}

static uint64_t run_hash(const sim_results_t *r)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < r->n_req; i++) {
		const res_request_t *q = &r->req[i];
		int64_t v[] = {(int64_t)q->id,  q->arrival_ns,     q->instance,     q->status,
			       q->ttft_ns,      q->tpot_ns,        q->tbt_p90_ns,   q->e2e_ns,
			       q->queue_ns,     q->fetch_wait_ns,  q->input_tokens, q->output_tokens,
			       q->tok_local,    q->tok_peer,       q->tok_host,     q->tok_recomputed,
			       q->tok_spec_hit, q->decode_instance, q->handoff_wait_ns};
		fnv(&h, v, sizeof v);
	}
	for (size_t i = 0; i < r->n_xfer; i++) {
		const res_transfer_t *x = &r->xfer[i];
		int64_t v[] = {x->src_instance, x->dst_instance, (int64_t)x->bytes, x->blocks,
			       x->klass,        x->start_ns,     x->end_ns,         x->cancelled};
		fnv(&h, v, sizeof v);
	}
	/* sim_events: how the run is stepped; ttft_nospec_*, abandoned,
	 * forecast.prefix*: metrics added after the commit the hashes come from */
	for (size_t i = 0; i < r->n_metric; i++)
		if (strcmp(r->metric[i].name, "sim_events") &&
		    strncmp(r->metric[i].name, "ttft_nospec_", 12) &&
		    strncmp(r->metric[i].name, "forecast.prefix", 15) &&
		    strcmp(r->metric[i].name, "abandoned")) {
			fnv(&h, r->metric[i].name, strlen(r->metric[i].name));
			fnv(&h, &r->metric[i].value, sizeof r->metric[i].value);
		}
	return h;
}

/* Disaggregated runs of the default experiment with the new keys at their
 * defaults, spelt out: the hashes are those of the code before they
 * existed (commit cb3413f), so leaving them off moves nothing. The
 * speculative case pins spec_vram_frac = 0.1, that code's default budget
 * (the default became auto later, on purpose), and was re-hashed once
 * more when the routers' view stopped showing a deferred copy before it
 * starts (its copies and routing move). Re-hashed when /summary
 * gained the offered-request metrics and renamed the completed TTFT
 * family: request and transfer rows hashed as before. */
static void test_all_off_is_byte_identical_to_before(void **st)
{
	(void)st;
	static const struct {
		const char *sets[6];
		int n;
		uint64_t want;
	} cases[] = {
	    {{"policy.preset=mooncake-disagg", "policy.replication.name=speculative",
	      "policy.predictor.name=oracle", "policy.replication.spec_vram_frac=0.1",
	      "cluster.decode_prefix_cache=false", "policy.replication.spec_decode_targets=0"},
	     6,
	     0x427e90337b3e8120ULL},
	    {{"policy.preset=dynamo-disagg", "cluster.decode_routing=least_loaded",
	      "cluster.handoff=layerwise", "cluster.decode_prefix_cache=false",
	      "cluster.disagg=true"},
	     5,
	     0x9bbbf3c6310597f1ULL},
	};
	/* KVSIM_PREFIX_PRINT=1 prints the hashes; =base leaves out the last two
	 * sets, which code before these keys does not know */
	const char *print = getenv("KVSIM_PREFIX_PRINT");
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int n = cases[k].n - (print && !strcmp(print, "base") ? 2 : 0);
		/* the digests were taken before the engines' custom all-reduce
		 * (compute.allreduce = auto): NCCL's, as then */
		const char *sets[8] = {"compute.allreduce=nccl"};
		assert_true(n < 8);
		memcpy(sets + 1, cases[k].sets, (size_t)n * sizeof *sets);
		sim_results_t r = sf_run(NULL, sets, n + 1);
		uint64_t got = run_hash(&r);
		sim_results_free(&r);
		if (print)
			printf("case %zu: 0x%016llxULL\n", k, (unsigned long long)got);
		else
			assert_int_equal(got, cases[k].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_second_handoff_of_a_prefix_moves_prompt_minus_prefix_after_prefill),
	    cmocka_unit_test(test_second_handoff_of_a_prefix_moves_prompt_minus_prefix_layerwise),
	    cmocka_unit_test(test_prefix_aware_decode_routing_finds_the_cached_prefix),
	    cmocka_unit_test(test_prefix_aware_without_the_cache_is_an_error),
	    cmocka_unit_test(test_preplaced_prefix_leaves_only_the_suffix_to_the_handoff),
	    cmocka_unit_test(test_unused_preplaced_prefix_is_wasted_with_its_vram_time),
	    cmocka_unit_test(test_all_off_is_byte_identical_to_before),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
