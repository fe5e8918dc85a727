/* net_bench — cost of flow events in the network model (`kvsim net bench`,
 * also `kvsim bench net` once registered there).
 *
 * Cases: a burst of 10,000 concurrent KV copies on a 128-GPU leaf/spine
 * cluster at 2:1 oversubscription (rail-aligned TP shards, and random GPU
 * pairs), a steady closed-loop stream with 10,000 copies in flight, and the
 * scaling of one shared bottleneck from 1,000 to 100,000 flows, and N flows
 * on N distinct paths (one shared bottleneck; leaf groups under a roomy
 * core) under both solvers of net_set_solver. The cost of
 * a flow event (start = the flow joining after its latency, finish) is the
 * wall time of its handler plus an equal share of the re-solve that ran at
 * that instant (net_set_profile); medians and p99 are over flow events.
 */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/base/cli_voice.h"
#include "sim/net/net_bench.h"
#include "sim/net/net_topo.h"


typedef enum {
	PAT_RAIL,
	PAT_RANDOM,
	PAT_COPY,
	PAT_SAME_PATH,
	PAT_INCAST,
	PAT_DISTINCT,
	PAT_LEAVES /* a private access link, its leaf's uplink, one core link */
} pattern_t;

/* PAT_LEAVES: 32 paths per leaf, uplink at 2:1 (as the fabric above), a core
 * that carries every access link at line rate. */
#define LEAF_PATHS 32

typedef struct bench {
	ev_engine_t *eng;
	net_t *net;
	net_topo_t *topo;
	gsl_rng *rng;
	pattern_t pat;
	uint32_t nodes, gpn;
	uint64_t closed_left; /* flows still to start on finishes (closed loop) */
	uint32_t bottleneck;  /* PAT_DISTINCT, PAT_LEAVES: the shared (core) link */
	uint32_t n_access;    /* PAT_DISTINCT, PAT_LEAVES: private links, one per flow */
	uint32_t leaf0;       /* PAT_LEAVES: first uplink; access link i uses leaf0 + i / 32 */
	uint32_t next_access;
	uint64_t block_bytes;
	uint64_t finished;
	int failed;
} bench_t;

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int start_one(bench_t *b);

static int on_done(void *ctx, net_t *net, const net_flow_rec_t *r)
{
	(void)net;
	bench_t *b = ctx;
	uint64_t per = b->pat == PAT_COPY ? b->gpn : 1; /* flows per copy */
	if (b->pat == PAT_LEAVES) /* the next flow takes the path just freed */
		b->next_access = (uint32_t)r->tag;
	if (++b->finished % per == 0 && b->closed_left >= per) {
		b->closed_left -= per;
		return start_one(b);
	}
	return 0;
}

static int start_one(bench_t *b)
{
	uint32_t path[NET_PATH_MAX];
	int n = 0;
	uint32_t sn, dn, sg, dg;
	switch (b->pat) {
	case PAT_RAIL:
	case PAT_RANDOM:
		sn = (uint32_t)gsl_rng_uniform_int(b->rng, b->nodes);
		dn = (uint32_t)gsl_rng_uniform_int(b->rng, b->nodes - 1);
		dn += dn >= sn;
		sg = (uint32_t)gsl_rng_uniform_int(b->rng, b->gpn);
		dg = b->pat == PAT_RAIL ? sg : (uint32_t)gsl_rng_uniform_int(b->rng, b->gpn);
		n = net_path_gpu_gpu(b->topo, sn, sg, dn, dg, path);
		break;
	case PAT_COPY: /* instance to instance, TP 8: shard g from GPU g to GPU g */
		sn = (uint32_t)gsl_rng_uniform_int(b->rng, b->nodes);
		dn = (uint32_t)gsl_rng_uniform_int(b->rng, b->nodes - 1);
		dn += dn >= sn;
		uint64_t sz = b->block_bytes * (1 + gsl_rng_uniform_int(b->rng, 32)) +
			      gsl_rng_uniform_int(b->rng, b->block_bytes);
		for (uint32_t g = 0; g < b->gpn; g++) {
			n = net_path_gpu_gpu(b->topo, sn, g, dn, g, path);
			if (n <= 0)
				return KS_ERUNTIME;
			net_flow_spec_t s = {.bytes = sz, .path = path, .path_len = (uint32_t)n,
					     .cls = NET_FG, .done = on_done, .ctx = b};
			int rc = net_flow_start(b->net, &s, NULL, NULL);
			if (rc)
				return rc;
		}
		return 0;
	case PAT_SAME_PATH:
		n = net_path_gpu_gpu(b->topo, 1, 0, 0, 0, path);
		break;
	case PAT_INCAST: /* every other GPU of the cluster into GPU 0 of node 0 */
		sn = 1 + (uint32_t)gsl_rng_uniform_int(b->rng, b->nodes - 1);
		sg = (uint32_t)gsl_rng_uniform_int(b->rng, b->gpn);
		n = net_path_gpu_gpu(b->topo, sn, sg, 0, 0, path);
		break;
	case PAT_DISTINCT: /* a private access link per flow, then the shared one */
		path[0] = b->next_access++ % b->n_access;
		path[1] = b->bottleneck;
		n = 2;
		break;
	case PAT_LEAVES:
		path[0] = b->next_access++ % b->n_access;
		path[1] = b->leaf0 + path[0] / LEAF_PATHS;
		path[2] = b->bottleneck;
		n = 3;
		break;
	}
	if (n <= 0)
		return KS_ERUNTIME;
	/* 1..32 blocks of a TP shard, plus up to one block of jitter so that
	 * flows started together do not all finish at the same instant (which
	 * the net batches into one re-solve and would flatter the numbers) */
	uint64_t bytes = b->block_bytes * (1 + gsl_rng_uniform_int(b->rng, 32)) +
			 gsl_rng_uniform_int(b->rng, b->block_bytes);
	net_flow_spec_t s = {.bytes = bytes, .path = path, .path_len = (uint32_t)n, .cls = NET_FG,
			     .tag = path[0], .done = on_done, .ctx = b};
	return net_flow_start(b->net, &s, NULL, NULL);
}

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return (a > c) - (a < c);
}

