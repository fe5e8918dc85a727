/* Eviction and admission rows of the decision trace (output.decisions,
 * sim/run/sim_decisions.h) in whole runs of the default experiment: every
 * eviction of every store is a row (each instance's rows number its
 * store's evictions 0, 1, 2, ... and the tiers' rows are their
 * blocks_evicted), speculative blocks evicted unused read spec = 1, used = 0
 * within the waste accounting, and an SLO admission's rows are its verdicts:
 * rejects are the run's rejected_slo requests, each exactly where its
 * estimate exceeds its SLO. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* Rows of kind k (at tier, when tier >= 0). */
static size_t count_kind(const sim_results_t *r, int k, int tier)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_dec; i++)
		n += r->dec[i].kind == k && (tier < 0 || r->dec[i].tier == tier);
	return n;
}

/* Each instance's HBM eviction rows carry its store's count before them:
 * 0, 1, 2, ... in time order, so none is missing; every evict row's fields
 * are those of an evicted block. Returns the HBM rows. */
static size_t check_hbm_rows(const sim_results_t *r, uint32_t n_inst)
{
	uint64_t *next = calloc(n_inst, sizeof *next);
	assert_non_null(next);
	size_t n = 0;
	int64_t t = 0;
	for (size_t i = 0; i < r->n_dec; i++) {
		const res_decision_t *d = &r->dec[i];
		assert_true(d->t_ns >= t);
		t = d->t_ns;
		if (d->kind != DEC_EVICT)
			continue;
		assert_int_equal(d->blocks, 1);
		assert_true(d->age_ns >= 0);
		assert_int_equal(d->used, d->chosen_matched > 0);
		assert_true(!d->spec || !d->used);
		assert_int_equal(d->opt0_inst, -1); /* the victim alone */
		if (d->tier != 0)
			continue;
		assert_true(d->chosen >= 0 && (uint32_t)d->chosen < n_inst);
		assert_int_equal(d->seq, next[d->chosen]);
		next[d->chosen]++;
		n++;
	}
	free(next);
	return n;
}

static void test_every_hbm_eviction_is_a_row_with_lru_and_lfu_scores(void **st)
{
	(void)st;
	/* a small KV pool evicts */
	const char *lru[] = {"output.decisions=true", "cluster.kv_blocks=120"};
	sim_results_t r = sf_run(NULL, lru, 2);
	uint32_t n_inst = (uint32_t)sim_results_get(&r, "instances");
	size_t n = check_hbm_rows(&r, n_inst);
	printf("lru: %zu evict rows of %zu\n", n, r.n_dec);
	assert_true(n > 100);
	assert_int_equal(n, count_kind(&r, DEC_EVICT, -1)); /* no tier below HBM */
	size_t with_next = 0;
	for (size_t i = 0; i < r.n_dec; i++) { /* LRU's score: the last use */
		const res_decision_t *d = &r.dec[i];
		if (d->kind != DEC_EVICT)
			continue;
		assert_true(d->score == (double)(d->t_ns - d->age_ns));
		/* the options: the victim, then the next in LRU order (older first) */
		assert_int_equal(d->opt0_score, d->t_ns - d->age_ns);
		assert_true(d->n_options >= 1);
		const int64_t o[] = {d->opt0_score, d->opt1_score, d->opt2_score, d->opt3_score};
		for (int k = 1; k < 4; k++) {
			assert_int_equal(o[k] >= 0, (uint32_t)k < d->n_options);
			if (o[k] >= 0)
				assert_true(o[k - 1] <= o[k] && o[k] <= d->t_ns);
		}
		with_next += d->opt1_score >= 0;
	}
	assert_true(with_next > 0);
	sim_results_free(&r);
	/* lfu ranks by hits: its score is the victim's hits */
	const char *lfu[] = {"output.decisions=true", "cluster.kv_blocks=120",
	                     "policy.eviction.name=lfu"};
	r = sf_run(NULL, lfu, 3);
	n = check_hbm_rows(&r, n_inst);
	assert_true(n > 100);
	size_t hit = 0;
	for (size_t i = 0; i < r.n_dec; i++)
		if (r.dec[i].kind == DEC_EVICT) {
			assert_true(r.dec[i].score == (double)r.dec[i].chosen_matched);
			hit += r.dec[i].used;
		}
	printf("lfu: %zu evict rows, %zu of used blocks\n", n, hit);
	sim_results_free(&r);
}

/* As test_sim_tiers: a small HBM pool and host tier push blocks down to
 * NVMe, a small drive to the pool, and a small pool evicts. */
