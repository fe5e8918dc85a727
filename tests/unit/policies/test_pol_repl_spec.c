/* speculative (policies/pol_repl_spec.c) on hand-built clusters and in
 * whole runs: budget refusals are counted by reason, a prefix larger than
 * the VRAM budget is reported once, p_use follows where a prefix's requests
 * were actually routed, the routing hint sends a replicated prefix to its
 * least busy warm instance (ties drawn, expiring with the forecast), copies
 * are asked from a source still computing the prefix when the simulator
 * defers them, and on fanout_65k a budget that fits pays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/pol.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/pol_fake.h"

#define S 1000000000LL

static pol_handle_t open_spec(const char *over)
{
	return fk_open(POL_REPLICATION, "speculative", over, 3);
}

static void routed(pol_handle_t *h, fake_t *f, const uint64_t *b, uint32_t n, uint64_t id,
                   uint32_t inst)
{
	err_t e;
	pol_req_t r = {id, f->now, b, n, n * 16, 10, 0};
	assert_int_equal(fk_repl(h)->on_route(h->state, &f->v, &f->a, &r, inst, &e), 0);
}

static int hint(pol_handle_t *h, fake_t *f, const uint64_t *b, uint32_t n, uint64_t id,
                uint32_t *inst)
{
	pol_req_t r = {id, f->now, b, n, n * 16, 10, 0};
	return fk_repl(h)->route_hint(h->state, &f->v, &r, inst);
}

static uint64_t PFX[32], PFX2[32];

/* 4 instances, 16-token blocks of 1 MB, 100 blocks of KV each; an 8-block
 * prefix on instance 0 expecting E arrivals. saved = 128 tokens x 100 ns
 * = 12800 ns, copy = 8 x 1000 ns: accepted iff p_use >= 0.625. Least busy
 * order: 1, 2, 3, 0. */
typedef struct scene {
	fake_t f;
	pol_fc_t e[2]; /* e[0] the forecast's entry; e[1] for a test's second prefix */
	pol_forecast_t fc;
} scene_t;

static void setup(scene_t *s, double expected)
{
	fk_init(&s->f, 4, 16, 1000000);
	fk_chain(PFX, 32, 500);
	fk_chain(PFX2, 32, 900);
	fk_hold(&s->f, 0, PFX, 8);
	for (int i = 0; i < 4; i++)
		s->f.inst[i].kv_cap_blocks = 100;
	s->f.inst[0].waiting = 9;
	s->f.inst[2].waiting = 1;
	s->f.inst[3].waiting = 2;
	s->e[0] = (pol_fc_t){PFX, 8, expected, 0, 0, {0}};
	s->fc = (pol_forecast_t){s->e, 1, NULL, 0};
}

/* cmocka set-up: a test starts on setup(s, 10); cmocka frees the scene
 * even when the test fails. */
static int scene_new(void **st)
{
	scene_t *s = malloc(sizeof *s);
	if (!s)
		return -1;
	setup(s, 10);
	*st = s;
	return 0;
}

static int scene_free(void **st)
{
	free(*st);
	return 0;
}

static int copied_to(const fake_t *f, uint32_t dst)
{
	for (uint32_t i = 0; i < f->n_copies; i++)
		if (f->copies[i].dst == dst)
			return 1;
	return 0;
}

/* ---- budgets that speak --------------------------------------------------- */

static void test_budget_refusals_are_counted_by_reason(void **st)
{
	scene_t *s = *st;
	/* VRAM: 10% of 100 blocks with 5 resident replicas leaves 5 < 8 */
	for (int i = 0; i < 4; i++)
		s->f.inst[i].kv_spec_blocks = 5;
	pol_handle_t h = open_spec("spec_targets=2");
	fk_tick_copies(&h, &s->f, &s->fc, 0);
	assert_int_equal(s->f.stats.refused_vram, 2);
	assert_int_equal(s->f.stats.refused_bw, 0);
	assert_int_equal(s->f.stats.copies_refused, 2);
	assert_int_equal(s->f.stats.prefix_over_budget, 0); /* 8 blocks fit a 10-block budget */
	pol_close(&h);

	/* bandwidth: 8 MB/s, 1 s bucket: the first 8 MB copy empties it */
	setup(s, 10);
	h = open_spec("spec_vram_frac=1,spec_targets=2,spec_bw_gbps=0.008");
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.stats.refused_bw, 1);
	assert_int_equal(s->f.stats.refused_vram, 0);
	assert_int_equal(s->f.stats.copies_refused, 1);
	pol_close(&h);
}

