/* bound — see bound.h. */
#include "sim/run/bound.h"

#include <math.h>
#include <stdlib.h>

#include "sim/base/err.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

/* One request as an instance received it: its ids are blocks[off ..
 * off + n_lookup + n_insert) of the stream. */
typedef struct bound_req {
	uint64_t id;
	int64_t t_ns;
	size_t off;
	uint32_t inst, n_lookup, n_insert;
} bound_req_t;

struct bound_stream {
	uint32_t n_inst;
	bound_req_t *req;
	size_t n_req, cap_req;
	uint64_t *ids;
	size_t n_ids, cap_ids;
};

typedef struct pair {
	uint64_t id;
	size_t at;
} pair_t;

static int pair_cmp(const void *a, const void *b)
{
	const pair_t *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* A cached block's heap entry: live while cur[blk] == at. */
typedef struct hent {
	size_t next, at;
	uint32_t blk;
} hent_t;

/* max-heap on (next, at): the farthest next use on top, ties by the later
 * access so the order is total (and the result deterministic) */
static int hent_above(const hent_t *a, const hent_t *b)
{
	return a->next != b->next ? a->next > b->next : a->at > b->at;
}

static void heap_push(hent_t *h, size_t *n, hent_t e)
{
	size_t i = (*n)++;
	while (i && hent_above(&e, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static void heap_pop(hent_t *h, size_t *n)
{
	hent_t e = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && hent_above(&h[c + 1], &h[c]))
			c++;
		if (!hent_above(&h[c], &e))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = e;
}

int bound_belady(const uint64_t *ids, const uint8_t *counted, size_t n, uint64_t capacity,
                 uint64_t *hits)
{
	*hits = 0;
	if (!n || !capacity)
		return 0;
	pair_t *pr = malloc(n * sizeof *pr);
	size_t *next = malloc(n * sizeof *next);
	uint32_t *blk = malloc(n * sizeof *blk);
	hent_t *heap = malloc(n * sizeof *heap);
	size_t *cur = NULL;
	int rc = KS_ENOMEM;
	if (!pr || !next || !blk || !heap)
		goto out;
	for (size_t i = 0; i < n; i++)
		pr[i] = (pair_t){ids[i], i};
	qsort(pr, n, sizeof *pr, pair_cmp);
	/* dense block numbers, and when each access's block is next needed:
	 * its next access when that is a lookup, else never (n): when it is an
	 * insert the block comes back free then, so holding it till then gains
	 * nothing (keying by the next lookup alone is not optimal here) */
	uint32_t n_blk = 0;
	for (size_t k = 0; k < n;) {
		size_t e = k;
		while (e < n && pr[e].id == pr[k].id)
			e++;
		for (size_t j = k; j < e; j++) {
			size_t nx = j + 1 < e ? pr[j + 1].at : n;
			next[pr[j].at] = nx < n && counted[nx] ? nx : n;
			blk[pr[j].at] = n_blk;
		}
		n_blk++;
		k = e;
	}
	if (!(cur = malloc(n_blk * sizeof *cur)))
		goto out;
	for (uint32_t d = 0; d < n_blk; d++)
		cur[d] = SIZE_MAX;
	size_t hn = 0;
	uint64_t used = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t d = blk[i];
		if (cur[d] != SIZE_MAX) {
			*hits += counted[i];
			cur[d] = i; /* the old entry goes stale */
			heap_push(heap, &hn, (hent_t){next[i], i, d});
			continue;
		}
		/* demand paging, as a run's store does: the block is resident
		 * after its access, in place of the farthest-needed one */
		if (used == capacity) {
			while (cur[heap[0].blk] != heap[0].at)
				heap_pop(heap, &hn);
			cur[heap[0].blk] = SIZE_MAX;
			heap_pop(heap, &hn);
			used--;
		}
		cur[d] = i;
		used++;
		/* stale entries are at most one per access: the heap never
		 * holds more than n */
		heap_push(heap, &hn, (hent_t){next[i], i, d});
	}
	rc = 0;
out:
	FREE_ALL(pr, next, blk, heap, cur);
	return rc;
}

bound_stream_t *bound_new(uint32_t n_inst)
{
	bound_stream_t *b = calloc(1, sizeof *b);
	if (b)
		b->n_inst = n_inst;
	return b;
}

void bound_free(bound_stream_t *b)
{
	if (b)
		FREE_ALL(b->req, b->ids, b);
}

int bound_record(bound_stream_t *b, uint32_t inst, uint64_t req_id, int64_t t_ns,
                 const uint64_t *ids, uint32_t n_lookup, uint32_t n_insert)
{
	if (inst >= b->n_inst)
		return KS_EINPUT;
	size_t k = (size_t)n_lookup + n_insert;
	if (VEC_GROW(b->req, b->cap_req, b->n_req + 1, 1024) ||
	    VEC_GROW(b->ids, b->cap_ids, b->n_ids + k, 4096))
		return KS_ENOMEM;
	b->req[b->n_req++] = (bound_req_t){req_id, t_ns, b->n_ids, inst, n_lookup, n_insert};
	if (k)
		memcpy(b->ids + b->n_ids, ids, k * sizeof *ids);
	b->n_ids += k;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* adm[r]: request r's id is among ids[0 .. n) (sorted here). */
static void admitted_mark(const bound_stream_t *b, uint64_t *ids, size_t n, uint8_t *adm)
{
	if (n) /* qsort's array may not be NULL */
		qsort(ids, n, sizeof *ids, u64_cmp);
	for (size_t r = 0; r < b->n_req; r++)
		adm[r] = n && bsearch(&b->req[r].id, ids, n, sizeof *ids, u64_cmp) != NULL;
}

int bound_admitted_ids(void *ctx, const void *rows, size_t n)
{
	bound_ids_t *a = ctx;
	for (const res_request_t *r = rows, *end = r + n; r < end; r++)
		if (r->queue_ns >= 0) {
			if (VEC_GROW(a->id, a->cap, a->n + 1, 1024))
				return KS_ENOMEM;
			a->id[a->n++] = r->id;
		}
	return 0;
}

/* first[i]: the lookups at instance i that are the cluster's first access
 * to their block (no admitted request received earlier looked it up or
 * inserted it anywhere): a miss under any placement. */
static int first_touches(const bound_stream_t *b, const uint8_t *adm, uint64_t *first)
{
	pair_t *pr = malloc((b->n_ids ? b->n_ids : 1) * sizeof *pr);
	uint32_t *inst = malloc((b->n_ids ? b->n_ids : 1) * sizeof *inst);
	uint8_t *look = malloc(b->n_ids ? b->n_ids : 1);
	if (!pr || !inst || !look) {
		FREE_ALL(pr, inst, look);
		return KS_ENOMEM;
	}
	size_t n = 0;
	for (size_t r = 0; r < b->n_req; r++) {
		const bound_req_t *q = &b->req[r];
		for (uint32_t j = 0; adm[r] && j < q->n_lookup + q->n_insert; j++) {
			pr[n] = (pair_t){b->ids[q->off + j], n};
			inst[n] = q->inst;
			look[n++] = j < q->n_lookup;
		}
	}
	qsort(pr, n, sizeof *pr, pair_cmp);
	for (size_t k = 0; k < n; k++)
		if ((k == 0 || pr[k].id != pr[k - 1].id) && look[pr[k].at])
			first[inst[pr[k].at]]++;
	FREE_ALL(pr, inst, look);
	return 0;
}

int bound_compute(const bound_stream_t *b, const res_request_t *rows, size_t n_rows,
                  const uint32_t *cap, double copy_blocks, bound_out_t *o)
{
	bound_ids_t a = {0};
	int rc = bound_admitted_ids(&a, rows, n_rows);
	if (!rc)
		rc = bound_compute_ids(b, &a, cap, copy_blocks, o);
	free(a.id);
	return rc;
}

int bound_compute_ids(const bound_stream_t *b, bound_ids_t *adm_ids, const uint32_t *cap,
                      double copy_blocks, bound_out_t *o)
{
	*o = (bound_out_t){0};
	uint8_t *adm = malloc(b->n_req ? b->n_req : 1);
	uint64_t *ids = malloc((b->n_ids ? b->n_ids : 1) * sizeof *ids);
	uint8_t *counted = malloc(b->n_ids ? b->n_ids : 1);
	size_t *first = calloc((size_t)b->n_inst + 1, sizeof *first);
	size_t *order = malloc((b->n_req ? b->n_req : 1) * sizeof *order);
	uint64_t *touch = calloc((size_t)b->n_inst + 1, sizeof *touch);
	int rc = KS_ENOMEM;
	if (!adm || !ids || !counted || !first || !order || !touch)
		goto out;
	admitted_mark(b, adm_ids->id, adm_ids->n, adm);
	if ((rc = first_touches(b, adm, touch)))
		goto out;
	/* the requests by instance, each in the order it received them
	 * (a stable counting sort) */
	for (size_t r = 0; r < b->n_req; r++)
		first[b->req[r].inst + 1]++;
	for (uint32_t i = 0; i < b->n_inst; i++)
		first[i + 1] += first[i];
	for (size_t r = 0, *at = NULL; r < b->n_req; r++) {
		at = &first[b->req[r].inst];
		order[(*at)++] = r;
	}
	size_t from = 0; /* first[i] now ends instance i's requests */
	for (uint32_t inst = 0; inst < b->n_inst && !rc; inst++) {
		size_t n = 0, to = first[inst];
		uint64_t look = 0, h = 0;
		for (size_t k = from; k < to; k++) {
			const bound_req_t *q = &b->req[order[k]];
			for (uint32_t j = 0; adm[order[k]] && j < q->n_lookup + q->n_insert; j++) {
				ids[n] = b->ids[q->off + j];
				counted[n++] = j < q->n_lookup;
			}
			look += adm[order[k]] ? q->n_lookup : 0;
		}
		from = to;
		rc = bound_belady(ids, counted, n, cap[inst], &h);
		/* each copy adds at most one hit to MIN's (bound.h); no copy
		 * turns a first touch into a hit */
		uint64_t reuse = look - touch[inst];
		double with = (double)h + (copy_blocks < 0 ? (double)reuse : floor(copy_blocks));
		o->lookups += look;
		o->min_hits += h;
		o->reusable += reuse;
		o->place_hits += with < (double)reuse ? (uint64_t)with : reuse;
	}
out:
	FREE_ALL(adm, ids, counted, first, order, touch);
	return rc;
}
