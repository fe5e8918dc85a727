/* ev_bench — see ev_bench.h. */
#include "sim/base/rng.h"
#include "sim/engine/ev_bench.h"

#include <getopt.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/base/cli_voice.h"
#include "sim/engine/ev_engine.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* splitmix64 finaliser (Steele, Lea, Flood 2014): a cheap order-sensitive mix. */
static inline uint64_t mix(uint64_t h, uint64_t x)
{
	return rng_fmix64(h ^ (x + RNG_GOLDEN + (h << 6) + (h >> 2)));
}

/* ---- PHOLD ----------------------------------------------------------------- */

typedef struct phold {
	const ev_phold_params_t *p;
	gsl_rng *rng;
	double exp_mean;
	double lps_over_remote;
	uint64_t remote_sent;
	uint64_t checksum;
} phold_t;

/* Exp(m) by inversion, -m ln U with U in (0, 1) (Devroye 1986, ch. 2):
 * glibc's log is about twice as fast as the log1p gsl_ran_exponential uses. */
static inline double exp_draw(gsl_rng *rng, double m)
{
	return -m * log(gsl_rng_uniform_pos(rng));
}

static inline int64_t phold_delay(phold_t *ph)
{
	double x = exp_draw(ph->rng, ph->exp_mean);
	return ph->p->lookahead_ns + (int64_t)(x + 0.5);
}

static int phold_event(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	phold_t *ph = ctx;
	const ev_phold_params_t *p = ph->p;
	ph->checksum = mix(ph->checksum, ((uint64_t)ev->time << 20) ^ ev->target);
	uint32_t dst = ev->target;
	/* One uniform decides both: given u < remote, u / remote is U(0, 1) and
	 * picks the LP, saving a draw and gsl_rng_uniform_int's division. */
	double u = gsl_rng_uniform(ph->rng);
	if (u < p->remote) {
		dst = (uint32_t)(u * ph->lps_over_remote);
		if (dst >= p->lps) /* rounding at the top end */
			dst = p->lps - 1;
		ph->remote_sent++;
	}
	if (ev_engine_after(eng, phold_delay(ph), 0, dst, 0) == EV_NONE)
		return KS_ENOMEM;
	if (p->max_events && ev_engine_events(eng) >= p->max_events)
		ev_engine_stop(eng);
	return 0;
}

void ev_phold_defaults(ev_phold_params_t *p)
{
	p->lps = 1024;
	p->events_per_lp = 1;
	p->remote = 0.9;
	p->lookahead_ns = 100;
	p->mean_ns = 1000;
	p->end_ns = INT64_MAX;
	p->max_events = 0;
	p->seed = 1;
}

static int phold_check(const ev_phold_params_t *p, err_t *e)
{
	if (p->lps == 0 || p->events_per_lp == 0)
		return err_set(e, KS_EINPUT, "phold: --lps and --events-per-lp must be >= 1");
	if ((uint64_t)p->lps * p->events_per_lp > UINT32_MAX / 2)
		return err_set(e, KS_EINPUT, "phold: lps * events-per-lp must be < 2^31");
	if (!(p->remote >= 0 && p->remote <= 1))
		return err_set(e, KS_EINPUT, "phold: --remote must be in [0, 1], got %g", p->remote);
	if (p->lookahead_ns < 0)
		return err_set(e, KS_EINPUT, "phold: --lookahead must be >= 0 ns");
	if (p->mean_ns <= p->lookahead_ns)
		return err_set(e, KS_EINPUT,
			       "phold: --mean (%lld ns) must exceed --lookahead (%lld ns)",
			       (long long)p->mean_ns, (long long)p->lookahead_ns);
	if (p->end_ns == INT64_MAX && p->max_events == 0)
		return err_set(e, KS_EINPUT, "phold: give --end or --events, or the run never stops");
	return KS_OK;
}