typedef struct result {
	size_t events;
	double med_us[2], p99_us[2]; /* [0] starts, [1] finishes */
	double wall_s, aggs_per_solve;
} result_t;

static int prof_mode = 1;
static int64_t bench_quantum; /* net_set_quantum for the next case */
static int bench_solver = -1; /* net_set_solver for the next case; -1 = default */

static int setup(bench_t *b, pattern_t pat, uint32_t nodes, uint32_t n_distinct)
{
	memset(b, 0, sizeof *b);
	b->pat = pat;
	b->nodes = nodes;
	b->gpn = 8;
	/* Llama-3-70B KV: 2*80 layers*8 kv heads*128 dim*2 B = 320 KiB/token;
	 * a 512-token block split over TP 8 = 20 MiB per shard. */
	b->block_bytes = 512ull * 327680 / 8;
	b->eng = ev_engine_new(1 << 16);
	b->rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!b->eng || !b->rng)
		return KS_ENOMEM;
	gsl_rng_set(b->rng, 7);
	b->net = net_new(b->eng, NULL);
	if (!b->net)
		return KS_ENOMEM;
	net_set_record(b->net, 0);
	if (net_set_quantum(b->net, bench_quantum, NULL))
		return KS_EINPUT;
	if (bench_solver >= 0 && net_set_solver(b->net, (net_solver_t)bench_solver, NULL))
		return KS_EINPUT;
	if (pat == PAT_LEAVES) {
		b->n_access = n_distinct;
		for (uint32_t i = 0; i < n_distinct; i++)
			if (net_link_add(b->net, 50e9, 1000, NULL, NULL))
				return KS_ENOMEM;
		uint32_t leaves = (n_distinct + LEAF_PATHS - 1) / LEAF_PATHS;
		for (uint32_t i = 0; i < leaves; i++)
			if (net_link_add(b->net, LEAF_PATHS * 50e9 / 2, 300, i ? NULL : &b->leaf0, NULL))
				return KS_ENOMEM;
		return net_link_add(b->net, (double)n_distinct * 50e9, 300, &b->bottleneck, NULL);
	}
	if (pat == PAT_DISTINCT) {
		b->n_access = n_distinct;
		for (uint32_t i = 0; i < n_distinct; i++)
			if (net_link_add(b->net, 50e9, 1000, NULL, NULL))
				return KS_ENOMEM;
		return net_link_add(b->net, 50e9, 0, &b->bottleneck, NULL);
	}
	/* H100-class numbers: NVLink 4 450 GB/s per direction, PCIe 5 x16 64 GB/s,
	 * 400 Gb/s NIC = 50 GB/s; 4 leaves of 32 GPUs at 2:1. */
	net_topo_spec_t ts = {.nodes = nodes, .gpus_per_node = 8, .nvlink_bw = 450e9,
			      .nvlink_lat_ns = 2000, .pcie_bw = 64e9, .pcie_lat_ns = 2000,
			      .nic_bw = 50e9, .nic_lat_ns = 5000, .fabric = NET_FABRIC_LEAF_SPINE,
			      .oversubscription = 2, .gpus_per_leaf = 32, .switch_lat_ns = 300};
	return net_topo_build(b->net, &ts, &b->topo, NULL);
}

