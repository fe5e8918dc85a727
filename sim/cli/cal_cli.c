/* cal_cli — `kvsim calibrate plan|fit|check` (see sim/cli/cli.h).
 *
 *   plan   writes the designed calibration schedule (gv_plan.h) for kvreplay
 *   fit    fits the transfer model to kvreplay measurements (gv_fit.h) and
 *          writes a calibration INI (models/mdl_xfer.h)
 *   check  predicted vs measured time per copy of a replayed run (gv_check.h)
 *   compute fit|check
 *          the compute cost model's terms against measured per-operator
 *          profiles (models/mdl_prof.h)
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_validation/gv_check.h"
#include "gpu_validation/gv_fit.h"
#include "gpu_validation/gv_meas.h"
#include "gpu_validation/gv_plan.h"
#include "gpu_validation/gv_prof.h"
#include "gpu_validation/gv_sched.h"
#include "models/mdl.h"
#include "models/mdl_prof.h"
#include "models/mdl_xfer.h"
#include "sim/base/file.h"
#include "sim/base/size.h"
#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: kvsim calibrate plan -o PLAN.h5 [--min-bytes N] [--max-bytes N]\n"
	       "                  [--per-octave N] [--streams N] [--max-granular-bytes N]\n"
	       "       kvsim calibrate fit MEASURED.h5 [MORE.h5..] -o models/calibration/NAME.ini\n"
	       "                  [--edges B1,B2,..] [--no-holdout] [--base INI]\n"
	       "       kvsim calibrate check RUN.h5 MEASURED.h5 [--calibration INI]\n"
	       "                  [--rows N]\n"
	       "       kvsim calibrate compute fit PROFILE.csv.. --gpu NAME -o FILE.ini\n"
	       "                  [--no-holdout] [--base FILE.ini]\n"
	       "       kvsim calibrate compute check PROFILE.csv.. --gpu NAME\n"
	       "                  [--calibration FILE.ini|auto|none|legacy] [--table] [--rows]\n"
	       "       kvsim calibrate compute profile KVREPLAY.h5.. --model NAME -o PROFILE.csv\n\n"
	       "plan   a schedule for kvreplay: sizes min..max on a log grid (default 4 KiB\n"
	       "       to 1 GiB, 2 per octave), host->GPU, GPU->host and GPU->GPU, contiguous\n"
	       "       and block-granular, 2..N concurrent copies (default 8) in the same\n"
	       "       and in opposite directions. Sizes take K, M, G suffixes.\n"
	       "fit    fits per link kind alpha and bandwidth per size piece (edges, bytes\n"
	       "       per copy; default 65536,2097152), per-copy overheads and sharing\n"
	       "       factors by least squares on relative error; fits on one half of\n"
	       "       the copies and reports MAPE and p95 on the other half (the\n"
	       "       parameters written are those of the half fit; --no-holdout fits\n"
	       "       all). Several files are fitted together (e.g. replays with and\n"
	       "       without --batch). Compute rows give MFU and MBU when peaks are known.\n"
	       "check  joins a run's /transfers with kvreplay's measurements of it by id and\n"
	       "       prints simulated, model-predicted and measured time per copy with\n"
	       "       the error summary (model: --calibration INI, else defaults).\n\n"
	       "compute fit    fits the compute model's roofline terms (GEMM MFU curve,\n"
	       "       weight-read MBU, per-kernel costs, elementwise bandwidth; all-reduce\n"
	       "       alpha and bus efficiency per worker count) to per-operator profiles\n"
	       "       (Vidur mlp.csv / all_reduce.csv format) by GSL least squares on relative\n"
	       "       error over every other token count, and reports MAPE and p95 on the\n"
	       "       rest per regime (prefill > 256 tokens; decode <= 8; decode 32..256).\n"
	       "compute check  the same errors for a calibration (default auto: the shipped\n"
	       "       one for --gpu; none: built-in defaults; legacy: the single-efficiency\n"
	       "       roofline); --table prints measured against predicted per layer\n"
	       "       (operators + two all-reduces) at TP 4 and 8.\n"
	       "compute profile  kvreplay --compute measurements (one file per TP shape, as\n"
	       "       gpu_validation/run_on_gpu.sh takes them) as a GEMM-only profile for fit.\n\n"
	       "options: as above, and -h, --help for this help.\n");
	cli_help_end(f);
}

/* The largest size an option takes: the plan's size grid and the fit's
 * edges stay far from 64-bit overflow. */
