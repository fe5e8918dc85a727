/* tr_read — the reader front end: opens a source, applies ordering checks,
 * the failed-row filter, the time window, rate scaling and the limit, gives
 * id-less rows content from the prefix model, and remaps content to chained
 * block ids at the simulated block size. See tr.h for the contract. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/rng.h"
#include "traces/tr_int.h"
#include "traces/tr_sess.h"

struct tr_reader {
	tr_opts_t o;
	tr_src_t *src;
	tr_kind_t kind;
	char source[512];
	uint32_t S;    /* simulated block size */
	uint32_t T;    /* trace block size (0 none) */
	uint64_t salt; /* unique-token salt */
	tr_prefix_t *pm;
	tr_seg_t *segs;
	size_t seg_cap;
	uint64_t *blocks;
	size_t blk_cap;
	/* The last chain_blocks call, so the next can keep the blocks its
	 * leading segments give again: its segments, and per block the state
	 * after it and how many leading segments it read (CHAIN_OWN: it used
	 * the serial or the segment count). n_prev 0: nothing kept. */
	tr_seg_t *seg_prev;
	size_t seg_prev_cap;
	struct chain_at {
		uint32_t dep, k, off;
	} * chain_at;
	size_t chain_cap;
	uint32_t ns_prev, n_prev;
	uint64_t rows_src, next_id;
	int64_t t_first, t_prev;
	uint64_t line_prev;
	int64_t start_ns, end_ns; /* end_ns < 0: none */
	int done;
	/* Copies of the option strings o's path fields point to. */
	char path[4096], in_path[4096], out_path[4096];
	uint64_t text_bytes; /* the file's (decompressed) size, 0 unknown */
	tr_cache_t *cache;   /* a hit being served, a recorder, or NULL */
};

/* The size of a trace file's text: its size, or for gzip the ISIZE of its
 * trailer (RFC 1952 sec. 2.3.1: input size mod 2^32, exact for one member
 * under 4 GiB); 0 when unknown. For progress estimates only. */
static uint64_t text_size(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) || !S_ISREG(sb.st_mode))
		return 0;
	if (sb.st_size < 18) /* shorter than any gzip member */
		return (uint64_t)sb.st_size;
	FILE *f = fopen(path, "rb");
	unsigned char m[2], t[4];
	uint64_t n = (uint64_t)sb.st_size;
	if (f && fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b)
		n = fseek(f, -4, SEEK_END) == 0 && fread(t, 1, 4, f) == 4
		        ? (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 |
		              (uint64_t)t[3] << 24
		        : 0;
	if (f)
		fclose(f);
	return n;
}

/* A trace file is opened several times (format detection, the cache's
 * digest, the gzip check, the reading itself), which a FIFO or a device
 * cannot give: it would block forever or read differently each time. Such
 * a path is refused (KS_EINPUT) before anything opens it; one that is not
 * there is left to the open that names the reason. */
static int regular_path(const char *path, const char *key, err_t *e)
{
	struct stat sb;
	if (!*path || stat(path, &sb) || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode))
		return 0;
	return err_set(e, KS_EINPUT,
	               "[trace] %s: %s is %s, not a regular file: a trace is read more than once "
	               "(detection, digest, reading), so save it to a file first",
	               key, path,
	               S_ISFIFO(sb.st_mode)  ? "a FIFO"
	               : S_ISCHR(sb.st_mode) ? "a character device"
	                                     : "not a regular file");
}

/* Copies *s into buf and points *s at it; KS_EINPUT when it does not fit. */
static int own_path(const char **s, char *buf, size_t n, const char *key, err_t *e)
{
	const char *v = *s ? *s : "";
	size_t len = strlen(v);
	if (len >= n)
		return err_set(e, KS_EINPUT, "[trace] %s: path longer than %zu bytes", key, n - 1);
	memcpy(buf, v, len + 1);
	*s = buf;
	return 0;
}