static void teardown(bench_t *b)
{
	net_topo_free(b->topo);
	net_free(b->net);
	ev_engine_free(b->eng);
	gsl_rng_free(b->rng);
}

/* Starts `concurrent` flows at t=0; then `extra` more, one per finish
 * (closed loop), or none (burst). Stops after max_events flow events. */
static int run_case(pattern_t pat, uint32_t nodes, uint64_t concurrent, uint64_t extra,
		    uint64_t max_events, result_t *res)
{
	bench_t b;
	int distinct = pat == PAT_DISTINCT || pat == PAT_LEAVES;
	int rc = setup(&b, pat, nodes, distinct ? (uint32_t)concurrent : 0);
	if (rc)
		goto out;
	b.closed_left = extra;
	double t0 = wall_s();
	net_set_profile(b.net, prof_mode);
	for (uint64_t i = 0; i < concurrent && !rc; i += pat == PAT_COPY ? b.gpn : 1)
		rc = start_one(&b);
	/* closed loop: the initial burst of joins is warm-up, not measured */
	int warm = extra > 0;
	while (!rc && warm) {
		size_t n;
		net_profile(b.net, NULL, &n);
		if (n >= concurrent || ev_size(ev_engine_queue(b.eng)) == 0)
			break;
		rc = ev_engine_run(b.eng, ev_peek_time(ev_engine_queue(b.eng)));
	}
	net_stats_t st0 = {0};
	if (warm) {
		t0 = wall_s();
		net_set_profile(b.net, prof_mode);
		net_get_stats(b.net, &st0); /* aggs/slv over the measured events too */
	}
	/* step one instant at a time so the event cap is honoured */
	while (!rc) {
		size_t n;
		net_profile(b.net, NULL, &n);
		if (n >= max_events || ev_size(ev_engine_queue(b.eng)) == 0)
			break;
		int64_t t = ev_peek_time(ev_engine_queue(b.eng));
		rc = ev_engine_run(b.eng, t);
	}
	res->wall_s = wall_s() - t0;
	if (rc)
		goto out;
	size_t n;
	const uint8_t *fin;
	const double *p = net_profile(b.net, &fin, &n);
	double *c = malloc((n ? n : 1) * sizeof *c);
	if (!c) {
		rc = KS_ENOMEM;
		goto out;
	}
	res->events = n;
	for (int kind = 0; kind < 2; kind++) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (fin[i] == kind)
				c[m++] = p[i];
		qsort(c, m, sizeof *c, cmp_d);
		res->med_us[kind] = m ? c[m / 2] / 1e3 : NAN;
		res->p99_us[kind] = m ? c[(size_t)((double)(m - 1) * 0.99)] / 1e3 : NAN;
	}
	free(c);
	net_stats_t st;
	net_get_stats(b.net, &st);
	st.solves -= st0.solves;
	st.solved_aggs -= st0.solved_aggs;
	res->aggs_per_solve = st.solves ? (double)st.solved_aggs / (double)st.solves : 0;
out:
	teardown(&b);
	return rc;
}

static void print_head(void)
{
	printf("  %-33s %7s %7s %8s %8s %8s %8s %7s %8s\n", "case (us per event)", "flows",
	       "events", "start_md", "start_99", "fin_md", "fin_99", "wall_s", "aggs/slv");
}

static void print_row(const char *label, uint64_t flows, const result_t *r)
{
	printf("  %-33s %7llu %7zu %8.2f %8.2f %8.2f %8.2f %7.2f %8.0f\n", label,
	       (unsigned long long)flows, r->events, r->med_us[0], r->p99_us[0], r->med_us[1],
	       r->p99_us[1], r->wall_s, r->aggs_per_solve);
}

/* One case under the full and the incremental solver, and their ratios. */
static int run_solvers(pattern_t pat, uint64_t n, uint64_t ev, const char *label)
{
	result_t r[2];
	char buf[64];
	for (int s = 0; s < 2; s++) {
		int keep = bench_solver;
		bench_solver = s ? NET_SOLVER_INCREMENTAL : NET_SOLVER_FULL;
		int rc = run_case(pat, 16, n, ev, ev, &r[s]);
		bench_solver = keep;
		if (rc)
			return rc;
		snprintf(buf, sizeof buf, "%s, %s", label, s ? "incr" : "full");
		print_row(buf, n, &r[s]);
	}
	printf("  %-33s %7s %7s %7.1fx %7.1fx %7.1fx %7.1fx %6.1fx\n", "  ratio full / incr", "", "",
	       r[0].med_us[0] / r[1].med_us[0], r[0].p99_us[0] / r[1].p99_us[0],
	       r[0].med_us[1] / r[1].med_us[1], r[0].p99_us[1] / r[1].p99_us[1],
	       r[0].wall_s / r[1].wall_s);
	return 0;
}