#define CAL_SIZE_MAX 1000000000000000000ull

static int bad_arg(const char *opt, const char *v)
{
	return cli_usage_error("%s: bad value '%s'", opt, v);
}

/* getopt_long (opterr = 0) returned '?': the option it stopped at. */
static int bad_option(char **argv)
{
	return cli_usage_error("unknown option or missing value: '%s'", argv[optind - 1]);
}

/* ---- plan ------------------------------------------------------------------ */

static int cmd_plan(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"out", 1, 0, 'o'},       {"min-bytes", 1, 0, 'a'},
	    {"max-bytes", 1, 0, 'b'}, {"per-octave", 1, 0, 'p'},
	    {"streams", 1, 0, 's'},   {"max-granular-bytes", 1, 0, 'g'},
	    {"help", 0, 0, 'h'},      {0, 0, 0, 0}};
	gv_plan_opts_t o;
	gv_plan_defaults(&o);
	const char *out = NULL;
	int c;
	uint64_t v;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'o') {
			out = optarg;
			continue;
		}
		if (c == '?')
			return bad_option(argv);
		if (size_parse(optarg, CAL_SIZE_MAX, &v)) {
			const struct option *p = lo;
			while (p->name && p->val != c)
				p++;
			return bad_arg(p->name ? p->name : "option", optarg);
		}
		switch (c) {
		case 'a':
			o.min_bytes = v;
			break;
		case 'b':
			o.max_bytes = v;
			break;
		case 'p':
			o.per_octave = v > 16 ? 17 : (int)v;
			break;
		case 's':
			o.max_streams = v > 64 ? 65 : (int)v;
			break;
		case 'g':
			o.max_granular_bytes = v;
			break;
		}
	}
	if (!out)
		return cli_usage_error("missing -o PLAN.h5");
	if (optind != argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	err_t e = {0};
	res_transfer_t *t = NULL;
	size_t n = 0;
	int rc = gv_plan_build(&o, &t, &n, &e);
	if (!rc)
		rc = gv_sched_write(out, t, n, 1, &e);
	if (rc) {
		free(t);
		return cli_fail(&e);
	}
	size_t groups = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		groups += !i || t[i].start_ns != t[i - 1].start_ns;
		total += t[i].bytes;
	}
	printf("wrote %s: %zu transfers in %zu groups, %.1f MiB per pass\n", out, n, groups,
	       (double)total / 1048576.0);
	free(t);
	return 0;
}

/* ---- fit ------------------------------------------------------------------- */

static void print_summary(const char *label, const gv_err_summary_t *s)
{
	if (!s->n)
		printf("  %-9s n=0\n", label);
	else
		printf("  %-9s n=%-5zu MAPE %6.2f%%  p50 %6.2f%%  p95 %6.2f%%  max %7.2f%%\n",
		       label, s->n, s->mape, s->p50, s->p95, s->max);
}

/* What `calibrate fit` was asked: the calibration to write, the one to start
 * from, and the fit's options; the measurement files are argv[optind..]. */
typedef struct fit_args {
	const char *out, *base;
	gv_fit_opts_t fo;
} fit_args_t;

/* -1 to go on, else the exit status (help printed, or the usage error). */
static int fit_parse(int argc, char **argv, fit_args_t *a)
{
	static const struct option lo[] = {{"out", 1, 0, 'o'},        {"edges", 1, 0, 'e'},
	                                   {"no-holdout", 0, 0, 'n'}, {"base", 1, 0, 'b'},
	                                   {"help", 0, 0, 'h'},       {0, 0, 0, 0}};
	gv_fit_defaults(&a->fo);
	a->out = a->base = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->out = optarg;
			break;
		case 'b':
			a->base = optarg;
			break;
		case 'n':
			a->fo.holdout = 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'e': {
			char buf[512];
			snprintf(buf, sizeof buf, "%s", optarg);
			a->fo.n_edges = 0;
			for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t;
			     t = strtok_r(NULL, ",", &sv)) {
				uint64_t v;
				if (a->fo.n_edges == MDL_XFER_MAX_PIECES - 1 ||
				    size_parse(t, CAL_SIZE_MAX, &v))
					return bad_arg("--edges", optarg);
				a->fo.edges[a->fo.n_edges++] = v;
			}
			break;
		}
		default:
			return bad_option(argv);
		}
	}
	if (!a->out)
		return cli_usage_error("missing -o NAME.ini");
	if (optind >= argc)
		return cli_usage_error("missing MEASURED.h5");
	return -1;
}