int ev_phold_run(const ev_phold_params_t *p, ev_phold_result_t *r, err_t *e)
{
	int rc = phold_check(p, e);
	if (rc)
		return rc;
	size_t pending = (size_t)p->lps * p->events_per_lp;
	phold_t ph = {.p = p,
		      .exp_mean = (double)(p->mean_ns - p->lookahead_ns),
		      .lps_over_remote = p->remote > 0 ? (double)p->lps / p->remote : 0};
	ev_engine_t *eng = ev_engine_new(pending + 1);
	ph.rng = gsl_rng_alloc(gsl_rng_taus2);
	if (!eng || !ph.rng) {
		rc = err_set(e, KS_ENOMEM, "phold: out of memory for %zu events", pending);
		goto out;
	}
	gsl_rng_set(ph.rng, p->seed);
	ev_engine_register(eng, 0, phold_event, &ph);
	for (uint32_t lp = 0; lp < p->lps; lp++)
		for (uint32_t k = 0; k < p->events_per_lp; k++)
			if (ev_engine_at(eng, phold_delay(&ph), 0, lp, 0) == EV_NONE) {
				rc = err_set(e, KS_ENOMEM, "phold: cannot schedule initial events");
				goto out;
			}
	double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
	rc = ev_engine_run(eng, p->end_ns);
	double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	if (rc) {
		err_set(e, rc, "phold: run failed: %s", err_name(rc));
		goto out;
	}
	r->committed = ev_engine_events(eng);
	r->remote_sent = ph.remote_sent;
	r->sim_end_ns = ev_engine_now(eng);
	r->checksum = ph.checksum;
	r->wall_s = t1 - t0;
	r->cpu_s = c1 - c0;
out:
	if (ph.rng)
		gsl_rng_free(ph.rng);
	ev_engine_free(eng);
	return rc;
}

/* ---- hold model -------------------------------------------------------------- */

static inline int64_t hold_incr(gsl_rng *rng, ev_hold_dist_t dist, double m)
{
	double x;
	switch (dist) {
	case EV_HOLD_UNIFORM: x = gsl_rng_uniform(rng) * 2 * m; break;
	case EV_HOLD_BIMODAL:
		/* 90% short U(0, 0.2m), 10% long U(0, 18.2m): mean m, many ties in
		 * the short mode push new events near the front of the queue. */
		x = gsl_rng_uniform(rng) < 0.9 ? gsl_rng_uniform(rng) * 0.2 * m
					       : gsl_rng_uniform(rng) * 18.2 * m;
		break;
	default: x = exp_draw(rng, m); break;
	}
	return (int64_t)(x + 0.5);
}

void ev_hold_defaults(ev_hold_params_t *p)
{
	p->size = 1024;
	p->ops = 10000000;
	p->dist = EV_HOLD_EXP;
	p->mean_ns = 1000;
	p->seed = 1;
}

int ev_hold_run(const ev_hold_params_t *p, ev_hold_result_t *r, err_t *e)
{
	if (p->size == 0 || p->size > UINT32_MAX / 2)
		return err_set(e, KS_EINPUT, "hold: --size must be in [1, 2^31)");
	if (p->mean_ns <= 0)
		return err_set(e, KS_EINPUT, "hold: --mean must be > 0 ns");
	int rc = KS_OK;
	ev_queue_t *q = ev_queue_new(p->size + 1);
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
	if (!q || !rng) {
		rc = err_set(e, KS_ENOMEM, "hold: out of memory for %u events", p->size);
		goto out;
	}
	gsl_rng_set(rng, p->seed);
	double m = (double)p->mean_ns;
	for (uint32_t i = 0; i < p->size; i++)
		if (ev_push(q, hold_incr(rng, p->dist, m), 0, i, i) == EV_NONE) {
			rc = err_set(e, KS_ENOMEM, "hold: cannot push initial events");
			goto out;
		}
	uint64_t sum = 0;
	ev_event_t ev;
	double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
	for (uint64_t k = 0; k < p->ops; k++) {
		ev_pop(q, &ev);
		sum = mix(sum, (uint64_t)ev.time ^ (ev.payload << 40));
		ev_push(q, ev.time + hold_incr(rng, p->dist, m), 0, ev.target, ev.payload);
	}
	double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	r->ops = p->ops;
	r->checksum = sum;
	r->wall_s = t1 - t0;
	r->cpu_s = c1 - c0;
out:
	if (rng)
		gsl_rng_free(rng);
	ev_queue_free(q);
	return rc;
}

/* ---- command line -------------------------------------------------------------- */

/* Parses a whole decimal or scientific number ("1e6") into *out. */
static int parse_num(const char *opt, const char *s, double lo, double hi, double *out,
		     err_t *e)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v) || v < lo || v > hi)
		return err_set(e, KS_EINPUT, "%s: expected a number in [%g, %g], got '%s'", opt,
			       lo, hi, s);
	*out = v;
	return KS_OK;
}

