/* mdl_prof — measured GPU profiles: reading, interpolation, fit, check and
 * calibration files. See mdl_prof.h. */
#include "models/mdl_prof.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/base/file.h"

/* ---- reading ----------------------------------------------------------------- */

/* The operator columns, in the order mdl_prof_write_rows writes them. */
static const char *const gemm_ops[] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj",
                                       "mlp_down_proj"};
static const char *const small_ops[] = {"input_layernorm", "attn_rope",
                                        "post_attention_layernorm", "mlp_act", "add"};
static const char *const shape_cols[] = {"n_head", "n_kv_head", "n_embd", "n_expanded_embd",
                                         "num_tokens", "num_tensor_parallel_workers"};
#define N_GEMM_OPS 4
#define N_SMALL_OPS 5
#define N_SHAPE 6
#define MAX_COLS 256

/* Splits one CSV line in place at commas (no quoting in these files). */
static size_t split(char *line, char **f, size_t max)
{
	size_t n = 0;
	for (char *p = line;; p++) {
		if (n < max)
			f[n] = p;
		n++;
		p = strchr(p, ',');
		if (!p)
			break;
		*p = '\0';
	}
	return n;
}

static int col_of(char *const *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(h[i], name))
			return (int)i;
	return -1;
}

static int median_col(char *const *h, size_t n, const char *op)
{
	char name[96];
	snprintf(name, sizeof name, "time_stats.%s.median", op);
	return col_of(h, n, name);
}

int mdl_prof_number(const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return end == s || *end || errno || !isfinite(*v);
}

static void *grow(void *p, size_t n, size_t size)
{
	return realloc(p, (n + 1) * size);
}

/* The columns of one profile, from its header line. */
typedef struct {
	char *h[MAX_COLS]; /* the header's names (in the text's copy) */
	size_t nh;
	int gc[N_GEMM_OPS], sc[N_SMALL_OPS], shc[N_SHAPE];
	int arc[4]; /* all-reduce: time, workers, size, devices per node */
	int is_ar;  /* an all-reduce profile, else an operator one */
} prof_cols_t;

/* Reads the header line l: which profile it is and where its columns are. */
static int prof_header(prof_cols_t *c, char *l, const char *origin, err_t *e)
{
	c->nh = split(l, c->h, MAX_COLS);
	if (c->nh > MAX_COLS)
		return err_set(e, KS_EINPUT, "%s:1: more than %d columns", origin, MAX_COLS);
	char **h = c->h;
	size_t nh = c->nh;
	c->arc[0] = median_col(h, nh, "all_reduce");
	c->arc[1] = col_of(h, nh, "num_workers");
	c->arc[2] = col_of(h, nh, "size");
	c->arc[3] = col_of(h, nh, "devices_per_node");
	c->is_ar = c->arc[0] >= 0;
	const char *miss = NULL;
	if (c->is_ar) {
		miss = c->arc[1] < 0 ? "num_workers" : c->arc[2] < 0 ? "size" : NULL;
	} else {
		for (int i = 0; i < N_GEMM_OPS && !miss; i++)
			if ((c->gc[i] = median_col(h, nh, gemm_ops[i])) < 0)
				miss = gemm_ops[i];
		/* small kernels: all five or none (not measured) */
		int have = 0;
		for (int i = 0; i < N_SMALL_OPS; i++)
			have += (c->sc[i] = median_col(h, nh, small_ops[i])) >= 0;
		for (int i = 0; i < N_SMALL_OPS && have && !miss; i++)
			if (c->sc[i] < 0)
				miss = small_ops[i];
		for (int i = 0; i < N_SHAPE && !miss; i++)
			if ((c->shc[i] = col_of(h, nh, shape_cols[i])) < 0)
				miss = shape_cols[i];
	}
	if (miss)
		return err_set(e, KS_EINPUT,
		               "%s:1: %s: missing column (not an operator or "
		               "all-reduce profile)",
		               origin, miss);
	return 0;
}