/* The base calibration (defaults without one) into x, and every measurement
 * file argv[optind..] appended into m (which the caller frees). */
static int fit_read(const fit_args_t *a, int argc, char **argv, mdl_xfer_t *x, gv_meas_t *m,
                    err_t *e)
{
	gv_meas_t more;
	mdl_xfer_default(x);
	int rc = a->base ? mdl_xfer_load(x, a->base, e) : 0;
	if (!rc)
		rc = gv_meas_read(m, argv[optind], e);
	for (int i = optind + 1; i < argc && !rc; i++) {
		rc = gv_meas_read(&more, argv[i], e);
		if (!rc) {
			rc = gv_meas_append(m, &more, e);
			gv_meas_free(&more);
		}
	}
	return rc;
}

/* The fitted parameters per link kind, with their errors, and the compute
 * rows' MFU and MBU. */
static void fit_print(const mdl_xfer_t *x, const gv_fit_report_t *rep, const gv_meas_t *m,
                      const char *in, int holdout)
{
	printf("calibration of %s (%s backend) from %s\n", x->device, m->backend, in);
	for (int k = 0; k < MDL_LINK_N; k++) {
		const gv_fit_link_t *lr = &rep->link[k];
		if (!lr->n_fit)
			continue;
		const mdl_xfer_link_t *l = &x->link[k];
		if (lr->status) {
			printf("%s: NOT FITTED (%zu copies): %s; keeps its defaults\n",
			       mdl_xfer_link_name(k), lr->n_fit, lr->error);
			continue;
		}
		printf("%s: fit on %zu copies, %d iterations\n", mdl_xfer_link_name(k), lr->n_fit,
		       lr->iterations);
		for (int i = 0; i < l->n_pieces; i++) {
			if (l->piece[i].max_bytes == UINT64_MAX)
				printf("  piece %d (copies > previous): ", i);
			else
				printf("  piece %d (copies <= %llu B): ", i,
				       (unsigned long long)l->piece[i].max_bytes);
			printf("alpha %.0f ns, bandwidth %.2f GB/s\n", l->piece[i].alpha_ns,
			       l->piece[i].bw_gbps);
		}
		if (lr->fit_overhead)
			printf("  per-copy overhead (granular) %.0f ns\n", l->overhead_ns);
		if (lr->fit_batch)
			printf("  per-copy overhead (batch) %.0f ns\n", l->batch_overhead_ns);
		if (lr->fit_share_same || lr->fit_share_opp)
			printf("  sharing: same direction %.3f, opposite %.3f\n", l->share_same,
			       l->share_opp);
		print_summary("train", &lr->train);
		print_summary(holdout ? "held-out" : "all", &lr->test);
	}
	print_summary(holdout ? "held-out" : "all", &rep->test);
	if (rep->n_gemm || rep->n_read) {
		printf("compute: %zu GEMMs, %zu reads\n", rep->n_gemm, rep->n_read);
		if (isfinite(x->mfu))
			printf("  MFU %.3f (median over GEMMs with >= 256 tokens)\n", x->mfu);
		else
			printf("  MFU unknown (no peak FLOP/s: kvreplay --peak-tflops)\n");
		if (isfinite(x->mbu))
			printf("  MBU %.3f (best read kernel)\n", x->mbu);
		else
			printf("  MBU unknown (no peak bandwidth: kvreplay --peak-gbs)\n");
	}
}

/* Writes the calibration INI to out (replaced whole or left as it was),
 * with a comment saying where it came from and its held-out error. */
