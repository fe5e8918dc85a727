/* Replication policies on hand-built clusters: which copies they ask for,
 * from where, under which budgets, and how they live with refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "policies/pol.h"
#include "tests/fixtures/pol_fake.h"

#define S 1000000000LL

static pol_handle_t open_fam(pol_family_t fam, const char *name, const char *over)
{
	return fk_open(fam, name, over, 3);
}

static uint64_t PFX[8], PFX2[8];

static void test_none_never_copies(void **st)
{
	(void)st;
	pol_handle_t h = open_fam(POL_REPLICATION, "none", NULL);
	pol_repl_timing_t t = fk_repl(&h)->timing(h.state);
	assert_int_equal(t.tick_ns, 0);
	assert_null(fk_repl(&h)->on_route);
	assert_null(fk_repl(&h)->on_tick);
	pol_close(&h);
}

/* Routed to inst 0 holding `local` blocks; inst 1 holds all 8. theta 1.5. */
static void test_reactive_hotspot_fetches_past_theta(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	fk_chain(PFX, 8, 500);
	fk_hold(&f, 1, PFX, 8);
	fk_hold(&f, 0, PFX, 2);
	pol_req_t r = {1, 0, PFX, 8, 128, 1, 0};
	pol_handle_t h = open_fam(POL_REPLICATION, "reactive_hotspot", NULL);
	err_t e;
	assert_int_equal(fk_repl(&h)->on_route(h.state, &f.v, &f.a, &r, 0, &e), 0);
	assert_int_equal(f.n_copies, 1); /* 8 > 1.5 x 2 */
	assert_int_equal(f.copies[0].src, 1);
	assert_int_equal(f.copies[0].dst, 0);
	assert_int_equal(f.copies[0].n, 8);
	assert_int_equal(f.copies[0].cls, POL_FG);
	f.held_n[0][0] = 6; /* 8 > 9? no */
	assert_int_equal(fk_repl(&h)->on_route(h.state, &f.v, &f.a, &r, 0, &e), 0);
	assert_int_equal(f.n_copies, 1);
	f.held_n[0][0] = 5; /* 8 > 7.5 */
	assert_int_equal(fk_repl(&h)->on_route(h.state, &f.v, &f.a, &r, 0, &e), 0);
	assert_int_equal(f.n_copies, 2);
	pol_close(&h);
}

/* repeat_count (X = 3 in 10 s) feeding early_rdma (M = 3, the source
 * included) on 4 instances. Inst 0 holds the prefix; loads 1: 5, 2: 1,
 * 3: 3 -> copies go to 2 and 3. */
static void arrive(pol_handle_t *pred, int64_t t, uint64_t id)
{
	uint64_t b[10];
	memcpy(b, PFX, sizeof PFX);
	b[8] = id << 20;
	b[9] = (id << 20) + 1;
	pol_arrival_t a = {t, b, 10, 0};
	err_t e;
	const struct pol_predictor_ops *o = (const void *)pred->ops;
	assert_int_equal(o->observe(pred->state, &a, &e), 0);
}

static pol_forecast_t fc_of(pol_handle_t *pred, int64_t now)
{
	pol_forecast_t fc;
	err_t e;
	const struct pol_predictor_ops *o = (const void *)pred->ops;
	assert_int_equal(o->forecast(pred->state, now, 10 * S, &fc, &e), 0);
	return fc;
}

