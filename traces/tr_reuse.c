/* tr_reuse — the stack-distance pass and its summaries (contract in
 * tr_reuse.h). One open-addressing table type serves the stacks (id ->
 * latest stamp), the gap pass (id -> latest arrival) and the hot prefixes
 * (id -> requests). */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "sim/base/vec.h"
#include "traces/tr_reuse.h"

/* ---- id table ------------------------------------------------------------ */

typedef struct idtab {
	uint64_t *keys, *vals;
	uint8_t *used;
	size_t cap, n;
} idtab_t;

static void idtab_free(idtab_t *m)
{
	FREE_ALL(m->keys, m->vals, m->used);
	memset(m, 0, sizeof *m);
}

static size_t idtab_slot(const idtab_t *m, uint64_t id)
{
	size_t j = tr_mix(0, id) & (m->cap - 1);
	while (m->used[j] && m->keys[j] != id)
		j = (j + 1) & (m->cap - 1);
	return j;
}

/* The value of id, or NULL when absent. */
static uint64_t *idtab_find(idtab_t *m, uint64_t id)
{
	if (!m->cap)
		return NULL;
	size_t j = idtab_slot(m, id);
	return m->used[j] ? &m->vals[j] : NULL;
}

static int idtab_grow(idtab_t *m)
{
	size_t nc = m->cap ? m->cap * 2 : 1u << 12;
	idtab_t g = {calloc(nc, 8), calloc(nc, 8), calloc(nc, 1), nc, 0};
	if (!g.keys || !g.vals || !g.used) {
		idtab_free(&g);
		return KS_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i]) {
			size_t j = idtab_slot(&g, m->keys[i]);
			g.used[j] = 1;
			g.keys[j] = m->keys[i];
			g.vals[j] = m->vals[i];
			g.n++;
		}
	idtab_free(m);
	*m = g;
	return 0;
}

/* The value of id, inserted as 0 (*fresh = 1) when absent; NULL when out
 * of memory. */
static uint64_t *idtab_put(idtab_t *m, uint64_t id, int *fresh)
{
	if ((m->n + 1) * 4 > m->cap * 3 && idtab_grow(m))
		return NULL;
	size_t j = idtab_slot(m, id);
	*fresh = !m->used[j];
	if (*fresh) {
		m->used[j] = 1;
		m->keys[j] = id;
		m->vals[j] = 0;
		m->n++;
	}
	return &m->vals[j];
}

/* ---- LRU stack: a Fenwick tree over stamps, 1 at each id's latest -------- */

typedef struct stack {
	idtab_t at;    /* id -> latest stamp */
	uint32_t *fen; /* Fenwick tree, 1-based over stamps 0..cap-1 */
	uint8_t *live; /* live[t]: stamp t is some id's latest */
	size_t cap, t; /* stamps allocated, used */
	tr_reuse_hist_t *h;
} lru_t;

static void stack_free(lru_t *s)
{
	idtab_free(&s->at);
	FREE_ALL(s->fen, s->live);
}

static void fen_add(lru_t *s, size_t t, int d)
{
	for (size_t i = t + 1; i <= s->cap; i += i & -i)
		s->fen[i] = (uint32_t)((int64_t)s->fen[i] + d);
}

/* Live stamps in 0..t. */
static uint64_t fen_prefix(const lru_t *s, size_t t)
{
	uint64_t n = 0;
	for (size_t i = t + 1; i; i -= i & -i)
		n += s->fen[i];
	return n;
}

/* Doubles the stamps and rebuilds the tree from live in O(cap). */
static int stack_grow(lru_t *s)
{
	size_t nc = s->cap ? s->cap * 2 : 1u << 12;
	if (VEC_RESIZE(s->live, nc) || VEC_RESIZE(s->fen, nc + 1))
		return KS_ENOMEM;
	memset(s->live + s->cap, 0, nc - s->cap);
	s->cap = nc;
	memset(s->fen, 0, (nc + 1) * sizeof *s->fen);
	for (size_t i = 1; i <= nc; i++) {
		s->fen[i] += s->live[i - 1];
		size_t j = i + (i & -i);
		if (j <= nc)
			s->fen[j] += s->fen[i];
	}
	return 0;
}

/* Stack distance of id (1 = most recent), 0 when never seen. */
static uint64_t stack_distance(lru_t *s, uint64_t id)
{
	uint64_t *p = idtab_find(&s->at, id);
	return p ? s->at.n - fen_prefix(s, *p) + 1 : 0;
}

