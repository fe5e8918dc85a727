/* tr_int — internals shared by the trace module's files (not a public API).
 *
 * A source (a file reader or a generator) yields raw rows: the trace time in
 * ns since the source's first row, lengths, status, session, and optionally
 * content, either as trace-block ids or as token segments. tr_read.c turns
 * raw rows into tr_request_t: ordering check, failed filter, window, rate
 * scale, limit, prefix model for content-less rows, block-id remapping.
 */
#ifndef KVSIM_TR_INT_H
#define KVSIM_TR_INT_H

#include <gsl/gsl_rng.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <zlib.h>

#include "sim/base/rng.h"
#include "sim/base/vec.h"
#include "traces/tr.h"

/* The largest block size a trace may declare ([trace] trace_block_tokens's
 * range). */
#define TR_MAX_BLOCK_TOKENS 1048576u

/* A run of tokens with one content key; piece (key, offset, length) hashing
 * makes equal keys at equal offsets share blocks. unique: tokens belong to
 * this request alone (key ignored). */
typedef struct tr_seg {
	uint64_t key;
	uint32_t tokens;
	uint32_t unique;
} tr_seg_t;

typedef struct tr_raw {
	int64_t t_ns; /* since the source's first row (or generator start) */
	uint32_t input_len, output_len;
	int32_t status;
	uint64_t session_id;
	const uint64_t *ids; /* trace-block ids, or NULL */
	uint32_t n_ids;
	int ids_prefix;       /* ids already chained at trace_block (native) */
	const tr_seg_t *segs; /* token segments (generators), or NULL */
	uint32_t n_segs;
	uint64_t line; /* source line for messages; 0 for generators */
} tr_raw_t;

typedef struct tr_src {
	int (*next)(struct tr_src *s, tr_raw_t *raw, err_t *e); /* 1 row, 0 end, <0 error */
	void (*close)(struct tr_src *s);
	uint32_t block_tokens; /* the trace's own block size, 0 when none */
	uint64_t bytes;        /* consumed so far */
} tr_src_t;

/* ---- block-id mix (tr_util.c) ------------------------------------------ */
/* tr_mix(h, x) == tr_mix_pre(h, tr_mix_key(x)): a loop that mixes the same
 * x into many chains computes tr_mix_key(x) once. */
static inline uint64_t tr_mix_key(uint64_t x)
{
	return rng_fmix64(x ^ 0xd6e8feb86659fd93ULL);
}
static inline uint64_t tr_mix_pre(uint64_t h, uint64_t kx)
{
	return rng_fmix64((h << 29 | h >> 35) * RNG_GOLDEN ^ kx);
}

/* ---- growable arrays ---------------------------------------------------- */
/* Kept for callers that pass a void **; new code uses VEC_GROW (sim/base/vec.h). */
int tr_grow(void **p, size_t *cap, size_t need, size_t elem);

/* qsort order of planned arrivals: structs whose first member is their
 * time (a double), earliest first. */
int tr_cmp_time(const void *a, const void *b);

/* Inverse-CDF draw: the first index i < n - 1 with cdf[i] >= u, else n - 1
 * (cdf non-decreasing, n >= 1). Binary search, O(log n). */
size_t tr_cdf_index(const double *cdf, size_t n, double u);

/* ---- line reader (tr_csv.c) --------------------------------------------- */
/* Reads plain and gzip files alike through zlib's gz* API (a file without
 * the gzip magic is passed through unchanged), so every reader accepts
 * FILE.gz. Line numbers and bytes count the decompressed text. A gzip file
 * that tr_lines_verify has just inflated is read from the text it kept
 * (kept != NULL, gz == NULL), not inflated again. */
struct tr_kept;
typedef struct tr_lines {
	gzFile gz;
	struct tr_kept *kept; /* the verified text this reader holds a reference on */
	const char *path;
	char *buf;
	size_t cap;
	size_t len;     /* without the newline */
	uint64_t line;  /* 1-based number of the current line */
	uint64_t bytes; /* decompressed bytes consumed */
	int no_newline; /* the current line ended at EOF without '\n' */
	uint64_t max_line; /* longest line accepted, bytes without the newline
	                    * ([trace] max_line_bytes; tr_lines_open sets the default) */
	char *in;       /* decompressed input not yet split into lines */
	size_t in_pos, in_len;
	int eof;
} tr_lines_t;
int tr_lines_open(tr_lines_t *l, const char *path, err_t *e);
/* 1 line (NUL-terminated, '\r' stripped), 0 EOF, <0 error: KS_EIO for read
 * errors, KS_EINPUT "path:line: gzip: ..." for a truncated or corrupt gzip
 * stream (line = the one being read when the stream failed), KS_EINPUT
 * "path:line: [trace] max_line_bytes: ..." for a line longer than
 * l->max_line, found before more than max_line bytes of it are held. */
