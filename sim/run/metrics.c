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

/* One pass over the request rows that arrived in [t0, t1): counts and sums
 * (tally), or one value per row into buf (gather: f over completed rows, or,
 * f NULL, TTFT over offered rows with +inf for those not completed). */
typedef struct scan {
	int64_t t0, t1;
	const metrics_opts_t *o;
	uint64_t rows, by_status[REQ_STATUS_N], out_tok, in_tok, hit_tok, spec_tok;
	uint64_t ok_ttft, ok_tpot, ok_both;
	int64_t first, last, a0, a1; /* first arrival, last completion, offered arrivals */
	field_fn f;
	double *buf;
	size_t n;
} scan_t;

static int tally(void *ctx, const void *rows, size_t n)
{
	scan_t *s = ctx;
	for (const res_request_t *r = rows, *end = r + n; r < end; r++) {
		if (r->arrival_ns < s->t0 || r->arrival_ns >= s->t1)
			continue;
		s->rows++;
		if (r->status >= 0 && r->status < REQ_STATUS_N)
			s->by_status[r->status]++;
		if (r->arrival_ns < s->first)
			s->first = r->arrival_ns;
		if (r->status != REQ_FAILED_IN_TRACE) { /* the offered arrivals */
			s->a0 = r->arrival_ns < s->a0 ? r->arrival_ns : s->a0;
			s->a1 = r->arrival_ns > s->a1 ? r->arrival_ns : s->a1;
		}
		if (r->status != REQ_COMPLETED)
			continue;
		if (r->arrival_ns + r->e2e_ns > s->last)
			s->last = r->arrival_ns + r->e2e_ns;
		s->out_tok += r->output_tokens;
		s->in_tok += r->input_tokens;
		s->hit_tok += r->tok_local + r->tok_peer + r->tok_host;
		s->spec_tok += r->tok_spec_hit;
		int a = r->ttft_ns <= s->o->ttft_slo_ns, b = r->tpot_ns <= s->o->tpot_slo_ns;
		s->ok_ttft += a;
		s->ok_tpot += b;
		s->ok_both += a && b;
	}
	return 0;
}

static int gather(void *ctx, const void *rows, size_t n)
{
	scan_t *s = ctx;
	for (const res_request_t *r = rows, *end = r + n; r < end; r++) {
		if (r->arrival_ns < s->t0 || r->arrival_ns >= s->t1)
			continue;
		if (!s->f) {
			if (r->status != REQ_FAILED_IN_TRACE)
				s->buf[s->n++] =
				    r->status == REQ_COMPLETED ? (double)r->ttft_ns / 1e6 : INFINITY;
		} else if (r->status == REQ_COMPLETED && s->f(r) >= 0) {
			s->buf[s->n++] = (double)s->f(r) / 1e6;
		}
	}
	return 0;
}

/* Appends to out the metrics from id: with mean (mean, then p50 .. p99 of
 * s->buf[0 .. s->n)), or only p50 .. p99; NaN for no values. */
static int record_quantiles(sim_results_t *out, int id, int mean, const scan_t *s)
{
	static const double qs[] = {0.50, 0.90, 0.95, 0.99};
	int rc = mean ? rec_metric(out, id++, s->n ? gsl_stats_mean(s->buf, 1, s->n) : NAN) : 0;
	for (size_t k = 0; k < sizeof qs / sizeof qs[0] && !rc; k++)
		rc = rec_metric(out, id + (int)k, s->n ? quantile_select(s->buf, s->n, qs[k]) : NAN);
	return rc;
}