/* tr_dist_opts_t.load: the input or output lengths of a trace file, read
 * with the trace's own defaults (for empirical length distributions). */
static int load_lengths(const char *path, int output, size_t max, uint32_t **vals, size_t *n,
			err_t *e)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = path;
	tr_reader_t *r;
	*vals = NULL;
	*n = 0;
	size_t cap = 0;
	int rc = tr_open(&o, 1u << 20, 0, &r, e);
	if (rc)
		return rc;
	tr_request_t q;
	while (*n < max && (rc = tr_next(r, &q, e)) > 0) {
		if (tr_grow((void **)vals, &cap, *n + 1, sizeof **vals)) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			break;
		}
		(*vals)[(*n)++] = output ? q.output_len : q.input_len;
	}
	tr_close(r);
	return rc < 0 ? rc : 0;
}

int tr_detect(const char *path, tr_kind_t *k, err_t *e)
{
	return tr_detect_max(path, 0, k, e);
}

int tr_detect_max(const char *path, uint64_t max_line, tr_kind_t *k, err_t *e)
{
	tr_lines_t l;
	int rc = tr_lines_open(&l, path, e);
	if (rc)
		return rc;
	if (max_line)
		l.max_line = max_line;
	while ((rc = tr_lines_next(&l, e)) > 0 && strspn(l.buf, " \t") == l.len)
		;
	if (rc <= 0) {
		tr_lines_close(&l);
		return rc < 0 ? rc : err_set(e, KS_EINPUT, "%s:1: header: empty file", path);
	}
	const char *b = l.buf + strspn(l.buf, " \t\xef\xbb\xbf");
	int i = TR_KIND_AUTO + 1;
	while (i < TR_KIND_GEN && !tr_formats[i]->detect(b))
		i++;
	tr_lines_close(&l);
	if (i == TR_KIND_GEN)
		return err_set(e, KS_EINPUT,
		               "%s:1: header: cannot detect the trace format; set trace.kind", path);
	*k = (tr_kind_t)i;
	return 0;
}

static int check_opts(const tr_opts_t *o, uint32_t S, err_t *e)
{
	if (o->kind == TR_KIND_SPEC)
		return err_set(e, KS_EINPUT,
		               "[trace] kind: spec is a client workload: each stage starts when the "
		               "previous one's requests have completed in a simulation, so there is "
		               "no trace to read without running one (kvsim run simulates it)");
	if ((unsigned)o->kind > TR_KIND_GEN)
		return err_set(e, KS_EINPUT, "[trace] kind: %d is not a trace kind", (int)o->kind);
	if (S == 0)
		return err_set(e, KS_EINPUT, "trace: simulated block size must be > 0");
	if (!(o->rate_scale > 0) || !isfinite(o->rate_scale))
		return err_set(e, KS_EINPUT, "[trace] rate_scale: must be > 0");
	if (!(o->start_s >= 0 && o->start_s <= 4e9))
		return err_set(e, KS_EINPUT, "[trace] start_s: must be in [0, 4e9]");
	if (!(o->end_s <= 4e9))
		return err_set(e, KS_EINPUT, "[trace] end_s: must be <= 4e9");
	if (o->end_s > 0 && o->end_s <= o->start_s)
		return err_set(e, KS_EINPUT, "[trace] end_s: must be > start_s (or 0 for none)");
	/* A closed loop's requests depend on the simulated service: only a run makes them. */
	if (tr_closed_loop(o))
		return err_set(e, KS_EINPUT,
		               "[trace] gen: sessions is a closed loop: each request is made when its "
		               "user's previous one completes in a simulation, so there is no trace "
		               "to read without running one (kvsim run simulates it)");
	/* A file that would be silently ignored is a mistake, not a choice. */
	if (o->kind == TR_KIND_GEN && !(tr_gen_ops(o->gen)->flags & TR_GEN_F_PATH) && o->path &&
	    *o->path)
		return err_set(e, KS_EINPUT,
		               "[trace] path: '%s' is not read: kind = gen (gen = %s) makes its "
		               "own requests; set trace.kind = auto to read the file",
		               o->path, tr_gen_name(o->gen));
	return 0;
}

