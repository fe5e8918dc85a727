/* metrics — see metrics.h. */
#include "sim/run/metrics.h"

#include <errno.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/quantile.h"
#include "sim/base/vec.h"
#include "sim/run/recorder.h"

typedef int64_t (*field_fn)(const res_request_t *r);
static int64_t f_ttft(const res_request_t *r) { return r->ttft_ns; }
static int64_t f_tpot(const res_request_t *r) { return r->tpot_ns; }
static int64_t f_tbt(const res_request_t *r) { return r->tbt_p90_ns; }
static int64_t f_e2e(const res_request_t *r) { return r->e2e_ns; }
static int64_t f_queue(const res_request_t *r) { return r->queue_ns; }
/* TTFT of a request no speculative copy served (-1: left out) */
static int64_t f_ttft_nospec(const res_request_t *r)
{
	return r->tok_spec_hit ? -1 : r->ttft_ns;
}

/* mean and percentiles (ms) of one field over completed requests, as the
 * five metrics from id (mean, p50, p90, p95, p99) */
static int summarize_field(sim_results_t *res, int id, field_fn f, double *buf)
{
	size_t n = 0;
	for (size_t i = 0; i < res->n_req; i++)
		if (res->req[i].status == REQ_COMPLETED && f(&res->req[i]) >= 0)
			buf[n++] = (double)f(&res->req[i]) / 1e6;
	static const double qs[] = {0.50, 0.90, 0.95, 0.99};
	int rc = rec_metric(res, id, n ? gsl_stats_mean(buf, 1, n) : NAN);
	if (rc)
		return rc;
	for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
		double v = n ? quantile_select(buf, n, qs[k]) : NAN;
		if ((rc = rec_metric(res, id + 1 + (int)k, v)))
			return rc;
	}
	return 0;
}

/* p50 .. p99 (ms) of TTFT over the offered requests, as the four metrics
 * from REC_TTFT_P50: a request that never completed counts as +inf (so
 * shedding load cannot shorten the tail); NaN when nothing was offered */
static int summarize_ttft_offered(sim_results_t *res, double *buf)
{
	size_t n = 0;
	for (size_t i = 0; i < res->n_req; i++) {
		const res_request_t *r = &res->req[i];
		if (r->status == REQ_FAILED_IN_TRACE)
			continue;
		buf[n++] = r->status == REQ_COMPLETED ? (double)r->ttft_ns / 1e6 : INFINITY;
	}
	static const double qs[] = {0.50, 0.90, 0.95, 0.99};
	int rc = 0;
	for (size_t k = 0; k < sizeof qs / sizeof qs[0] && !rc; k++)
		rc = rec_metric(res, REC_TTFT_P50 + (int)k,
		                n ? quantile_select(buf, n, qs[k]) : NAN);
	return rc;
}

int metrics_summarize(sim_results_t *res, const metrics_opts_t *o)
{
	double *buf = malloc((res->n_req ? res->n_req : 1) * sizeof *buf);
	if (!buf)
		return KS_ENOMEM;
	uint64_t by_status[REQ_STATUS_N] = {0}, out_tok = 0, in_tok = 0, hit_tok = 0, spec_tok = 0;
	uint64_t ok_ttft = 0, ok_tpot = 0, ok_both = 0;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN, a0 = INT64_MAX, a1 = INT64_MIN;
	for (size_t i = 0; i < res->n_req; i++) {
		const res_request_t *r = &res->req[i];
		if (r->status >= 0 && r->status < REQ_STATUS_N)
			by_status[r->status]++;
		if (r->arrival_ns < t0)
			t0 = r->arrival_ns;
		if (r->status != REQ_FAILED_IN_TRACE) { /* the offered arrivals */
			a0 = r->arrival_ns < a0 ? r->arrival_ns : a0;
			a1 = r->arrival_ns > a1 ? r->arrival_ns : a1;
		}
		if (r->status != REQ_COMPLETED)
			continue;
		if (r->arrival_ns + r->e2e_ns > t1)
			t1 = r->arrival_ns + r->e2e_ns;
		out_tok += r->output_tokens;
		in_tok += r->input_tokens;
		hit_tok += r->tok_local + r->tok_peer + r->tok_host;
		spec_tok += r->tok_spec_hit;
		int a = r->ttft_ns <= o->ttft_slo_ns, b = r->tpot_ns <= o->tpot_slo_ns;
		ok_ttft += a;
		ok_tpot += b;
		ok_both += a && b;
	}
	uint64_t done = by_status[REQ_COMPLETED];
	uint64_t rejected = by_status[REQ_REJECTED_TOO_LONG] + by_status[REQ_REJECTED_SLO] +
	                    by_status[REQ_REJECTED_OVERLOAD];
	/* offered: the trace's own failures are never routed (sim_arrival.c) */
	uint64_t offered = res->n_req - by_status[REQ_FAILED_IN_TRACE];
	double span_s = done && t1 > t0 ? (double)(t1 - t0) / 1e9 : NAN;
	double n_off = offered ? (double)offered : NAN; /* a share of nothing is NaN */
	/* REC_REQUESTS .. REC_SPEC_HIT_TOKENS, in the recorder's order */
	const double m[] = {
	    (double)res->n_req,
	    (double)done,
	    (double)rejected,
	    (double)by_status[REQ_REJECTED_OVERLOAD],
	    (double)by_status[REQ_UNFINISHED],
	    (double)by_status[REQ_ABANDONED],
	    (double)by_status[REQ_FAILED_IN_TRACE],
	    (double)offered,
	    (double)(offered - rejected) / n_off,
	    (double)done / n_off,
	    span_s,
	    a1 > a0 ? (double)offered / ((double)(a1 - a0) / 1e9) : NAN,
	    done ? done / span_s : 0,
	    done ? out_tok / span_s : 0,
	    (double)ok_ttft / n_off,
	    (double)ok_tpot / n_off,
	    (double)ok_both / n_off,
	    done ? (double)ok_both / done : NAN,
	    done ? ok_both / span_s : 0,
	    in_tok ? (double)hit_tok / in_tok : NAN,
	    o->blocks_total ? (double)o->blocks_hit / o->blocks_total : NAN,
	    (double)spec_tok,
	};
	_Static_assert(sizeof m / sizeof m[0] == REC_SPEC_HIT_TOKENS - REC_REQUESTS + 1,
	               "one value per metric");
	int rc = 0;
	for (size_t i = 0; i < sizeof m / sizeof m[0] && !rc; i++)
		rc = rec_metric(res, REC_REQUESTS + (int)i, m[i]);
	if (!rc)
		rc = summarize_ttft_offered(res, buf);
	static const int lat[] = {REC_TTFT_COMPLETED_MEAN, REC_TPOT_MEAN, REC_TBT_P90_MEAN,
	                          REC_E2E_MEAN, REC_QUEUE_MEAN, REC_TTFT_NOSPEC_MEAN};
	static const field_fn fld[] = {f_ttft, f_tpot, f_tbt, f_e2e, f_queue, f_ttft_nospec};
	for (size_t i = 0; i < sizeof lat / sizeof lat[0] && !rc; i++)
		rc = summarize_field(res, lat[i], fld[i], buf);
	free(buf);
	return rc;
}