static const char *const TIERS[] = {"output.decisions=true", "cluster.kv_blocks=120",
                                    "kvcache.host_kv_gb=10", "kvcache.host_offload=true",
                                    "kvcache.nvme_kv_gb=20", "kvcache.pool_kv_gb=60",
                                    "kvcache.host_fetch=always"};
#define N_TIERS (int)(sizeof TIERS / sizeof TIERS[0])

static void test_tier_evictions_are_their_blocks_evicted(void **st)
{
	(void)st;
	sim_results_t r = sf_run(NULL, TIERS, N_TIERS);
	uint32_t n_inst = (uint32_t)sim_results_get(&r, "instances");
	size_t hbm = check_hbm_rows(&r, n_inst), host = count_kind(&r, DEC_EVICT, 1),
	       nvme = count_kind(&r, DEC_EVICT, 2), pool = count_kind(&r, DEC_EVICT, 3);
	printf("evict rows: hbm %zu, host %zu, nvme %zu, pool %zu\n", hbm, host, nvme, pool);
	assert_true(hbm > 0 && host > 0 && nvme > 0 && pool > 0);
	assert_true((double)nvme == sim_results_get(&r, "nvme.blocks_evicted"));
	assert_true((double)pool == sim_results_get(&r, "pool.blocks_evicted"));
	for (size_t i = 0; i < r.n_dec; i++) /* the tiers are LRU */
		if (r.dec[i].kind == DEC_EVICT && r.dec[i].tier > 0)
			assert_true(r.dec[i].score == (double)(r.dec[i].t_ns - r.dec[i].age_ns));
	sim_results_free(&r);
}

typedef struct idd {
	uint64_t id;
	uint32_t depth;
	int tier;
} idd_t;

static int idd_cmp(const void *a, const void *b)
{
	const idd_t *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* A block id names its whole prefix, so it has one depth in every store:
 * a block offloaded down the tiers and fetched back keeps its position
 * (the policies' match memo reads it, kv_kept). Every eviction row of an
 * id, at any tier, says the same depth; offloads once wrote depth 0. */
static void test_a_block_keeps_its_depth_in_every_tier(void **st)
{
	(void)st;
	sim_results_t r = sf_run(NULL, TIERS, N_TIERS);
	idd_t *v = calloc(r.n_dec ? r.n_dec : 1, sizeof *v);
	assert_non_null(v);
	size_t n = 0, deep_below = 0;
	for (size_t i = 0; i < r.n_dec; i++)
		if (r.dec[i].kind == DEC_EVICT)
			v[n++] = (idd_t){r.dec[i].prefix, r.dec[i].depth, r.dec[i].tier};
	qsort(v, n, sizeof *v, idd_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && v[i].id == v[i - 1].id)
			assert_int_equal(v[i].depth, v[i - 1].depth);
		deep_below += v[i].tier > 0 && v[i].depth > 0;
	}
	printf("eviction rows: %zu, below HBM at depth > 0: %zu\n", n, deep_below);
	assert_true(deep_below > 0); /* the tiers do hold deep blocks */
	free(v);
	sim_results_free(&r);
}

static void test_speculative_blocks_evicted_unused_within_the_waste(void **st)
{
	(void)st;
	const char *sets[] = {"output.decisions=true", "cluster.kv_blocks=120",
	                      "policy.replication.name=speculative", "policy.predictor.name=oracle"};
	sim_results_t r = sf_run(NULL, sets, 4);
	check_hbm_rows(&r, (uint32_t)sim_results_get(&r, "instances"));
	/* a block's bytes: a background shard row's per block, times the shards (tp) */
	cfg_t *cfg = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, sets, 4, &cfg, &e), 0);
	double tp = (double)cfg_int(cfg, "cluster", "tp"), bb = 0;
	cli_config_free(cfg);
	for (size_t j = 0; j < r.n_xfer && !bb; j++)
		if (r.xfer[j].klass == XFER_BACKGROUND)
			bb = (double)r.xfer[j].bytes / r.xfer[j].blocks * tp;
	size_t spec = 0;
	double gbs_rows = 0;
	for (size_t i = 0; i < r.n_dec; i++) {
		const res_decision_t *d = &r.dec[i];
		if (d->kind == DEC_EVICT && d->spec) {
			assert_int_equal(d->used, 0);
			assert_int_equal(d->chosen_matched, 0);
			spec++;
			gbs_rows += bb * (double)d->age_ns * 1e-18;
		}
	}
	double wasted = sim_results_get(&r, "spec.replicas_wasted"),
	       gbs = sim_results_get(&r, "spec.unused_vram_gb_s");
	printf("spec evict rows %zu: %.3f GB-s idle since last use; replicas wasted %.0f, "
	       "unused GB-s %.3f (also counts blocks left at the end)\n",
	       spec, gbs_rows, wasted, gbs);
	assert_true(spec > 0 && wasted > 0 && bb > 0);
	/* the waste counts each unused block from its landing (<= its last use)
	 * to its eviction, and the blocks left at the end */
	assert_true(gbs_rows > 0 && gbs_rows <= gbs * (1 + 1e-12));
	sim_results_free(&r);
}