int tr_lines_next(tr_lines_t *l, err_t *e);
void tr_lines_close(tr_lines_t *l);
/* A file source's first step: a zeroed struct of size bytes whose
 * tr_lines_t at lines_off has path open. NULL with *rc set (KS_ENOMEM, or
 * tr_lines_open's error) on failure; the caller frees it after
 * tr_lines_close. */
void *tr_lines_src_new(size_t size, size_t lines_off, const char *path, int *rc, err_t *e);
/* The line cap of options o ([trace] max_line_bytes, 0: the default). */
static inline uint64_t tr_max_line(const tr_opts_t *o)
{
	return o->max_line_bytes ? o->max_line_bytes : TR_MAX_LINE_DEFAULT;
}
/* Decompresses a gzip file once to its end, so a truncated or corrupt one
 * fails before any row is used, with the same message tr_lines_next would
 * give, a line longer than max_line bytes included (0: TR_MAX_LINE_DEFAULT;
 * found before more than about max_line bytes are kept). 0 for plain files
 * and non-regular ones (a pipe cannot be read
 * twice). The decompressed text, when at most TR_KEPT_MAX bytes, is kept:
 * until tr_lines_keep_drop, every tr_lines_open of the same path while the
 * file's device, inode, size and mtime are unchanged reads it from memory
 * (one file at a time; each reader holds its own reference, so the text
 * lives until the last of them closes). Not thread-safe: one process opens
 * its traces from one thread. */
int tr_lines_verify(const char *path, uint64_t max_line, err_t *e);
void tr_lines_keep_drop(void);
/* The most text a verify keeps: bytes, or 0 for TR_KEPT_MAX (for tests). */
void tr_lines_set_kept_max(size_t bytes);
/* Own choice: what keeping a verified text may cost; a larger one is
 * inflated again by its reader, in constant memory. */
#define TR_KEPT_MAX (256u << 20)

/* tr_jscan: one JSONL row scanned without building a document, for the
 * common shape of the Mooncake and Bailian traces: a flat object whose keys
 * are among `keys`, each at most once, with values that are numbers,
 * strings without escapes, true/false/null, or (for keys[ids_key] only) an
 * array of non-negative integers. vals[k] gets keys[k]'s value (type
 * TR_JV_MISSING when absent; strings and literals are TR_JV_OTHER); the
 * array goes to *ids (grown with VEC_GROW, capacity *cap). Returns
 * TR_JSCAN_OK, or TR_JSCAN_FALLBACK for anything else (another key, a
 * repeated key, an escape, non-ASCII text, nesting, an integer beyond 18
 * digits, malformed JSON, no memory): the caller then parses the line with
 * jansson, which gives the same values or the error. */
typedef enum { TR_JV_MISSING = 0, TR_JV_INT, TR_JV_REAL, TR_JV_ARRAY, TR_JV_OTHER } tr_jv_type_t;
typedef struct tr_jv {
	tr_jv_type_t type;
	int64_t i;     /* TR_JV_INT */
	double d;      /* TR_JV_INT and TR_JV_REAL: the number */
	size_t n, bad; /* TR_JV_ARRAY: elements, and the first that is no
	                * non-negative integer (n: none) */
} tr_jv_t;
enum { TR_JSCAN_OK = 0, TR_JSCAN_FALLBACK = 1 };
int tr_jscan_row(const char *line, size_t len, const char *const *keys, size_t n_keys,
		 size_t ids_key, tr_jv_t *vals, uint64_t **ids, size_t *cap);

typedef struct tr_field {
	char *s; /* NUL-terminated, unquoted in place */
	size_t len;
} tr_field_t;
/* Splits l->buf into at most max fields; quoted fields ("a,""b""") are
 * unescaped. Returns the field count or KS_EINPUT (unterminated quote). */
int tr_csv_split(tr_lines_t *l, tr_field_t *f, int max, err_t *e);

/* Strict numbers: the whole field (spaces trimmed) must parse. 0 ok, <0 with
 * "path:line: name: reason". */
