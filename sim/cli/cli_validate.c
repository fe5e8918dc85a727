/* cli_validate — `kvsim validate EXPERIMENTS.json GROUND_TRUTH.csv`: runs
 * kvsim on measured serving experiments and sets its latencies beside the
 * measured ones.
 *
 * EXPERIMENTS.json holds {"experiments": [record...]}; a record names the
 * model (a Hugging Face id, whose config.json is looked up as
 * HF_DIR/<lowercased last path part>.json), the hardware, the TP degree, the
 * vLLM settings (max_num_seqs, max_num_batched_tokens, total_kv_blocks,
 * cpu_kv_blocks, block_size), the client's workload and its load stages
 * (read by trace.kind = spec, traces/tr_spec.h). Each record becomes one
 * run of one instance: the built-in default experiment with --set lines that
 * set exactly these (printed with -v), then the caller's own --set.
 *
 * GROUND_TRUTH.csv has the columns experiment, stage, metric, actual and
 * then one column per other simulator (empty: it did not run that row);
 * stage -1 is the whole run, 0, 1, ... the load stages. Metrics are computed
 * as the measurement defines them: ttft_mean/p90/p99 and e2e_mean/p90/p99
 * over a stage's completed requests (percentiles interpolated linearly
 * between order statistics), itl_mean = (mean E2E - mean TTFT) / (mean
 * output tokens - 1). A row whose measured ITL implies that the client
 * counted fewer output tokens than the spec asked for (under 0.95 of them:
 * (e2e_mean - ttft_mean) / itl_mean + 1) is noted beside it; its error is
 * still counted in ITL and left out of "ITL (counted rows)".
 *
 * Output: per experiment, a row per (stage, metric) with the measured value,
 * kvsim's and the signed error (kvsim / actual - 1); then the mean absolute
 * percentage error per metric family (TTFT, E2E, ITL) for kvsim and every
 * simulator column, over the whole-run rows and over every row, each over
 * the rows that simulator ran. --csv FILE also writes the rows.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_hf.h"
#include "sim/base/cfg.h"
#include "sim/base/cli_voice.h"
#include "sim/base/quantile.h"
#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"

#define VAL_COLS 8      /* simulator columns of the ground truth, at most */
#define VAL_MAX_SETS 40 /* --set lines of one run, ours and the caller's */
#define VAL_STAGES 64   /* load stages of one experiment, at most */

/* One ground-truth row and kvsim's value for it. */
typedef struct {
	char exp[160];
	int stage;
	char metric[24];
	double actual;
	double peer[VAL_COLS]; /* NAN: that simulator did not run the row */
	double kvsim;          /* NAN: not computed (experiment not run) */
	int counted_note;      /* the client counted fewer output tokens */
} val_row_t;

typedef struct {
	val_row_t *row;
	size_t n, cap;
	char peer_name[VAL_COLS][48];
	size_t n_peer;
} val_truth_t;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim validate EXPERIMENTS.json GROUND_TRUTH.csv [--hf-configs DIR]\n"
		"                      [--experiment ID]... [--set SECTION.KEY=VALUE]...\n"
		"                      [--csv FILE] [-v]\n\n"
		"Runs each measured experiment of EXPERIMENTS.json as one kvsim instance (model\n"
		"from its Hugging Face config.json, hardware, TP, the engine's batch limits and\n"
		"KV pool, the client's workload spec and load stages) and prints, per stage and\n"
		"metric of GROUND_TRUTH.csv, the measured value, kvsim's and the signed error,\n"
		"then the mean absolute percentage error per metric family for kvsim and for\n"
		"every other simulator column of the table, over the rows each ran.\n\n"
		"options:\n"
		"  --hf-configs DIR     where MODEL's config.json is, as DIR/<model>.json with\n"
		"                       <model> the id's last part lowercased (default:\n"
		"                       ../hf_configs beside EXPERIMENTS.json)\n"
		"  --experiment ID      only this experiment (repeatable; default: every one\n"
		"                       the ground truth has rows for)\n"
		"  -s, --set K=V        override a key in every run, after kvsim's own lines\n"
		"                       (e.g. trace.spec_reuse=fresh, scheduler.frontend_ms=0)\n"
		"  --csv FILE           also write experiment,stage,metric,actual,kvsim,error\n"
		"  -v, --verbose        print each run's --set lines\n"
		"  -h, --help           this help\n");
	cli_help_end(f);
}