int tr_open(const tr_opts_t *o, uint32_t S, uint64_t seed, tr_reader_t **out, err_t *e)
{
	*out = NULL;
	int rc = check_opts(o, S, e);
	if (rc)
		return rc;
	tr_reader_t *r = calloc(1, sizeof *r);
	if (!r)
		return err_set(e, KS_ENOMEM, "out of memory");
	r->o = *o;
	r->S = S;
	r->kind = o->kind;
	if ((rc = own_path(&r->o.path, r->path, sizeof r->path, "path", e)) ||
	    (rc = own_path(&r->o.in.path, r->in_path, sizeof r->in_path, "in_path", e)) ||
	    (rc = own_path(&r->o.out.path, r->out_path, sizeof r->out_path, "out_path", e)) ||
	    (rc = regular_path(r->o.path, "path", e)) ||
	    (rc = regular_path(r->o.in.path, "in_path", e)) ||
	    (rc = regular_path(r->o.out.path, "out_path", e)))
		goto fail;
	o = &r->o; /* from here on, the reader's own copy */
	const char *path = o->path;
	if (r->kind != TR_KIND_GEN && *path && tr_cache_open(o, path, S, seed, &r->cache)) {
		const tr_cache_tail_t *t = tr_cache_tail(r->cache);
		r->kind = (tr_kind_t)t->kind;
		r->T = t->T;
		snprintf(r->source, sizeof r->source, "%s", path);
		r->start_ns = (int64_t)llround(o->start_s * 1e9);
		r->end_ns = o->end_s > 0 ? (int64_t)llround(o->end_s * 1e9) : -1;
		*out = r;
		return 0;
	}
	/* A damaged .gz fails here, not after part of it has been simulated. */
	if ((r->kind != TR_KIND_GEN || (tr_gen_ops(o->gen)->flags & TR_GEN_F_PATH)) && *path &&
	    (rc = tr_lines_verify(path, o->max_line_bytes, e)))
		goto fail;
	if (r->kind == TR_KIND_AUTO) {
		if (!*path) {
			rc = err_set(e, KS_EINPUT,
			             "[trace] path: empty (set a trace file, or "
			             "kind = gen)");
			goto fail;
		}
		if ((rc = tr_detect_max(path, o->max_line_bytes, &r->kind, e)))
			goto fail;
	}
	if (r->kind != TR_KIND_GEN && !*path) {
		rc = err_set(e, KS_EINPUT, "[trace] path: empty (kind = %s needs a file)",
		             tr_kind_name(r->kind));
		goto fail;
	}
	r->o.in.load = r->o.out.load = load_lengths; /* empirical length models */
	if (r->kind == TR_KIND_GEN)
		rc = tr_src_gen(&r->o, seed, &r->src, e);
	else
		rc = tr_formats[r->kind]->open(&r->o, path, seed, &r->src, e);
	tr_lines_keep_drop(); /* the verified text now lives as long as its reader */
	if (rc)
		goto fail;
	if (r->kind == TR_KIND_GEN)
		snprintf(r->source, sizeof r->source, "gen:%s", tr_gen_name(o->gen));
	else
		snprintf(r->source, sizeof r->source, "%s", path);
	r->T = r->src->block_tokens;
	if (*path)
		r->text_bytes = text_size(path);
	if ((rc = tr_prefix_new(&r->o, seed, &r->pm, e)))
		goto fail;
	r->salt = tr_mix(tr_mix(TR_ROOT_ID, seed), 0x756e69717565ULL);
	r->start_ns = (int64_t)llround(o->start_s * 1e9);
	r->end_ns = o->end_s > 0 ? (int64_t)llround(o->end_s * 1e9) : -1;
	*out = r;
	return 0;
fail:
	tr_lines_keep_drop();
	tr_close(r);
	return rc;
}