static void test_prefix_larger_than_budget_is_reported_once(void **st)
{
	scene_t *s = *st;
	fk_hold(&s->f, 0, PFX, 20);
	fk_hold(&s->f, 0, PFX2, 12);
	s->e[0] = (pol_fc_t){PFX, 20, 10, 0, 0, {0}};
	s->e[1] = (pol_fc_t){PFX2, 12, 10, 0, 0, {0}};
	s->fc = (pol_forecast_t){s->e, 1, NULL, 0};
	pol_handle_t h = open_spec("spec_targets=2,spec_vram_frac=0.1"); /* 10 blocks */
	for (int k = 0; k < 3; k++) {
		s->f.now = k * S / 10;
		fk_tick(&h, &s->f, &s->fc);
	}
	assert_int_equal(s->f.n_copies, 0);
	assert_int_equal(s->f.stats.prefix_over_budget, 1);
	assert_int_equal(s->f.stats.over_budget_blocks, 20);
	assert_int_equal(s->f.stats.over_budget_cap, 10);
	assert_string_equal(s->f.stats.over_budget_key, "spec_vram_frac");
	assert_int_equal(s->f.stats.refused_vram, 6); /* two targets, three ticks */
	s->fc.n = 2;
	fk_tick(&h, &s->f, &s->fc);
	assert_int_equal(s->f.stats.prefix_over_budget, 2);
	assert_int_equal(s->f.stats.over_budget_blocks, 20); /* the first one is kept */
	pol_close(&h);
}

/* spec_vram_frac = auto (the default): a 20-block prefix the former 0.1
 * default refused (10 blocks of a 100-block pool, see above) is copied; a
 * prefix above spec_vram_cap_frac is reported against that key and its
 * copies are refused, counted. */
static void test_auto_budget_fits_forecast_prefix_within_cap(void **st)
{
	scene_t *s = *st;
	fk_hold(&s->f, 0, PFX, 20);
	s->e[0] = (pol_fc_t){PFX, 20, 10, 0, 0, {0}};
	pol_handle_t h = open_spec("spec_targets=1");
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.copies[0].n, 20);
	assert_int_equal(s->f.stats.prefix_over_budget, 0);
	assert_int_equal(s->f.stats.refused_vram, 0);
	pol_close(&h);

	/* cap 0.25 of 100 = 25 blocks < 30 */
	setup(s, 10);
	fk_hold(&s->f, 0, PFX, 30);
	s->e[0] = (pol_fc_t){PFX, 30, 10, 0, 0, {0}};
	h = open_spec("spec_targets=1,spec_vram_cap_frac=0.25");
	fk_tick_copies(&h, &s->f, &s->fc, 0);
	fk_tick_copies(&h, &s->f, &s->fc, 0);
	assert_int_equal(s->f.stats.prefix_over_budget, 1);
	assert_int_equal(s->f.stats.over_budget_blocks, 30);
	assert_int_equal(s->f.stats.over_budget_cap, 25);
	assert_string_equal(s->f.stats.over_budget_key, "spec_vram_cap_frac");
	assert_int_equal(s->f.stats.refused_vram, 2); /* one target, two ticks */
	assert_int_equal(s->f.stats.copies_refused, 2);
	pol_close(&h);
}

/* Two 8-block prefixes both headed for instance 1 (the least busy): the
 * former 0.1 budget (10 blocks) holds one; auto makes room for every
 * prefix the forecast reports (16 blocks). */
static void test_auto_budget_holds_every_forecast_prefix(void **st)
{
	scene_t *s = *st;
	fk_hold(&s->f, 0, PFX2, 8);
	s->e[1] = (pol_fc_t){PFX2, 8, 10, 0, 0, {0}};
	s->fc.n = 2;
	pol_handle_t h = open_spec("spec_targets=1,spec_vram_frac=0.1");
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.stats.refused_vram, 1);
	pol_close(&h);
	s->f.n_copies = 0;
	s->f.stats = (pol_spec_stats_t){0};
	h = open_spec("spec_targets=1");
	fk_tick_copies(&h, &s->f, &s->fc, 2);
	assert_int_equal(s->f.copies[0].dst, 1);
	assert_int_equal(s->f.copies[1].dst, 1);
	assert_int_equal(s->f.stats.refused_vram, 0);
	pol_close(&h);
}

