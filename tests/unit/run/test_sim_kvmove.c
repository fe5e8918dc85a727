/* KV movement and policies inside whole runs (sim/run/sim_copy.c, sim_core.c):
 * copies never leave before their source KV exists, transfer bytes are
 * conserved, speculative replicas all end used or wasted, an oracle with
 * recall 0 changes nothing, fetching from a peer beats recomputing a long
 * prefix, and background copies yield to foreground ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"

static sim_results_t run_default(const char **sets, int n)
{
	return sf_run(NULL, sets, n);
}

/* The default experiment replicating early (early_rdma) on the oracle's
 * forecast, with one more set. */
static sim_results_t run_oracle_early_rdma(const char *set)
{
	const char *sets[] = {"policy.replication.name=early_rdma", "policy.predictor.name=oracle",
	                      set};
	return run_default(sets, 3);
}

/* Requests sharing one 20-block prefix, 10 ms apart, round-robin over four
 * single-GPU instances: the prefix is computed first on instance 0. */
static sf_prefix_t fan40(void)
{
	sf_prefix_t f = sf_prefix(40, 20, 7000, 90000, 50);
	f.gap_ns = 10000000;
	return f;
}

static void test_copies_start_only_after_source_kv_exists(void **st)
{
	(void)st;
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=1", "cluster.gpus_per_node=4",
			      "cluster.tp=1", "kvcache.block_tokens=16",
			      "policy.routing.name=round_robin", "policy.replication.name=early_rdma",
			      "policy.predictor.name=oracle", "kvcache.fetch=always"};
	sf_prefix_t f = fan40();
	sim_source_t src = {sf_prefix_next, &f, "fan"};
	sim_results_t r = sf_run_source(NULL, sets, 9, &src);
	/* request 0 computes the prefix alone in its first iteration: its
	 * blocks exist from its first token on, and not before */
	const res_request_t *r0 = sf_request(r.req, r.n_req, 0);
	int64_t exists = r0->arrival_ns + r0->ttft_ns;
	assert_true(r.n_xfer > 0);
	for (size_t i = 0; i < r.n_xfer; i++) {
		assert_true(r.xfer[i].start_ns >= exists);
		assert_true(r.xfer[i].end_ns >= r.xfer[i].start_ns);
	}
	/* requests 1-3 arrived while instance 0 was still computing: they
	 * could fetch nothing and computed the prefix themselves */
	for (size_t i = 0; i < r.n_req; i++)
		if (r.req[i].id >= 1 && r.req[i].id <= 3 && r.req[i].arrival_ns < exists)
			assert_int_equal(r.req[i].tok_peer, 0);
	sim_results_free(&r);
}

/* The fan trace (40 requests) through early_rdma's arrival trigger with
 * X = 1 and M = 1: every request is active, no copy is ever needed, and a
 * request goes to the least-loaded instance holding the prefix once one
 * does. extra: one more --set; reg: policies beyond the built-ins (NULL). */