static int fit_write(const char *out, const char *in, const mdl_xfer_t *x, const gv_meas_t *m,
                     const gv_fit_report_t *rep, int holdout, err_t *e)
{
	char comment[2048], date[32];
	time_t now = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
	snprintf(comment, sizeof comment,
	         "kvsim transfer-model calibration, written by 'kvsim calibrate fit' %s\n"
	         "device: %.127s; backend: %s; driver %s; runtime %s\n"
	         "measurements: %.512s\n"
	         "%s: %zu copies, MAPE %.2f%%, p95 %.2f%%\n"
	         "link kinds not listed below were not measured: the model keeps its defaults",
	         date, x->device, m->backend, m->driver, m->runtime, in,
	         holdout ? "held-out half" : "all copies (no hold-out)", rep->test.n,
	         rep->test.mape, rep->test.p95);
	file_out_t dst;
	int rc = file_out_not_input(out, in, e);
	if (rc || (rc = file_out_begin(&dst, out, FILE_OUT_STREAM, e)))
		return rc;
	FILE *f = fopen(dst.tmp, "w");
	int en = f ? 0 : errno;
	unsigned fitted = 0;
	for (int k = 0; k < MDL_LINK_N; k++)
		fitted |= rep->link[k].n_fit && !rep->link[k].status ? 1u << k : 0;
	errno = 0;
	if (f && mdl_xfer_write(x, f, comment, fitted))
		en = errno ? errno : EIO;
	if (f && fclose(f) && !en)
		en = errno ? errno : EIO;
	if (en) {
		/* the name the user gave, and why (a full disk says so) */
		rc = err_set(e, f ? KS_EIO : err_path_code(en), "%s: cannot write: %s", out,
		             strerror(en));
		file_out_abort(&dst);
		return rc;
	}
	return file_out_commit(&dst, 0, e);
}

static int cmd_fit(int argc, char **argv)
{
	fit_args_t a;
	int rc = fit_parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	char in[1024] = "";
	size_t in_len = 0;
	for (int i = optind; i < argc; i++)
		in_len += (size_t)snprintf(in + in_len, in_len < sizeof in ? sizeof in - in_len : 0,
		                           "%s%s", i > optind ? ", " : "", argv[i]);
	err_t e = {0};
	gv_meas_t m = {0};
	mdl_xfer_t x;
	gv_fit_report_t rep;
	rc = fit_read(&a, argc, argv, &x, &m, &e);
	if (rc) {
		gv_meas_free(&m);
		return cli_fail(&e);
	}
	rc = gv_fit(&m, &a.fo, &x, &rep, &e);
	if (rc) {
		gv_meas_free(&m);
		err_prefix(&e, "%s", in);
		return cli_fail(&e);
	}
	snprintf(x.device, sizeof x.device, "%s", m.device[0] ? m.device : "unknown");
	fit_print(&x, &rep, &m, in, a.fo.holdout);
	if (fit_write(a.out, in, &x, &m, &rep, a.fo.holdout, &e)) {
		gv_meas_free(&m);
		return cli_fail(&e);
	}
	printf("wrote %s\n", a.out);
	gv_meas_free(&m);
	return 0;
}

/* ---- check ----------------------------------------------------------------- */

static const char *shape_name(int s)
{
	return s == MDL_SHAPE_GRANULAR ? "granular" : s == MDL_SHAPE_BATCH ? "batch" : "contig";
}

