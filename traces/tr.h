/* tr — request traces: readers for real formats, seeded generators, prefix
 * models, block-id remapping, statistics and the native format writer.
 *
 * A reader streams requests one at a time with memory bounded by the longest
 * request (never by the file): tr_next fills a tr_request_t whose blocks
 * array stays valid until the next tr_next or tr_close. Times are int64
 * nanoseconds relative to the trace start (after the [start_s, end_s) window
 * and rate scaling: for a trace file arrival = (t_trace - start_s) /
 * rate_scale, a generator multiplies its rates by rate_scale over the same
 * span instead, see tr_gen.c); token counts are uint32.
 *
 * Block ids: blocks[i] identifies the whole prefix of tokens
 * [0, (i+1)*block_tokens) at the SIMULATED block size. Only full blocks are
 * hashed (n_blocks = input_len / block_tokens, the partial tail is not, as in
 * vLLM). Ids are chained: id_i = tr_mix(id_{i-1}, piece) for every piece of
 * trace content inside block i, so equal ids mean equal prefixes (up to
 * 64-bit collisions). A trace's own ids (Mooncake hash_ids, native blocks)
 * are the content of its trace-sized blocks; when the trace block size
 * differs from the simulated one each simulated block hashes the pieces
 * (trace id, offset, length) it covers. Tokens no trace id covers, and every
 * token of an id-less trace not claimed by the prefix model, are unique to
 * their request.
 *
 * Files may be gzip-compressed (zlib's gz* API, told apart by content, not
 * name); line numbers, byte counts and format detection then refer to the
 * decompressed text, and a truncated or corrupt .gz fails at tr_open.
 *
 * Errors: KS_EINPUT with "file:line: field: reason" for bad input (the first
 * bad row makes tr_next fail; the caller aborts the run, so nothing is ever
 * half-loaded), KS_ENOMEM, KS_EIO. Nothing here exits the process.
 */
#ifndef KVSIM_TR_H
#define KVSIM_TR_H

#include <stdint.h>
#include <stdio.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"

typedef struct tr_request {
	uint64_t id;        /* 0,1,2,... in trace order after filtering */
	int64_t arrival_ns; /* relative to the trace start, after window and rate scaling */
	uint32_t input_len, output_len; /* tokens */
	uint32_t n_blocks; /* = input_len / block_tokens full blocks (partial tail not hashed) */
	/* full blocks ending inside the output: their ids follow the prompt's in
	 * blocks, the chain continued over what the request's content is there
	 * (a session's next turn repeats it; else tokens of this request alone) */
	uint32_t n_out_blocks;
	const uint64_t *blocks; /* chained prefix ids at the SIMULATED block size (n_blocks +
	                           n_out_blocks); valid until the next tr_next */
	uint32_t block_tokens;
	int32_t
	    status; /* 0 ok, 1 failed in the source trace (e.g. BurstGPT zero response tokens) */
	uint64_t session_id; /* 0 when none */
} tr_request_t;

typedef struct tr_reader tr_reader_t;

/* ---- options (the [trace] config section; see traces/tr_cfg.c) ---------- */

/* The trace file formats, one line each: the suffix of its kind constant,
 * its trace.kind name, and the tr_format_t (tr_int.h) its file defines.
 * The kind enum, the trace.kind choices (tr_cfg.c's map), tr_kind_name and tr_kind_parse,
 * detection (the first format whose detect accepts the first line, in this
 * order) and dispatch in tr_open all come from this list; adding a format is
 * its file plus one line here (CONTRIBUTING.md). */
#define TR_FORMAT_LIST(X)                                                                          \
	X(MOONCAKE, "mooncake", tr_fmt_mooncake)                                                   \
	X(BAILIAN, "bailian", tr_fmt_bailian)                                                      \
	X(BURSTGPT, "burstgpt", tr_fmt_burstgpt)                                                   \
	X(AZURE, "azure", tr_fmt_azure)                                                            \
	X(NATIVE, "native", tr_fmt_native)                                                         \
	X(SERVEGEN, "servegen", tr_fmt_servegen)

/* AUTO: detect from the file; GEN: a synthetic generator, no file format;
 * SPEC: a client's workload spec (traces/tr_spec.h), run by open-loop
 * clients with drained stages (sim/run/sim_clients.h), never read as a
 * trace. */
#define TR_KIND_ENUM(K, name, fmt) TR_KIND_##K,
typedef enum { TR_KIND_AUTO, TR_FORMAT_LIST(TR_KIND_ENUM) TR_KIND_GEN, TR_KIND_SPEC } tr_kind_t;
#undef TR_KIND_ENUM