void tr_close(tr_reader_t *r)
{
	if (!r)
		return;
	if (r->src)
		r->src->close(r->src);
	tr_cache_free(r->cache);
	tr_prefix_free(r->pm);
	free(r->segs);
	free(r->blocks);
	free(r->seg_prev);
	free(r->chain_at);
	free(r);
}

const char *tr_source(const tr_reader_t *r)
{
	return r->source;
}

tr_kind_t tr_kind(const tr_reader_t *r)
{
	return r->kind;
}

uint32_t tr_trace_block_tokens(const tr_reader_t *r)
{
	return r->T;
}

uint64_t tr_bytes_read(const tr_reader_t *r)
{
	if (tr_cache_hit(r->cache))
		return r->done ? tr_cache_tail(r->cache)->bytes : 0;
	return r->src ? r->src->bytes : 0;
}

int tr_cached(const tr_reader_t *r)
{
	return tr_cache_hit(r->cache);
}

/* The reader ended without error: a hit restores the state the parse
 * ended in, a recording is written. */
static int end_clean(tr_reader_t *r)
{
	r->done = 1;
	if (tr_cache_hit(r->cache)) {
		const tr_cache_tail_t *t = tr_cache_tail(r->cache);
		r->rows_src = t->rows_src;
		r->t_first = t->t_first;
		r->t_prev = t->t_prev;
	} else if (r->cache) {
		tr_cache_tail_t t = {.kind = (uint32_t)r->kind, .T = r->T,
				     .rows_src = r->rows_src, .bytes = tr_bytes_read(r),
				     .t_first = r->t_first, .t_prev = r->t_prev};
		tr_cache_finish(r->cache, &t);
	}
	return 0;
}

#define CHAIN_OWN UINT32_MAX

static int seg_same(const tr_seg_t *a, const tr_seg_t *b)
{
	return a->key == b->key && a->tokens == b->tokens && a->unique == b->unique;
}

/* Chains the content segments into ids of full S-token blocks. A block
 * depends only on h before it and the segments it reads, so the leading
 * blocks of the last call that read only segments this call shares are
 * kept as they are (requests after one with the same prefix). */
static void chain_blocks(tr_reader_t *r, const tr_seg_t *sg, uint32_t ns, uint32_t n,
                         uint64_t serial)
{
	uint32_t m = 0, j0 = 0;
	while (m < ns && m < r->ns_prev && seg_same(&sg[m], &r->seg_prev[m]))
		m++;
	while (j0 < n && j0 < r->n_prev && r->chain_at[j0].dep <= m)
		j0++;
	int keep = !VEC_GROW(r->chain_at, r->chain_cap, n ? n : 1, 64) &&
		   !VEC_GROW(r->seg_prev, r->seg_prev_cap, ns ? ns : 1, 64);
	/* tr_mix's key half of the values every block mixes in again: the salt,
	 * the serial and (the usual case) the last piece's (offset, length) */
	const uint64_t k_salt = tr_mix_key(r->salt), k_serial = tr_mix_key(serial);
	uint64_t piece = 0, k_piece = tr_mix_key(0);
	uint64_t h = j0 ? r->blocks[j0 - 1] : TR_ROOT_ID;
	uint32_t k = j0 ? r->chain_at[j0 - 1].k : 0, off = j0 ? r->chain_at[j0 - 1].off : 0;
	for (uint32_t j = j0; j < n; j++) {
		uint32_t left = r->S, own = 0;
		while (left) {
			while (k < ns && off >= sg[k].tokens) {
				k++;
				off = 0;
			}
			if (k >= ns || sg[k].unique) {
				/* Tokens of this request alone: the chain never meets another. */
				own = 1;
				h = tr_mix_pre(tr_mix_pre(h, k_salt), k_serial);
				if (k < ns) {
					uint32_t take =
					    sg[k].tokens - off < left ? sg[k].tokens - off : left;
					off += take;
					left -= take;
				} else {
					left = 0;
				}
				continue;
			}
			uint32_t take = sg[k].tokens - off < left ? sg[k].tokens - off : left;
			h = tr_mix_pre(h, tr_mix_key(sg[k].key));
			if (((uint64_t)off << 32 | take) != piece) {
				piece = (uint64_t)off << 32 | take;
				k_piece = tr_mix_key(piece);
			}
			h = tr_mix_pre(h, k_piece);
			off += take;
			left -= take;
		}
		r->blocks[j] = h;
		if (keep)
			r->chain_at[j] = (struct chain_at){own ? CHAIN_OWN : k + 1, k, off};
	}
	if (!keep) {
		r->ns_prev = r->n_prev = 0;
		return;
	}
	memcpy(r->seg_prev + m, sg + m, (ns - m) * sizeof *sg);
	r->ns_prev = ns;
	r->n_prev = n;
}