static int cmd_check(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"calibration", 1, 0, 'c'}, {"rows", 1, 0, 'r'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	const char *cal = NULL;
	long max_rows = 20;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			cal = optarg;
			break;
		case 'r': {
			char *end;
			max_rows = strtol(optarg, &end, 10);
			if (*end || max_rows < 0)
				return bad_arg("--rows", optarg);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			return bad_option(argv);
		}
	}
	if (optind + 2 != argc)
		return cli_usage_error("expected RUN.h5 and MEASURED.h5");
	err_t e = {0};
	mdl_xfer_t x;
	gv_sched_t s = {0};
	gv_meas_t m = {0};
	gv_check_row_t *rows = NULL;
	gv_check_summary_t sum;
	mdl_xfer_default(&x);
	int rc = cal ? mdl_xfer_load(&x, cal, &e) : 0;
	if (!rc)
		rc = gv_sched_read(&s, argv[optind], &e);
	if (!rc)
		rc = gv_meas_read(&m, argv[optind + 1], &e);
	if (!rc)
		rc = gv_check(&s, &m, &x, &rows, &sum, &e);
	if (rc) {
		gv_sched_free(&s);
		gv_meas_free(&m);
		return cli_fail(&e);
	}
	printf("model: %s (%s); measured on %s (%s backend)\n", x.source, x.device, m.device,
	       m.backend);
	printf("%8s %-8s %-8s %12s %6s %4s %12s %12s %12s %8s\n", "id", "link", "shape", "bytes",
	       "blocks", "conc", "sim_us", "model_us", "meas_us", "model_err");
	for (size_t i = 0; i < sum.n_rows && (long)i < max_rows; i++) {
		const gv_check_row_t *r = &rows[i];
		printf("%8llu %-8s %-8s %12llu %6u %2d/%d %12.2f %12.2f %12.2f %+7.1f%%\n",
		       (unsigned long long)r->id, mdl_xfer_link_name(r->link), shape_name(r->shape),
		       (unsigned long long)r->bytes, r->blocks, r->m_same, r->m_opp,
		       r->sim_ns / 1e3, r->model_ns / 1e3, r->meas_ns / 1e3,
		       100 * (r->model_ns - r->meas_ns) / r->meas_ns);
	}
	if (sum.n_rows > (size_t)max_rows)
		printf("... %zu more rows (--rows N)\n", sum.n_rows - (size_t)max_rows);
	printf("%zu copies matched, %zu measured copies without a transfer in the run\n",
	       sum.n_rows, sum.n_unmatched);
	printf("error against the measurement (|predicted - measured| / measured):\n");
	print_summary("model", &sum.model);
	print_summary("simulator", &sum.sim);
	free(rows);
	gv_sched_free(&s);
	gv_meas_free(&m);
	return 0;
}

/* ---- compute ---------------------------------------------------------------- */

static void print_stat(const char *label, const mdl_err_stat_t *s)
{
	if (!s->n)
		printf("  %-11s n=0\n", label);
	else
		printf("  %-11s n=%-5zu MAPE %.1f%%  p95 %.1f%%\n", label, s->n, s->mape, s->p95);
}

static void print_report(const char *title, const mdl_err_stat_t *st)
{
	printf("%s\n", title);
	for (int r = 0; r < MDL_REG_N; r++)
		print_stat(mdl_regime_name(r), &st[r]);
}

/* The calibration named by --calibration for gpu: auto (the shipped one,
 * else defaults), none (defaults), legacy (single-efficiency), or a file. */
static int compute_params(const char *cal, const char *gpu, mdl_compute_params_t *cp, err_t *e)
{
	*cp = mdl_compute_params_default;
	if (!strcmp(cal, "legacy")) {
		cp->gemm_mfu = 0;
		snprintf(cp->calibration, sizeof cp->calibration, "legacy single-efficiency roofline");
		return 0;
	}
	if (!strcmp(cal, "none"))
		return 0;
	if (!strcmp(cal, "auto")) {
		int rc = mdl_calib_builtin(gpu, cp, e);
		return rc > 0 ? 0 : rc;
	}
	return mdl_calib_load(cal, cp, e);
}

static int read_profiles(mdl_prof_t *p, int argc, char **argv, err_t *e)
{
	for (int i = optind; i < argc; i++) {
		int rc = mdl_prof_read(p, argv[i], e);
		if (rc)
			return rc;
	}
	return 0;
}

/* Measured and predicted time of one layer (operators + 2 all-reduces) at
 * (tp, tokens) of the profile's first shape; 0 when not measured. */
static double table_cell(const mdl_prof_t *p, const mdl_hw_t *hw, const mdl_compute_params_t *cp,
                         uint32_t tp, uint32_t tokens, double *meas, err_t *e)
{
	const mdl_prof_row_t *r = NULL;
	for (size_t i = 0; i < p->n_row && !r; i++)
		if (p->row[i].tp == tp && p->row[i].tokens == tokens)
			r = &p->row[i];
	*meas = 0;
	if (!r)
		return 0;
	double pred;
	if (mdl_prof_predict_row(hw, cp, r, &pred, e))
		return -1;
	double bytes = (double)tokens * r->n_embd * 2, ar = 0;
	mdl_curve_t *c = calloc(1, sizeof *c);
	if (!c || mdl_prof_ar_curve(p, tp, c)) {
		free(c);
		err_set(e, c ? KS_EINPUT : KS_ENOMEM, "all-reduce table: more than %d sizes for %u workers",
		        MDL_PROF_POINTS, tp);
		return -1;
	}
	if (c->n) {
		ar = 2 * mdl_curve_at(c, bytes);
		pred += 2 * mdl_prof_predict_ar(hw, cp, tp, bytes);
	}
	free(c);
	*meas = r->gemm_ns + r->small_ns + ar;
	return pred;
}