static void test_early_rdma_fires_on_xth_repeat_to_m_least_busy(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 4, 16, 1);
	fk_chain(PFX, 8, 500);
	fk_hold(&f, 0, PFX, 8);
	f.inst[0].waiting = 10;
	f.inst[1].waiting = 5;
	f.inst[2].waiting = 1;
	f.inst[3].waiting = 3;
	pol_handle_t pred = open_fam(POL_PREDICTOR, "repeat_count", "rc_repeats=3,rc_window_s=10");
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=3");
	arrive(&pred, 0, 1);
	f.now = 1 * S;
	arrive(&pred, 1 * S, 2);
	pol_forecast_t fc = fc_of(&pred, f.now);
	fk_tick_copies(&h, &f, &fc, 0); /* the (X-1)-th repeat does not fire */
	assert_int_equal(f.stats.triggers, 0);
	f.now = 2 * S;
	arrive(&pred, 2 * S, 3);
	fc = fc_of(&pred, f.now);
	fk_tick_copies(&h, &f, &fc, 2);
	assert_int_equal(f.stats.triggers, 1);
	assert_int_equal(f.copies[0].dst, 2);
	assert_int_equal(f.copies[1].dst, 3);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(f.copies[i].src, 0);
		assert_int_equal(f.copies[i].n, 8);
		assert_int_equal(f.copies[i].cls, POL_BG);
	}
	assert_int_equal(f.n_spec, 2);
	fk_tick(&h, &f, &fc); /* both copies in flight: none asked twice */
	assert_int_equal(f.n_copies, 2);
	assert_int_equal(f.stats.triggers, 1);
	/* the copy to 2 landed: the prefix's requests go to the least busy warm one */
	fk_hold(&f, 2, PFX, 8);
	uint64_t rb[10];
	memcpy(rb, PFX, sizeof PFX);
	rb[8] = 99;
	rb[9] = 100;
	pol_req_t r = {9, 0, rb, 10, 160, 1, 0};
	uint32_t inst = 77;
	assert_int_equal(fk_repl(&h)->route_hint(h.state, &f.v, &r, &inst), 1);
	assert_int_equal(inst, 2);
	r.blocks = PFX2; /* another prefix: no hint */
	fk_chain(PFX2, 8, 900);
	r.n_blocks = 8;
	assert_int_equal(fk_repl(&h)->route_hint(h.state, &f.v, &r, &inst), 0);
	pol_close(&h);
	pol_close(&pred);
}

/* n instances, PFX's 8 blocks chained but held by none (a prefill still
 * running), waiting[i] queued requests (may be NULL: idle). */
static void er_cold_cluster(fake_t *f, uint32_t n, const uint32_t *waiting)
{
	fk_init(f, n, 16, 1);
	fk_chain(PFX, 8, 500);
	for (uint32_t i = 0; waiting && i < n; i++)
		f->inst[i].waiting = waiting[i];
}

/* er_cold_cluster with PFX held by instance 0. */
static void er_cluster(fake_t *f, uint32_t n, const uint32_t *waiting)
{
	er_cold_cluster(f, n, waiting);
	fk_hold(f, 0, PFX, 8);
}

/* Causality at the policy level: the predictor fires while the source
 * prefill is still running (nobody holds the prefix): early_rdma asks for
 * nothing it cannot get and copies once the source KV exists (the forecast
 * still naming it); a copy the simulator refuses is retried until
 * early_retry_s. */
static void test_early_rdma_waits_for_source_kv_and_retries_refusals(void **st)
{
	(void)st;
	fake_t f;
	er_cold_cluster(&f, 3, (const uint32_t[]){5, 0, 0}); /* least busy: 1, 2, 0 */
	pol_fc_t e1 = {PFX, 8, 5, 0, 0, {0}};
	pol_forecast_t fc = {&e1, 1, NULL, 0};
	pol_handle_t h =
	    open_fam(POL_REPLICATION, "early_rdma", "early_replicas=2,early_retry_s=5");
	fk_tick_copies(&h, &f, &fc, 0);
	assert_int_equal(f.n_refused, 0); /* no source: nothing asked */
	f.now = 1 * S;
	fk_hold(&f, 0, PFX, 8); /* prefill done on inst 0 */
	f.refuse_all = 1;       /* ... but the simulator still refuses */
	fk_tick_copies(&h, &f, &fc, 0);
	assert_int_equal(f.n_refused, 1);
	f.refuse_all = 0;
	f.now = 2 * S;
	fk_tick_copies(&h, &f, &fc, 1);
	assert_int_equal(f.copies[0].src, 0);
	assert_int_equal(f.copies[0].dst, 1);
	fk_tick(&h, &f, &fc); /* done: not asked again */
	assert_int_equal(f.n_copies, 1);
	pol_close(&h);

	/* past the deadline a refused copy is dropped; a forecast that names
	 * the prefix again plans it anew */
	fk_init(&f, 3, 16, 1);
	f.inst[0].waiting = 5;
	fk_hold(&f, 0, PFX, 8);
	f.refuse_all = 1;
	h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=2,early_retry_s=5");
	fk_tick(&h, &f, &fc);
	assert_int_equal(f.n_refused, 1);
	f.refuse_all = 0;
	f.now = 6 * S;
	fk_tick(&h, &f, NULL);
	assert_int_equal(f.n_copies, 0);
	assert_int_equal(f.n_refused, 1);
	f.now = 7 * S;
	fk_tick_copies(&h, &f, &fc, 1);
	assert_int_equal(f.copies[0].dst, 1);
	pol_close(&h);
}