int tr_parse_u32(const tr_lines_t *l, const char *name, const char *s, uint32_t max, uint32_t *out,
                 err_t *e);
int tr_parse_f64(const tr_lines_t *l, const char *name, const char *s, double *out, err_t *e);
/* "YYYY-MM-DD[ T]HH:MM:SS[.f{1,9}][Z|+HH:MM|-HH:MM]" to ns since the epoch:
 * 0, -1 when s is not of that form, -2 for a day its month does not have. */
int tr_parse_datetime(const char *s, int64_t *ns);
/* Seconds (finite, >= 0, < 4e9) to ns. */
int tr_seconds_ns(const tr_lines_t *l, const char *name, double s, int64_t *ns, err_t *e);

/* ---- sources ------------------------------------------------------------ */
int tr_src_jsonl(const tr_opts_t *o, const char *path, int bailian, tr_src_t **out, err_t *e);
int tr_src_burstgpt(const tr_opts_t *o, const char *path, tr_src_t **out, err_t *e);
int tr_src_azure(const tr_opts_t *o, const char *path, tr_src_t **out, err_t *e);
int tr_src_native(const tr_opts_t *o, const char *path, tr_src_t **out, err_t *e);
/* The source of o->gen's generator (its tr_gen_ops_t's open, or the common
 * generator source of tr_gen.c driven by its init and next). */
int tr_src_gen(const tr_opts_t *o, uint64_t seed, tr_src_t **out, err_t *e);

/* A synthetic generator (one line of TR_GEN_LIST in tr.h). A generator
 * either opens a source of its own (open: crowd) or lets tr_gen.c's common
 * source drive it (init and next over struct gen_src, traces/tr_gen_int.h):
 * the common source checks the options (the flags' rules, then check), scales
 * the load, opens the two random streams and the length distributions, calls
 * init, then next per row and draws the row's lengths. */
struct gen_src;
typedef struct tr_gen_ops {
	const char *name; /* trace.gen */
	unsigned flags;   /* TR_GEN_F_* */
	/* A source of its own; NULL: the common one (tr_gen.c). */
	int (*open)(const tr_opts_t *o, uint64_t seed, tr_src_t **out, err_t *e);
	/* Its own option rules, after the flags' (NULL: none). */
	int (*check)(const tr_opts_t *o, err_t *e);
	/* The requests it makes on average over duration_s at rate_scale 1, for
	 * the max_generated guard (NULL: it guards its own count). */
	double (*expected)(const tr_opts_t *o);
	int (*init)(struct gen_src *g, err_t *e); /* NULL: nothing to set up */
	/* The next arrival's time in seconds into *t (and its token segments
	 * into raw, if any): 1, 0 when the process has ended, < 0 on error. */
	int (*next)(struct gen_src *g, tr_raw_t *raw, double *t, err_t *e);
} tr_gen_ops_t;
#define TR_GEN_F_RATE 1u    /* needs trace.rate > 0 */
#define TR_GEN_F_SPAN 2u    /* needs duration_s > 0 or requests > 0 */
#define TR_GEN_F_PATH 4u    /* reads trace.path (its progress is the file's) */
#define TR_GEN_F_CLOSED 8u  /* a closed loop: made as the run goes, never read */
/* Indexed by tr_gen_kind_t (g < TR_GEN_N). */
const tr_gen_ops_t *tr_gen_ops(tr_gen_kind_t g);
#define TR_GEN_EXTERN(G, name, ops) extern const tr_gen_ops_t ops;
TR_GEN_LIST(TR_GEN_EXTERN)
#undef TR_GEN_EXTERN

/* A trace file format (one line of TR_FORMAT_LIST in tr.h): detect says
 * whether the file's first non-blank line (BOM and leading blanks skipped)
 * is this format's; open makes its source from o, the reader's own copy of
 * the options, which it may adjust (servegen sets o->gen). */
typedef struct tr_format {
	int (*detect)(const char *first_line);
	int (*open)(tr_opts_t *o, const char *path, uint64_t seed, tr_src_t **out, err_t *e);
} tr_format_t;
/* Indexed by tr_kind_t: [TR_KIND_AUTO] and [TR_KIND_GEN] are all NULL. */
extern const tr_format_t *const tr_formats[TR_KIND_GEN + 1];

/* ---- length distributions (tr_dist.c) ----------------------------------- */
typedef struct tr_dist tr_dist_t;
int tr_dist_new(const tr_dist_opts_t *o, const char *name, int output, uint32_t max_tokens,
                tr_dist_t **out, err_t *e);