static int lru_touch(lru_t *s, uint64_t id)
{
	if (s->t == s->cap && stack_grow(s))
		return KS_ENOMEM;
	int fresh;
	uint64_t *p = idtab_put(&s->at, id, &fresh);
	if (!p)
		return KS_ENOMEM;
	if (!fresh) { /* seen: drop its old stamp */
		s->live[*p] = 0;
		fen_add(s, *p, -1);
	}
	*p = s->t;
	s->live[s->t] = 1;
	fen_add(s, s->t++, 1);
	return 0;
}

static int hist_add(tr_reuse_hist_t *h, uint64_t d)
{
	h->accesses++;
	if (!d) {
		h->cold++;
		return 0;
	}
	if (d >= h->n_count) {
		size_t cap = h->n_count, need = d + 1;
		if (VEC_GROW(h->count, cap, need, 1024))
			return KS_ENOMEM;
		memset(h->count + h->n_count, 0, (cap - h->n_count) * sizeof *h->count);
		h->n_count = cap;
	}
	h->count[d]++;
	return 0;
}

/* a += b */
static int hist_merge(tr_reuse_hist_t *a, const tr_reuse_hist_t *b)
{
	if (b->n_count > a->n_count) {
		if (VEC_RESIZE(a->count, b->n_count))
			return KS_ENOMEM;
		memset(a->count + a->n_count, 0, (b->n_count - a->n_count) * sizeof *a->count);
		a->n_count = b->n_count;
	}
	for (size_t d = 1; d < b->n_count; d++)
		a->count[d] += b->count[d];
	a->cold += b->cold;
	a->accesses += b->accesses;
	a->blocks += b->blocks;
	return 0;
}

/* One request on one stack: prompt distances as the request finds the
 * stack, then every block to the top, deepest first (tr_reuse.h). */
static int stack_request(lru_t *s, const tr_request_t *q, uint64_t thresh)
{
	uint32_t n_all = q->n_blocks + q->n_out_blocks;
	s->h->blocks += q->n_blocks;
	for (uint32_t b = 0; b < q->n_blocks; b++)
		if ((!thresh || (tr_mix(TR_REUSE_SALT, q->blocks[b]) & 0xffffff) < thresh) &&
		    hist_add(s->h, stack_distance(s, q->blocks[b])))
			return KS_ENOMEM;
	for (uint32_t b = n_all; b-- > 0;)
		if ((!thresh || (tr_mix(TR_REUSE_SALT, q->blocks[b]) & 0xffffff) < thresh) &&
		    lru_touch(s, q->blocks[b]))
			return KS_ENOMEM;
	return 0;
}