/* ---- early_rdma: replicas to M, top-ups, expiry, ties ---------------------- */

static uint32_t hint(pol_handle_t *h, fake_t *f, uint32_t n_blocks)
{
	pol_req_t r = {1, f->now, PFX, n_blocks, n_blocks * 16, 1, 0};
	uint32_t inst = 77;
	return fk_repl(h)->route_hint(h->state, &f->v, &r, &inst) ? inst : 99;
}

/* The k-th recorded copy lands: its target holds PFX from now on. */
static void land(pol_handle_t *h, fake_t *f, uint32_t k, int landed)
{
	if (landed)
		fk_hold(f, f->copies[k].dst, PFX, 8);
	fk_repl(h)->on_copy_end(h->state, f->copies[k].id, landed);
}

static pol_forecast_t fc_pfx(pol_fc_t *e1)
{
	*e1 = (pol_fc_t){PFX, 8, 5, 0, 0, {0}};
	return (pol_forecast_t){e1, 1, NULL, 0};
}

static const uint32_t LOAD4[4] = {5, 3, 1, 2}; /* least loaded: 2, 3, 1, 0 */

/* The study's rule: M = 4 replicas on 4 instances is the source + 3 copies. */
static void test_early_rdma_m_counts_the_source(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 4, NULL);
	pol_fc_t e1;
	pol_forecast_t fc = fc_pfx(&e1);
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=4");
	fk_tick_copies(&h, &f, &fc, 3);
	for (uint32_t k = 0; k < 3; k++) {
		assert_int_equal(f.copies[k].src, 0);
		assert_int_equal(f.copies[k].dst, k + 1);
	}
	pol_close(&h);
	/* a prefix already on M instances needs no copy */
	er_cluster(&f, 4, NULL);
	fk_hold(&f, 3, PFX, 8);
	h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=2");
	fk_tick_copies(&h, &f, &fc, 0);
	assert_int_equal(f.stats.triggers, 1);
	pol_close(&h);
}

/* While the forecast keeps naming the prefix, a replica evicted (or a copy
 * cancelled) is replaced; ticks that do not name it copy nothing. */
static void test_early_rdma_tops_up_an_evicted_replica_while_hot(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 4, (const uint32_t[]){10, 0, 2, 3}); /* least busy: 1, 2, 3 */
	pol_fc_t e1;
	pol_forecast_t fc = fc_pfx(&e1);
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=3");
	fk_tick_copies(&h, &f, &fc, 2);
	land(&h, &f, 0, 1);
	land(&h, &f, 1, 1);
	f.now = 1 * S;
	fk_tick_copies(&h, &f, &fc, 2); /* three hold it */
	f.held_n[1][0] = 0;              /* the replica on 1 is evicted */
	f.now = 2 * S;
	fk_tick(&h, &f, NULL);
	assert_int_equal(f.n_copies, 2);
	f.now = 3 * S;
	fk_tick_copies(&h, &f, &fc, 3);
	assert_int_equal(f.copies[2].dst, 1);
	land(&h, &f, 2, 0); /* that copy is cancelled: the next tick asks again */
	f.now = 4 * S;
	fk_tick_copies(&h, &f, &fc, 4);
	assert_int_equal(f.copies[3].dst, 1);
	assert_int_equal(f.stats.triggers, 1); /* one firing, topped up */
	pol_close(&h);
}