/* ---- the ground truth ----------------------------------------------------- */

/* Splits line at commas in place (the table has no quoted fields); returns
 * the field count, at most cap. */
static size_t split_csv(char *line, char **f, size_t cap)
{
	size_t n = 0;
	for (char *p = line; n < cap;) {
		f[n++] = p;
		char *c = strchr(p, ',');
		if (!c)
			break;
		*c = 0;
		p = c + 1;
	}
	return n;
}

static int parse_num(const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return end != s && !*end && !errno && isfinite(*v) ? 0 : -1;
}

static int truth_load(const char *path, val_truth_t *t, err_t *e)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return err_set(e, KS_EINPUT, "%s: %s", path, strerror(errno));
	char line[4096];
	char *fld[4 + VAL_COLS + 1];
	size_t nf = 0, ln = 0;
	int rc = 0;
	while (!rc && fgets(line, sizeof line, f)) {
		ln++;
		size_t len = strlen(line);
		if (len == sizeof line - 1 && line[len - 1] != '\n') {
			rc = err_set(e, KS_EINPUT, "%s:%zu: line longer than %zu bytes", path, ln,
				     sizeof line - 2);
			break;
		}
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0])
			continue;
		size_t n = split_csv(line, fld, sizeof fld / sizeof fld[0]);
		if (ln == 1) {
			if (n < 4 || strcmp(fld[0], "experiment") || strcmp(fld[1], "stage") ||
			    strcmp(fld[2], "metric") || strcmp(fld[3], "actual")) {
				rc = err_set(e, KS_EINPUT,
					     "%s:1: header: want experiment,stage,metric,actual[,"
					     "simulator...]",
					     path);
				break;
			}
			if (n > 4 + VAL_COLS) {
				rc = err_set(e, KS_EINPUT, "%s:1: more than %d simulator columns",
					     path, VAL_COLS);
				break;
			}
			nf = n;
			t->n_peer = n - 4;
			for (size_t i = 0; i < t->n_peer; i++)
				snprintf(t->peer_name[i], sizeof t->peer_name[i], "%s", fld[4 + i]);
			continue;
		}
		if (n != nf) {
			rc = err_set(e, KS_EINPUT, "%s:%zu: %zu fields, the header has %zu", path,
				     ln, n, nf);
			break;
		}
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 64;
			val_row_t *r = realloc(t->row, cap * sizeof *r);
			if (!r) {
				rc = KS_ENOMEM;
				break;
			}
			t->row = r;
			t->cap = cap;
		}
		val_row_t *r = &t->row[t->n];
		memset(r, 0, sizeof *r);
		double st;
		if (strlen(fld[0]) >= sizeof r->exp || !fld[0][0]) {
			rc = err_set(e, KS_EINPUT, "%s:%zu: experiment: empty or too long", path, ln);
			break;
		}
		snprintf(r->exp, sizeof r->exp, "%s", fld[0]);
		if (parse_num(fld[1], &st) || st != floor(st) || st < -1 || st >= VAL_STAGES) {
			rc = err_set(e, KS_EINPUT, "%s:%zu: stage: '%s' is not -1 or a stage 0..%d",
				     path, ln, fld[1], VAL_STAGES - 1);
			break;
		}
		r->stage = (int)st;
		snprintf(r->metric, sizeof r->metric, "%s", fld[2]);
		if (parse_num(fld[3], &r->actual) || !(r->actual > 0)) {
			rc = err_set(e, KS_EINPUT, "%s:%zu: actual: '%s' is not a positive number",
				     path, ln, fld[3]);
			break;
		}
		for (size_t i = 0; i < t->n_peer; i++) {
			r->peer[i] = NAN;
			if (fld[4 + i][0] && parse_num(fld[4 + i], &r->peer[i])) {
				rc = err_set(e, KS_EINPUT, "%s:%zu: %s: '%s' is not a number", path,
					     ln, t->peer_name[i], fld[4 + i]);
				break;
			}
		}
		r->kvsim = NAN;
		t->n++;
	}
	if (!rc && ferror(f))
		rc = err_set(e, KS_EIO, "%s: read error", path);
	if (!rc && !nf)
		rc = err_set(e, KS_EINPUT, "%s: empty (no header)", path);
	fclose(f);
	return rc;
}