static int compute_table(const mdl_prof_t *p, const mdl_hw_t *hw, const mdl_compute_params_t *cp,
                         err_t *e)
{
	mdl_compute_params_t before;
	compute_params("legacy", hw->name, &before, e);
	static const uint32_t tok[] = {1, 2, 4, 8, 16, 32, 64, 128, 1024, 2048,
	                               4096, 8192, 16384, 32768, 65536};
	printf("\n| TP | tokens | measured ms | before ms | before err | after ms | after err |\n"
	       "|---:|---:|---:|---:|---:|---:|---:|\n");
	for (uint32_t tp = 4; tp <= 8; tp *= 2)
		for (size_t i = 0; i < sizeof tok / sizeof tok[0]; i++) {
			double m, m2;
			double b = table_cell(p, hw, &before, tp, tok[i], &m, e);
			double a = table_cell(p, hw, cp, tp, tok[i], &m2, e);
			if (b < 0 || a < 0)
				return e->code ? e->code : KS_ENOMEM;
			if (!m) {
				printf("| %u | %u | not measured | | | | |\n", tp, tok[i]);
				continue;
			}
			printf("| %u | %u | %.3f | %.3f | %+.1f%% | %.3f | %+.1f%% |\n", tp, tok[i],
			       m / 1e6, b / 1e6, 100 * (b - m) / m, a / 1e6, 100 * (a - m) / m);
		}
	printf("(one layer, no attention: the profile's operators plus two all-reduces of "
	       "tokens*n_embd*2 bytes; before: the single-efficiency roofline defaults)\n");
	return 0;
}

/* `compute profile`: kvreplay --compute measurements (one file per TP
 * shape) as a GEMM-only operator profile. */
static int cmd_compute_profile(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"out", 1, 0, 'o'}, {"model", 1, 0, 'm'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	const char *out = NULL, *model = "Llama-3-8B";
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == 'm')
			model = optarg;
		else if (c == 'h') {
			usage(stdout);
			return 0;
		} else
			return bad_option(argv);
	}
	if (!out)
		return cli_usage_error("missing -o PROFILE.csv");
	if (optind >= argc)
		return cli_usage_error("missing MEASURED.h5");
	err_t e = {0};
	mdl_llm_t llm;
	mdl_prof_row_t *rows = NULL;
	size_t n = 0;
	int rc = mdl_llm_builtin(model, &llm, &e);
	if (rc)
		rc = mdl_llm_load_file(model, &llm, &e);
	for (int i = optind; i < argc && !rc; i++) {
		gv_meas_t m = {0};
		rc = gv_meas_read(&m, argv[i], &e);
		if (!rc)
			rc = gv_prof_rows(argv[i], &m, &llm, &rows, &n, &e);
		gv_meas_free(&m);
	}
	FILE *f = rc ? NULL : fopen(out, "w");
	if (!rc && !f)
		rc = err_set(&e, KS_EIO, "%s: cannot write: %s", out, strerror(errno));
	if (f) {
		rc = mdl_prof_write_rows(f, rows, n);
		if (fclose(f) || rc)
			rc = err_set(&e, KS_EIO, "%s: write error", out);
	}
	free(rows);
	if (rc)
		return cli_fail(&e);
	printf("wrote %s: %zu rows (GEMMs of %s's layer; small kernels not measured)\n", out, n,
	       llm.name);
	return 0;
}

/* What `calibrate compute fit|check` was asked; the profiles are
 * argv[optind..]. */
typedef struct compute_args {
	int fit; /* fit, else check */
	const char *out, *gpu, *cal, *base;
	int holdout, table, rows;
} compute_args_t;

/* The options after fit|check (argv[0]). -1 to go on, else the exit status
 * (help printed, or the usage error). */