/* Appends the all-reduce row f (line) to t; rows across nodes are left out. */
static int prof_ar_row(mdl_prof_t *t, const prof_cols_t *c, char **f, const char *origin,
                       size_t line, err_t *e)
{
	const int *arc = c->arc;
	double ms, w, b;
	if (mdl_prof_number(f[arc[0]], &ms) || mdl_prof_number(f[arc[1]], &w) || mdl_prof_number(f[arc[2]], &b) ||
	    !(ms > 0) || !(w >= 1) || !(b > 0))
		return err_set(e, KS_EINPUT, "%s:%zu: all_reduce: bad time, workers or size", origin,
		               line);
	double dpn;
	if (arc[3] >= 0 && !mdl_prof_number(f[arc[3]], &dpn) && w > dpn)
		return 0; /* across nodes: not the NVLink all-reduce modelled */
	mdl_ar_row_t *a = grow(t->ar, t->n_ar, sizeof *a);
	if (!a)
		return err_set(e, KS_ENOMEM, "out of memory");
	t->ar = a;
	t->ar[t->n_ar++] = (mdl_ar_row_t){(uint32_t)w, b, ms * 1e6};
	return 0;
}

/* Appends the operator row f (line) to t. */
static int prof_op_row(mdl_prof_t *t, const prof_cols_t *c, char **f, const char *origin,
                       size_t line, err_t *e)
{
	char *const *h = c->h;
	int rc = 0;
	double v[N_SHAPE];
	mdl_prof_row_t r = {0};
	for (int i = 0; i < N_SHAPE && !rc; i++)
		if (mdl_prof_number(f[c->shc[i]], &v[i]) || !(v[i] >= 1) || v[i] > 4e9 || v[i] != floor(v[i]))
			rc = err_set(e, KS_EINPUT, "%s:%zu: %s: not a positive whole number",
			             origin, line, shape_cols[i]);
	for (int i = 0; i < N_GEMM_OPS + N_SMALL_OPS && !rc; i++) {
		double ms;
		int k = i < N_GEMM_OPS ? c->gc[i] : c->sc[i - N_GEMM_OPS];
		if (k < 0)
			continue; /* small kernels not measured: small_ns stays 0 */
		if (mdl_prof_number(f[k], &ms) || !(ms > 0))
			rc = err_set(e, KS_EINPUT, "%s:%zu: %s: not a positive time", origin,
			             line, h[k]);
		else
			*(i < N_GEMM_OPS ? &r.gemm_ns : &r.small_ns) += ms * 1e6;
	}
	int g = col_of(h, c->nh, "use_gated_mlp");
	if (!rc && g >= 0 && strcasecmp(f[g], "true"))
		rc = err_set(e, KS_EINPUT,
		             "%s:%zu: use_gated_mlp: only gated (SwiGLU) MLPs are modelled",
		             origin, line);
	if (rc)
		return rc;
	r.n_head = (uint32_t)v[0];
	r.n_kv_head = (uint32_t)v[1];
	r.n_embd = (uint32_t)v[2];
	r.n_expanded_embd = (uint32_t)v[3];
	r.tokens = (uint32_t)v[4];
	r.tp = (uint32_t)v[5];
	mdl_prof_row_t *nr = grow(t->row, t->n_row, sizeof *nr);
	if (!nr)
		return err_set(e, KS_ENOMEM, "out of memory");
	t->row = nr;
	t->row[t->n_row++] = r;
	return 0;
}