/* ---- use probability from routing ------------------------------------------- */

static void test_p_use_follows_where_requests_were_routed(void **st)
{
	scene_t *s = *st;
	/* E = 4 over targets 3 (likely) and 1: E/2 = 2 each, p_use 0.86 */
	setup(s, 4);
	s->e[0].n_likely = 1;
	s->e[0].likely[0] = 3;
	pol_handle_t h = open_spec("spec_targets=2,spec_vram_frac=1");
	fk_tick_copies(&h, &s->f, &s->fc, 2);
	assert_true(copied_to(&s->f, 3) && copied_to(&s->f, 1));
	pol_close(&h);

	/* the prefix's last 32 requests all went to 3: E_3 = 4 x (32 + 2)/36,
	 * E_1 = 4 x 2/36 (p_use 0.2 < 0.625) */
	setup(s, 4);
	s->e[0].n_likely = 1;
	s->e[0].likely[0] = 3;
	h = open_spec("spec_targets=2,spec_vram_frac=1");
	s->f.ns_per_block = 1000000000; /* the first tick only starts tracking the prefix */
	fk_tick_copies(&h, &s->f, &s->fc, 0);
	for (uint64_t i = 0; i < 40; i++)
		routed(&h, &s->f, PFX, 10, i, 3);
	routed(&h, &s->f, PFX2, 10, 99, 1); /* another prefix: not counted */
	s->f.ns_per_block = 1000;
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.copies[0].dst, 3);
	pol_close(&h);
}

/* Requests our hint placed split over the warm holders: with 3 holders a
 * fourth would take a quarter of them. */
static void test_p_use_of_hinted_requests_splits_over_warm_holders(void **st)
{
	scene_t *s = *st;
	/* E = 2, one target (3), warm on 0, 1, 2: without history p_use 0.86 */
	setup(s, 2);
	fk_hold(&s->f, 1, PFX, 8);
	fk_hold(&s->f, 2, PFX, 8);
	s->e[0].n_likely = 1;
	s->e[0].likely[0] = 3;
	pol_handle_t h = open_spec("spec_targets=1,spec_vram_frac=1");
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.copies[0].dst, 3);
	pol_close(&h);

	/* our copy to 2 lands, then 32 requests are all placed by the hint on
	 * a warm instance: a new holder would take a quarter of them, E_3 =
	 * 2 x (32/4 + 4)/36 = 0.67, p_use 0.49 < 0.625 */
	setup(s, 2);
	fk_hold(&s->f, 1, PFX, 8);
	s->e[0].n_likely = 1;
	s->e[0].likely[0] = 2;
	h = open_spec("spec_targets=1,spec_vram_frac=1");
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.copies[0].dst, 2);
	fk_repl(&h)->on_copy_end(h.state, s->f.copies[0].id, 1);
	fk_hold(&s->f, 2, PFX, 8);
	for (uint64_t i = 0; i < 32; i++) {
		uint32_t inst = 99;
		assert_int_equal(hint(&h, &s->f, PFX, 10, i, &inst), 1);
		assert_true(inst <= 2);
		routed(&h, &s->f, PFX, 10, i, inst);
	}
	s->e[0].likely[0] = 3;
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	pol_close(&h);
}

/* ---- routing hint ------------------------------------------------------------ */