static void test_slo_admission_rows_are_its_verdicts(void **st)
{
	(void)st;
	const char *sets[] = {"output.decisions=true", "policy.admission.name=slo_reject",
	                      "slo.ttft_ms=400"};
	sim_results_t r = sf_run(NULL, sets, 3);
	size_t rej = 0, acc = 0;
	for (size_t i = 0; i < r.n_dec; i++) {
		const res_decision_t *d = &r.dec[i];
		if (d->kind != DEC_ADMIT)
			continue;
		/* right after its route row, whose estimate it carries */
		assert_true(i > 0);
		const res_decision_t *p = &r.dec[i - 1];
		assert_int_equal(p->kind, DEC_ROUTE);
		assert_int_equal(p->id, d->id);
		assert_int_equal(p->chosen, d->chosen);
		assert_int_equal(p->chosen_est_ns, d->chosen_est_ns);
		assert_int_equal(p->t_ns, d->t_ns);
		assert_int_equal(d->slo_ns, 400000000);
		/* slo_reject (slack 1) rejects exactly when its estimate exceeds the SLO */
		assert_int_equal(d->outcome == DEC_OUT_REJECTED_ADMISSION, d->score > (double)d->slo_ns);
		assert_int_equal(p->outcome == DEC_OUT_REJECTED_ADMISSION,
		                 d->outcome == DEC_OUT_REJECTED_ADMISSION);
		rej += d->outcome == DEC_OUT_REJECTED_ADMISSION;
		acc += d->outcome == DEC_OUT_OK;
	}
	size_t slo = 0;
	for (size_t i = 0; i < r.n_req; i++)
		slo += r.req[i].status == REQ_REJECTED_SLO;
	printf("admission rows: %zu accepted, %zu rejected; rejected_slo %zu\n", acc, rej, slo);
	assert_true(rej > 0 && acc > 0);
	assert_int_equal(rej, slo);
	assert_int_equal(rej + acc, count_kind(&r, DEC_ROUTE, -1));
	sim_results_free(&r);
	/* accept_all, the default, admits all by definition: no rows */
	const char *dflt[] = {"output.decisions=true"};
	r = sf_run(NULL, dflt, 1);
	assert_true(r.n_dec > 0);
	assert_int_equal(count_kind(&r, DEC_ADMIT, -1), 0);
	sim_results_free(&r);
}

static void test_eviction_rows_leave_results_identical(void **st)
{
	(void)st;
	const char *off[] = {"cluster.kv_blocks=120", "policy.admission.name=slo_reject",
	                     "slo.ttft_ms=2000"};
	const char *on[] = {"cluster.kv_blocks=120", "policy.admission.name=slo_reject",
	                    "slo.ttft_ms=2000", "output.decisions=true"};
	sim_results_t a = sf_run(NULL, off, 3), b = sf_run(NULL, on, 4);
	assert_true(count_kind(&b, DEC_EVICT, -1) > 0 && count_kind(&b, DEC_ADMIT, -1) > 0);
	assert_int_equal(a.n_req, b.n_req);
	assert_memory_equal(a.req, b.req, a.n_req * sizeof *a.req);
	assert_int_equal(a.n_xfer, b.n_xfer);
	sim_results_free(&a);
	sim_results_free(&b);
}

TEST_MAIN(cmocka_unit_test(test_every_hbm_eviction_is_a_row_with_lru_and_lfu_scores),
          cmocka_unit_test(test_tier_evictions_are_their_blocks_evicted),
          cmocka_unit_test(test_a_block_keeps_its_depth_in_every_tier),
          cmocka_unit_test(test_speculative_blocks_evicted_unused_within_the_waste),
          cmocka_unit_test(test_slo_admission_rows_are_its_verdicts),
          cmocka_unit_test(test_eviction_rows_leave_results_identical))