/* Ids of the n full prompt blocks, then of the n_gen full blocks that end
 * inside the output (the chain continued over the request's content past
 * its prompt: session history for the prefix model, tokens of this request
 * alone where the trace's own ids stop). */
static int make_blocks(tr_reader_t *r, tr_raw_t *raw, int64_t arrival, uint32_t *n_out,
                       uint32_t *n_gen, err_t *e)
{
	uint32_t n = raw->input_len / r->S;
	uint64_t all = ((uint64_t)raw->input_len + raw->output_len) / r->S;
	uint32_t na = all > UINT32_MAX ? UINT32_MAX : (uint32_t)all;
	*n_out = n;
	*n_gen = na - n;
	if (tr_grow((void **)&r->blocks, &r->blk_cap, na ? na : 1, sizeof *r->blocks))
		return err_set(e, KS_ENOMEM, "out of memory");
	uint64_t serial = r->rows_src;
	if (raw->ids) {
		if (raw->ids_prefix && r->T == r->S && raw->n_ids >= n) {
			/* Native ids are already chained prefix ids at this size;
			 * what follows the prompt is this request's own. */
			r->n_prev = 0; /* the blocks are no chain_blocks output */
			memcpy(r->blocks, raw->ids, n * sizeof *r->blocks);
			uint64_t h = n ? r->blocks[n - 1] : TR_ROOT_ID;
			for (uint32_t j = n; j < na; j++)
				r->blocks[j] = h = tr_mix(tr_mix(h, r->salt), serial);
			return 0;
		}
		if (tr_grow((void **)&r->segs, &r->seg_cap, raw->n_ids ? raw->n_ids : 1,
		            sizeof *r->segs))
			return err_set(e, KS_ENOMEM, "out of memory");
		/* A trace id names the prompt tokens its block covers, not the
		 * output after a partial last block. */
		for (uint32_t i = 0; i < raw->n_ids; i++) {
			uint64_t lo = (uint64_t)i * r->T;
			uint32_t len = lo >= raw->input_len                 ? 0
			               : raw->input_len - lo < (uint64_t)r->T ? (uint32_t)(raw->input_len - lo)
			                                                      : r->T;
			r->segs[i] = (tr_seg_t){raw->ids[i], len, 0};
		}
		chain_blocks(r, r->segs, raw->n_ids, na, serial);
		return 0;
	}
	if (raw->segs) {
		chain_blocks(r, raw->segs, raw->n_segs, na, serial);
		return 0;
	}
	/* The prefix model sees every request, even those shorter than a block,
	 * so session histories stay in step. */
	const tr_seg_t *sg;
	uint32_t ns;
	int rc = tr_prefix_segments(r->pm, arrival, raw->input_len, raw->output_len,
	                            &raw->session_id, &sg, &ns, e);
	if (rc)
		return rc;
	chain_blocks(r, sg, ns, na, serial);
	return 0;
}