static void test_route_hint_sends_replicated_prefix_to_least_busy_warm(void **st)
{
	scene_t *s = *st;
	pol_handle_t h = open_spec("spec_targets=1,spec_vram_frac=1");
	uint32_t inst = 99;
	assert_int_equal(hint(&h, &s->f, PFX, 10, 1, &inst), 0); /* nothing replicated */
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(hint(&h, &s->f, PFX, 10, 1, &inst), 0); /* still in flight */
	fk_repl(&h)->on_copy_end(h.state, s->f.copies[0].id, 1);
	fk_hold(&s->f, s->f.copies[0].dst, PFX, 8);
	assert_int_equal(s->f.copies[0].dst, 1);
	assert_int_equal(hint(&h, &s->f, PFX, 10, 2, &inst), 1);
	assert_int_equal(inst, 1); /* warm: 0 (9 waiting) and 1 (idle) */
	assert_int_equal(hint(&h, &s->f, PFX2, 10, 3, &inst), 0); /* another prefix */
	assert_int_equal(hint(&h, &s->f, PFX, 4, 4, &inst), 0);   /* a shorter prompt */
	/* equal load on 0 and 1: drawn, both chosen */
	s->f.inst[0].waiting = 0;
	int n1 = 0;
	for (uint64_t i = 0; i < 200; i++) {
		assert_int_equal(hint(&h, &s->f, PFX, 10, 10 + i, &inst), 1);
		assert_true(inst <= 1);
		n1 += inst == 1;
	}
	printf("ties: instance 1 drawn %d of 200\n", n1);
	assert_true(n1 > 60 && n1 < 140);
	/* the prefix leaves the forecast: the hint lasts one horizon (10 s) */
	pol_forecast_t none = {NULL, 0, NULL, 0};
	s->f.now = 5 * S;
	fk_tick(&h, &s->f, &none);
	assert_int_equal(hint(&h, &s->f, PFX, 10, 500, &inst), 1);
	s->f.now = 11 * S;
	fk_tick(&h, &s->f, &none);
	assert_int_equal(hint(&h, &s->f, PFX, 10, 501, &inst), 0);
	pol_close(&h);

	/* switched off */
	setup(s, 10);
	h = open_spec("spec_targets=1,spec_vram_frac=1,spec_route_hint=off");
	fk_tick(&h, &s->f, &s->fc);
	fk_repl(&h)->on_copy_end(h.state, s->f.copies[0].id, 1);
	fk_hold(&s->f, 1, PFX, 8);
	assert_int_equal(hint(&h, &s->f, PFX, 10, 2, &inst), 0);
	pol_close(&h);
}

/* PFX replicated by our copy from 0 to 1 under spec_route_hint = mode;
 * then 0 has 12 requests waiting, 1 has 9, 2 none, 3 two. */
static pol_handle_t replicated_then_busy(scene_t *s, const char *mode)
{
	char over[96];
	snprintf(over, sizeof over, "spec_targets=1,spec_vram_frac=1,spec_route_hint=%s", mode);
	pol_handle_t h = open_spec(over);
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.copies[0].dst, 1);
	fk_repl(&h)->on_copy_end(h.state, s->f.copies[0].id, 1);
	fk_hold(&s->f, 1, PFX, 8);
	s->f.inst[0].waiting = 12;
	s->f.inst[1].waiting = 9;
	s->f.inst[2].waiting = 0;
	s->f.inst[3].waiting = 2;
	return h;
}

/* What the llm-d scorer (weighted_score: queue 2, KV use 2, prefix 3)
 * picks for a 32-block request of PFX on the scene. */
static uint32_t llmd_pick(scene_t *s, uint64_t id)
{
	pol_handle_t r = fk_open(POL_ROUTING, "weighted_score", NULL, 5);
	pol_req_t q = {id, s->f.now, PFX, 32, 32 * 16, 10, 0};
	uint32_t inst = 99;
	assert_int_equal(((const struct pol_routing_ops *)r.ops)->route(r.state, &s->f.v, &q, &inst),
	                 POL_ACCEPT);
	pol_close(&r);
	return inst;
}

/* override puts a request of the replicated prefix on the least busy warm
 * instance (1, 9 waiting); score leaves the choice to the deployment's
 * router, which weighs the 8 warm blocks of 32 (3 x 0.25) against the
 * queues (2 x (12 - q) / 12: 0.5 at 1, 2 at 2) and takes the idle 2. */
