/* Eviction orders, transfer modes, admission and speculation accounting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/run/recorder.h"

#include <math.h>
#include <string.h>

#include "policies/pol.h"
#include "tests/fixtures/pol_fake.h"
#include "tests/fixtures/test_main.h"

static pol_handle_t open_fam(pol_family_t fam, const char *name, const char *over)
{
	return fk_open(fam, name, over, 1);
}

/* A: old-ish, 5 hits, cheap-ish. B: newest, 1 hit, unused speculative,
 * expensive, predicted no reuse. C: oldest, 3 hits, cheapest, reuse 10. */
static const pol_block_meta_t BLK[3] = {
    {100, 5, 0, 1000, -1},
    {200, 1, 1, 5000, 0},
    {50, 3, 0, 100, 10},
};

/* The eviction order of BLK as a string such as "CAB". */
static void order(const char *name, const char *over, char out[4])
{
	pol_handle_t h = open_fam(POL_EVICTION, name, over);
	const struct pol_eviction_ops *o = (const void *)h.ops;
	int idx[3] = {0, 1, 2};
	for (int i = 1; i < 3; i++)
		for (int j = i;
		     j > 0 && pol_evict_cmp(o, h.state, &BLK[idx[j]], &BLK[idx[j - 1]]) < 0; j--) {
			int x = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = x;
		}
	for (int i = 0; i < 3; i++)
		out[i] = (char)('A' + idx[i]);
	out[3] = '\0';
	pol_close(&h);
}

static void test_eviction_orders(void **st)
{
	(void)st;
	char o[4];
	order("lru", NULL, o);
	assert_string_equal(o, "CAB");
	order("lfu", NULL, o);
	assert_string_equal(o, "BCA");
	order("spec_first", NULL, o); /* B (unused replica), then LRU: C, A */
	assert_string_equal(o, "BCA");
	/* cost x (reuse + 1): A 1000 x 6, B 5000 x 1, C 100 x 11 */
	order("cost_aware", NULL, o);
	assert_string_equal(o, "CBA");
	/* unused replicas discounted 10x: B 500 goes first */
	order("cost_aware", "spec_unused_weight=0.1", o);
	assert_string_equal(o, "BCA");
}

static void test_transfer_modes(void **st)
{
	(void)st;
	pol_xfer_mode_t m;
	double p;
	pol_handle_t h = open_fam(POL_TRANSFER, "immediate", NULL);
	((const struct pol_transfer_ops *)(const void *)h.ops)->mode(h.state, &m, &p);
	assert_int_equal(m, POL_XFER_IMMEDIATE);
	pol_close(&h);
	h = open_fam(POL_TRANSFER, "idle_window", NULL);
	((const struct pol_transfer_ops *)(const void *)h.ops)->mode(h.state, &m, &p);
	assert_int_equal(m, POL_XFER_IDLE_WINDOW);
	assert_true(p == 0); /* the simulator's [network] idle_threshold */
	pol_close(&h);
	h = open_fam(POL_TRANSFER, "rate_cap", NULL);
	((const struct pol_transfer_ops *)(const void *)h.ops)->mode(h.state, &m, &p);
	assert_int_equal(m, POL_XFER_RATE_CAP);
	assert_true(p == 0.25);
	pol_close(&h);
}

/* 128 new tokens x 100 ns + 1000 ns queue = 13800 ns estimated TTFT. */
static void test_slo_reject_admission(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 1, 16, 1);
	f.inst[0].queue_delay_ns = 1000;
	uint64_t b[8];
	fk_chain(b, 8, 1);
	pol_req_t r = {1, 0, b, 8, 128, 1, 13000};
	pol_handle_t h = open_fam(POL_ADMISSION, "slo_reject", NULL);
	const struct pol_admission_ops *o = (const void *)h.ops;
	assert_int_equal(o->admit(h.state, &f.v, &r, 0), POL_REJECT);
	r.slo_ttft_ns = 14000;
	assert_int_equal(o->admit(h.state, &f.v, &r, 0), POL_ACCEPT);
	r.slo_ttft_ns = 0; /* no SLO anywhere: admitted */
	assert_int_equal(o->admit(h.state, &f.v, &r, 0), POL_ACCEPT);
	fk_hold(&f, 0, b, 8); /* cached: 1000 ns estimate */
	r.slo_ttft_ns = 2000;
	assert_int_equal(o->admit(h.state, &f.v, &r, 0), POL_ACCEPT);
	pol_close(&h);
	h = open_fam(POL_ADMISSION, "slo_reject", "slo_slack=0.25");
	o = (const void *)h.ops;
	assert_int_equal(o->admit(h.state, &f.v, &r, 0), POL_REJECT); /* 1000 > 0.25 x 2000 */
	r.slo_ttft_ns = 4000;
	assert_int_equal(o->admit(h.state, &f.v, &r, 0), POL_ACCEPT);
	pol_close(&h);
	h = open_fam(POL_ADMISSION, "accept_all", NULL);
	assert_int_equal(
	    ((const struct pol_admission_ops *)(const void *)h.ops)->admit(h.state, &f.v, &r, 0),
	    POL_ACCEPT);
	pol_close(&h);
}

static void test_replica_evicted_before_use_counts_as_waste(void **st)
{
	(void)st;
	pol_spec_stats_t s;
	memset(&s, 0, sizeof s);
	s.replicas_created = 2;
	s.replicas_used = 1;
	/* a two-block replica nobody used: 0.5 GB blocks gone after 1 s and 3 s */
	pol_spec_block_gone(&s, 500000000ULL, 1000000000LL, 2000000000LL, 0);
	assert_int_equal(s.replicas_wasted, 0);
	pol_spec_block_gone(&s, 500000000ULL, 1000000000LL, 4000000000LL, 1);
	assert_int_equal(s.replicas_wasted, 1);
	assert_int_equal(s.replicas_used, 1);
	double m[POL_SPEC_N_METRICS];
	pol_spec_metrics(&s, m);
	assert_true(fabs(m[5] - 2.0) < 1e-9); /* 1 GB held 2 s unused */
	assert_true(m[4] == 0.5);
	assert_string_equal(rec_metric_def(REC_SPEC_TRIGGERS + 5)->name, "spec.unused_vram_gb_s");
	assert_string_equal(rec_metric_def(REC_SPEC_TRIGGERS + 4)->name, "spec.waste_ratio");
}

TEST_MAIN(cmocka_unit_test(test_eviction_orders),
          cmocka_unit_test(test_transfer_modes),
          cmocka_unit_test(test_slo_reject_admission),
          cmocka_unit_test(test_replica_evicted_before_use_counts_as_waste))