int tr_next(tr_reader_t *r, tr_request_t *out, err_t *e)
{
	if (r->done)
		return 0;
	if (r->o.limit && r->next_id >= r->o.limit)
		return end_clean(r);
	if (tr_cache_hit(r->cache)) {
		if (!tr_cache_next(r->cache, out))
			return end_clean(r);
		r->next_id++;
		return 1;
	}
	for (;;) {
		tr_raw_t raw;
		int rc = r->src->next(r->src, &raw, e);
		if (rc < 0) {
			r->done = 1;
			return rc;
		}
		if (rc == 0) {
			r->done = 1;
			if (r->rows_src == 0)
				return err_set(e, KS_EINPUT, "%s: empty trace (no requests)",
				               r->source);
			return end_clean(r);
		}
		if (r->rows_src == 0)
			r->t_first = raw.t_ns;
		else if (raw.t_ns < r->t_prev) {
			r->done = 1;
			return err_set(e, KS_EINPUT,
			               "%s:%llu: timestamp: goes backwards (%.9f s after the "
			               "first row, previous row at %.9f s)",
			               r->source, (unsigned long long)raw.line,
			               (raw.t_ns - r->t_first) / 1e9,
			               (r->t_prev - r->t_first) / 1e9);
		}
		r->t_prev = raw.t_ns;
		r->rows_src++;
		int64_t t = raw.t_ns - r->t_first;
		if (r->end_ns >= 0 && t >= r->end_ns)
			return end_clean(r); /* rows are in time order: nothing later can qualify */
		if (t < r->start_ns || (raw.status && r->o.drop_failed))
			continue;
		/* a generator (servegen files included) scaled its own rates
		 * (tr_gen.c): its time is not compressed */
		int gen = r->kind == TR_KIND_GEN || r->kind == TR_KIND_SERVEGEN;
		double a = (double)(t - r->start_ns) / (gen ? 1 : r->o.rate_scale);
		if (!(a < 4e18)) { /* ~127 years: beyond it int64 ns would overflow */
			r->done = 1;
			return err_set(e, KS_EINPUT,
			               "%s:%llu: timestamp: %.3g s after rate scaling is out of "
			               "range",
			               r->source, (unsigned long long)raw.line, a / 1e9);
		}
		int64_t arrival = (int64_t)llround(a);
		uint32_t n, n_gen;
		if ((rc = make_blocks(r, &raw, arrival, &n, &n_gen, e))) {
			r->done = 1;
			return rc;
		}
		*out = (tr_request_t){
		    .id = r->next_id++,
		    .arrival_ns = arrival,
		    .input_len = raw.input_len,
		    .output_len = raw.output_len,
		    .n_blocks = n,
		    .n_out_blocks = n_gen,
		    .blocks = r->blocks,
		    .block_tokens = r->S,
		    .status = raw.status,
		    .session_id = raw.session_id,
		};
		tr_cache_put(r->cache, out);
		return 1;
	}
}

double tr_progress(const tr_reader_t *r)
{
	if (r->done)
		return 1;
	if (tr_cache_hit(r->cache))
		return tr_cache_progress(r->cache);
	/* the run ends at the first limit reached: the largest share is the
	 * best estimate */
	double f = -1, t = (double)(r->t_prev - r->t_first);
	if (r->o.limit)
		f = fmax(f, (double)r->next_id / (double)r->o.limit);
	if (r->end_ns > 0)
		f = fmax(f, t / (double)r->end_ns);
	if (r->kind == TR_KIND_GEN && !(tr_gen_ops(r->o.gen)->flags & TR_GEN_F_PATH)) {
		if (r->o.requests)
			f = fmax(f, (double)r->rows_src / (double)r->o.requests);
		if (r->o.duration_s > 0)
			f = fmax(f, t / (r->o.duration_s * 1e9));
	} else if (r->text_bytes && r->src) {
		f = fmax(f, (double)r->src->bytes / (double)r->text_bytes);
	}
	return f < 0 ? -1 : fmin(f, 1);
}