static void test_route_hint_score_leaves_the_router_in_charge(void **st)
{
	scene_t *s = *st;
	pol_handle_t h = replicated_then_busy(s, "override");
	uint32_t inst = 99;
	assert_int_equal(hint(&h, &s->f, PFX, 32, 1, &inst), 1);
	assert_int_equal(inst, 1);
	assert_int_equal(s->f.n_announced, 0);
	pol_close(&h);

	setup(s, 10);
	h = replicated_then_busy(s, "score");
	assert_int_equal(s->f.n_announced, 1); /* the routers' view learns of the copy */
	assert_int_equal(s->f.announced_inst, 1);
	assert_int_equal(hint(&h, &s->f, PFX, 32, 1, &inst), 0);
	assert_int_equal(llmd_pick(s, 1), 2);
	routed(&h, &s->f, PFX, 32, 1, 2);
	assert_int_equal(s->f.stats.hint_routed, 0); /* 2 is not warm */
	/* equal queues: the router's prefix scorer takes a warm instance, and
	 * spec.hint_routed counts it in this mode */
	for (int i = 0; i < 4; i++)
		s->f.inst[i].waiting = 0;
	uint32_t pick = llmd_pick(s, 2);
	assert_true(pick == 0 || pick == 1);
	routed(&h, &s->f, PFX, 32, 2, pick);
	assert_int_equal(s->f.stats.hint_routed, 1);
	pol_close(&h);
}

/* off: no hint, no announcement, nothing counted as hint-routed: every
 * request is routed by the routing policy alone, as under replication
 * none with the same replicas in place. */
static void test_route_hint_off_routes_as_none(void **st)
{
	scene_t *s = *st;
	pol_handle_t h = replicated_then_busy(s, "off");
	uint32_t inst = 99;
	for (uint64_t i = 0; i < 8; i++) {
		s->f.inst[1].waiting = (uint32_t)i; /* warm and idle to warm and busy */
		assert_int_equal(hint(&h, &s->f, PFX, 32, i, &inst), 0);
		routed(&h, &s->f, PFX, 32, i, llmd_pick(s, i));
	}
	assert_int_equal(s->f.n_announced, 0);
	assert_int_equal(s->f.stats.hint_routed, 0);
	pol_close(&h);
	h = fk_open(POL_REPLICATION, "none", NULL, 1);
	assert_null(fk_repl(&h)->route_hint); /* none: the simulator always asks the router */
	pol_close(&h);
}

/* ---- sources still computing -------------------------------------------------- */

static uint32_t g_computing[FK_INST]; /* blocks of PFX being computed, after the READY ones */

static uint32_t fk_match_computing(void *c, uint32_t i, const uint64_t *b, uint32_t n)
{
	uint32_t m = fk_match(c, i, b, n), k = m;
	while (k < n && k < g_computing[i] && b[k] == PFX[k])
		k++;
	return k;
}

static void test_copies_asked_from_a_source_still_computing(void **st)
{
	scene_t *s = *st;
	s->f.n_held[0] = 0; /* instance 0 computes the 8 blocks: none READY anywhere */
	memset(g_computing, 0, sizeof g_computing);
	g_computing[0] = 8;
	pol_handle_t h = open_spec("spec_targets=2,spec_vram_frac=1");
	fk_tick_copies(&h, &s->f, &s->fc, 0); /* no deferral offered: nothing to copy */
	/* offered: both targets are asked from instance 0 (the fake, which
	 * knows READY blocks only, refuses them) */
	s->f.v.match_computing = fk_match_computing;
	fk_tick(&h, &s->f, &s->fc);
	assert_int_equal(s->f.n_refused, 2);
	pol_close(&h);

	/* the whole prefix does not fit a 5-block budget, the 4 READY blocks
	 * of it do: those are copied */
	setup(s, 10);
	s->f.n_held[0] = 0;
	fk_hold(&s->f, 0, PFX, 4);
	g_computing[0] = 8;
	s->f.v.match_computing = fk_match_computing;
	h = open_spec("spec_targets=1,spec_vram_frac=0.05");
	fk_tick_copies(&h, &s->f, &s->fc, 1);
	assert_int_equal(s->f.copies[0].n, 4);
	assert_int_equal(s->f.copies[0].src, 0);
	assert_int_equal(s->f.stats.prefix_over_budget, 1);
	pol_close(&h);
}

/* ---- holders with holes ----------------------------------------------------------- */

/* A copy from instance 1 at half the price: a wrong best source shows. */
static int64_t xfer_cheap_from_1(void *c, uint32_t s, uint32_t d, uint32_t n)
{
	(void)d;
	return (int64_t)n * ((fake_t *)c)->ns_per_block / (s == 1 ? 2 : 1);
}

