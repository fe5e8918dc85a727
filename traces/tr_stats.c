/* tr_stats — one streaming pass over a reader: rate, burstiness, lengths and
 * prefix reuse.
 *
 * Lengths go into a histogram exact below 65536 tokens and with 1/1024
 * relative resolution above (log buckets), so quantiles need constant
 * memory; p50/p99 are nearest-rank. Window counts are kept per window as the
 * stream passes, empty windows included. Prefix reuse counts a block as
 * reused when its id was seen in any earlier request (an infinite cache);
 * it needs a hash table of every distinct id, the one part that grows. */
#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "traces/tr_int.h"

#define EXACT 65536u
#define SUB 1024u
#define NBUCKET (EXACT + 16u * SUB)

typedef struct hist {
	uint64_t *c;
	uint64_t n;
	double sum;
	uint32_t max;
} hist_t;

static uint32_t bucket(uint32_t v)
{
	if (v < EXACT)
		return v;
	int lg = 31 - __builtin_clz(v); /* >= 16 */
	uint32_t mant = (uint32_t)(((uint64_t)v << 10 >> lg) & (SUB - 1));
	return EXACT + (uint32_t)(lg - 16) * SUB + mant;
}

static uint32_t bucket_low(uint32_t b)
{
	if (b < EXACT)
		return b;
	uint32_t lg = 16 + (b - EXACT) / SUB, mant = (b - EXACT) % SUB;
	return (uint32_t)(((uint64_t)SUB + mant) << lg >> 10);
}

static void hist_add(hist_t *h, uint32_t v)
{
	h->c[bucket(v)]++;
	h->n++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

static uint32_t hist_q(const hist_t *h, double p)
{
	if (!h->n)
		return 0;
	uint64_t rank = (uint64_t)ceil(p * (double)h->n);
	if (rank < 1)
		rank = 1;
	uint64_t acc = 0;
	for (uint32_t b = 0; b < NBUCKET; b++) {
		acc += h->c[b];
		if (acc >= rank)
			return bucket_low(b);
	}
	return h->max;
}

typedef struct win {
	double w;
	int64_t idx;
	uint64_t count, peak, nwin;
	double sum, sumsq;
} win_t;

static void win_close(win_t *w)
{
	double c = (double)w->count;
	if (w->count > w->peak)
		w->peak = w->count;
	w->sum += c;
	w->sumsq += c * c;
	w->nwin++;
}

static void win_add(win_t *w, double t)
{
	int64_t i = (int64_t)floor(t / w->w);
	if (i != w->idx) {
		win_close(w);
		w->nwin += (uint64_t)(i - w->idx - 1); /* empty windows: zero counts */
		w->idx = i;
		w->count = 0;
	}
	w->count++;
}

/* Open-addressing table: id -> hits. */
typedef struct idmap {
	uint64_t *keys;
	uint32_t *hits;
	uint8_t *used;
	size_t cap, n;
} idmap_t;

static int map_grow(idmap_t *m)
{
	size_t nc = m->cap ? m->cap * 2 : 1u << 16;
	idmap_t g = {calloc(nc, sizeof *g.keys), calloc(nc, sizeof *g.hits), calloc(nc, 1), nc, 0};
	if (!g.keys || !g.hits || !g.used) {
		free(g.keys);
		free(g.hits);
		free(g.used);
		return KS_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = tr_mix(0, m->keys[i]) & (nc - 1);
		while (g.used[j])
			j = (j + 1) & (nc - 1);
		g.used[j] = 1;
		g.keys[j] = m->keys[i];
		g.hits[j] = m->hits[i];
		g.n++;
	}
	free(m->keys);
	free(m->hits);
	free(m->used);
	*m = g;
	return 0;
}

/* 1 when id was already present (its hit count incremented), 0 when new. */
static int map_touch(idmap_t *m, uint64_t id, int *err)
{
	if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m)) {
		*err = KS_ENOMEM;
		return 0;
	}
	size_t j = tr_mix(0, id) & (m->cap - 1);
	while (m->used[j]) {
		if (m->keys[j] == id) {
			m->hits[j]++;
			return 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->used[j] = 1;
	m->keys[j] = id;
	m->hits[j] = 0;
	m->n++;
	return 0;
}

static int half_reuse(idmap_t *m, uint64_t total, uint64_t *out)
{
	*out = 0;
	if (!total)
		return 0;
	size_t k = 0;
	double *h = malloc((m->n ? m->n : 1) * sizeof *h);
	if (!h)
		return KS_ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i] && m->hits[i])
			h[k++] = m->hits[i];
	gsl_sort(h, 1, k);
	double acc = 0;
	for (size_t i = k; i-- > 0;) {
		acc += h[i];
		(*out)++;
		if (acc * 2 >= (double)total)
			break;
	}
	free(h);
	return 0;
}