/* The synthetic generators, one line each: the suffix of its kind constant,
 * its trace.gen name, and the tr_gen_ops_t (tr_int.h) its file defines.
 * The gen enum, the trace.gen choices (tr_cfg.c's map), tr_gen_name and
 * tr_gen_parse, what the reader asks of a generator (a file it reads, a
 * closed loop) and dispatch in tr_src_gen all come from this list; adding a
 * generator is its file plus one line here (CONTRIBUTING.md). */
#define TR_GEN_LIST(X)                                                                             \
	X(POISSON, "poisson", tr_gen_poisson)                                                      \
	X(GAMMA, "gamma", tr_gen_gamma)                                                            \
	X(WEIBULL, "weibull", tr_gen_weibull)                                                      \
	X(MMPP, "mmpp", tr_gen_mmpp)                                                               \
	X(FLASH, "flash", tr_gen_flash)                                                            \
	X(DIURNAL, "diurnal", tr_gen_diurnal)                                                      \
	X(SERVEGEN, "servegen", tr_gen_servegen)                                                   \
	X(FANOUT, "fanout", tr_gen_fanout)                                                         \
	X(CROWD, "crowd", tr_gen_crowd)                                                            \
	X(SESSIONS, "sessions", tr_gen_sessions)

#define TR_GEN_ENUM(G, name, ops) TR_GEN_##G,
typedef enum { TR_GEN_LIST(TR_GEN_ENUM) TR_GEN_N } tr_gen_kind_t;
#undef TR_GEN_ENUM

typedef enum {
	TR_DIST_FIXED,
	TR_DIST_UNIFORM,
	TR_DIST_LOGNORMAL,
	TR_DIST_ZIPF,
	TR_DIST_EMPIRICAL
} tr_dist_kind_t;

typedef struct tr_dist_opts {
	tr_dist_kind_t kind;
	double mean;       /* fixed value; lognormal mean */
	double sigma;      /* lognormal shape (sd of log) */
	double zipf_s;     /* Zipf exponent over [min, max] */
	uint32_t min, max; /* uniform/Zipf bounds; every kind is clamped to them */
	const char *path;  /* empirical: a trace whose lengths are resampled */
	/* empirical: reads up to max lengths (outputs when output) of the trace
	 * at path into *vals (malloc'd, *n of them); tr_open sets it, so the
	 * distributions need not call the readers that call them. */
	int (*load)(const char *path, int output, size_t max, uint32_t **vals, size_t *n,
		    err_t *e);
} tr_dist_opts_t;

typedef enum { TR_SESS_OFF, TR_SESS_TRACE, TR_SESS_SYNTH } tr_sess_mode_t;

/* [trace] max_line_bytes' default (tr_cfg.c); own choice. */
#define TR_MAX_LINE_DEFAULT (64u << 20)

typedef struct tr_opts {
	tr_kind_t kind;
	const char *path;            /* trace file; servegen windows CSV for gen servegen */
	double start_s, end_s;       /* window on trace time; end_s <= 0: no end */
	double rate_scale;           /* load multiplier: a file's time is compressed by it,
	                              * a generator's rates multiplied (tr_gen.c) */
	uint64_t limit;              /* max requests after filtering; 0 = all */
	uint32_t trace_block_tokens; /* 0: the format's own (mooncake 512, bailian 16) */
	int drop_failed;             /* drop status=1 rows instead of passing them on */
	int check_blocks;            /* hash id count must be ceil(input/trace_block) */
	int json_slow;               /* 1: every JSONL row through jansson, none through
	                              * the scanner (for differential testing; 0 default) */
	uint32_t max_tokens;         /* larger lengths are input errors */
	uint64_t max_line_bytes;     /* a longer line is an input error, refused before
	                              * it is buffered whole; 0: TR_MAX_LINE_DEFAULT */
	/* generator */
	tr_gen_kind_t gen;
	double rate, cv, duration_s;
	uint64_t requests; /* 0: until duration_s */
	uint64_t max_generated; /* more expected or made is an input error */
	double mmpp_rate[2], mmpp_dwell_s[2];
	double flash_start_s, flash_duration_s, flash_mult, flash_tau_s;
	int flash_spike; /* 0 step, 1 spike with exponential decay */
	double diurnal_period_s, diurnal_amp, diurnal_phase;
	uint32_t fanout_bursts, fanout_size, fanout_prefix_tokens;
	double fanout_window_s, fanout_bg_rate;
	uint32_t fanout_decoys, fanout_decoy_size;
	/* crowd (traces/tr_gen_crowd.c) */
	uint32_t crowd_count, crowd_size, crowd_warm_requests, crowd_prefix_tokens, crowd_repeat;
	double crowd_lead_s, crowd_window_s, crowd_bg_rate, crowd_bg_rate_end;
	tr_dist_opts_t in, out;
	/* prefix model for id-less traces and generators */
	double prefix_shared_prob;
	uint32_t prefix_count;
	double prefix_zipf_s;
	double prefix_tokens, prefix_sigma;
	tr_sess_mode_t session_mode;
	double session_prob;     /* synthetic: share of requests continuing a session */
	uint32_t session_active; /* synthetic: concurrently open sessions */
	double group_prob;       /* a request starts a fan-out group */
	uint32_t group_size;
	double group_window_s;
	uint32_t group_tokens;
	/* kind = spec (traces/tr_spec.h) */
	const char *spec_experiment; /* the JSON record's id; "": the only one */
	int spec_reuse;              /* TR_SPEC_CYCLE or TR_SPEC_FRESH */
} tr_opts_t;