/* The hint holds for early_expire_s after the forecast last named the
 * prefix (default early_horizon_s), then stops; naming it again re-fires.
 * early_route_warm = false turns the hint off alone. */
static void test_early_rdma_entries_expire_after_their_window(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 3, (const uint32_t[]){3, 0, 0});
	fk_hold(&f, 1, PFX, 8);
	pol_fc_t e1;
	pol_forecast_t fc = fc_pfx(&e1);
	pol_handle_t h =
	    open_fam(POL_REPLICATION, "early_rdma", "early_replicas=1,early_expire_s=5");
	assert_int_equal(hint(&h, &f, 8), 99); /* nothing fired yet */
	fk_tick(&h, &f, &fc);
	assert_int_equal(hint(&h, &f, 8), 1);
	f.now = 5 * S;
	fk_tick(&h, &f, NULL);
	assert_int_equal(hint(&h, &f, 8), 1);
	f.now = 5 * S + 1;
	assert_int_equal(hint(&h, &f, 8), 99);
	assert_int_equal(f.stats.triggers, 1);
	f.now = 6 * S;
	fk_tick(&h, &f, &fc);
	assert_int_equal(hint(&h, &f, 8), 1);
	assert_int_equal(f.stats.triggers, 2);
	pol_close(&h);

	f.now = 0;
	memset(&f.stats, 0, sizeof f.stats);
	h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=1,early_horizon_s=2");
	fk_tick(&h, &f, &fc);
	f.now = 2 * S + 1;
	assert_int_equal(hint(&h, &f, 8), 99);
	pol_close(&h);

	f.now = 0;
	memset(&f.stats, 0, sizeof f.stats);
	h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=1,early_route_warm=false");
	fk_tick(&h, &f, &fc);
	assert_int_equal(f.stats.triggers, 1);
	assert_int_equal(hint(&h, &f, 8), 99);
	pol_close(&h);
}

/* Equally loaded warm instances share the hinted requests (a seeded draw,
 * the same for the same seed), instead of the lowest index taking all. */
static void test_early_rdma_hint_breaks_load_ties_at_random(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 3, NULL);
	fk_hold(&f, 1, PFX, 8);
	fk_hold(&f, 2, PFX, 8);
	pol_fc_t e1;
	pol_forecast_t fc = fc_pfx(&e1);
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=1");
	pol_handle_t g = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=1");
	fk_tick(&h, &f, &fc);
	fk_tick(&g, &f, &fc);
	uint32_t count[3] = {0};
	for (int k = 0; k < 300; k++) {
		uint32_t i = hint(&h, &f, 8);
		assert_true(i < 3);
		assert_int_equal(hint(&g, &f, 8), i);
		count[i]++;
	}
	for (uint32_t i = 0; i < 3; i++)
		assert_true(count[i] > 50);
	f.inst[2].prefill_tokens = 10; /* equal counts: fewer queued tokens wins */
	f.inst[1].waiting = 1;
	for (int k = 0; k < 20; k++)
		assert_int_equal(hint(&h, &f, 8), 0);
	pol_close(&h);
	pol_close(&g);
}

/* ---- early_rdma, arrival trigger (the study's own rule) -------------------- */

#define ER_ARRIVAL "early_trigger=arrival,early_key_blocks=8,early_min_count=2,early_window_s=1"

/* Request id arrives at t with PFX + 2 blocks of its own: route_hint, then
 * (routed to the hint, else to inst 0) on_route, as the simulator calls
 * them. Returns the hinted instance, 99 when none. */
static uint32_t er_arrive_at(pol_handle_t *h, fake_t *f, int64_t t, uint64_t id, uint32_t n)
{
	uint64_t b[10];
	memcpy(b, PFX, sizeof PFX);
	b[8] = id << 20;
	b[9] = (id << 20) + 1;
	f->now = t;
	pol_req_t r = {id, t, b, n, n * 16, 1, 0};
	uint32_t inst = 77;
	int hinted = fk_repl(h)->route_hint(h->state, &f->v, &r, &inst);
	err_t e;
	assert_int_equal(fk_repl(h)->on_route(h->state, &f->v, &f->a, &r, hinted ? inst : 0, &e),
	                 0);
	return hinted ? inst : 99;
}