int tr_stats_compute(tr_reader_t *r, int reuse, tr_stats_t *s, err_t *e)
{
	memset(s, 0, sizeof *s);
	hist_t hin = {calloc(NBUCKET, sizeof(uint64_t)), 0, 0, 0};
	hist_t hout = {calloc(NBUCKET, sizeof(uint64_t)), 0, 0, 0};
	idmap_t m = {0};
	int rc = 0;
	if (!hin.c || !hout.c) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto done;
	}
	win_t w[3] = {{.w = 1}, {.w = 10}, {.w = 60}};
	double t0 = 0, tprev = 0, gm = 0, gm2 = 0; /* Welford over gaps */
	uint64_t ngap = 0;
	tr_request_t q;
	while ((rc = tr_next(r, &q, e)) > 0) {
		double t = q.arrival_ns / 1e9;
		if (s->rows == 0) {
			t0 = t;
		} else {
			double g = t - tprev, d = g - gm;
			ngap++;
			gm += d / (double)ngap;
			gm2 += d * (g - gm);
		}
		tprev = t;
		for (int i = 0; i < 3; i++)
			win_add(&w[i], t - t0);
		s->rows++;
		s->failed += q.status != 0;
		hist_add(&hin, q.input_len);
		hist_add(&hout, q.output_len);
		s->tokens += q.input_len;
		s->block_tokens = q.block_tokens;
		if (!reuse)
			continue;
		s->blocks += q.n_blocks;
		for (uint32_t b = 0; b < q.n_blocks; b++) {
			int err = 0;
			if (map_touch(&m, q.blocks[b], &err))
				s->reused_blocks++;
			if (err) {
				rc = err_set(e, KS_ENOMEM, "out of memory (block id table)");
				goto done;
			}
		}
	}
	if (rc < 0)
		goto done;
	for (int i = 0; i < 3; i++)
		if (s->rows)
			win_close(&w[i]);
	s->duration_s = tprev - t0;
	s->mean_rate = s->duration_s > 0 ? (double)s->rows / s->duration_s : 0;
	s->iat_cv = ngap > 1 && gm > 0 ? sqrt(gm2 / (double)(ngap - 1)) / gm : 0;
	for (int i = 0; i < 3; i++) {
		double mean = w[i].nwin ? w[i].sum / (double)w[i].nwin : 0;
		s->peak_to_mean[i] = mean > 0 ? (double)w[i].peak / mean : 0;
		if (i == 2 && mean > 0) {
			double var = w[i].sumsq / (double)w[i].nwin - mean * mean;
			s->vmr_60s = (var > 0 ? var : 0) / mean;
		}
	}
	s->in = (tr_len_stats_t){hin.n ? hin.sum / (double)hin.n : 0, hist_q(&hin, 0.5),
	                         hist_q(&hin, 0.99), hin.max};
	s->out = (tr_len_stats_t){hout.n ? hout.sum / (double)hout.n : 0, hist_q(&hout, 0.5),
	                          hist_q(&hout, 0.99), hout.max};
	s->reused_tokens = s->reused_blocks * s->block_tokens;
	s->reuse_block = s->blocks ? (double)s->reused_blocks / (double)s->blocks : 0;
	s->reuse_token = s->tokens ? (double)s->reused_tokens / (double)s->tokens : 0;
	s->distinct_blocks = m.n;
	s->reuse_counted = reuse != 0;
	if (reuse && half_reuse(&m, s->reused_blocks, &s->prefixes_half_reuse))
		rc = err_set(e, KS_ENOMEM, "out of memory");