/* ---- one experiment's run ------------------------------------------------- */

/* The built-in GPU spec of an experiment's hardware name. */
static const char *gpu_of(const char *hw)
{
	static const struct {
		const char *hw, *gpu;
	} map[] = {{"H100", "H100-SXM"}, {"H100-SXM", "H100-SXM"}, {"A100", "A100-80GB"},
		   {"A100-80GB", "A100-80GB"}, {"H200", "H200"},   {"B200", "B200"}};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(hw, map[i].hw))
			return map[i].gpu;
	return NULL;
}

/* A record's integer field at path a.b (b may be NULL); -1 when absent. */
static long long rec_int(json_t *rec, const char *a, const char *b)
{
	json_t *v = json_object_get(rec, a);
	if (b)
		v = json_object_get(v, b);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

typedef struct {
	char sets[VAL_MAX_SETS][1200];
	size_t n;
} val_sets_t;

static int add_set(val_sets_t *s, err_t *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int add_set(val_sets_t *s, err_t *e, const char *fmt, ...)
{
	if (s->n == VAL_MAX_SETS)
		return err_set(e, KS_EINPUT, "more than %d --set lines", VAL_MAX_SETS);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(s->sets[s->n], sizeof s->sets[0], fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof s->sets[0])
		return err_set(e, KS_EINPUT, "a --set line is too long (paths too long?)");
	s->n++;
	return 0;
}

/* The --set lines that make record rec (of file path) a kvsim run. */
static int rec_sets(const char *path, const char *hf_dir, json_t *rec, val_sets_t *s, err_t *e)
{
	const char *id = json_string_value(json_object_get(rec, "id"));
	const char *model = json_string_value(json_object_get(rec, "model"));
	const char *hw = json_string_value(json_object_get(rec, "hardware"));
	long long tp = rec_int(rec, "tp", NULL);
	static const char *const vk[] = {"max_num_seqs", "max_num_batched_tokens",
					 "total_kv_blocks", "block_size"};
	long long v[4];
	for (int i = 0; i < 4; i++)
		v[i] = rec_int(rec, "vllm", vk[i]);
	long long cpu_blocks = rec_int(rec, "vllm", "cpu_kv_blocks");
	if (!model || !hw || tp < 1)
		return err_set(e, KS_EINPUT, "%s: experiment %s: model, hardware or tp missing",
			       path, id);
	for (int i = 0; i < 4; i++)
		if (v[i] < 1)
			return err_set(e, KS_EINPUT, "%s: experiment %s: vllm.%s missing or < 1",
				       path, id, vk[i]);
	const char *gpu = gpu_of(hw);
	if (!gpu)
		return err_set(e, KS_EINPUT,
			       "%s: experiment %s: hardware '%s' has no built-in GPU spec "
			       "(H100, A100, H200, B200)",
			       path, id, hw);
	const char *base = strrchr(model, '/');
	char name[256];
	snprintf(name, sizeof name, "%s", base ? base + 1 : model);
	for (char *p = name; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	char hf[1100];
	snprintf(hf, sizeof hf, "%s/%s.json", hf_dir, name);
	FILE *probe = fopen(hf, "r");
	if (!probe)
		return err_set(e, KS_EINPUT,
			       "%s: experiment %s: no config.json for %s: %s: %s (--hf-configs DIR)",
			       path, id, model, hf, strerror(errno));
	fclose(probe);
	int rc = add_set(s, e, "trace.kind=spec");
	if (!rc)
		rc = add_set(s, e, "trace.path=%s", path);
	if (!rc)
		rc = add_set(s, e, "trace.spec_experiment=%s", id);
	if (!rc)
		rc = add_set(s, e, "model.hf_config=%s", hf);
	if (!rc)
		rc = add_set(s, e, "gpu.name=%s", gpu);
	if (!rc)
		rc = add_set(s, e, "cluster.nodes=1");
	if (!rc)
		rc = add_set(s, e, "cluster.gpus_per_node=%lld", tp);
	if (!rc)
		rc = add_set(s, e, "cluster.tp=%lld", tp);
	if (!rc)
		rc = add_set(s, e, "scheduler.mode=vllm");
	if (!rc)
		rc = add_set(s, e, "scheduler.max_num_seqs=%lld", v[0]);
	if (!rc)
		rc = add_set(s, e, "scheduler.max_batched_tokens=%lld", v[1]);
	if (!rc)
		rc = add_set(s, e, "cluster.kv_blocks=%lld", v[2]);
	if (!rc)
		rc = add_set(s, e, "kvcache.block_tokens=%lld", v[3]);
	/* the client waits for every answer (inference-perf has no timeout) */
	if (!rc)
		rc = add_set(s, e, "experiment.client_timeout_s=0");
	/* vLLM's CPU offload tier: cpu_kv_blocks blocks of block_size tokens of
	 * the whole model's KV, a host tier that evicted blocks are written to */
	if (!rc && cpu_blocks > 0) {
		mdl_llm_t llm;
		if ((rc = mdl_hf_load_file(hf, &llm, NULL, e)))
			return rc;
		double gb = (double)cpu_blocks * (double)v[3] *
			    (double)mdl_kv_bytes_per_token(&llm) / 1e9;
		rc = add_set(s, e, "kvcache.host_offload=true");
		if (!rc)
			rc = add_set(s, e, "kvcache.host_kv_gb=%.6g", gb);
	}
	return rc;
}

/* The linearly interpolated percentile f of v[0..n) (reordered). */
static double pct(double *v, size_t n, double f)
{
	return n ? quantile_select(v, n, f) : NAN;
}

/* Fills kvsim for every row of t naming experiment id, from the run's
 * request rows r and its stage windows. */
static void fill_rows(val_truth_t *t, const char *id, const sim_results_t *r, int64_t *edges,
		      size_t n_st, long long out_spec)
{
	size_t n = r->n_req;
	double *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
	if (!a || !b) {
		free(a);
		free(b);
		return;
	}
	for (size_t k = 0; k < t->n; k++) {
		val_row_t *w = &t->row[k];
		if (strcmp(w->exp, id) || (w->stage >= 0 && (size_t)w->stage >= n_st))
			continue;
		int64_t t0 = w->stage < 0 ? INT64_MIN : edges[w->stage];
		int64_t t1 = w->stage < 0 ? INT64_MAX : edges[w->stage + 1];
		size_t m = 0;
		double st = 0, se = 0, so = 0;
		for (size_t i = 0; i < n; i++) {
			const res_request_t *q = &r->req[i];
			if (q->arrival_ns < t0 || q->arrival_ns >= t1 || q->status != REQ_COMPLETED)
				continue;
			a[m] = (double)q->ttft_ns / 1e6;
			b[m] = (double)q->e2e_ns / 1e6;
			st += a[m];
			se += b[m];
			so += q->output_tokens;
			m++;
		}
		if (!m)
			continue;
		double v = NAN;
		const char *mt = w->metric;
		if (!strcmp(mt, "ttft_mean"))
			v = st / m;
		else if (!strcmp(mt, "e2e_mean"))
			v = se / m;
		else if (!strcmp(mt, "itl_mean"))
			v = so / m > 1 ? (se / m - st / m) / (so / m - 1) : NAN;
		else if (!strncmp(mt, "ttft_p", 6) || !strncmp(mt, "e2e_p", 5)) {
			double p = atof(strchr(mt, 'p') + 1);
			if (p > 0 && p < 100)
				v = pct(mt[0] == 't' ? a : b, m, p / 100);
		}
		w->kvsim = v;
	}
	/* the measured ITL against the measured means: how many tokens the
	 * client counted */
	for (size_t k = 0; k < t->n; k++) {
		val_row_t *w = &t->row[k];
		if (strcmp(w->exp, id) || strcmp(w->metric, "itl_mean") || out_spec < 2)
			continue;
		double tm = NAN, em = NAN;
		for (size_t j = 0; j < t->n; j++) {
			val_row_t *x = &t->row[j];
			if (strcmp(x->exp, id) || x->stage != w->stage)
				continue;
			if (!strcmp(x->metric, "ttft_mean"))
				tm = x->actual;
			if (!strcmp(x->metric, "e2e_mean"))
				em = x->actual;
		}
		double counted = (em - tm) / w->actual + 1;
		if (isfinite(counted) && counted < 0.95 * (double)out_spec)
			w->counted_note = (int)lround(counted);
	}
	free(a);
	free(b);
}

/* The stage edges of a run: the stage windows' t0 and the last t1. */
static size_t stage_edges(const sim_results_t *r, int64_t *edges)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_win; i++) {
		const res_window_t *w = &r->win[i];
		if (w->kind != RES_WIN_STAGE || w->window < 0 || w->window >= VAL_STAGES)
			continue;
		edges[w->window] = w->t0_ns;
		edges[w->window + 1] = w->t1_ns;
		if ((size_t)w->window + 1 > n)
			n = (size_t)w->window + 1;
	}
	return n;
}

static int run_one(const char *path, const char *hf_dir, json_t *rec, char **user_sets,
		   size_t n_user, int verbose, val_truth_t *t, err_t *e)
{
	val_sets_t s = {.n = 0};
	int rc = rec_sets(path, hf_dir, rec, &s, e);
	for (size_t i = 0; !rc && i < n_user; i++)
		rc = add_set(&s, e, "%s", user_sets[i]);
	if (rc)
		return rc;
	const char *id = json_string_value(json_object_get(rec, "id"));
	printf("experiment %s: %s on %s, TP %lld\n", id,
	       json_string_value(json_object_get(rec, "model")),
	       json_string_value(json_object_get(rec, "hardware")), rec_int(rec, "tp", NULL));
	fflush(stdout); /* before the run's own warnings, which name no experiment */
	const char *sets[VAL_MAX_SETS];
	for (size_t i = 0; i < s.n; i++)
		sets[i] = s.sets[i];
	if (verbose)
		for (size_t i = 0; i < s.n; i++)
			printf("  --set %s\n", s.sets[i]);
	cfg_t *cfg = NULL;
	rc = cli_load_config_ex(NULL, sets, (int)s.n, CLI_DEFAULT_EXPERIMENT, NULL, &cfg, e);
	sim_results_t r = {0};
	if (!rc)
		rc = sim_run(cfg, NULL, &r, e);
	cli_config_free(cfg);
	if (rc)
		return err_prefix(e, "experiment %s", id);
	int64_t edges[VAL_STAGES + 1];
	size_t n_st = stage_edges(&r, edges);
	long long out_spec = rec_int(json_object_get(rec, "workload"), "shared_prefix", "output_len");
	fill_rows(t, id, &r, edges, n_st, out_spec);
	size_t done = 0;
	for (size_t i = 0; i < r.n_req; i++)
		done += r.req[i].status == REQ_COMPLETED;
	printf("  %zu requests, %zu completed, %zu stages\n", r.n_req, done, n_st);
	sim_results_free(&r);
	return 0;
}

/* ---- report ----------------------------------------------------------------- */

static int family(const char *metric)
{
	return !strncmp(metric, "ttft", 4) ? 0 : !strncmp(metric, "e2e", 3) ? 1
					     : !strncmp(metric, "itl", 3)   ? 2
									    : -1;
}

/* MAPE of simulator col (-1: kvsim) over rows of t (whole-run rows only
 * when whole), family fam; skip_noted leaves out rows with a count note.
 * *n gets the rows used. */
static double mape(const val_truth_t *t, int col, int whole, int fam, int skip_noted, size_t *n)
{
	double s = 0;
	*n = 0;
	for (size_t k = 0; k < t->n; k++) {
		const val_row_t *w = &t->row[k];
		double v = col < 0 ? w->kvsim : w->peer[col];
		if ((whole && w->stage != -1) || family(w->metric) != fam || !isfinite(v) ||
		    (skip_noted && w->counted_note))
			continue;
		s += fabs(v / w->actual - 1);
		(*n)++;
	}
	return *n ? 100 * s / (double)*n : NAN;
}

static void print_mape(const val_truth_t *t, int whole)
{
	printf("\nMAPE, %s, over the rows each simulator ran (rows in parentheses):\n",
	       whole ? "whole run (stage -1)" : "every row (whole run and stages)");
	printf("  %-24s %16s %16s %16s %20s\n", "simulator", "TTFT", "E2E", "ITL",
	       "ITL (counted rows)");
	for (int col = -1; col < (int)t->n_peer; col++) {
		char cell[4][32];
		int any = 0;
		for (int f = 0; f < 4; f++) {
			size_t n;
			double m = mape(t, col, whole, f < 3 ? f : 2, f == 3, &n);
			any |= n > 0;
			if (n)
				snprintf(cell[f], sizeof cell[f], "%.1f%% (%zu)", m, n);
			else
				snprintf(cell[f], sizeof cell[f], "-");
		}
		if (any)
			printf("  %-24s %16s %16s %16s %20s\n", col < 0 ? "kvsim" : t->peer_name[col],
			       cell[0], cell[1], cell[2], cell[3]);
	}
}

static int write_csv(const char *path, const val_truth_t *t, err_t *e)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return err_set(e, KS_EIO, "%s: %s", tmp, strerror(errno));
	fprintf(f, "experiment,stage,metric,actual,kvsim,error\n");
	for (size_t k = 0; k < t->n; k++) {
		const val_row_t *w = &t->row[k];
		if (!isfinite(w->kvsim))
			continue;
		fprintf(f, "%s,%d,%s,%.6g,%.6g,%.6g\n", w->exp, w->stage, w->metric, w->actual,
			w->kvsim, w->kvsim / w->actual - 1);
	}
	int bad = ferror(f) | fclose(f);
	if (bad || rename(tmp, path)) {
		remove(tmp);
		return err_set(e, KS_EIO, "%s: write failed", path);
	}
	return 0;
}