/* X = 2 within Z = 1 s: the first arrival does nothing, the second (0.5 s
 * later) makes the key active: routed to the resident instance, copies
 * planned to M = 4 over the others by load. */
static void test_early_rdma_arrival_fires_on_xth_arrival_within_window(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 4, LOAD4);
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", ER_ARRIVAL ",early_replicas=4");
	assert_int_equal(fk_repl(&h)->timing(h.state).horizon_ns, 0); /* no forecast needed */
	assert_int_equal(er_arrive_at(&h, &f, 0, 1, 10), 99);
	assert_int_equal(f.n_copies, 0);
	assert_int_equal(f.stats.triggers, 0);
	assert_int_equal(er_arrive_at(&h, &f, S / 2, 2, 10), 0);
	assert_int_equal(f.stats.triggers, 1);
	assert_int_equal(f.n_copies, 3);
	assert_int_equal(f.copies[0].dst, 2);
	assert_int_equal(f.copies[1].dst, 3);
	assert_int_equal(f.copies[2].dst, 1);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(f.copies[k].src, 0);
		assert_int_equal(f.copies[k].n, 8); /* the key: Y blocks */
	}
	pol_close(&h);
}

/* Arrivals spaced more than Z apart never make the key active; a request
 * shorter than Y blocks never counts. */
static void test_early_rdma_arrival_spaced_beyond_window_never_fires(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 4, NULL);
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", ER_ARRIVAL);
	for (int k = 0; k < 6; k++)
		assert_int_equal(er_arrive_at(&h, &f, k * (S + S / 2), (uint64_t)k + 1, 10), 99);
	for (int k = 0; k < 4; k++)
		assert_int_equal(er_arrive_at(&h, &f, 20 * S + k, (uint64_t)k + 10, 7), 99);
	assert_int_equal(f.n_copies, 0);
	assert_int_equal(f.stats.triggers, 0);
	pol_close(&h);
}

/* Every arrival of an active key re-plans to M: a cancelled copy is
 * replaced; a gap longer than Z deactivates the key, which then fires anew. */
static void test_early_rdma_arrival_refires_while_active(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 4, LOAD4);
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", ER_ARRIVAL ",early_replicas=4");
	er_arrive_at(&h, &f, 0, 1, 10);
	er_arrive_at(&h, &f, S / 2, 2, 10);
	assert_int_equal(f.n_copies, 3);
	land(&h, &f, 0, 1); /* on 2 */
	land(&h, &f, 1, 1); /* on 3 */
	land(&h, &f, 2, 0); /* the copy to 1 is cancelled */
	assert_int_equal(er_arrive_at(&h, &f, S * 8 / 10, 3, 10), 2); /* least-loaded resident */
	assert_int_equal(f.n_copies, 4);
	assert_int_equal(f.copies[3].dst, 1);
	assert_int_equal(er_arrive_at(&h, &f, S, 4, 10), 2);
	assert_int_equal(f.n_copies, 4); /* in flight: not asked twice */
	assert_int_equal(f.stats.triggers, 1);
	assert_int_equal(er_arrive_at(&h, &f, 3 * S, 5, 10), 99); /* 2 s gap: inactive */
	assert_int_equal(er_arrive_at(&h, &f, 3 * S + S / 10, 6, 10), 2);
	assert_int_equal(f.stats.triggers, 2);
	pol_close(&h);
}

/* The study sorts targets by request count alone, stable on index (no
 * random draw); the forecast trigger breaks count ties by queued tokens. */
static void test_early_rdma_targets_by_load_stable_on_index(void **st)
{
	(void)st;
	fake_t f;
	er_cluster(&f, 5, (const uint32_t[]){9, 2, 1, 0, 0});
	f.inst[2].prefill_tokens = 1000;
	f.inst[3].running = 1;
	pol_handle_t h = open_fam(POL_REPLICATION, "early_rdma", ER_ARRIVAL ",early_replicas=3");
	er_arrive_at(&h, &f, 0, 1, 10);
	er_arrive_at(&h, &f, 1, 2, 10);
	assert_int_equal(f.n_copies, 2);
	assert_int_equal(f.copies[0].dst, 4);
	assert_int_equal(f.copies[1].dst, 2);
	pol_close(&h);
	f.n_copies = 0;
	pol_fc_t e1;
	pol_forecast_t fc = fc_pfx(&e1);
	h = open_fam(POL_REPLICATION, "early_rdma", "early_replicas=3");
	fk_tick_copies(&h, &f, &fc, 2);
	assert_int_equal(f.copies[0].dst, 4);
	assert_int_equal(f.copies[1].dst, 3);
	pol_close(&h);
}