done:
	FREE_ALL(hin.c, hout.c, m.keys, m.hits, m.used);
	return rc < 0 ? rc : 0;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void tr_stats_print(const tr_stats_t *s, const char *source, int json, FILE *f)
{
	if (json) {
		fprintf(f, "{\"source\": ");
		json_str(f, source);
		fprintf(f,
		        ", \"rows\": %llu, \"failed\": %llu, \"duration_s\": %.6f, "
		        "\"mean_rate\": %.6f, \"iat_cv\": %.6f, \"peak_to_mean_1s\": %.6f, "
		        "\"peak_to_mean_10s\": %.6f, \"peak_to_mean_60s\": %.6f, "
		        "\"vmr_60s\": %.6f, ",
		        (unsigned long long)s->rows, (unsigned long long)s->failed, s->duration_s,
		        s->mean_rate, s->iat_cv, s->peak_to_mean[0], s->peak_to_mean[1],
		        s->peak_to_mean[2], s->vmr_60s);
		fprintf(f,
		        "\"input\": {\"mean\": %.3f, \"p50\": %u, \"p99\": %u, \"max\": %u}, "
		        "\"output\": {\"mean\": %.3f, \"p50\": %u, \"p99\": %u, \"max\": %u}, ",
		        s->in.mean, s->in.p50, s->in.p99, s->in.max, s->out.mean, s->out.p50,
		        s->out.p99, s->out.max);
		fprintf(f,
		        "\"block_tokens\": %u, \"blocks\": %llu, \"reused_blocks\": %llu, "
		        "\"tokens\": %llu, \"reused_tokens\": %llu, \"reuse_block\": %.6f, "
		        "\"reuse_token\": %.6f, \"distinct_blocks\": %llu, "
		        "\"prefixes_half_reuse\": %llu, \"reuse_counted\": %s}\n",
		        s->block_tokens, (unsigned long long)s->blocks,
		        (unsigned long long)s->reused_blocks, (unsigned long long)s->tokens,
		        (unsigned long long)s->reused_tokens, s->reuse_block, s->reuse_token,
		        (unsigned long long)s->distinct_blocks,
		        (unsigned long long)s->prefixes_half_reuse,
		        s->reuse_counted ? "true" : "false");
		return;
	}
	fprintf(f, "source            %s\n", source);
	fprintf(f, "rows              %llu (%llu failed in the source)\n",
	        (unsigned long long)s->rows, (unsigned long long)s->failed);
	fprintf(f, "duration          %.3f s\n", s->duration_s);
	fprintf(f, "mean rate         %.4f req/s\n", s->mean_rate);
	fprintf(f, "inter-arrival CV  %.4f\n", s->iat_cv);
	fprintf(f, "peak/mean counts  1 s %.2f   10 s %.2f   60 s %.2f\n", s->peak_to_mean[0],
	        s->peak_to_mean[1], s->peak_to_mean[2]);
	fprintf(f, "var/mean 60 s     %.3f\n", s->vmr_60s);
	fprintf(f, "input tokens      mean %.1f  p50 %u  p99 %u  max %u\n", s->in.mean, s->in.p50,
	        s->in.p99, s->in.max);
	fprintf(f, "output tokens     mean %.1f  p50 %u  p99 %u  max %u\n", s->out.mean, s->out.p50,
	        s->out.p99, s->out.max);
	if (!s->reuse_counted) {
		fprintf(f, "prefix reuse      not counted (--no-reuse)\n");
		return;
	}
	fprintf(f,
	        "prefix reuse      %.4f of %llu blocks (%u tokens each), %.4f of %llu input "
	        "tokens\n",
	        s->reuse_block, (unsigned long long)s->blocks, s->block_tokens, s->reuse_token,
	        (unsigned long long)s->tokens);
	fprintf(f, "distinct blocks   %llu; %llu of them carry half the reuse\n",
	        (unsigned long long)s->distinct_blocks, (unsigned long long)s->prefixes_half_reuse);
}
