/* tr_gen_servegen — gen = servegen: per-window rate with Gamma/Weibull gaps
 * from a ServeGen chunk-*-trace.csv (window_start_s, rate, cv, pattern,
 * shape, scale): gaps drawn with the window's shape/scale, rescaled to its
 * mean 1/rate, as servegen/construct.py does; windows are read one at a
 * time. Generation ends at the end of the windows file (duration_s does not
 * apply; end_s cuts it). Load: trace.rate_scale multiplies each window's
 * rate. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_gamma.h>
#include <math.h>
#include <string.h>

#include "traces/tr_gen_int.h"

#define SG_LINE(g) (unsigned long long)(g)->l.line

/* Reads the next ServeGen window into *w; 0 at end of file. */
static int sg_read(gen_src_t *g, win_t *w, err_t *e)
{
	int rc;
	do {
		if ((rc = tr_lines_next(&g->l, e)) <= 0)
			return rc;
	} while (g->l.len == 0);
	tr_field_t f[8];
	int n = tr_csv_split(&g->l, f, 8, e);
	if (n < 0)
		return n;
	static const char *const names[] = {"window_start_s", "rate",  "cv",
	                                    "pattern",        "shape", "scale"};
	if (n < 6)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: missing column (row has %d of 6)",
		               g->l.path, SG_LINE(g), names[n], n);
	double v[6];
	for (int i = 0; i < 6; i++) {
		if (i == 3)
			continue;
		if (i >= 4 && f[i].len == 0) {
			v[i] = 0;
			continue;
		}
		if ((rc = tr_parse_f64(&g->l, names[i], f[i].s, &v[i], e)))
			return rc;
	}
	if (v[0] < 0 || v[1] < 0)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: negative", g->l.path, SG_LINE(g),
		               v[0] < 0 ? names[0] : names[1]);
	if (v[0] >= 4e9)
		return err_set(e, KS_EINPUT, "%s:%llu: window_start_s: out of range [0, 4e9)",
		               g->l.path, SG_LINE(g));
	memset(w, 0, sizeof *w);
	w->line = SG_LINE(g);
	w->start = v[0];
	w->rate = v[1] * g->o.rate_scale;
	w->shape = v[4];
	w->scale = v[5];
	if (!strcmp(f[3].s, "Gamma"))
		w->pattern = 1;
	else if (!strcmp(f[3].s, "Weibull"))
		w->pattern = 2;
	else if (f[3].len)
		return err_set(e, KS_EINPUT,
		               "%s:%llu: pattern: '%s' is not Gamma, Weibull or empty", g->l.path,
		               SG_LINE(g), f[3].s);
	if (w->pattern && w->rate > 0 && !(w->shape > 0 && w->scale > 0))
		return err_set(e, KS_EINPUT, "%s:%llu: shape: shape and scale must be > 0",
		               g->l.path, SG_LINE(g));
	double mean = w->pattern == 1   ? w->shape * w->scale
	              : w->pattern == 2 ? w->scale * exp(gsl_sf_lngamma(1 + 1 / w->shape))
	                                : 1;
	w->factor = w->rate > 0 ? (1 / w->rate) / mean : 0;
	return 1;
}

/* Advances to the next ServeGen window; 0 when there is none. */
static int sg_advance(gen_src_t *g, err_t *e)
{
	if (!g->have_next)
		return 0;
	g->w = g->next_w;
	int rc = sg_read(g, &g->next_w, e);
	if (rc < 0)
		return rc;
	g->have_next = rc;
	/* A repeated start would make an empty window that swallows its rate. */
	if (rc && g->next_w.start <= g->w.start)
		return err_set(e, KS_EINPUT,
		               "%s:%llu: window_start_s: %s (%.17g s; the previous window starts "
		               "at %.17g s)",
		               g->l.path, SG_LINE(g),
		               g->next_w.start < g->w.start ? "goes backwards"
		                                            : "repeats the previous window's start",
		               g->next_w.start, g->w.start);
	/* The last window lasts as long as the one before it (600 s in ServeGen). */
	g->w.end = rc ? g->next_w.start : g->w.start + 600;
	g->t = g->w.start;
	g->expect += g->w.rate * (g->w.end - g->w.start);
	const tr_opts_t *o = &g->o;
	if (g->expect > (double)o->max_generated && (!o->requests || o->requests > o->max_generated))
		return err_set(e, KS_EINPUT,
		               "%s:%llu: rate: the windows up to this one make about %.3g requests, "
		               "more than [trace] max_generated = %llu; set trace.requests or raise "
		               "trace.max_generated",
		               g->l.path, g->w.line, g->expect,
		               (unsigned long long)o->max_generated);
	return 1;
}

static int sg_next_time(gen_src_t *g, double *t, err_t *e)
{
	for (;;) {
		if (g->w.rate > 0) {
			double gap =
			    g->w.pattern == 1   ? gsl_ran_gamma(g->arr, g->w.shape, g->w.scale)
			    : g->w.pattern == 2 ? gsl_ran_weibull(g->arr, g->w.scale, g->w.shape)
						: gsl_ran_exponential(g->arr, 1);
			double nt = g->t + gap * g->w.factor;
			if (nt < g->w.end) {
				g->t = *t = nt;
				return 1;
			}
		}
		int rc = sg_advance(g, e);
		if (rc <= 0)
			return rc;
	}
}

static void b_bytes(gen_src_t *g)
{
	g->base.bytes = g->l.bytes;
}

static int sg_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)raw;
	int rc = sg_next_time(g, t, e);
	b_bytes(g);
	return rc;
}

static int sg_check(const tr_opts_t *o, err_t *e)
{
	if (!o->path || !*o->path)
		return err_set(e, KS_EINPUT, "[trace] path: gen = servegen needs a windows CSV");
	return 0;
}

static int sg_init(gen_src_t *g, err_t *e)
{
	const tr_opts_t *o = &g->o;
	int rc;
	if ((rc = tr_lines_open(&g->l, o->path, e)))
		return rc;
	g->l.max_line = tr_max_line(o);
	g->lines_open = 1;
	if ((rc = sg_read(g, &g->next_w, e)) < 0)
		return rc;
	if (rc == 0)
		return err_set(e, KS_EINPUT, "%s:1: window_start_s: empty file", o->path);
	g->have_next = 1;
	if ((rc = sg_advance(g, e)) < 0)
		return rc;
	g->base.bytes = 0;
	return 0;
}

/* No expected count: each window's is checked as it is entered (sg_advance). */
const tr_gen_ops_t tr_gen_servegen = {
    .name = "servegen", .flags = TR_GEN_F_PATH, .check = sg_check, .init = sg_init,
    .next = sg_next};