static int compute_parse(int argc, char **argv, compute_args_t *a)
{
	static const struct option lo[] = {
	    {"out", 1, 0, 'o'},    {"gpu", 1, 0, 'g'},        {"calibration", 1, 0, 'c'},
	    {"base", 1, 0, 'b'},   {"no-holdout", 0, 0, 'n'}, {"table", 0, 0, 't'},
	    {"rows", 0, 0, 'r'},   {"help", 0, 0, 'h'},       {0, 0, 0, 0}};
	a->out = a->gpu = a->cal = NULL;
	a->base = "none";
	a->holdout = 1;
	a->table = a->rows = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->out = optarg;
			break;
		case 'g':
			a->gpu = optarg;
			break;
		case 'c':
			a->cal = optarg;
			break;
		case 'b':
			a->base = optarg;
			break;
		case 'n':
			a->holdout = 0;
			break;
		case 't':
			a->table = 1;
			break;
		case 'r':
			a->rows = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return bad_option(argv);
		}
	}
	if (!a->gpu)
		return cli_usage_error("missing --gpu NAME (the peaks the terms are relative to)");
	if (a->fit && !a->out)
		return cli_usage_error("missing -o FILE.ini");
	if (optind >= argc)
		return cli_usage_error("missing PROFILE.csv");
	return -1;
}

/* The fitted terms (fit) or the calibration checked (check), then the
 * errors per regime. */
static void compute_print(const compute_args_t *a, const mdl_hw_t *hw, const mdl_prof_t *p,
                          const mdl_compute_params_t *cp, const mdl_cfit_report_t *rep)
{
	printf("%s: %zu operator rows, %zu all-reduce rows\n", hw->name, p->n_row, p->n_ar);
	if (a->fit) {
		printf("fit on %zu rows, %d iterations:\n", rep->n_fit_rows, rep->iterations);
		printf("  gemm_mfu %.4f  gemm_half_flops %.4g  weight_mbu %.4f\n", cp->gemm_mfu,
		       cp->gemm_half_flops, cp->weight_mbu);
		printf("  gemm_kernel_ns %.0f  small_kernel_ns %.0f  elt_bw_eff %.4f\n",
		       cp->gemm_kernel_ns, cp->small_kernel_ns, cp->elt_bw_eff);
		for (size_t i = 0; i < cp->n_ar; i++)
			printf("  all-reduce tp%u: alpha %.0f ns, bus efficiency %.4f\n", cp->ar[i].tp,
			       cp->ar[i].lat_ns, cp->ar[i].bw_eff);
	} else {
		printf("model: %s\n", cp->calibration[0] ? cp->calibration : "built-in defaults");
	}
	print_report("all rows:", rep->fit);
	print_report(a->holdout ? "held-out half:" : "all rows (no hold-out):", rep->held_out);
}

/* --rows: measured against predicted time per profile row. */
static int compute_rows(const mdl_prof_t *p, const mdl_hw_t *hw, const mdl_compute_params_t *cp,
                        err_t *e)
{
	int rc = 0;
	for (size_t i = 0; i < p->n_row && !rc; i++) {
		const mdl_prof_row_t *r = &p->row[i];
		double pred, meas = r->gemm_ns + r->small_ns;
		rc = mdl_prof_predict_row(hw, cp, r, &pred, e);
		if (!i)
			printf("tp tokens measured_ms predicted_ms err\n");
		if (!rc)
			printf("%u %u %.4f %.4f %+.2f%%\n", r->tp, r->tokens, meas / 1e6, pred / 1e6,
			       100 * (pred - meas) / meas);
	}
	return rc;
}

/* Writes the fitted calibration to a->out with a comment saying what it was
 * fitted on (the profiles argv[optind..], their layer shapes) and its
 * held-out errors. */