int tr_check_nonempty(const tr_reader_t *r, err_t *e)
{
	if (!r->done || r->next_id || !r->rows_src)
		return 0;
	double last = (double)(r->t_prev - r->t_first) / 1e9;
	if (r->start_ns > 0 && r->t_prev - r->t_first < r->start_ns)
		return err_set(
		    e, KS_EINPUT,
		    "[trace] start_s: %.9g s is past the end of the trace (%s: %llu rows "
		    "from 0 to %.9g s): no request to simulate",
		    r->start_ns / 1e9, r->source, (unsigned long long)r->rows_src, last);
	if (r->o.drop_failed)
		return err_set(e, KS_EINPUT,
		               "[trace] failed: drop left none of the %llu rows of %s: no request "
		               "to simulate",
		               (unsigned long long)r->rows_src, r->source);
	if (r->end_ns >= 0)
		return err_set(e, KS_EINPUT,
		               "[trace] end_s: the window [%.9g s, %.9g s) holds no row of %s: no "
		               "request to simulate",
		               r->start_ns / 1e9, r->end_ns / 1e9, r->source);
	return err_set(e, KS_EINPUT, "[trace] start_s: none of the %llu rows of %s came out",
	               (unsigned long long)r->rows_src, r->source);
}

int tr_validate(const tr_opts_t *o, uint32_t S, uint64_t seed, uint64_t *rows, err_t *e)
{
	tr_reader_t *r;
	*rows = 0;
	int rc = tr_open(o, S, seed, &r, e);
	if (rc)
		return rc;
	tr_request_t q;
	while ((rc = tr_next(r, &q, e)) > 0)
		(*rows)++;
	tr_close(r);
	return rc;
}

int tr_file_sha256(const char *path, char out[65], err_t *e)
{
	FILE *f = err_fopen_in(path, e);
	if (!f)
		return e->code;
	struct sha256_ctx c;
	sha256_init(&c);
	unsigned char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		sha256_update(&c, n, buf);
	int bad = ferror(f);
	fclose(f);
	if (bad)
		return err_set(e, KS_EIO, "%s: read error", path);
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&c, sizeof d, d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	return 0;
}

/* ---- trace digests, once per file --------------------------------------- */

/* What identifies one version of a file, and its digest. */
typedef struct sha_entry {
	char path[1024];
	uint64_t size, dev, ino;
	int64_t mtime_ns;
	char hex[65];
} sha_entry_t;

#define SHA_MEM 8                    /* distinct traces one process keeps (own choice) */
#define SHA_FILE_MAX (1 << 20)       /* bytes before the cache file starts over */

static sha_entry_t sha_mem[SHA_MEM];
static unsigned sha_mem_next;

void tr_sha256_cache_reset(void)
{
	memset(sha_mem, 0, sizeof sha_mem);
	sha_mem_next = 0;
}

static int sha_same(const sha_entry_t *a, const sha_entry_t *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns && a->dev == b->dev &&
	       a->ino == b->ino && !strcmp(a->path, b->path);
}

/* The cache file's path in buf; 0 when there is no home to put it in. */
static int sha_file_path(char *buf, size_t n, int mkdirs)
{
	char dir[900];
	return tr_cache_dir(dir, sizeof dir, mkdirs) &&
	       snprintf(buf, n, "%s/trace-sha256", dir) < (int)n;
}