static int parse_int(const char *opt, const char *s, double lo, double hi, int64_t *out,
		     err_t *e)
{
	double v;
	int rc = parse_num(opt, s, lo, hi, &v, e);
	if (rc)
		return rc;
	if (v != floor(v))
		return err_set(e, KS_EINPUT, "%s: expected a whole number, got '%s'", opt, s);
	*out = (int64_t)v;
	return KS_OK;
}

static void phold_usage(FILE *f)
{
	ev_phold_params_t d;
	ev_phold_defaults(&d);
	fprintf(f,
		"usage: kvsim bench phold [options]\n\n"
		"PHOLD on the kvsim engine: each event schedules one successor at\n"
		"t + lookahead + Exp(mean - lookahead), to a uniformly random LP with\n"
		"probability --remote, else to its own LP. Pending events stay at\n"
		"lps * events-per-lp. Prints committed events per wall second of the\n"
		"event loop (setting up the initial events is not timed).\n\n"
		"options:\n"
		"  --lps N            logical processes (default %u)\n"
		"  --events-per-lp N  initial events per LP (default %u)\n"
		"  --remote P         probability of a remote destination (default %g)\n"
		"  --lookahead NS     minimum delay, ns (default %lld)\n"
		"  --mean NS          mean delay, ns (default %lld)\n"
		"  --end NS           simulated end time, ns\n"
		"  --events N         stop after N committed events (default 10000000\n"
		"                     when --end is not given)\n"
		"  --seed S           RNG seed (default %lu)\n"
		"  --json             print one JSON object instead of text\n"
		"  -h, --help         this help\n",
		d.lps, d.events_per_lp, d.remote, (long long)d.lookahead_ns, (long long)d.mean_ns,
		d.seed);
	cli_help_end(f);
}

/* A numeric option of a bench: its getopt character, its flag (for messages),
 * its range, and where and as what it lands in the bench's params. */
typedef enum { BN_U32, BN_U64, BN_I64, BN_ULONG, BN_DBL } bench_num_t;
typedef struct bench_num_opt {
	int c;
	const char *flag;
	double lo, hi;
	bench_num_t type;
	size_t off;
} bench_num_opt_t;

static int bench_num_set(const bench_num_opt_t *o, const char *arg, void *params, err_t *e)
{
	char *dst = (char *)params + o->off;
	if (o->type == BN_DBL)
		return parse_num(o->flag, arg, o->lo, o->hi, (double *)(void *)dst, e);
	int64_t v = 0;
	int rc = parse_int(o->flag, arg, o->lo, o->hi, &v, e);
	if (rc)
		return rc;
	switch (o->type) {
	case BN_U32: *(uint32_t *)(void *)dst = (uint32_t)v; break;
	case BN_U64: *(uint64_t *)(void *)dst = (uint64_t)v; break;
	case BN_ULONG: *(unsigned long *)(void *)dst = (unsigned long)v; break;
	default: *(int64_t *)(void *)dst = v; break;
	}
	return KS_OK;
}

/* An option that is not a number (hold's --dist): KS_OK or an error in e. */
typedef int (*bench_opt_fn)(void *params, int c, const char *arg, err_t *e);

/* The getopt pass both benches share: --json and --help here, the numbers
 * of nums[n] into params, any other option of opts through other (may be
 * NULL). 0 to run the bench; 1 when it is not to run, with *status what its
 * main returns (0 after --help, else the usage error's exit status). */
static int bench_parse(int argc, char **argv, const struct option *opts,
		       const bench_num_opt_t *nums, size_t n, bench_opt_fn other, void *params,
		       void (*usage)(FILE *), int *json, int *status)
{
	int c, rc = KS_OK;
	err_t e = {0};
	*json = 0;
	optind = 0; /* glibc: full re-initialisation for a second getopt pass */
	opterr = 0;
	while (rc == KS_OK && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		size_t i = 0;
		while (i < n && nums[i].c != c)
			i++;
		if (c == 'j') {
			*json = 1;
		} else if (c == 'h') {
			usage(stdout);
			*status = 0;
			return 1;
		} else if (i < n) {
			rc = bench_num_set(&nums[i], optarg, params, &e);
		} else if (c != '?' && other) {
			rc = other(params, c, optarg, &e);
		} else {
			rc = err_set(&e, KS_EINPUT, "unknown or incomplete option '%s'",
				     argv[optind - 1]);
		}
	}
	if (rc == KS_OK && optind < argc)
		rc = err_set(&e, KS_EINPUT, "unexpected argument '%s'", argv[optind]);
	if (rc) {
		*status = cli_usage_error("%s", e.msg);
		return 1;
	}
	return 0;
}