/* Instance 1 holds the prefix's last block but not block 5: it matches 5
 * blocks, so it is neither a source of the whole prefix nor counted as its
 * holder, however cheap its link (the one-block shortcuts of sp_consider
 * must verify the run before they trust a last block). Instance 3 holds
 * only the last blocks, a run of none. */
static void test_a_holder_with_a_hole_is_no_source(void **st)
{
	scene_t *s = *st;
	fk_hold(&s->f, 0, PFX + 8, 2); /* instance 0: blocks 0-9 */
	fk_hold(&s->f, 1, PFX, 5);
	fk_hold(&s->f, 1, PFX + 6, 4); /* instance 1: 0-4 and 6-9 */
	fk_hold(&s->f, 3, PFX + 7, 3); /* instance 3: 7-9 */
	s->f.v.xfer_ns = xfer_cheap_from_1;
	s->e[0].n_blocks = 10;
	pol_handle_t h = open_spec("spec_targets=3,spec_vram_frac=1");
	fk_tick(&h, &s->f, &s->fc);
	assert_int_equal(s->f.n_refused, 0);
	assert_true(s->f.n_copies >= 2);
	for (uint32_t i = 0; i < s->f.n_copies; i++) {
		assert_int_equal(s->f.copies[i].src, 0);
		assert_int_equal(s->f.copies[i].n, 10);
	}
	assert_true(copied_to(&s->f, 1) && copied_to(&s->f, 2));
	pol_close(&h);
}

/* ---- whole runs ------------------------------------------------------------------ */

static sim_results_t run_config(const char *path, const char **sets, int n)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config(path, sets, n, &cfg, &e);
	if (rc)
		fail_msg("%s", e.msg);
	sim_results_t r;
	if ((rc = sim_run(cfg, NULL, &r, &e)))
		fail_msg("%s", e.msg);
	cli_config_free(cfg);
	return r;
}

static sim_results_t run_fanout(const char **sets, int n)
{
	return run_config("analysis/experiments/fanout_65k.ini", sets, n);
}

/* run_fanout, with what the run wrote to stderr in err (n bytes). */
static sim_results_t run_fanout_stderr(const char **sets, int n, char *err, size_t size)
{
	fflush(stderr);
	int saved = dup(2);
	FILE *t = tmpfile();
	assert_true(saved >= 0 && t);
	dup2(fileno(t), 2);
	sim_results_t r = run_fanout(sets, n);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(t);
	size_t got = fread(err, 1, size - 1, t);
	err[got] = '\0';
	fclose(t);
	return r;
}

/* cache_aware matches its own tree of where it sent requests (view =
 * routed, as sgl-router), which learns of a copy only through the
 * announcement score mode makes: on the default experiment, seeds 1-3, its
 * requests then find the replicas (replicas used 55, 62, 53 against 18,
 * 27, 14 with spec_route_hint = off). */
static void test_score_tells_a_routed_view_of_the_replicas(void **st)
{
	(void)st;
	double used[2] = {0, 0};
	const char *mode[2] = {"policy.replication.spec_route_hint=score",
	                       "policy.replication.spec_route_hint=off"};
	for (int seed = 1; seed <= 3; seed++)
		for (int m = 0; m < 2; m++) {
			char sd[32];
			snprintf(sd, sizeof sd, "experiment.seed=%d", seed);
			const char *sets[] = {"policy.routing.name=cache_aware",
			                      "policy.replication.name=speculative",
			                      "policy.predictor.name=oracle", mode[m], sd};
			sim_results_t r = run_config(NULL, sets, 5);
			used[m] += sim_results_get(&r, "spec.replicas_used");
			if (m == 1)
				assert_true(sim_results_get(&r, "spec.hint_routed") == 0);
			sim_results_free(&r);
		}
	printf("cache_aware, default experiment, seeds 1-3: replicas used, score %.0f, off %.0f\n",
	       used[0], used[1]);
	assert_true(used[0] > 2 * used[1]);
}

/* fanout_65k is about a 128-block prefix; the former default budget
 * (spec_vram_frac = 0.1, 87 blocks) says it cannot hold it, the auto
 * default grows to fit it, and a budget that fits cuts the mean TTFT. */