/* speculative: 4 instances, 16-token blocks of 1 MB, 100 blocks of KV each.
 * Two 8-block prefixes, both on inst 0, each expecting 10 arrivals.
 * saved = 128 tokens x 100 ns = 12800 ns; copy = 8 x 1000 ns = 8000 ns. */
static void spec_setup(fake_t *f, pol_fc_t e[2], pol_forecast_t *fc)
{
	fk_init(f, 4, 16, 1000000);
	fk_chain(PFX, 8, 500);
	fk_chain(PFX2, 8, 900);
	fk_hold(f, 0, PFX, 8);
	fk_hold(f, 0, PFX2, 8);
	for (int i = 0; i < 4; i++)
		f->inst[i].kv_cap_blocks = 100;
	f->inst[0].waiting = 9; /* least busy order: 1, 2, 3, 0 */
	f->inst[2].waiting = 1;
	f->inst[3].waiting = 2;
	e[0] = (pol_fc_t){PFX, 8, 10, 0, 0, {0}};
	e[1] = (pol_fc_t){PFX2, 8, 10, 0, 0, {0}};
	*fc = (pol_forecast_t){e, 2, NULL, 0};
}

static void test_speculative_respects_vram_budget(void **st)
{
	(void)st;
	fake_t f;
	pol_fc_t e[2];
	pol_forecast_t fc;
	spec_setup(&f, e, &fc);
	/* 10% of 100 blocks = 10 per instance: one 8-block replica each. The
	 * first prefix expects more (p_use 1 - e^-10 vs 1 - e^-5 per target),
	 * so it takes both targets 1 and 2 and the second gets none. */
	e[0].expected = 20;
	pol_handle_t h =
	    open_fam(POL_REPLICATION, "speculative", "spec_targets=2,spec_vram_frac=0.1");
	fk_tick_copies(&h, &f, &fc, 2);
	assert_int_not_equal(f.copies[0].dst, f.copies[1].dst);
	for (int i = 0; i < 2; i++) {
		assert_true(f.copies[i].dst == 1 || f.copies[i].dst == 2);
		assert_int_equal(f.copies[i].cls, POL_BG);
		assert_int_equal(f.copies[i].last, PFX[7]);
	}
	assert_int_equal(f.n_spec, 2);
	assert_int_equal(f.stats.triggers, 1);
	fk_tick(&h, &f, &fc); /* in flight: nothing new, budget still taken */
	assert_int_equal(f.n_copies, 2);
	pol_close(&h);

	/* replicas already resident count against the budget: inst 1 holds 5 */
	spec_setup(&f, e, &fc);
	f.inst[1].kv_spec_blocks = 5;
	h = open_fam(POL_REPLICATION, "speculative", "spec_targets=1,spec_vram_frac=0.1");
	fk_tick(&h, &f, &fc);
	for (uint32_t i = 0; i < f.n_copies; i++)
		assert_int_not_equal(f.copies[i].dst, 1);
	assert_int_equal(f.n_copies, 0); /* the only target of each prefix is full */
	pol_close(&h);
}