int metrics_windows(sim_results_t *res, const metrics_opts_t *o, const int64_t *edges,
		    size_t n_edges, int kind)
{
	res_request_t *rows = malloc((res->n_req ? res->n_req : 1) * sizeof *rows);
	if (!rows)
		return KS_ENOMEM;
	int rc = 0;
	for (size_t w = 0; w + 1 < n_edges && !rc; w++) {
		sim_results_t sub = {0};
		sub.req = rows;
		for (size_t i = 0; i < res->n_req; i++) {
			const res_request_t *r = &res->req[i];
			if (r->arrival_ns >= edges[w] && r->arrival_ns < edges[w + 1])
				rows[sub.n_req++] = *r;
		}
		metrics_opts_t wo = *o;
		if (sub.n_req != res->n_req) /* block counts are the whole cluster's */
			wo.blocks_total = wo.blocks_hit = 0;
		rc = metrics_summarize(&sub, &wo);
		for (size_t m = 0; m < sub.n_metric && !rc; m++) {
			if (VEC_GROW(res->win, res->cap_win, res->n_win + 1, 64)) {
				rc = KS_ENOMEM;
				break;
			}
			res_window_t *x = &res->win[res->n_win++];
			memset(x, 0, sizeof *x);
			x->window = (int32_t)w;
			x->kind = kind;
			x->t0_ns = edges[w];
			x->t1_ns = edges[w + 1];
			memcpy(x->name, sub.metric[m].name, sizeof x->name);
			memcpy(x->unit, sub.metric[m].unit, sizeof x->unit);
			x->value = sub.metric[m].value;
		}
		free(sub.metric);
	}
	free(rows);
	return rc;
}

int metrics_windows_parse(const char *s, int64_t **edges, size_t *n, err_t *e)
{
	*edges = NULL;
	*n = 0;
	if (!s || !*s)
		return 0;
	size_t cap = 1;
	for (const char *p = s; *p; p++)
		cap += *p == ',';
	int64_t *v = malloc(cap * sizeof *v);
	if (!v)
		return err_set(e, KS_ENOMEM, "out of memory");
	const char *p = s;
	size_t k = 0;
	for (;;) {
		char *end;
		errno = 0;
		double x = strtod(p, &end);
		while (*end == ' ')
			end++;
		if (end == p || errno || !(x >= 0 && x <= 9e9) || (*end && *end != ',')) {
			free(v);
			return err_set(e, KS_EINPUT,
				       "[output] windows: '%s' is not a list of times in s (t0,t1,...: "
				       "numbers in [0, 9e9])", s);
		}
		v[k] = (int64_t)llround(x * 1e9);
		if (k && v[k] <= v[k - 1]) {
			free(v);
			return err_set(e, KS_EINPUT,
				       "[output] windows: edge %zu (%g s) must be after the one before it",
				       k, x);
		}
		k++;
		if (!*end)
			break;
		p = end + 1;
	}
	if (k < 2) {
		free(v);
		return err_set(e, KS_EINPUT,
			       "[output] windows: '%s' gives no window: two edges at least", s);
	}
	*edges = v;
	*n = k;
	return 0;
}