static void test_fanout_auto_budget_fits_what_0_1_refused_and_pays(void **st)
{
	(void)st;
	/* timings of the single-efficiency roofline (compute.gemm_mfu = 0),
	 * which this scenario's margins were drawn for. Which instance wins
	 * least_load's ties is drawn from the seed, and single seeds scatter
	 * (budget 0.5 / none: 0.72, 0.63, 0.57, 0.62 at seeds 1-4), so the
	 * claim is on the mean over four seeds. Routing to the warm copy (the
	 * hint) against routing without it was 1.02, 1.12, 0.96, 0.98: no
	 * gain on average, so only its use is checked here. */
	double sum_none = 0, sum_fits = 0;
	for (int seed = 1; seed <= 4; seed++) {
		char sd[32];
		snprintf(sd, sizeof sd, "experiment.seed=%d", seed);
		const char *none[] = {"kvcache.fetch=never", "compute.gemm_mfu=0", sd};
		const char *fits[] = {"kvcache.fetch=never", "policy.replication.name=speculative",
		                      "policy.predictor.name=oracle", "compute.gemm_mfu=0", sd};
		sim_results_t a = run_fanout(none, 3), c = run_fanout(fits, 5); /* auto */
		sum_none += sim_results_get(&a, "ttft_completed_mean_ms");
		sum_fits += sim_results_get(&c, "ttft_completed_mean_ms");
		assert_true(sim_results_get(&c, "spec.prefix_over_budget") == 0);
		assert_true(sim_results_get(&c, "spec.copies_deferred") > 0);
		assert_true(sim_results_get(&c, "spec.hint_routed") > 0);
		sim_results_free(&a);
		sim_results_free(&c);
	}
	const char *old[] = {"kvcache.fetch=never", "policy.replication.name=speculative",
	                     "policy.predictor.name=oracle", "policy.replication.spec_vram_frac=0.1",
	                     "compute.gemm_mfu=0"};
	const char *nohint[] = {"kvcache.fetch=never", "policy.replication.name=speculative",
	                        "policy.predictor.name=oracle",
	                        "policy.replication.spec_vram_frac=0.5",
	                        "policy.replication.spec_route_hint=off", "compute.gemm_mfu=0"};
	char err[4096];
	sim_results_t b = run_fanout_stderr(old, 5, err, sizeof err), d = run_fanout(nohint, 6);
	printf("fanout_65k TTFT mean over seeds 1-4: none %.1f, budget auto %.1f ms (%.1f%%)\n",
	       sum_none / 4, sum_fits / 4, 100 * (sum_fits / sum_none - 1));
	assert_true(sim_results_get(&b, "spec.prefix_over_budget") > 0);
	assert_true(sim_results_get(&b, "spec.refused_vram") > 0);
	/* said once, at the end, with the counts */
	char want[160];
	snprintf(want, sizeof want, "spec_vram_frac: %.0f forecast prefixes never fit",
	         sim_results_get(&b, "spec.prefix_over_budget"));
	const char *w = strstr(err, want);
	assert_non_null(w);
	assert_null(strstr(w + strlen(want), "never fit")); /* once */
	snprintf(want, sizeof want, "; %.0f copies refused by it",
	         sim_results_get(&b, "spec.refused_vram"));
	assert_non_null(strstr(err, want));
	assert_true(sim_results_get(&d, "spec.hint_routed") == 0);
	assert_true(sum_fits < 0.7 * sum_none);
	sim_results_free(&b);
	sim_results_free(&d);
}

/* ---- cost in holders, not instances ---------------------------------------- */

/* The view's candidates of every prefix (a superset of its holders), and
 * how often match was asked about an instance outside them. */
static uint32_t cand_list[FK_INST], n_cand, outside_asked;

static uint32_t counting_match(void *c, uint32_t i, const uint64_t *b, uint32_t n)
{
	int in = 0;
	for (uint32_t j = 0; j < n_cand; j++)
		in |= cand_list[j] == i;
	outside_asked += !in;
	return fk_match(c, i, b, n);
}

static const uint32_t *cands(void *c, const uint64_t *b, uint32_t n, uint32_t *count)
{
	(void)c;
	(void)b;
	(void)n;
	*count = n_cand;
	return cand_list;
}

/* 16 instances, the prefix whole on 3 and half on 9, candidates {3, 9, 12}:
 * a tick asks the other instances only about their own match as targets
 * (2 of them), where the best source per target used to ask every
 * instance, and the routing hint asks none of them; the copies and the hint
 * are those of the same view without candidates (every instance asked). */