static sim_results_t run_fan_hinted(const char *extra, const pol_registry_t *reg)
{
	const char *sets[] = {SF_NO_FRONTEND, /* engine times */
			      "model.name=Llama-3-8B", "cluster.nodes=1", "cluster.gpus_per_node=4",
			      "cluster.tp=1", "kvcache.block_tokens=16",
			      "policy.routing.name=round_robin", "policy.replication.name=early_rdma",
			      "policy.replication.early_trigger=arrival",
			      "policy.replication.early_key_blocks=20",
			      "policy.replication.early_min_count=1",
			      "policy.replication.early_replicas=1", extra};
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config_ex(NULL, sets, 13, CLI_DEFAULT_EXPERIMENT, reg, &cfg, &e);
	sf_prefix_t f = fan40();
	sim_source_t src = {sf_prefix_next, &f, "fan"};
	sim_results_t r = {0};
	if (!rc)
		rc = sim_run(cfg, &(sim_run_opts_t){.reg = reg, .source = &src}, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	cli_config_free(cfg);
	return r;
}

/* An admission policy for the test below: whatever reaches instance 0
 * after request 0 is rejected. */
static int no0_admit(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t inst)
{
	(void)st;
	(void)v;
	return inst == 0 && r->id != 0 ? POL_REJECT : POL_ACCEPT;
}

static const struct pol_admission_ops no0_ops = {
	.base = {POL_ABI_VERSION, POL_ADMISSION, "test_no_inst0",
		 "Rejects every request routed to instance 0 but the first.", NULL, 0, 0, NULL, NULL},
	.admit = no0_admit,
};

/* Instance 0 computes the prefix first and, its later requests rejected,
 * stays least loaded: hints go there, and admission still rejects them
 * (before, a hinted request skipped admission). */
static void test_hinted_requests_still_pass_admission(void **st)
{
	(void)st;
	err_t e = {0};
	pol_registry_t *reg = pol_registry_new();
	assert_non_null(reg);
	assert_int_equal(pol_registry_add(reg, &no0_ops.base, &e), 0);
	sim_results_t r = run_fan_hinted("policy.admission.name=test_no_inst0", reg);
	size_t rejected = 0;
	for (size_t i = 0; i < r.n_req; i++) {
		if (r.req[i].status == REQ_REJECTED_SLO)
			rejected++;
		else if (r.req[i].id != 0)
			assert_int_not_equal(r.req[i].instance, 0);
	}
	/* round robin alone sends 10 of the 40 to instance 0 */
	assert_true(rejected > 10);
	assert_true(sim_results_get(&r, "spec.hint_routed") > 0);
	sim_results_free(&r);
	pol_registry_free(reg);
}

/* spec.hint_routed counts exactly the requests the hint placed: those
 * arriving after the prefix first exists on some instance (the earliest end
 * of a prefill). early_route_warm = false turns the hint, and the count, off. */
static void test_hint_routed_counts_the_requests_the_hint_placed(void **st)
{
	(void)st;
	for (int warm = 1; warm >= 0; warm--) {
		sim_results_t r = run_fan_hinted(warm ? "policy.replication.early_route_warm=true"
						      : "policy.replication.early_route_warm=false",
						 NULL);
		int64_t exists = INT64_MAX;
		for (size_t i = 0; i < r.n_req; i++)
			if (r.req[i].arrival_ns + r.req[i].ttft_ns < exists)
				exists = r.req[i].arrival_ns + r.req[i].ttft_ns;
		double after = 0;
		for (size_t i = 0; i < r.n_req; i++)
			after += r.req[i].arrival_ns > exists;
		printf("warm %d: %g requests after the prefix exists, hint_routed %g\n", warm, after,
		       sim_results_get(&r, "spec.hint_routed"));
		assert_true(after > 20);
		assert_true(sim_results_get(&r, "spec.hint_routed") == (warm ? after : 0));
		sim_results_free(&r);
	}
}

static void test_transfer_bytes_are_conserved(void **st)
{
	(void)st;
	sim_results_t r = run_oracle_early_rdma("kvcache.fetch=cost");
	double fg = 0, bg = 0;
	for (size_t i = 0; i < r.n_xfer; i++) {
		if (r.xfer[i].klass == XFER_BACKGROUND)
			bg += (double)r.xfer[i].bytes;
		else
			fg += (double)r.xfer[i].bytes;
		assert_true(r.xfer[i].src_gpu != r.xfer[i].dst_gpu);
	}
	assert_true(bg > 0 && fg > 0);
	assert_true(fg == sim_results_get(&r, "bytes_fg"));
	assert_true(bg == sim_results_get(&r, "bytes_bg"));
	/* every GPU-to-GPU flow crosses one sending and one receiving GPU link
	 * (NVLink up+down, or NIC up+down): links carried exactly twice the bytes */
	const char *cls[2] = {"fg", "bg"};
	for (int c = 0; c < 2; c++) {
		char a[48], b[48];
		snprintf(a, sizeof a, "link_bytes_%s.nvlink", cls[c]);
		snprintf(b, sizeof b, "link_bytes_%s.nic", cls[c]);
		double links = sim_results_get(&r, a) + sim_results_get(&r, b);
		double flows = c ? bg : fg;
		printf("%s: links/2 %.6e, flows %.6e\n", cls[c], links / 2, flows);
		/* finish times round up to whole ns: links may run <= 1 ns longer */
		assert_true(fabs(links / 2 - flows) <= 1e-5 * flows);
	}
	assert_true(sim_results_get(&r, "kv_block_allocs") == sim_results_get(&r, "kv_block_frees"));
	sim_results_free(&r);
}

static void test_every_replica_ends_used_or_wasted(void **st)
{
	(void)st;
	sim_results_t r = run_oracle_early_rdma("policy.predictor.oracle_fp_rate=0.5");
	double created = sim_results_get(&r, "spec.replicas_created");
	double used = sim_results_get(&r, "spec.replicas_used");
	double wasted = sim_results_get(&r, "spec.replicas_wasted");
	printf("replicas: created %.0f used %.0f wasted %.0f, unused VRAM %.1f GB-s\n", created,
	       used, wasted, sim_results_get(&r, "spec.unused_vram_gb_s"));
	assert_true(created > 0);
	assert_true(created == used + wasted);
	if (wasted > 0)
		assert_true(sim_results_get(&r, "spec.unused_vram_gb_s") > 0);
	sim_results_free(&r);
}

static void test_oracle_with_recall_zero_behaves_as_none(void **st)
{
	(void)st;
	const char *none[] = {"policy.replication.name=none"};
	const char *zero[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
			      "policy.predictor.oracle_recall=0"};
	sim_results_t a = run_default(none, 1), b = run_default(zero, 3);
	assert_int_equal(a.n_req, b.n_req);
	assert_memory_equal(a.req, b.req, a.n_req * sizeof *a.req);
	assert_true(sim_results_get(&b, "spec.replicas_created") == 0);
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_fetching_a_long_prefix_beats_recomputing_it(void **st)
{
	(void)st;
	const char *fetch[] = {"kvcache.fetch=cost"};
	const char *never[] = {"kvcache.fetch=never"};
	sim_results_t a = run_default(fetch, 1), b = run_default(never, 1);
	double ta = sim_results_get(&a, "ttft_completed_mean_ms"), tb = sim_results_get(&b, "ttft_completed_mean_ms");
	printf("TTFT mean: fetch %.1f ms, never fetch %.1f ms; peer tokens %.0f\n", ta, tb,
	       sim_results_get(&a, "tok_fetched_peer"));
	assert_true(sim_results_get(&a, "tok_fetched_peer") > 0);
	assert_true(sim_results_get(&b, "tok_fetched_peer") == 0);
	assert_true(ta < tb);
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_host_tier_offload_and_fetch_back(void **st)
{
	(void)st;
	/* a small HBM pool forces evictions; the host tier keeps them */
	const char *sets[] = {"cluster.kv_blocks=120", "kvcache.host_kv_gb=200",
			      "kvcache.host_offload=true"};
	sim_results_t r = run_default(sets, 3);
	double host = sim_results_get(&r, "tok_fetched_host");
	size_t d2h = 0, h2d = 0;
	for (size_t i = 0; i < r.n_xfer; i++) {
		d2h += r.xfer[i].path_kind == PATH_PCIE_D2H;
		h2d += r.xfer[i].path_kind == PATH_PCIE_H2D;
	}
	printf("host tier: %zu offload flows, %zu fetch flows, %.0f tokens from host\n", d2h, h2d,
	       host);
	assert_true(d2h > 0);
	assert_true(h2d > 0 && host > 0);
	sim_results_free(&r);
}

/* Seconds per byte of the NVLink flows of a run. */
static double nvlink_s_per_byte(const sim_results_t *r)
{
	double t = 0, b = 0;
	for (size_t i = 0; i < r->n_xfer; i++)
		if (r->xfer[i].path_kind == PATH_NVLINK && !r->xfer[i].cancelled) {
			t += (double)(r->xfer[i].end_ns - r->xfer[i].start_ns) / 1e9;
			b += (double)r->xfer[i].bytes;
		}
	return b > 0 ? t / b : 0;
}

static void test_calibration_file_sets_link_costs(void **st)
{
	(void)st;
	char path[] = "/tmp/kvsim-cal-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	/* NVLink measured at 10 GB/s with 5 us latency: ~45x slower than the spec */
	fputs("[meta]\ndevice = test\n[link.nvlink]\nedges =\nalpha_ns = 5000\nbw_gbps = 10\n"
	      "overhead_ns = 2000\nbatch_overhead_ns = 0\nshare_same = 0\nshare_opp = 0\n",
	      f);
	fclose(f);
	const char *fetch[] = {"kvcache.fetch=always"};
	char set[128];
	snprintf(set, sizeof set, "network.calibration=%s", path);
	const char *cal[] = {"kvcache.fetch=always", set};
	sim_results_t a = run_default(fetch, 1), b = run_default(cal, 2);
	double sa = nvlink_s_per_byte(&a), sb = nvlink_s_per_byte(&b);
	printf("NVLink: %.3g s/GB spec, %.3g s/GB calibrated\n", sa * 1e9, sb * 1e9);
	assert_true(sa > 0 && sb > 10 * sa);
	sim_results_free(&a);
	sim_results_free(&b);
	/* a missing file is an input error */
	cfg_t *cfg = NULL;
	err_t e = {0};
	const char *bad[] = {"network.calibration=/nonexistent/cal.ini"};
	assert_int_equal(cli_load_config(NULL, bad, 1, &cfg, &e), 0);
	sim_results_t r;
	assert_int_equal(sim_run(cfg, NULL, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "calibration"));
	cli_config_free(cfg);
	remove(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copies_start_only_after_source_kv_exists),
		cmocka_unit_test(test_hinted_requests_still_pass_admission),
		cmocka_unit_test(test_hint_routed_counts_the_requests_the_hint_placed),
		cmocka_unit_test(test_transfer_bytes_are_conserved),
		cmocka_unit_test(test_every_replica_ends_used_or_wasted),
		cmocka_unit_test(test_oracle_with_recall_zero_behaves_as_none),
		cmocka_unit_test(test_fetching_a_long_prefix_beats_recomputing_it),
		cmocka_unit_test(test_host_tier_offload_and_fetch_back),
		cmocka_unit_test(test_calibration_file_sets_link_costs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