int mdl_prof_read_string(mdl_prof_t *p, const char *origin, const char *text, err_t *e)
{
	char *buf = strdup(text);
	if (!buf)
		return err_set(e, KS_ENOMEM, "out of memory");
	char *f[MAX_COLS];
	prof_cols_t cols = {.arc = {-1, -1, -1, -1}};
	mdl_prof_t t = *p; /* appended to a copy: all or nothing */
	size_t line = 0, n0 = p->n_row, a0 = p->n_ar;
	int rc = 0;
	char *save = NULL;
	for (char *l = strtok_r(buf, "\r\n", &save); l && !rc; l = strtok_r(NULL, "\r\n", &save)) {
		line++;
		if (line == 1) {
			rc = prof_header(&cols, l, origin, e);
			continue;
		}
		size_t nf = split(l, f, MAX_COLS);
		if (nf != cols.nh) {
			rc = err_set(e, KS_EINPUT, "%s:%zu: %zu fields, the header has %zu", origin,
			             line, nf, cols.nh);
			break;
		}
		rc = cols.is_ar ? prof_ar_row(&t, &cols, f, origin, line, e)
		                : prof_op_row(&t, &cols, f, origin, line, e);
	}
	free(buf);
	if (!rc && line < 2)
		rc = err_set(e, KS_EINPUT, "%s: no rows", origin);
	if (rc) {
		/* drop what this file added; the arrays may have moved */
		t.n_row = n0;
		t.n_ar = a0;
	}
	*p = t;
	return rc;
}

static int prof_parse(void *p, const char *origin, const char *text, err_t *e)
{
	return mdl_prof_read_string(p, origin, text, e);
}

int mdl_prof_read(mdl_prof_t *p, const char *path, err_t *e)
{
	return file_parse(path, prof_parse, p, e);
}

void mdl_prof_free(mdl_prof_t *p)
{
	free(p->row);
	free(p->ar);
	memset(p, 0, sizeof *p);
}

int mdl_prof_write_rows(FILE *f, const mdl_prof_row_t *rows, size_t n)
{
	int small = n > 0; /* the small-kernel columns only when every row has them */
	for (size_t j = 0; j < n; j++)
		small &= rows[j].small_ns > 0;
	for (int i = 0; i < N_GEMM_OPS + (small ? N_SMALL_OPS : 0); i++)
		fprintf(f, "time_stats.%s.median,",
		        i < N_GEMM_OPS ? gemm_ops[i] : small_ops[i - N_GEMM_OPS]);
	fprintf(f, "n_head,n_kv_head,n_embd,n_expanded_embd,use_gated_mlp,num_tokens,"
	           "num_tensor_parallel_workers\n");
	for (size_t j = 0; j < n; j++) {
		const mdl_prof_row_t *r = &rows[j];
		double h = r->n_embd, d = h / r->n_head, tp = r->tp;
		double kv = r->n_kv_head >= r->tp ? r->n_kv_head / tp : 1;
		/* weights per GPU of qkv, o, gate+up, down */
		double w[N_GEMM_OPS] = {h * (r->n_head / tp + 2 * kv) * d, r->n_head / tp * d * h,
		                        2 * h * r->n_expanded_embd / tp, r->n_expanded_embd / tp * h};
		double wsum = w[0] + w[1] + w[2] + w[3];
		for (int i = 0; i < N_GEMM_OPS; i++)
			fprintf(f, "%.9g,", r->gemm_ns * w[i] / wsum / 1e6);
		for (int i = 0; small && i < N_SMALL_OPS; i++)
			fprintf(f, "%.9g,", r->small_ns / N_SMALL_OPS / 1e6);
		fprintf(f, "%u,%u,%u,%u,True,%u,%u\n", r->n_head, r->n_kv_head, r->n_embd,
		        r->n_expanded_embd, r->tokens, r->tp);
	}
	return ferror(f) ? KS_EIO : 0;
}

/* ---- interpolation ------------------------------------------------------------- */

double mdl_curve_at(const mdl_curve_t *c, double x)
{
	if (!c->n)
		return 0;
	if (x <= c->x[0])
		return c->y[0];
	size_t n = c->n;
	if (x >= c->x[n - 1])
		return c->y[n - 1] * x / c->x[n - 1];
	size_t lo = 0, hi = n - 1; /* x[lo] < x <= x[hi] */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (c->x[mid] < x)
			lo = mid;
		else
			hi = mid;
	}
	double w = log(x / c->x[lo]) / log(c->x[hi] / c->x[lo]);
	return c->y[lo] + w * (c->y[hi] - c->y[lo]);
}