/* The counts, shares and rates of a tally, REC_REQUESTS .. REC_SPEC_HIT_TOKENS. */
static int record_counts(sim_results_t *out, const scan_t *s, uint64_t blocks_total,
			 uint64_t blocks_hit)
{
	const uint64_t *st = s->by_status;
	uint64_t done = st[REQ_COMPLETED];
	uint64_t rejected = st[REQ_REJECTED_TOO_LONG] + st[REQ_REJECTED_SLO] + st[REQ_REJECTED_OVERLOAD];
	/* offered: the trace's own failures are never routed (sim_arrival.c) */
	uint64_t offered = s->rows - st[REQ_FAILED_IN_TRACE];
	double span_s = done && s->last > s->first ? (double)(s->last - s->first) / 1e9 : NAN;
	double n_off = offered ? (double)offered : NAN; /* a share of nothing is NaN */
	/* REC_REQUESTS .. REC_SPEC_HIT_TOKENS, in the recorder's order */
	const double m[] = {
	    (double)s->rows,
	    (double)done,
	    (double)rejected,
	    (double)st[REQ_REJECTED_OVERLOAD],
	    (double)st[REQ_UNFINISHED],
	    (double)st[REQ_ABANDONED],
	    (double)st[REQ_FAILED_IN_TRACE],
	    (double)offered,
	    (double)(offered - rejected) / n_off,
	    (double)done / n_off,
	    span_s,
	    s->a1 > s->a0 ? (double)offered / ((double)(s->a1 - s->a0) / 1e9) : NAN,
	    done ? done / span_s : 0,
	    done ? s->out_tok / span_s : 0,
	    (double)s->ok_ttft / n_off,
	    (double)s->ok_tpot / n_off,
	    (double)s->ok_both / n_off,
	    done ? (double)s->ok_both / done : NAN,
	    done ? s->ok_both / span_s : 0,
	    s->in_tok ? (double)s->hit_tok / s->in_tok : NAN,
	    blocks_total ? (double)blocks_hit / blocks_total : NAN,
	    (double)s->spec_tok,
	};
	_Static_assert(sizeof m / sizeof m[0] == REC_SPEC_HIT_TOKENS - REC_REQUESTS + 1,
	               "one value per metric");
	int rc = 0;
	for (size_t i = 0; i < sizeof m / sizeof m[0] && !rc; i++)
		rc = rec_metric(out, REC_REQUESTS + (int)i, m[i]);
	return rc;
}

/* Every metric of metrics_summarize over res's request rows that arrived in
 * [t0, t1), appended to out. Passes over the rows (spilled ones read back):
 * one to count, then one per latency, each into one buffer of a double per
 * row in the window. The cluster's block counts go with the rows only when
 * the window holds them all. */
static int summarize(const sim_results_t *res, int64_t t0, int64_t t1, const metrics_opts_t *o,
		     sim_results_t *out)
{
	scan_t s = {.t0 = t0, .t1 = t1, .o = o, .first = INT64_MAX, .last = INT64_MIN,
		    .a0 = INT64_MAX, .a1 = INT64_MIN};
	int rc = sim_results_rows(res, RES_T_REQ, tally, &s);
	if (rc)
		return rc;
	int all = s.rows == sim_results_count(res, RES_T_REQ);
	if ((rc = record_counts(out, &s, all ? o->blocks_total : 0, all ? o->blocks_hit : 0)))
		return rc;
	if (!(s.buf = malloc((s.rows ? s.rows : 1) * sizeof *s.buf)))
		return KS_ENOMEM;
	static const int lat[] = {REC_TTFT_P50, REC_TTFT_COMPLETED_MEAN, REC_TPOT_MEAN,
				  REC_TBT_P90_MEAN, REC_E2E_MEAN, REC_QUEUE_MEAN,
				  REC_TTFT_NOSPEC_MEAN};
	static const field_fn fld[] = {NULL, f_ttft, f_tpot, f_tbt, f_e2e, f_queue, f_ttft_nospec};
	for (size_t i = 0; i < sizeof lat / sizeof lat[0] && !rc; i++) {
		s.f = fld[i];
		s.n = 0;
		if (!(rc = sim_results_rows(res, RES_T_REQ, gather, &s)))
			rc = record_quantiles(out, lat[i], fld[i] != NULL, &s);
	}
	free(s.buf);
	return rc;
}

int metrics_summarize(sim_results_t *res, const metrics_opts_t *o)
{
	return summarize(res, INT64_MIN, INT64_MAX, o, res);
}

int metrics_windows(sim_results_t *res, const metrics_opts_t *o, const int64_t *edges,
		    size_t n_edges, int kind)
{
	int rc = 0;
	for (size_t w = 0; w + 1 < n_edges && !rc; w++) {
		sim_results_t sub = {0};
		rc = summarize(res, edges[w], edges[w + 1], o, &sub);
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