/* What `kvsim validate` was asked. */
typedef struct val_args {
	const char *pos[2], *hf_dir, *csv; /* EXPERIMENTS.json, GROUND_TRUTH.csv */
	char **sets, **only; /* the --set lines and --experiment ids, room for argc */
	size_t n_sets, n_only;
	int verbose;
} val_args_t;

/* -1 to go on, else the exit status (help printed, or the usage error). */
static int val_parse(int argc, char **argv, val_args_t *v)
{
	size_t n_pos = 0;
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if ((!strcmp(a, "--set") || !strcmp(a, "-s")) && i + 1 < argc) {
			v->sets[v->n_sets++] = argv[++i];
		} else if (!strncmp(a, "--set=", 6)) {
			v->sets[v->n_sets++] = (char *)a + 6;
		} else if (!strcmp(a, "--hf-configs") && i + 1 < argc) {
			v->hf_dir = argv[++i];
		} else if (!strcmp(a, "--experiment") && i + 1 < argc) {
			v->only[v->n_only++] = argv[++i];
		} else if (!strcmp(a, "--csv") && i + 1 < argc) {
			v->csv = argv[++i];
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			v->verbose = 1;
		} else if (a[0] == '-') {
			rc = cli_usage_error("unknown option or missing value: '%s'", a);
		} else if (n_pos == 2) {
			rc = cli_usage_error("unexpected argument '%s'", a);
		} else {
			v->pos[n_pos++] = a;
		}
	}
	if (!rc && n_pos != 2)
		rc = cli_usage_error("want two arguments, EXPERIMENTS.json and GROUND_TRUTH.csv");
	return rc ? rc : -1;
}