/* One line: "HEX SIZE MTIME_NS DEV INO PATH". */
static int sha_file_find(sha_entry_t *want)
{
	char fp[1024], line[1200];
	FILE *f = sha_file_path(fp, sizeof fp, 0) ? fopen(fp, "r") : NULL;
	int found = 0;
	while (f && !found && fgets(line, sizeof line, f)) {
		sha_entry_t g = {0};
		int at = 0;
		if (sscanf(line, "%64s %" SCNu64 " %" SCNd64 " %" SCNu64 " %" SCNu64 " %n", g.hex,
			   &g.size, &g.mtime_ns, &g.dev, &g.ino, &at) != 5 ||
		    strlen(g.hex) != 64 || !at)
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(g.path, sizeof g.path, "%s", line + at);
		if (sha_same(&g, want)) {
			memcpy(want->hex, g.hex, sizeof g.hex);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void sha_file_add(const sha_entry_t *x)
{
	char fp[1024], line[1200];
	if (!sha_file_path(fp, sizeof fp, 1) || strchr(x->path, '\n'))
		return;
	struct stat st;
	int trunc = stat(fp, &st) == 0 && st.st_size > SHA_FILE_MAX;
	int n = snprintf(line, sizeof line, "%s %" PRIu64 " %" PRId64 " %" PRIu64 " %" PRIu64 " %s\n",
			 x->hex, x->size, x->mtime_ns, x->dev, x->ino, x->path);
	int fd = open(fp, O_WRONLY | O_CREAT | O_APPEND | (trunc ? O_TRUNC : 0), 0600);
	if (fd < 0 || n <= 0 || n >= (int)sizeof line) {
		if (fd >= 0)
			close(fd);
		return;
	}
	ssize_t w = write(fd, line, (size_t)n); /* one write: lines never interleave */
	(void)w; /* best effort: a short write leaves a line the reader skips */
	close(fd);
}

int tr_file_sha256_cached(const char *path, char out[65], err_t *e)
{
	sha_entry_t k = {0};
	tr_file_id_t f;
	int racy;
	if (tr_file_identify(path, &f, &racy) || strlen(path) >= sizeof k.path)
		return tr_file_sha256(path, out, e); /* it reports what is wrong */
	snprintf(k.path, sizeof k.path, "%s", path);
	k.size = f.size;
	k.mtime_ns = f.mtime_ns;
	k.dev = f.dev;
	k.ino = f.ino;
	for (unsigned i = 0; i < SHA_MEM; i++)
		if (sha_mem[i].hex[0] && sha_same(&sha_mem[i], &k)) {
			memcpy(out, sha_mem[i].hex, 65);
			return 0;
		}
	if (racy || !sha_file_find(&k)) {
		int rc = tr_file_sha256(path, k.hex, e);
		if (rc)
			return rc;
		if (racy) {
			memcpy(out, k.hex, 65);
			return 0;
		}
		sha_file_add(&k);
	}
	sha_mem[sha_mem_next++ % SHA_MEM] = k;
	memcpy(out, k.hex, 65);
	return 0;
}

int tr_open_cfg(const cfg_t *cfg, uint32_t sim_block_tokens, uint64_t seed, tr_reader_t **out,
                err_t *e)
{
	*out = NULL;
	tr_opts_t o;
	tr_paths_t p;
	int rc = tr_opts_from_cfg(cfg, &o, e);
	if (!rc)
		rc = tr_opts_paths(cfg, &o, &p, e);
	char file[4096];
	/* A config file of its own that names no workload: most likely meant as
	 * changes to the default experiment (it reads none of it by itself). */
	if (!rc && o.kind != TR_KIND_GEN && o.kind != TR_KIND_SPEC && !*o.path &&
	    cfg_file(cfg, file, sizeof file))
		return err_set(e, KS_EINPUT,
		               "%s: [trace] path: empty, and kind = %s reads a trace file: the config "
		               "names no workload. To change the default experiment, start the file "
		               "with [experiment] base = default; else set [trace] path (a trace "
		               "file) or kind = gen (a generator)",
		               file, tr_kind_name(o.kind));
	if (!rc)
		rc = tr_open(&o, sim_block_tokens, seed, out, e); /* copies o */
	if (rc)
		cfg_err_locate(cfg, e); /* "[trace] key: ..." gets the key's place */
	return rc;
}