static void test_speculative_respects_bandwidth_budget(void **st)
{
	(void)st;
	fake_t f;
	pol_fc_t e[2];
	pol_forecast_t fc;
	spec_setup(&f, e, &fc);
	/* 8 MB/s with a 1 s bucket: one 8-block (8 MB) copy per second */
	pol_handle_t h = open_fam(POL_REPLICATION, "speculative",
	                          "spec_vram_frac=1,spec_targets=1,spec_bw_gbps=0.008");
	fk_tick_copies(&h, &f, &fc, 1);
	f.now = S / 2;
	fk_tick(&h, &f, &fc); /* half refilled: 4 MB < 8 MB */
	assert_int_equal(f.n_copies, 1);
	f.now = S;
	fk_tick_copies(&h, &f, &fc, 2);
	assert_int_not_equal(f.copies[0].last, f.copies[1].last);
	pol_close(&h);

	/* a 4 MB bucket: an 8 MB copy still goes when the bucket is full, and
	 * the 4 MB debt holds the next one back for 2 s (1 s to repay, 1 to refill) */
	spec_setup(&f, e, &fc);
	h = open_fam(POL_REPLICATION, "speculative",
	             "spec_vram_frac=1,spec_targets=1,spec_bw_gbps=0.004");
	fk_tick_copies(&h, &f, &fc, 1);
	f.now = 3 * S / 2;
	fk_tick_copies(&h, &f, &fc, 1);
	f.now = 2 * S;
	fk_tick_copies(&h, &f, &fc, 2);
	pol_close(&h);
}

/* p_use = 1 - e^{-10} for one target, benefit = 12799.4 ns. A copy of
 * 1500 ns/block costs 12000: passes at payback 1, fails at 1.07 (12840). */
static void test_speculative_payback_test(void **st)
{
	(void)st;
	fake_t f;
	pol_fc_t e[2];
	pol_forecast_t fc;
	spec_setup(&f, e, &fc);
	fc.n = 1;
	f.ns_per_block = 1500;
	pol_handle_t h = open_fam(POL_REPLICATION, "speculative", "spec_targets=1");
	fk_tick_copies(&h, &f, &fc, 1);
	pol_close(&h);
	spec_setup(&f, e, &fc);
	fc.n = 1;
	f.ns_per_block = 1500;
	h = open_fam(POL_REPLICATION, "speculative", "spec_targets=1,spec_payback=1.07");
	fk_tick_copies(&h, &f, &fc, 0);
	pol_close(&h);
	/* rarely used: E = 0.5, p_use = 0.39, benefit 5036 < 12000 */
	spec_setup(&f, e, &fc);
	fc.n = 1;
	e[0].expected = 0.5;
	f.ns_per_block = 1500;
	h = open_fam(POL_REPLICATION, "speculative", "spec_targets=1");
	fk_tick_copies(&h, &f, &fc, 0);
	pol_close(&h);
}

static void test_speculative_cancels_copies_that_left_the_forecast(void **st)
{
	(void)st;
	fake_t f;
	pol_fc_t e[2];
	pol_forecast_t fc;
	spec_setup(&f, e, &fc);
	pol_handle_t h =
	    open_fam(POL_REPLICATION, "speculative", "spec_targets=1,spec_vram_frac=1");
	fk_tick_copies(&h, &f, &fc, 2);
	fk_repl(&h)->on_copy_end(h.state, f.copies[0].id, 1); /* landed: not cancellable */
	pol_forecast_t empty = {NULL, 0, NULL, 0};
	fk_tick(&h, &f, &empty);
	assert_int_equal(f.n_cancel, 1);
	fk_tick(&h, &f, &empty);
	assert_int_equal(f.n_cancel, 1);
	pol_close(&h);
}

/* oracle + speculative end to end on the fake: recall 0 behaves as none,
 * recall 1 replicates. */
static uint32_t oracle_then_spec(const char *over)
{
	fake_t f;
	pol_fc_t e[2];
	pol_forecast_t fc;
	spec_setup(&f, e, &fc);
	pol_handle_t pred = open_fam(POL_PREDICTOR, "oracle", over);
	pol_handle_t h = open_fam(POL_REPLICATION, "speculative", "spec_targets=2");
	const struct pol_predictor_ops *o = (const void *)pred.ops;
	err_t er;
	for (uint64_t i = 0; i < 6; i++) {
		uint64_t b[10];
		memcpy(b, PFX, sizeof PFX);
		b[8] = (i + 1) << 20;
		b[9] = ((i + 1) << 20) + 1;
		pol_arrival_t a = {(int64_t)i * S, b, 10, -1};
		assert_int_equal(o->peek(pred.state, &a, &er), 0);
	}
	f.now = S / 2;
	assert_int_equal(o->forecast(pred.state, f.now, 10 * S, &fc, &er), 0);
	fk_tick(&h, &f, &fc);
	pol_close(&h);
	pol_close(&pred);
	return f.n_copies;
}