/* Fills o with the defaults of every [trace] key. */
void tr_opts_default(tr_opts_t *o);
/* Checks every numeric field against its [trace] key's range, so options
 * built by hand meet the bounds a config would: KS_EINPUT with "[trace] KEY:
 * VALUE is out of range [LO, HI]". Generators call it (tr_open). */
int tr_opts_check(const tr_opts_t *o, err_t *e);
/* Reads the [trace] section (strings stay owned by cfg). */
int tr_opts_from_cfg(const cfg_t *cfg, tr_opts_t *o, err_t *e);
/* The file paths of [trace] (path, in_path, out_path) resolved as cfg_path
 * does: relative to the config file that set them, else to the working
 * directory. o's path fields then point into p; keep p while o is used. */
typedef struct tr_paths {
	char path[4096], in[4096], out[4096];
} tr_paths_t;
int tr_opts_paths(const cfg_t *cfg, tr_opts_t *o, tr_paths_t *p, err_t *e);
const char *tr_kind_name(tr_kind_t k);
const char *tr_gen_name(tr_gen_kind_t g);
/* n bursts (or decoy groups) of the fanout generator at load multiplier s:
 * n * s rounded half up (saturating). */
uint32_t tr_gen_scaled_count(uint32_t n, double s);
int tr_kind_parse(const char *s, tr_kind_t *k);
int tr_gen_parse(const char *s, tr_gen_kind_t *g);

/* ---- reading ------------------------------------------------------------ */

/* Opens the trace described by the [trace] config section. sim_block_tokens
 * is the simulator's KV block size (the reader remaps when the trace's block
 * size differs). seed drives generators and prefix models. */
int tr_open_cfg(const cfg_t *cfg, uint32_t sim_block_tokens, uint64_t seed, tr_reader_t **out,
                err_t *e);
/* The same from an options struct (copied, strings included). */
int tr_open(const tr_opts_t *o, uint32_t sim_block_tokens, uint64_t seed, tr_reader_t **out,
            err_t *e);
/* 1 = got one, 0 = end, <0 = KS_E* with "file:line: field: reason". */
int tr_next(tr_reader_t *r, tr_request_t *out, err_t *e);
void tr_close(tr_reader_t *r);
/* The path, or "gen:KIND". */
const char *tr_source(const tr_reader_t *r);
/* The detected or configured kind, and the trace's own block size (0: none). */
tr_kind_t tr_kind(const tr_reader_t *r);
uint32_t tr_trace_block_tokens(const tr_reader_t *r);
/* Bytes of trace text consumed so far, decompressed (0 for generators). */
uint64_t tr_bytes_read(const tr_reader_t *r);
/* Detects the format of a file from its first line. */
int tr_detect(const char *path, tr_kind_t *k, err_t *e);
/* The same, reading lines of at most max_line bytes (0: TR_MAX_LINE_DEFAULT). */
int tr_detect_max(const char *path, uint64_t max_line, tr_kind_t *k, err_t *e);
/* How far the reader is, 0..1, estimated from what bounds the trace (limit,
 * end_s, a generator's duration or count, the file's size); -1 when
 * nothing tells. For progress lines, never for results. */
double tr_progress(const tr_reader_t *r);
/* After the reader has ended: KS_EINPUT with "[trace] KEY: reason" when the
 * source had rows but none of them came out (a window past the end of the
 * trace, every row dropped as failed), else 0. */
int tr_check_nonempty(const tr_reader_t *r, err_t *e);
/* Reads the whole trace once; *rows gets the count. The first error wins. */
int tr_validate(const tr_opts_t *o, uint32_t sim_block_tokens, uint64_t seed, uint64_t *rows,
                err_t *e);