/* Runs each experiment of exps that the ground truth has rows for (and that
 * --experiment names, when given), filling in t's kvsim values. */
static int val_run_all(const val_args_t *v, json_t *exps, val_truth_t *t, err_t *e)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < v->n_only; i++) {
		int found = 0;
		for (size_t k = 0; k < json_array_size(exps); k++)
			found |= !strcmp(v->only[i], json_string_value(json_object_get(
							     json_array_get(exps, k), "id")) ?: "");
		if (!found)
			rc = err_set(e, KS_EINPUT, "--experiment %s: no such id in %s", v->only[i],
				     v->pos[0]);
	}
	size_t ran = 0;
	for (size_t k = 0; !rc && k < json_array_size(exps); k++) {
		json_t *rec = json_array_get(exps, k);
		const char *id = json_string_value(json_object_get(rec, "id"));
		if (!id) {
			rc = err_set(e, KS_EINPUT, "%s: experiments[%zu]: no id", v->pos[0], k);
			break;
		}
		int want = !v->n_only, has = 0;
		for (size_t i = 0; i < v->n_only; i++)
			want |= !strcmp(v->only[i], id);
		for (size_t j = 0; j < t->n && !has; j++)
			has = !strcmp(t->row[j].exp, id);
		if (!want || !has)
			continue;
		rc = run_one(v->pos[0], v->hf_dir, rec, v->sets, v->n_sets, v->verbose, t, e);
		ran++;
	}
	if (!rc && !ran)
		rc = err_set(e, KS_EINPUT, "%s and %s share no experiment id", v->pos[0], v->pos[1]);
	return rc;
}