static void test_oracle_recall_zero_behaves_as_none(void **st)
{
	(void)st;
	assert_int_equal(oracle_then_spec("oracle_recall=0"), 0);
	assert_int_equal(oracle_then_spec("oracle_recall=1"), 2);
}

/* full: every routed prompt goes everywhere once its source KV exists. */
static void test_full_replicates_everywhere_after_source_prefill(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 4, 16, 1);
	fk_chain(PFX, 8, 500);
	pol_req_t r = {1, 0, PFX, 8, 128, 1, 0};
	pol_handle_t h = open_fam(POL_REPLICATION, "full", NULL);
	err_t e;
	assert_int_equal(fk_repl(&h)->on_route(h.state, &f.v, &f.a, &r, 2, &e), 0);
	fk_tick(&h, &f, NULL); /* inst 2 has not computed it: refused, kept */
	assert_int_equal(f.n_copies, 0);
	assert_int_equal(f.n_refused, 3);
	fk_hold(&f, 2, PFX, 8);
	f.now = S;
	fk_tick(&h, &f, NULL);
	assert_int_equal(f.n_copies, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(f.copies[i].src, 2);
		assert_int_not_equal(f.copies[i].dst, 2);
	}
	assert_int_equal(f.n_spec, 3);
	fk_tick(&h, &f, NULL);
	assert_int_equal(f.n_copies, 3);
	pol_close(&h);
}

/* The retry queue is bounded: with room for 2, the oldest of 3 copies of
 * one request gives way (and the shared prefix stays alive for the rest). */
static void test_full_pending_is_bounded(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 4, 16, 1);
	fk_chain(PFX, 8, 500);
	pol_req_t r = {1, 0, PFX, 8, 128, 1, 0};
	pol_handle_t h = open_fam(POL_REPLICATION, "full", "full_max_pending=2");
	err_t e;
	assert_int_equal(fk_repl(&h)->on_route(h.state, &f.v, &f.a, &r, 0, &e), 0);
	fk_hold(&f, 0, PFX, 8);
	fk_tick(&h, &f, NULL);
	assert_int_equal(f.n_copies, 2);
	assert_int_equal(f.copies[0].dst, 2); /* dst 1 was dropped */
	assert_int_equal(f.copies[1].dst, 3);
	pol_close(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_none_never_copies),
	    cmocka_unit_test(test_reactive_hotspot_fetches_past_theta),
	    cmocka_unit_test(test_early_rdma_fires_on_xth_repeat_to_m_least_busy),
	    cmocka_unit_test(test_early_rdma_waits_for_source_kv_and_retries_refusals),
	    cmocka_unit_test(test_early_rdma_m_counts_the_source),
	    cmocka_unit_test(test_early_rdma_tops_up_an_evicted_replica_while_hot),
	    cmocka_unit_test(test_early_rdma_entries_expire_after_their_window),
	    cmocka_unit_test(test_early_rdma_hint_breaks_load_ties_at_random),
	    cmocka_unit_test(test_early_rdma_arrival_fires_on_xth_arrival_within_window),
	    cmocka_unit_test(test_early_rdma_arrival_spaced_beyond_window_never_fires),
	    cmocka_unit_test(test_early_rdma_arrival_refires_while_active),
	    cmocka_unit_test(test_early_rdma_targets_by_load_stable_on_index),
	    cmocka_unit_test(test_speculative_respects_vram_budget),
	    cmocka_unit_test(test_speculative_respects_bandwidth_budget),
	    cmocka_unit_test(test_speculative_payback_test),
	    cmocka_unit_test(test_speculative_cancels_copies_that_left_the_forecast),
	    cmocka_unit_test(test_oracle_recall_zero_behaves_as_none),
	    cmocka_unit_test(test_full_replicates_everywhere_after_source_prefill),
	    cmocka_unit_test(test_full_pending_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