/* Adds (x, y) to a curve kept sorted by x; a repeated x is averaged in
 * (count in cnt). */
static int curve_add(mdl_curve_t *c, double *cnt, double x, double y)
{
	size_t i = 0;
	while (i < c->n && c->x[i] < x)
		i++;
	if (i < c->n && c->x[i] == x) {
		cnt[i] += 1;
		c->y[i] += (y - c->y[i]) / cnt[i];
		return 0;
	}
	if (c->n == MDL_PROF_POINTS)
		return -1;
	memmove(c->x + i + 1, c->x + i, (c->n - i) * sizeof c->x[0]);
	memmove(c->y + i + 1, c->y + i, (c->n - i) * sizeof c->y[0]);
	memmove(cnt + i + 1, cnt + i, (c->n - i) * sizeof cnt[0]);
	c->x[i] = x;
	c->y[i] = y;
	cnt[i] = 1;
	c->n++;
	return 0;
}

int mdl_prof_ar_curve(const mdl_prof_t *p, uint32_t workers, mdl_curve_t *c)
{
	static _Thread_local double cnt[MDL_PROF_POINTS];
	c->n = 0;
	for (size_t i = 0; i < p->n_ar; i++)
		if (p->ar[i].workers == workers && curve_add(c, cnt, p->ar[i].bytes, p->ar[i].ns))
			return -1;
	return 0;
}

static int read_list(mdl_prof_t *p, const char *paths, err_t *e)
{
	char buf[MDL_PATH_MAX];
	snprintf(buf, sizeof buf, "%s", paths);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		int rc = mdl_prof_read(p, t, e);
		if (rc)
			return rc;
	}
	return 0;
}

int mdl_prof_curves(mdl_compute_t *c, err_t *e)
{
	const mdl_llm_t *m = &c->llm;
	mdl_prof_t p = {0};
	static _Thread_local double cnt[MDL_PROF_POINTS];
	int rc = 0;
	if (!c->p.profile[0])
		return err_set(e, KS_EINPUT, "[compute] profile: model = profile needs a table");
	if (m->attention != MDL_ATTN_GQA || m->experts)
		return err_set(e, KS_EINPUT,
		               "[compute] model: profile tables hold dense GQA layers; %s is not one",
		               m->name);
	if ((rc = read_list(&p, c->p.profile, e)))
		goto out;
	if (c->p.ar_profile[0] && (rc = read_list(&p, c->p.ar_profile, e)))
		goto out;
	c->layer.n = c->arc.n = 0;
	for (size_t i = 0; i < p.n_row && !rc; i++) {
		const mdl_prof_row_t *r = &p.row[i];
		if (r->tp != c->tp || r->n_embd != m->hidden || r->n_head != m->heads ||
		    r->n_kv_head != m->kv_heads || r->n_expanded_embd != m->intermediate)
			continue;
		if (curve_add(&c->layer, cnt, r->tokens, r->gemm_ns + r->small_ns))
			rc = err_set(e, KS_EINPUT, "[compute] profile: more than %d token counts",
			             MDL_PROF_POINTS);
	}
	if (!rc && !c->layer.n)
		rc = err_set(e, KS_EINPUT,
		             "[compute] profile: no rows for tp %u and %s's layer shape (n_embd %u, "
		             "n_head %u, n_kv_head %u, n_expanded_embd %u)",
		             c->tp, m->name, m->hidden, m->heads, m->kv_heads, m->intermediate);
	if (!rc && mdl_prof_ar_curve(&p, c->tp, &c->arc))
		rc = err_set(e, KS_EINPUT, "[compute] allreduce_profile: more than %d sizes",
		             MDL_PROF_POINTS);
	if (!rc && c->p.ar_profile[0] && c->tp > 1 && !c->arc.n)
		rc = err_set(e, KS_EINPUT, "[compute] allreduce_profile: no rows for %u workers",
		             c->tp);
out:
	mdl_prof_free(&p);
	return rc;
}