#define PH(c, flag, lo, hi, type, field) {c, flag, lo, hi, type, offsetof(ev_phold_params_t, field)}
static const bench_num_opt_t phold_nums[] = {
    PH('l', "--lps", 1, 1e9, BN_U32, lps),
    PH('k', "--events-per-lp", 1, 1e9, BN_U32, events_per_lp),
    PH('r', "--remote", 0, 1, BN_DBL, remote),
    PH('a', "--lookahead", 0, 1e15, BN_I64, lookahead_ns),
    PH('m', "--mean", 1, 1e15, BN_I64, mean_ns),
    PH('e', "--end", 0, 9e18, BN_I64, end_ns),
    PH('n', "--events", 1, 1e18, BN_U64, max_events),
    PH('s', "--seed", 0, 4e9, BN_ULONG, seed),
};
#undef PH

int ev_bench_phold_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"lps", required_argument, 0, 'l'},    {"events-per-lp", required_argument, 0, 'k'},
		{"remote", required_argument, 0, 'r'}, {"lookahead", required_argument, 0, 'a'},
		{"mean", required_argument, 0, 'm'},   {"end", required_argument, 0, 'e'},
		{"events", required_argument, 0, 'n'}, {"seed", required_argument, 0, 's'},
		{"json", no_argument, 0, 'j'},         {"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	ev_phold_params_t p;
	ev_phold_defaults(&p);
	int json, rc;
	err_t e = {0};
	if (bench_parse(argc, argv, opts, phold_nums, sizeof phold_nums / sizeof phold_nums[0], NULL,
			&p, phold_usage, &json, &rc))
		return rc;
	if (p.end_ns == INT64_MAX && p.max_events == 0)
		p.max_events = 10000000;
	ev_phold_result_t r;
	rc = ev_phold_run(&p, &r, &e);
	if (rc)
		return cli_fail(&e);
	uint64_t pending = (uint64_t)p.lps * p.events_per_lp;
	double rate = r.wall_s > 0 ? (double)r.committed / r.wall_s : 0;
	if (json)
		printf("{\"bench\":\"phold\",\"lps\":%u,\"events_per_lp\":%u,\"pending\":%llu,"
		       "\"remote\":%g,\"lookahead_ns\":%lld,\"mean_ns\":%lld,\"seed\":%lu,"
		       "\"committed\":%llu,\"remote_sent\":%llu,\"sim_end_ns\":%lld,"
		       "\"wall_s\":%.6f,\"cpu_s\":%.6f,\"events_per_s\":%.0f,"
		       "\"events_per_cpu_s\":%.0f,\"checksum\":\"%016llx\"}\n",
		       p.lps, p.events_per_lp, (unsigned long long)pending, p.remote,
		       (long long)p.lookahead_ns, (long long)p.mean_ns, p.seed,
		       (unsigned long long)r.committed, (unsigned long long)r.remote_sent,
		       (long long)r.sim_end_ns, r.wall_s, r.cpu_s, rate,
		       r.cpu_s > 0 ? (double)r.committed / r.cpu_s : 0,
		       (unsigned long long)r.checksum);
	else
		printf("phold: lps=%u events_per_lp=%u pending=%llu remote=%g lookahead=%lld ns "
		       "mean=%lld ns seed=%lu\n"
		       "committed events  %llu (remote %llu)\n"
		       "simulated time    %lld ns\n"
		       "wall seconds      %.3f (CPU %.3f)\n"
		       "events per second %.0f (%.2f M)\n",
		       p.lps, p.events_per_lp, (unsigned long long)pending, p.remote,
		       (long long)p.lookahead_ns, (long long)p.mean_ns, p.seed,
		       (unsigned long long)r.committed, (unsigned long long)r.remote_sent,
		       (long long)r.sim_end_ns, r.wall_s, r.cpu_s, rate, rate / 1e6);
	return 0;
}

