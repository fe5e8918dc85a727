/* metrics — see metrics.h. */
#include "sim/run/metrics.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/base/err.h"

typedef int64_t (*field_fn)(const res_request_t *r);
static int64_t f_ttft(const res_request_t *r) { return r->ttft_ns; }
static int64_t f_tpot(const res_request_t *r) { return r->tpot_ns; }
static int64_t f_tbt(const res_request_t *r) { return r->tbt_p90_ns; }
static int64_t f_e2e(const res_request_t *r) { return r->e2e_ns; }
static int64_t f_queue(const res_request_t *r) { return r->queue_ns; }

/* mean and percentiles (ms) of one field over completed requests */
static int summarize_field(sim_results_t *res, const char *name, field_fn f, double *buf)
{
	size_t n = 0;
	for (size_t i = 0; i < res->n_req; i++)
		if (res->req[i].status == REQ_COMPLETED && f(&res->req[i]) >= 0)
			buf[n++] = (double)f(&res->req[i]) / 1e6;
	static const struct { const char *suffix; double q; } qs[] = {
		{"p50", 0.50}, {"p90", 0.90}, {"p95", 0.95}, {"p99", 0.99}};
	char key[48];
	snprintf(key, sizeof key, "%s_mean_ms", name);
	int rc = sim_results_metric(res, key, "ms", n ? gsl_stats_mean(buf, 1, n) : NAN);
	if (rc)
		return rc;
	if (n)
		gsl_sort(buf, 1, n);
	for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
		snprintf(key, sizeof key, "%s_%s_ms", name, qs[k].suffix);
		double v = n ? gsl_stats_quantile_from_sorted_data(buf, 1, n, qs[k].q) : NAN;
		if ((rc = sim_results_metric(res, key, "ms", v)))
			return rc;
	}
	return 0;
}

int metrics_summarize(sim_results_t *res, const metrics_opts_t *o)
{
	double *buf = malloc((res->n_req ? res->n_req : 1) * sizeof *buf);
	if (!buf)
		return KS_ENOMEM;
	uint64_t by_status[REQ_STATUS_N] = {0}, out_tok = 0, in_tok = 0, hit_tok = 0, spec_tok = 0;
	uint64_t ok_ttft = 0, ok_tpot = 0, ok_both = 0;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	for (size_t i = 0; i < res->n_req; i++) {
		const res_request_t *r = &res->req[i];
		if (r->status >= 0 && r->status < REQ_STATUS_N)
			by_status[r->status]++;
		if (r->arrival_ns < t0)
			t0 = r->arrival_ns;
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
	double span_s = done && t1 > t0 ? (double)(t1 - t0) / 1e9 : NAN;
	struct { const char *name, *unit; double v; } m[] = {
		{"requests", "", (double)res->n_req},
		{"completed", "", (double)done},
		{"rejected", "", (double)(by_status[REQ_REJECTED_TOO_LONG] + by_status[REQ_REJECTED_SLO] +
					  by_status[REQ_REJECTED_OVERLOAD])},
		{"rejected_overload", "", (double)by_status[REQ_REJECTED_OVERLOAD]},
		{"unfinished", "", (double)by_status[REQ_UNFINISHED]},
		{"failed_in_trace", "", (double)by_status[REQ_FAILED_IN_TRACE]},
		{"span_s", "s", span_s},
		{"throughput_rps", "1/s", done ? done / span_s : 0},
		{"output_tokens_per_s", "1/s", done ? out_tok / span_s : 0},
		{"slo_ttft_attainment", "", done ? (double)ok_ttft / done : NAN},
		{"slo_tpot_attainment", "", done ? (double)ok_tpot / done : NAN},
		{"slo_attainment", "", done ? (double)ok_both / done : NAN},
		{"goodput_rps", "1/s", done ? ok_both / span_s : 0},
		{"hit_rate_tokens", "", in_tok ? (double)hit_tok / in_tok : NAN},
		{"hit_rate_blocks", "", o->blocks_total ? (double)o->blocks_hit / o->blocks_total : NAN},
		{"spec_hit_tokens", "tokens", (double)spec_tok},
	};
	int rc = 0;
	for (size_t i = 0; i < sizeof m / sizeof m[0] && !rc; i++)
		rc = sim_results_metric(res, m[i].name, m[i].unit, m[i].v);
	if (!rc) rc = summarize_field(res, "ttft", f_ttft, buf);
	if (!rc) rc = summarize_field(res, "tpot", f_tpot, buf);
	if (!rc) rc = summarize_field(res, "tbt_p90", f_tbt, buf);
	if (!rc) rc = summarize_field(res, "e2e", f_e2e, buf);
	if (!rc) rc = summarize_field(res, "queue", f_queue, buf);
	free(buf);
	return rc;
}