static void test_spec_asks_only_the_prefix_holders(void **st)
{
	(void)st;
	fake_t *f[2];
	pol_handle_t h[2];
	uint32_t inst[2];
	n_cand = 3;
	cand_list[0] = 3, cand_list[1] = 9, cand_list[2] = 12;
	for (int k = 0; k < 2; k++) {
		f[k] = calloc(1, sizeof *f[k]);
		assert_non_null(f[k]);
		fk_init(f[k], 16, 16, 1000000);
		fk_chain(PFX, 32, 500);
		fk_hold(f[k], 3, PFX, 8);
		fk_hold(f[k], 9, PFX, 4);
		for (uint32_t i = 0; i < 16; i++)
			f[k]->inst[i].waiting = (i * 7) % 5;
		f[k]->v.match = counting_match;
		if (k)
			f[k]->v.candidates = cands;
		h[k] = open_spec("spec_targets=2,spec_vram_frac=1");
	}
	pol_fc_t e = {PFX, 8, 10, 0, 0, {0}};
	pol_forecast_t fc = {&e, 1, NULL, 0};
	for (int k = 0; k < 2; k++) {
		outside_asked = 0;
		fk_tick_copies(&h[k], f[k], &fc, 2);
		if (k)
			assert_true(outside_asked <= 2);
		else
			assert_true(outside_asked >= 13); /* without candidates: each of them */
	}
	for (uint32_t j = 0; j < 2; j++) {
		assert_int_equal(f[0]->copies[j].src, f[1]->copies[j].src);
		assert_int_equal(f[0]->copies[j].dst, f[1]->copies[j].dst);
		assert_int_equal(f[0]->copies[j].n, f[1]->copies[j].n);
	}
	for (int k = 0; k < 2; k++) { /* the copies land: their targets hold the prefix */
		for (uint32_t j = 0; j < 2; j++) {
			fk_repl(&h[k])->on_copy_end(h[k].state, f[k]->copies[j].id, 1);
			fk_hold(f[k], f[k]->copies[j].dst, PFX, 8);
			if (k)
				cand_list[n_cand++] = f[k]->copies[j].dst;
		}
		outside_asked = 0;
		assert_int_equal(hint(&h[k], f[k], PFX, 10, 1, &inst[k]), 1);
		if (k)
			assert_int_equal(outside_asked, 0);
	}
	assert_int_equal(inst[0], inst[1]);
	for (int k = 0; k < 2; k++) {
		pol_close(&h[k]);
		free(f[k]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_budget_refusals_are_counted_by_reason, scene_new,
	                                    scene_free),
	    cmocka_unit_test_setup_teardown(test_prefix_larger_than_budget_is_reported_once,
	                                    scene_new, scene_free),
	    cmocka_unit_test_setup_teardown(test_auto_budget_fits_forecast_prefix_within_cap,
	                                    scene_new, scene_free),
	    cmocka_unit_test_setup_teardown(test_auto_budget_holds_every_forecast_prefix, scene_new,
	                                    scene_free),
	    cmocka_unit_test_setup_teardown(test_route_hint_score_leaves_the_router_in_charge,
	                                    scene_new, scene_free),
	    cmocka_unit_test_setup_teardown(test_route_hint_off_routes_as_none, scene_new,
	                                    scene_free),
	    cmocka_unit_test_setup_teardown(test_p_use_follows_where_requests_were_routed,
	                                    scene_new, scene_free),
	    cmocka_unit_test_setup_teardown(test_p_use_of_hinted_requests_splits_over_warm_holders,
	                                    scene_new, scene_free),
	    cmocka_unit_test_setup_teardown(
		test_route_hint_sends_replicated_prefix_to_least_busy_warm, scene_new, scene_free),
	    cmocka_unit_test_setup_teardown(test_copies_asked_from_a_source_still_computing,
	                                    scene_new, scene_free),
	    cmocka_unit_test_setup_teardown(test_a_holder_with_a_hole_is_no_source, scene_new,
	                                    scene_free),
	    cmocka_unit_test(test_fanout_auto_budget_fits_what_0_1_refused_and_pays),
	    cmocka_unit_test(test_score_tells_a_routed_view_of_the_replicas),
	    cmocka_unit_test(test_spec_asks_only_the_prefix_holders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