/* SHA-256 of a file as 64 hex chars + NUL (nettle). */
int tr_file_sha256(const char *path, char out[65], err_t *e);
/* tr_file_sha256, hashing each trace file once: the digest is kept by
 * path, size, mtime (ns), device and inode, in this process and in the
 * file trace-sha256 of the per-user cache directory: $KVSIM_CACHE_DIR
 * when set, else $XDG_CACHE_HOME/kvsim, else ~/.cache/kvsim (the XDG base
 * directory spec's place for data that can be regenerated). Only regular
 * files are kept. A file whose size, mtime or inode
 * changed is hashed again; a file modified in the last 2 s is hashed but
 * not cached (its mtime may not yet tell a later write in the same tick
 * apart, git's "racy clean" case). The cache file is best effort: a
 * missing, unreadable or unwritable one only costs the hash. Lines are
 * appended with one write each, so concurrent sweep workers do not mix
 * them; past 1 MiB the file starts over. Errors as tr_file_sha256. */
int tr_file_sha256_cached(const char *path, char out[65], err_t *e);
/* Forgets the in-process digests (tests; the cache file stays). */
void tr_sha256_cache_reset(void);

/* ---- parsed-trace cache ------------------------------------------------- */

/* A file trace read to its end without error is kept, as the exact
 * requests tr_next returned, in the cache directory: $KVSIM_CACHE_DIR when
 * set, else the digest cache's (above). The next tr_open of the same file
 * version (path, size, mtime, device, inode) with the same options,
 * simulated block size and seed, by the same kvsim binary, serves them
 * without parsing: results are identical either way. An entry that is
 * missing, of another version, truncated or failing its checksum is ignored
 * and rewritten, never trusted; files changed in the last 2 s, traces with
 * empirical length models and traces over 512 MiB of requests are not
 * cached. Past 1 GiB of entries in all the oldest written go first.
 * Entries are written to a temporary name and renamed, so
 * concurrent readers see a whole entry or none. Best effort: an unwritable
 * directory costs the parse only. On by default; off for the process with
 * tr_cache_set_enabled(0) (kvsim run/sweep --no-trace-cache). */
void tr_cache_set_enabled(int on);
int tr_cache_enabled(void);
/* 1 when r serves its requests from the cache. */
int tr_cached(const tr_reader_t *r);

/* ---- block ids ---------------------------------------------------------- */

/* The 64-bit mixer that chains ids: a strong finaliser over (h, x). */
uint64_t tr_mix(uint64_t h, uint64_t x);
/* The id of the empty prefix (the chain's start). */
#define TR_ROOT_ID 0x6b7673696d2d7472ULL

/* ---- native format ------------------------------------------------------ */

/* Native format, version 1 (text, one request per line, tab-separated):
 *   #kvsim-trace 1 block_tokens=B ids=prefix
 *   #arrival_ns	input_len	output_len	status	session_id	blocks
 *   0	1500	200	0	0	9f2c...,03ab...
 * arrival_ns non-decreasing; status 0 ok, 1 failed; blocks = floor(input_len/B) ids as 16 hex
 * digits separated by commas, each the chained prefix id of its block, or "-" when there is no
 * full block (input_len < B; "-" for a longer prompt is an error). Lines starting with
 * '#' after the first are comments. */
typedef struct tr_writer tr_writer_t;
int tr_writer_open(const char *path, uint32_t block_tokens, tr_writer_t **out, err_t *e);
int tr_writer_put(tr_writer_t *w, const tr_request_t *r, err_t *e);
/* Flushes and closes; the file appears under its name only when complete. */
int tr_writer_close(tr_writer_t *w, err_t *e);
void tr_writer_abort(tr_writer_t *w);

/* ---- statistics (kvsim trace stats) ------------------------------------- */

typedef struct tr_len_stats {
	double mean;
	uint32_t p50, p99, max;
} tr_len_stats_t;

typedef struct tr_stats {
	uint64_t rows, failed;
	double duration_s, mean_rate; /* rows / duration */
	double iat_cv;                /* inter-arrival sd / mean */
	double peak_to_mean[3];       /* counts in 1, 10, 60 s windows */
	double vmr_60s;               /* variance-to-mean of 60 s counts */
	tr_len_stats_t in, out;
	uint64_t blocks, reused_blocks;  /* full blocks; those seen before */
	uint64_t tokens, reused_tokens;  /* input tokens; in reused blocks */
	double reuse_block, reuse_token; /* reused / total */
	uint64_t distinct_blocks;
	uint64_t prefixes_half_reuse; /* fewest distinct ids carrying half the hits */
	uint32_t block_tokens;
	int reuse_counted; /* 0 when computed without reuse */
} tr_stats_t;

/* Reads r to its end. With reuse == 0 the prefix counts are skipped and
 * memory stays constant; with it, memory grows with distinct block ids. */
int tr_stats_compute(tr_reader_t *r, int reuse, tr_stats_t *s, err_t *e);
void tr_stats_print(const tr_stats_t *s, const char *source, int json, FILE *f);

#endif