/* A row per (experiment, stage, metric) kvsim computed: measured, kvsim's,
 * the signed error, and the note on a row whose client counted fewer
 * tokens. */
static void print_rows(const val_truth_t *t)
{
	printf("\n  %-46s %5s %-10s %12s %12s %9s\n", "experiment", "stage", "metric", "actual",
	       "kvsim", "error");
	for (size_t k = 0; k < t->n; k++) {
		const val_row_t *w = &t->row[k];
		if (!isfinite(w->kvsim))
			continue;
		printf("  %-46.46s %5d %-10s %12.2f %12.2f %+8.1f%%", w->exp, w->stage, w->metric,
		       w->actual, w->kvsim, 100 * (w->kvsim / w->actual - 1));
		if (w->counted_note)
			printf("  (the client counted about %d output tokens a request, "
			       "fewer than generated: its ITL is per counted token)",
			       w->counted_note);
		printf("\n");
	}
}

int cli_validate_main(int argc, char **argv)
{
	val_args_t v = {.sets = calloc((size_t)argc + 1, sizeof(char *)),
			.only = calloc((size_t)argc + 1, sizeof(char *))};
	if (!v.sets || !v.only) {
		free(v.sets);
		free(v.only);
		return cli_fail(&(err_t){.code = KS_ENOMEM});
	}
	int rc = val_parse(argc, argv, &v);
	if (rc >= 0) {
		free(v.sets);
		free(v.only);
		return rc;
	}
	char dir_buf[1100];
	if (!v.hf_dir) {
		const char *sl = strrchr(v.pos[0], '/');
		int len = sl ? (int)(sl - v.pos[0]) : 1;
		snprintf(dir_buf, sizeof dir_buf, "%.*s/../hf_configs", len, sl ? v.pos[0] : ".");
		v.hf_dir = dir_buf;
	}
	err_t e = {0};
	val_truth_t t = {0};
	json_error_t je;
	json_t *root = NULL;
	if (!(rc = truth_load(v.pos[1], &t, &e))) {
		root = json_load_file(v.pos[0], 0, &je);
		if (!root)
			rc = err_set(&e, KS_EINPUT, "%s:%d: %s", v.pos[0], je.line, je.text);
	}
	json_t *exps = rc ? NULL : json_object_get(root, "experiments");
	if (!rc && !json_is_array(exps))
		rc = err_set(&e, KS_EINPUT, "%s: experiments: missing or not an array", v.pos[0]);
	if (!rc)
		rc = val_run_all(&v, exps, &t, &e);
	if (!rc) {
		print_rows(&t);
		print_mape(&t, 1);
		print_mape(&t, 0);
		if (v.csv)
			rc = write_csv(v.csv, &t, &e);
	}
	json_decref(root);
	free(t.row);
	free(v.sets);
	free(v.only);
	return rc ? cli_fail(&e) : 0;
}