static int compute_write(const compute_args_t *a, int argc, char **argv, const mdl_hw_t *hw,
                         const mdl_prof_t *p, const mdl_compute_params_t *cp,
                         const mdl_cfit_report_t *rep, err_t *e)
{
	char comment[4096], shapes[1024] = "";
	size_t k = 0;
	for (size_t i = 0; i < p->n_row && k < sizeof shapes - 80; i++) {
		char one[80];
		const mdl_prof_row_t *r = &p->row[i];
		snprintf(one, sizeof one, "n_embd %u n_head %u n_kv_head %u n_expanded_embd %u",
		         r->n_embd, r->n_head, r->n_kv_head, r->n_expanded_embd);
		if (!strstr(shapes, one))
			k += (size_t)snprintf(shapes + k, sizeof shapes - k, "%s%s", k ? "; " : "",
			                      one);
	}
	char in[1024] = "";
	for (int i = optind, n = 0; i < argc; i++)
		n += snprintf(in + n, sizeof in - (size_t)n, "%s%s", i > optind ? ", " : "", argv[i]);
	size_t n = (size_t)snprintf(
	    comment, sizeof comment,
	    "kvsim compute-model calibration for %s, written by 'kvsim calibrate compute fit'\n"
	    "source: %.900s\n"
	    "fitted on layer shapes: %s (tp 1-8, GEMMs, small kernels and all-reduce)\n"
	    "attention terms are not fitted (no attention table): from %s\n"
	    "held-out errors (every other token count / message size):",
	    hw->name, in, shapes,
	    strcmp(a->base, "none") ? a->base : "the built-in defaults (models/mdl_cost.c)");
	for (int r = 0; r < MDL_REG_N && n < sizeof comment; r++)
		n += (size_t)snprintf(comment + n, sizeof comment - n,
		                      "\n  %s: n %zu, MAPE %.1f%%, p95 %.1f%%", mdl_regime_name(r),
		                      rep->held_out[r].n, rep->held_out[r].mape, rep->held_out[r].p95);
	FILE *f = fopen(a->out, "w");
	int rc = f ? mdl_calib_write(f, cp, comment) : KS_EIO;
	if (f && fclose(f))
		rc = KS_EIO;
	if (rc)
		return err_set(e, KS_EIO, "%s: cannot write: %s", a->out, strerror(errno));
	return 0;
}

static int cmd_compute(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("compute: missing command (fit, check, profile)");
	if (cli_is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "profile"))
		return cmd_compute_profile(argc - 1, argv + 1);
	compute_args_t a = {.fit = !strcmp(argv[1], "fit")};
	if (!a.fit && strcmp(argv[1], "check"))
		return cli_usage_error("compute: unknown command '%s' (fit, check, profile)", argv[1]);
	argc--, argv++;
	int rc = compute_parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	err_t e = {0};
	mdl_hw_t hw;
	mdl_prof_t p = {0};
	mdl_compute_params_t cp;
	mdl_cfit_report_t rep;
	rc = mdl_hw_builtin(a.gpu, &hw, &e);
	if (!rc)
		rc = compute_params(a.fit ? a.base : a.cal ? a.cal : "auto", hw.name, &cp, &e);
	if (!rc)
		rc = read_profiles(&p, argc, argv, &e);
	if (!rc)
		rc = a.fit ? mdl_prof_fit(&p, &hw, a.holdout, &cp, &rep, &e)
		           : mdl_prof_check(&p, &hw, &cp, &rep, &e);
	if (rc) {
		mdl_prof_free(&p);
		return cli_fail(&e);
	}
	compute_print(&a, &hw, &p, &cp, &rep);
	if (a.rows)
		rc = compute_rows(&p, &hw, &cp, &e);
	if (rc || (a.table && (rc = compute_table(&p, &hw, &cp, &e))) ||
	    (a.fit && (rc = compute_write(&a, argc, argv, &hw, &p, &cp, &rep, &e)))) {
		mdl_prof_free(&p);
		return cli_fail(&e);
	}
	if (a.fit)
		printf("wrote %s\n", a.out);
	mdl_prof_free(&p);
	return 0;
}

int cal_cli_main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("missing command (plan, fit, check, compute)");
	if (cli_is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	int (*fn)(int, char **) = !strcmp(argv[1], "plan")    ? cmd_plan
	                          : !strcmp(argv[1], "fit")   ? cmd_fit
	                          : !strcmp(argv[1], "check")   ? cmd_check
	                          : !strcmp(argv[1], "compute") ? cmd_compute
	                                                        : NULL;
	if (!fn)
		return cli_usage_error("unknown command '%s' (plan, fit, check, compute)", argv[1]);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "calibrate %s", argv[1]);
	cli_set_command(cmd);
	return fn(argc - 1, argv + 1);
}