/* ---- summaries ----------------------------------------------------------- */

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x < y) - (x > y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* hot[i][*] from the request counts of the depth-i prefixes. */
static int hot_shares(tr_reuse_t *u, int i, const idtab_t *m)
{
	uint64_t *c = malloc((m->n ? m->n : 1) * sizeof *c);
	if (!c)
		return KS_ENOMEM;
	size_t k = 0;
	for (size_t j = 0; j < m->cap; j++)
		if (m->used[j])
			c[k++] = m->vals[j];
	qsort(c, k, sizeof *c, cmp_u64_desc);
	for (int j = 0; j < TR_REUSE_DEPTHS; j++) {
		uint64_t sum = 0;
		for (size_t x = 0; x < k && x < u->top_k[j]; x++)
			sum += c[x];
		u->hot[i][j] = u->requests ? (double)sum / (double)u->requests : 0;
	}
	free(c);
	return 0;
}

static void gap_add(tr_reuse_t *u, double g)
{
	int b = 0;
	while (b < TR_REUSE_GAP_BINS - 1 && g >= u->gap_edges_s[b + 1])
		b++;
	u->gap_count[b]++;
}

int tr_reuse_compute(tr_reader_t *r, const tr_reuse_opts_t *o, tr_reuse_t *u, err_t *e)
{
	memset(u, 0, sizeof *u);
	u->o = *o;
	uint32_t ni = o->n_instances ? o->n_instances : 1;
	u->o.n_instances = ni;
	/* SHARDS' fixed-rate threshold T over P = 2^24 (tr_reuse.h) */
	uint64_t thresh = o->sample_rate >= 1 ? 0 : (uint64_t)llround(o->sample_rate * 16777216.0);
	if (o->sample_rate < 1 && !thresh)
		thresh = 1;
	static const uint32_t k3[TR_REUSE_DEPTHS] = {1, 10, 100};
	memcpy(u->depth, k3, sizeof k3);
	memcpy(u->top_k, k3, sizeof k3);
	for (int i = 0; i <= TR_REUSE_GAP_BINS; i++)
		u->gap_edges_s[i] = pow(10.0, -3.0 + i / 5.0);
	lru_t cl = {.h = &u->cluster}, *si = calloc(ni, sizeof *si);
	u->inst = calloc(ni, sizeof *u->inst);
	idtab_t seen = {0}, hot[TR_REUSE_DEPTHS] = {{0}};
	double *gaps = NULL;
	size_t gcap = 0;
	int rc = 0;
	if (!si || !u->inst)
		goto nomem;
	for (uint32_t i = 0; i < ni; i++)
		si[i].h = &u->inst[i];
	tr_request_t q;
	while ((rc = tr_next(r, &q, e)) > 0) {
		u->block_tokens = q.block_tokens;
		u->prompt_blocks += q.n_blocks;
		if (stack_request(&cl, &q, thresh) ||
		    stack_request(&si[u->requests % ni], &q, thresh))
			goto nomem;
		u->requests++;
		for (int i = 0; i < TR_REUSE_DEPTHS; i++) {
			uint64_t *c;
			int fresh;
			if (q.n_blocks < u->depth[i])
				continue;
			if (!(c = idtab_put(&hot[i], q.blocks[u->depth[i] - 1], &fresh)))
				goto nomem;
			++*c;
		}
		/* the deepest prompt block seen before: ids chain, so the seen
		 * ones are a prefix of the prompt */
		uint32_t deep = 0;
		while (deep < q.n_blocks && idtab_find(&seen, q.blocks[deep]))
			deep++;
		if (deep) {
			double g = (double)(q.arrival_ns -
			                    (int64_t)*idtab_find(&seen, q.blocks[deep - 1])) /
			           1e9;
			if (VEC_GROW(gaps, gcap, u->gaps + 1, 1024))
				goto nomem;
			gaps[u->gaps++] = g;
			gap_add(u, g);
		}
		for (uint32_t b = 0; b < q.n_blocks + q.n_out_blocks; b++) {
			int fresh;
			uint64_t *t = idtab_put(&seen, q.blocks[b], &fresh);
			if (!t)
				goto nomem;
			*t = (uint64_t)q.arrival_ns;
		}
	}
	if (rc < 0)
		goto done;
	rc = 0;
	for (int i = 0; i < TR_REUSE_DEPTHS; i++)
		if (hot_shares(u, i, &hot[i]))
			goto nomem;
	if (u->gaps) {
		qsort(gaps, u->gaps, sizeof *gaps, cmp_double);
		u->gap_median_s = gaps[(u->gaps + 1) / 2 - 1]; /* nearest rank */
	}
	for (uint32_t i = 0; i < ni; i++)
		if (hist_merge(&u->inst_all, &u->inst[i]))
			goto nomem;
	goto done;
nomem:
	rc = err_set(e, KS_ENOMEM, "out of memory (reuse analysis)");
done:
	stack_free(&cl);
	for (uint32_t i = 0; si && i < ni; i++)
		stack_free(&si[i]);
	free(si);
	idtab_free(&seen);
	for (int i = 0; i < TR_REUSE_DEPTHS; i++)
		idtab_free(&hot[i]);
	free(gaps);
	if (rc)
		tr_reuse_free(u);
	return rc;
}

void tr_reuse_free(tr_reuse_t *u)
{
	free(u->cluster.count);
	free(u->inst_all.count);
	for (uint32_t i = 0; u->inst && i < u->o.n_instances; i++)
		free(u->inst[i].count);
	free(u->inst);
	memset(u, 0, sizeof *u);
}

/* ---- curves -------------------------------------------------------------- */

/* The hit rate at each of n ascending capacities, in one pass. Sampled:
 * SHARDS-adj (Waldspurger et al. 2015, section 4.2): rates are over the
 * expected sample, blocks * rate, and the difference between it and the
 * sample drawn counts as hits at the smallest distance, which removes the
 * bias a few hot blocks drawn in or left out put on every point. */
static void curve(const tr_reuse_hist_t *h, double rate, const uint64_t *caps, size_t n,
                  double *out)
{
	double acc = 0, adj = 0, total = (double)h->accesses;
	if (rate < 1 && h->blocks) {
		total = (double)h->blocks * rate;
		adj = total - (double)h->accesses;
	}
	size_t d = 1;
	for (size_t i = 0; i < n; i++) {
		double hits;
		if (caps[i] == UINT64_MAX) {
			hits = (double)(h->accesses - h->cold) + adj;
		} else {
			/* sampled distance d stands for d / rate blocks */
			uint64_t lim =
			    rate >= 1 ? caps[i] : (uint64_t)floor((double)caps[i] * rate + 1e-9);
			for (; d < h->n_count && d <= lim; d++)
				acc += (double)h->count[d];
			hits = acc + (caps[i] ? adj : 0);
		}
		hits = hits < 0 ? 0 : hits > total ? total : hits;
		out[i] = total > 0 ? hits / total : 0;
	}
}

double tr_reuse_hit_rate(const tr_reuse_hist_t *h, double rate, uint64_t cap)
{
	double v;
	curve(h, rate, &cap, 1, &v);
	return v;
}

uint64_t tr_reuse_max_distance(const tr_reuse_hist_t *h, double rate)
{
	size_t d = h->n_count;
	while (d > 1 && !h->count[d - 1])
		d--;
	if (d <= 1)
		return 0;
	return rate >= 1 ? (uint64_t)(d - 1) : (uint64_t)ceil((double)(d - 1) / rate);
}

int tr_reuse_grid(const tr_reuse_t *u, uint64_t **caps, size_t *n, err_t *e)
{
	uint64_t top = tr_reuse_max_distance(&u->cluster, u->o.sample_rate);
	size_t cap = 0;
	*caps = NULL;
	*n = 0;
	for (int j = 0;; j++) {
		uint64_t c = (uint64_t)llround(pow(2.0, j / 8.0));
		if (c > top && *n)
			c = top;
		if (*n && c <= (*caps)[*n - 1]) {
			if (c == top)
				break;
			continue;
		}
		if (VEC_GROW(*caps, cap, *n + 1, 64)) {
			free(*caps);
			*caps = NULL;
			return err_set(e, KS_ENOMEM, "out of memory");
		}
		(*caps)[(*n)++] = c;
		if (c >= top)
			break;
	}
	return 0;
}

/* ---- output -------------------------------------------------------------- */

void tr_reuse_print(const tr_reuse_t *u, const char *source, FILE *f)
{
	double R = u->o.sample_rate;
	fprintf(f, "%s: %llu requests, %llu prompt blocks of %u tokens, %u instances (round-robin)",
	        source, (unsigned long long)u->requests, (unsigned long long)u->prompt_blocks,
	        u->block_tokens, u->o.n_instances);
	if (R < 1)
		fprintf(f, ", SHARDS rate %g (%llu sampled accesses)", R,
		        (unsigned long long)u->cluster.accesses);
	fprintf(f, "\n\nLRU hit rate vs cache capacity (blocks per cache)\n");
	fprintf(f, "%14s %12s %14s\n", "capacity", "cluster", "per_instance");
	uint64_t *caps = NULL;
	size_t n = 0;
	err_t e = {0};
	if (!tr_reuse_grid(u, &caps, &n, &e)) {
		for (size_t i = 0; i < n; i++) {
			uint64_t c = caps[i];
			if ((c & (c - 1)) && i + 1 < n)
				continue; /* powers of two and the largest distance */
			fprintf(f, "%14llu %12.6f %14.6f\n", (unsigned long long)c,
			        tr_reuse_hit_rate(&u->cluster, R, c),
			        tr_reuse_hit_rate(&u->inst_all, R, c));
		}
	}
	free(caps);
	fprintf(f, "%14s %12.6f %14.6f\n", "unbounded",
	        tr_reuse_hit_rate(&u->cluster, R, UINT64_MAX),
	        tr_reuse_hit_rate(&u->inst_all, R, UINT64_MAX));
	fprintf(f,
	        "\nhot prefixes: share of requests whose first-L-block prefix is in the top k\n");
	fprintf(f, "%14s", "L \\ k");
	for (int j = 0; j < TR_REUSE_DEPTHS; j++)
		fprintf(f, " %10u", u->top_k[j]);
	fprintf(f, "\n");
	for (int i = 0; i < TR_REUSE_DEPTHS; i++) {
		fprintf(f, "%14u", u->depth[i]);
		for (int j = 0; j < TR_REUSE_DEPTHS; j++)
			fprintf(f, " %10.4f", u->hot[i][j]);
		fprintf(f, "\n");
	}
	fprintf(f,
	        "\nthink time after the previous request with the longest shared prefix:\n"
	        "%llu of %llu requests, median %.3f s\n",
	        (unsigned long long)u->gaps, (unsigned long long)u->requests, u->gap_median_s);
	fprintf(f, "%12s %12s %10s\n", "from_s", "to_s", "requests");
	for (int b = 0; b < TR_REUSE_GAP_BINS; b++)
		if (u->gap_count[b])
			fprintf(f, "%12.3g %12.3g %10llu\n", b ? u->gap_edges_s[b] : 0.0,
			        b + 1 < TR_REUSE_GAP_BINS ? u->gap_edges_s[b + 1] : INFINITY,
			        (unsigned long long)u->gap_count[b]);
}

/* A dataset of rank 1 or 2 with its unit; <0 on failure. */
static herr_t h5_put(hid_t f, const char *name, int rank, hsize_t d0, hsize_t d1, hid_t ty,
                     const void *buf, const char *unit)
{
	hsize_t dims[2] = {d0, d1};
	if (H5LTmake_dataset(f, name, rank, dims, ty, buf) < 0)
		return -1;
	return H5LTset_attribute_string(f, name, "unit", unit);
}

/* The root's attributes: source, assignment, sizes, instances, sample rate. */
static herr_t h5_root(hid_t f, const tr_reuse_t *u, const char *source)
{
	double R = u->o.sample_rate;
	uint32_t ni = u->o.n_instances;
	long long meta[3] = {(long long)u->requests, (long long)u->prompt_blocks, u->block_tokens};
	herr_t s = H5LTset_attribute_string(f, "/", "source", source);
	if (s >= 0)
		s = H5LTset_attribute_string(f, "/", "instance_assignment", "round-robin");
	if (s >= 0)
		s = H5LTset_attribute_long_long(f, "/", "requests", &meta[0], 1);
	if (s >= 0)
		s = H5LTset_attribute_long_long(f, "/", "prompt_blocks", &meta[1], 1);
	if (s >= 0)
		s = H5LTset_attribute_long_long(f, "/", "block_tokens", &meta[2], 1);
	if (s >= 0)
		s = H5LTset_attribute_uint(f, "/", "instances", &ni, 1);
	if (s >= 0)
		s = H5LTset_attribute_double(f, "/", "sample_rate", &R, 1);
	return s;
}

/* Group /reuse_distance: the nd (distance, count) pairs and the totals. */
static herr_t h5_reuse_distance(hid_t f, const tr_reuse_t *u, const uint64_t *dist,
                                const uint64_t *cnt, size_t nd)
{
	double R = u->o.sample_rate;
	long long cold = (long long)u->cluster.cold, acc = (long long)u->cluster.accesses;
	herr_t s = h5_put(f, "/reuse_distance/distance", 1, nd ? nd : 0, 0, H5T_NATIVE_UINT64,
	                  dist, "blocks");
	if (s >= 0)
		s = h5_put(f, "/reuse_distance/count", 1, nd, 0, H5T_NATIVE_UINT64, cnt,
		           R < 1 ? "sampled prompt-block accesses" : "prompt-block accesses");
	if (s >= 0)
		s = H5LTset_attribute_long_long(f, "/reuse_distance", "cold_misses", &cold, 1);
	if (s >= 0)
		s = H5LTset_attribute_long_long(f, "/reuse_distance", "accesses", &acc, 1);
	return s;
}

/* Group /mrc: the n capacities and the hit rates at each (cluster, all
 * instances, each instance), and the unbounded ones. */
static herr_t h5_mrc(hid_t f, const tr_reuse_t *u, const uint64_t *caps, size_t n,
                     const double *cl, const double *ia, const double *each)
{
	double R = u->o.sample_rate;
	uint32_t ni = u->o.n_instances;
	double unb[2] = {tr_reuse_hit_rate(&u->cluster, R, UINT64_MAX),
	                 tr_reuse_hit_rate(&u->inst_all, R, UINT64_MAX)};
	herr_t s = h5_put(f, "/mrc/capacity", 1, n, 0, H5T_NATIVE_UINT64, caps, "blocks");
	if (s >= 0)
		s = h5_put(f, "/mrc/cluster_hit_rate", 1, n, 0, H5T_NATIVE_DOUBLE, cl, "1");
	if (s >= 0)
		s = h5_put(f, "/mrc/instance_hit_rate", 1, n, 0, H5T_NATIVE_DOUBLE, ia, "1");
	if (s >= 0)
		s = h5_put(f, "/mrc/instance_hit_rate_each", 2, ni, n, H5T_NATIVE_DOUBLE, each,
		           "1");
	if (s >= 0)
		s = H5LTset_attribute_double(f, "/mrc", "cluster_hit_rate_unbounded", &unb[0], 1);
	if (s >= 0)
		s = H5LTset_attribute_double(f, "/mrc", "instance_hit_rate_unbounded", &unb[1], 1);
	return s;
}

/* Groups /hot_prefix (depths, k and shares) and /session (think times). */
static herr_t h5_hot_session(hid_t f, const tr_reuse_t *u)
{
	uint64_t hot_d[TR_REUSE_DEPTHS], hot_k[TR_REUSE_DEPTHS];
	for (int i = 0; i < TR_REUSE_DEPTHS; i++)
		hot_d[i] = u->depth[i], hot_k[i] = u->top_k[i];
	long long gaps = (long long)u->gaps;
	herr_t s = h5_put(f, "/hot_prefix/depth", 1, TR_REUSE_DEPTHS, 0, H5T_NATIVE_UINT64, hot_d,
	                  "blocks");
	if (s >= 0)
		s = h5_put(f, "/hot_prefix/top_k", 1, TR_REUSE_DEPTHS, 0, H5T_NATIVE_UINT64, hot_k,
		           "prefixes");
	if (s >= 0)
		s = h5_put(f, "/hot_prefix/share", 2, TR_REUSE_DEPTHS, TR_REUSE_DEPTHS,
		           H5T_NATIVE_DOUBLE, u->hot, "1");
	if (s >= 0)
		s = h5_put(f, "/session/gap_edges", 1, TR_REUSE_GAP_BINS + 1, 0, H5T_NATIVE_DOUBLE,
		           u->gap_edges_s, "s");
	if (s >= 0)
		s = h5_put(f, "/session/gap_count", 1, TR_REUSE_GAP_BINS, 0, H5T_NATIVE_UINT64,
		           u->gap_count, "requests");
	if (s >= 0)
		s = H5LTset_attribute_long_long(f, "/session", "gaps", &gaps, 1);
	if (s >= 0)
		s = H5LTset_attribute_double(f, "/session", "median_gap_s", &u->gap_median_s, 1);
	return s;
}

int tr_reuse_write_h5(const tr_reuse_t *u, const char *source, const char *path, err_t *e)
{
	double R = u->o.sample_rate;
	uint64_t *caps = NULL, *dist = NULL, *cnt = NULL;
	double *cl = NULL, *ia = NULL, *each = NULL;
	size_t n = 0, nd = 0;
	int rc = tr_reuse_grid(u, &caps, &n, e);
	if (rc)
		return rc;
	uint32_t ni = u->o.n_instances;
	const tr_reuse_hist_t *h = &u->cluster;
	cl = malloc(n * sizeof *cl);
	ia = malloc(n * sizeof *ia);
	each = malloc((size_t)ni * n * sizeof *each);
	dist = malloc((h->n_count + 1) * sizeof *dist);
	cnt = malloc((h->n_count + 1) * sizeof *cnt);
	if (!cl || !ia || !each || !dist || !cnt) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	curve(h, R, caps, n, cl);
	curve(&u->inst_all, R, caps, n, ia);
	for (uint32_t i = 0; i < ni; i++)
		curve(&u->inst[i], R, caps, n, each + (size_t)i * n);
	for (size_t d = 1; d < h->n_count; d++)
		if (h->count[d]) {
			dist[nd] = R >= 1 ? d : (uint64_t)llround((double)d / R);
			cnt[nd++] = h->count[d];
		}
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (f < 0) {
		rc = err_set(e, KS_EIO, "%s: cannot create HDF5 file", path);
		goto out;
	}
	const char *groups[] = {"/reuse_distance", "/mrc", "/hot_prefix", "/session"};
	herr_t s = 0;
	for (size_t g = 0; g < sizeof groups / sizeof *groups && s >= 0; g++) {
		hid_t id = H5Gcreate2(f, groups[g], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		s = id < 0 ? -1 : H5Gclose(id);
	}
	if (s >= 0)
		s = h5_root(f, u, source);
	if (s >= 0)
		s = h5_reuse_distance(f, u, dist, cnt, nd);
	if (s >= 0)
		s = h5_mrc(f, u, caps, n, cl, ia, each);
	if (s >= 0)
		s = h5_hot_session(f, u);
	if (H5Fclose(f) < 0 || s < 0)
		rc = err_set(e, KS_EIO, "%s: cannot write HDF5 file", path);
out:
	FREE_ALL(caps, dist, cnt, cl, ia, each);
	return rc;
}