uint32_t tr_dist_draw(tr_dist_t *d, gsl_rng *rng);
void tr_dist_free(tr_dist_t *d);

/* A generator's random draws: stream 1 of the seed for times, stream 2 and
 * the [trace] length distributions for lengths (tr_gen.c's conventions). */
typedef struct tr_gen_rand {
	gsl_rng *arr, *len;
	tr_dist_t *din, *dout;
} tr_gen_rand_t;
int tr_gen_rand_open(tr_gen_rand_t *r, const tr_opts_t *o, uint64_t seed, err_t *e);
void tr_gen_rand_close(tr_gen_rand_t *r); /* also after a failed open */
/* raw's lengths: input = prefix + an input draw (capped at max_tokens), output a draw. */
void tr_gen_rand_lengths(tr_gen_rand_t *r, const tr_opts_t *o, uint32_t prefix, tr_raw_t *raw);

/* raw's content: a shared prefix of `tokens` tokens (id key) then the
 * request's own tokens, written into segs[2] (the source's; valid until its
 * next row). The fan-out and crowd generators' rows. */
void tr_raw_shared_prefix(tr_raw_t *raw, tr_seg_t segs[2], uint64_t key, uint32_t tokens);

/* ---- prefix model (tr_prefix.c) ----------------------------------------- */
typedef struct tr_prefix tr_prefix_t;
int tr_prefix_new(const tr_opts_t *o, uint64_t seed, tr_prefix_t **out, err_t *e);
/* Content segments for an id-less request; *segs valid until the next call.
 * *session_id: in, the trace's session (0 none); out, the session used
 * (synthetic sessions get ids here). t_ns is the simulated arrival. */
int tr_prefix_segments(tr_prefix_t *p, int64_t t_ns, uint32_t input_len, uint32_t output_len,
                       uint64_t *session_id, const tr_seg_t **segs, uint32_t *n, err_t *e);
void tr_prefix_free(tr_prefix_t *p);

/* ---- rng ---------------------------------------------------------------- */
/* A fresh mt19937 stream for component `stream` of the master seed. */
gsl_rng *tr_rng_new(uint64_t seed, uint64_t stream);

/* ---- per-file caches (tr_cache.c) --------------------------------------- */
/* One version of a file: what tells it from an edited or replaced one. */
typedef struct tr_file_id {
	uint64_t size, dev, ino;
	int64_t mtime_ns;
} tr_file_id_t;
/* Fills id for a regular file (-1 otherwise); *racy = 1 when it changed in
 * the last 2 s, too recently for its mtime to tell a later write apart. */
int tr_file_identify(const char *path, tr_file_id_t *id, int *racy);
/* The cache directory (tr.h) in buf, created when mkdirs; 0 when none. */
int tr_cache_dir(char *buf, size_t n, int mkdirs);

/* The parsed-request cache. tr_cache_open never fails: every problem
 * (cache off, a racy or non-regular file, no directory, an entry missing,
 * of another key or version, truncated, or failing its checksum) is a
 * miss. It returns 1 on a hit (serve with tr_cache_next, restore the
 * reader's end state from tr_cache_tail), 0 on a miss, with *out then a
 * recorder (or NULL) that tr_cache_put fills with each request returned
 * and tr_cache_finish writes (temporary file, then rename) once the
 * reader ended without error. tr_cache_free releases either. */
typedef struct tr_cache_tail {
	uint32_t kind, T;        /* detected tr_kind_t, trace block size */
	uint64_t rows_src, bytes; /* source rows read, text bytes consumed */
	int64_t t_first, t_prev;
} tr_cache_tail_t;
typedef struct tr_cache tr_cache_t;
int tr_cache_open(const tr_opts_t *o, const char *path, uint32_t S, uint64_t seed,
		  tr_cache_t **out);
int tr_cache_hit(const tr_cache_t *c);
const tr_cache_tail_t *tr_cache_tail(const tr_cache_t *c);
int tr_cache_next(tr_cache_t *c, tr_request_t *q); /* 1 one, 0 end */
double tr_cache_progress(const tr_cache_t *c);
void tr_cache_put(tr_cache_t *c, const tr_request_t *q);
void tr_cache_finish(tr_cache_t *c, const tr_cache_tail_t *tail);
void tr_cache_free(tr_cache_t *c);
/* The entries' total size bound (tests; 0: the default, 1 GiB). */
void tr_cache_set_dir_max(uint64_t bytes);

#endif