static void hold_usage(FILE *f)
{
	ev_hold_params_t d;
	ev_hold_defaults(&d);
	fprintf(f,
		"usage: kvsim bench hold [options]\n\n"
		"The classic hold model on the bare event queue: keep N events pending;\n"
		"repeatedly pop the earliest and push it back at its time plus a random\n"
		"increment. Prints hold operations (one pop + one push) per second.\n\n"
		"options:\n"
		"  --size N        pending events (default %u)\n"
		"  --ops N         hold operations to time (default %llu)\n"
		"  --dist D        increment distribution: exp, uniform (U(0, 2 mean)) or\n"
		"                  bimodal (90%% U(0, 0.2 mean), 10%% U(0, 18.2 mean)) (default exp)\n"
		"  --mean NS       mean increment, ns (default %lld)\n"
		"  --seed S        RNG seed (default %lu)\n"
		"  --json          print one JSON object instead of text\n"
		"  -h, --help      this help\n",
		d.size, (unsigned long long)d.ops, (long long)d.mean_ns, d.seed);
	cli_help_end(f);
}

static const char *const hold_dist_names[] = {"exp", "uniform", "bimodal"};

#define HO(c, flag, lo, hi, type, field) {c, flag, lo, hi, type, offsetof(ev_hold_params_t, field)}
static const bench_num_opt_t hold_nums[] = {
    HO('n', "--size", 1, 1e9, BN_U32, size),
    HO('o', "--ops", 0, 1e18, BN_U64, ops),
    HO('m', "--mean", 1, 1e15, BN_I64, mean_ns),
    HO('s', "--seed", 0, 4e9, BN_ULONG, seed),
};
#undef HO

static int hold_dist_opt(void *params, int c, const char *arg, err_t *e)
{
	(void)c; /* only --dist is not a number */
	ev_hold_params_t *p = params;
	for (int i = 0; i < 3; i++)
		if (!strcmp(arg, hold_dist_names[i])) {
			p->dist = (ev_hold_dist_t)i;
			return KS_OK;
		}
	return err_set(e, KS_EINPUT, "--dist: expected exp, uniform or bimodal, got '%s'", arg);
}

int ev_bench_hold_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"size", required_argument, 0, 'n'}, {"ops", required_argument, 0, 'o'},
		{"dist", required_argument, 0, 'd'}, {"mean", required_argument, 0, 'm'},
		{"seed", required_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
		{"help", no_argument, 0, 'h'},       {0, 0, 0, 0},
	};
	ev_hold_params_t p;
	ev_hold_defaults(&p);
	int json, rc;
	err_t e = {0};
	if (bench_parse(argc, argv, opts, hold_nums, sizeof hold_nums / sizeof hold_nums[0],
			hold_dist_opt, &p, hold_usage, &json, &rc))
		return rc;
	ev_hold_result_t r;
	rc = ev_hold_run(&p, &r, &e);
	if (rc)
		return cli_fail(&e);
	double rate = r.wall_s > 0 ? (double)r.ops / r.wall_s : 0;
	if (json)
		printf("{\"bench\":\"hold\",\"size\":%u,\"dist\":\"%s\",\"mean_ns\":%lld,"
		       "\"seed\":%lu,\"ops\":%llu,\"wall_s\":%.6f,\"cpu_s\":%.6f,\"ops_per_s\":%.0f,"
		       "\"ns_per_op\":%.2f,\"cpu_ns_per_op\":%.2f,\"checksum\":\"%016llx\"}\n",
		       p.size, hold_dist_names[p.dist], (long long)p.mean_ns, p.seed,
		       (unsigned long long)r.ops, r.wall_s, r.cpu_s, rate, rate > 0 ? 1e9 / rate : 0,
		       r.ops ? 1e9 * r.cpu_s / (double)r.ops : 0, (unsigned long long)r.checksum);
	else
		printf("hold: size=%u dist=%s mean=%lld ns seed=%lu\n"
		       "hold operations   %llu\n"
		       "wall seconds      %.3f (CPU %.3f)\n"
		       "ops per second    %.0f (%.1f ns per pop+push)\n",
		       p.size, hold_dist_names[p.dist], (long long)p.mean_ns, p.seed,
		       (unsigned long long)r.ops, r.wall_s, r.cpu_s, rate, rate > 0 ? 1e9 / rate : 0);
	return 0;
}