int net_bench_main(int argc, char **argv)
{
	int quick = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--cpu")) {
			prof_mode = 2;
		} else if (!strcmp(argv[i], "--full")) {
			bench_solver = NET_SOLVER_FULL;
		} else if (cli_is_help(argv[i])) {
			printf("usage: kvsim %s [--quick] [--cpu] [--full]\n\n"
			       "Flow-event cost (median, p99 in microseconds: the event's handler\n"
			       "plus its share of the re-solve at that instant), wall time, and mean\n"
			       "aggregates (distinct active paths) per re-solve.\n\n"
			       "options:\n"
			       "  --quick      10x fewer flows and events (smoke test)\n"
			       "  --cpu        time events with the thread CPU clock instead of the\n"
			       "               wall clock (robust on a loaded machine; the clock read\n"
			       "               costs more)\n"
			       "  --full       the fabric and scaling cases under the full re-solve\n"
			       "               (the distinct-path cases always run both)\n"
			       "  -h, --help   this help\n",
			       *cli_command() ? cli_command() : "net bench");
			cli_help_end(stdout);
			return 0;
		} else {
			return cli_usage_error("unknown option '%s'", argv[i]);
		}
	}
	uint64_t k = quick ? 10 : 1;
	result_t r;
	int rc;
	printf("net bench (%s clock): 128 GPUs (16 nodes x 8), leaf/spine 4 leaves, 2:1 oversubscribed\n",
	       prof_mode == 2 ? "thread CPU" : "wall");
	print_head();
	/* The cluster table: burst = 10000 flows at t = 0; steady = 5000 more
	 * started one per finish (closed loop), 5000 flow events timed;
	 * quantum_ns goes to net_set_quantum. */
	static const struct {
		const char *label;
		pattern_t pat;
		int steady;
		int64_t quantum_ns;
	} cases[] = {
	    {"burst, rail-aligned shards", PAT_RAIL, 0, 0},
	    {"burst, random GPU pairs", PAT_RANDOM, 0, 0},
	    {"steady, rail-aligned, closed loop", PAT_RAIL, 1, 0},
	    {"burst, whole TP8 copies (8 shards)", PAT_COPY, 0, 0},
	    {"steady, whole TP8 copies", PAT_COPY, 1, 0},
	    {"steady, random pairs, closed loop", PAT_RANDOM, 1, 0},
	    {"steady, rail-aligned, quantum 1ms", PAT_RAIL, 1, 1000000},
	    {"steady, random pairs, quantum 1ms", PAT_RANDOM, 1, 1000000},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bench_quantum = cases[i].quantum_ns;
		rc = cases[i].steady ? run_case(cases[i].pat, 16, 10000 / k, 5000 / k, 5000 / k, &r)
				     : run_case(cases[i].pat, 16, 10000 / k, 0, UINT64_MAX, &r);
		if (rc)
			goto fail;
		print_row(cases[i].label, 10000 / k, &r);
	}
	bench_quantum = 0;
	printf("scaling: one bottleneck shared by all flows (closed loop)\n");
	print_head();
	static const uint64_t ns[] = {1000, 10000, 100000};
	for (int i = 0; i < 3; i++) {
		uint64_t n = ns[i] / k;
		if ((rc = run_case(PAT_INCAST, 16, n, 10000 / k, 10000 / k, &r)))
			goto fail;
		print_row("incast to one GPU (127 sources)", n, &r);
	}
	for (int i = 0; i < 3; i++) {
		uint64_t n = ns[i] / k;
		if ((rc = run_case(PAT_SAME_PATH, 16, n, 10000 / k, 10000 / k, &r)))
			goto fail;
		print_row("one path for all", n, &r);
	}
	printf("N flows on N distinct paths, full vs incremental re-solve (closed loop)\n");
	print_head();
	for (int i = 0; i < 3; i++) {
		uint64_t n = ns[i] / k;
		uint64_t ev = i == 0 ? 2000 / k : i == 1 ? 400 / k : 40 / k;
		if ((rc = run_solvers(PAT_DISTINCT, n, ev, "one shared bottleneck")))
			goto fail;
	}
	for (int i = 0; i < 3; i++) {
		uint64_t n = ns[i] / k;
		uint64_t ev = i == 0 ? 4000 / k : i == 1 ? 1000 / k : 200 / k;
		if ((rc = run_solvers(PAT_LEAVES, n, ev, "leaves of 32 at 2:1, core")))
			goto fail;
	}
	return 0;
fail:;
	err_t e;
	err_set(&e, rc, "failed (%s)", err_name(rc));
	return cli_fail(&e);
}
