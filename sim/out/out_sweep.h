/* out_sweep — parameter sweeps: a grid of points, each one run into its own
 * HDF5 file and catalog row, resumable, on local worker processes or MPI.
 *
 * A grid is the Cartesian product of its --grid axes and of one paired axis
 * made of every --zip axis (all zip axes have the same length and advance
 * together), times N seeds. Points are numbered with the first axis slowest
 * and the seed fastest. Seed i of N comes from the base config's seed key:
 * seed 0 is the base seed itself, the others are splitmix64 mixes of it
 * (31-bit, distinct), so the same command always gives the same seeds.
 * A point's identity is the SHA-256 of its resolved config text (comment
 * lines left out), its seed and, when it reads files, the SHA-256 of each
 * file's content (out_point_inputs): a trace, GPU or model spec,
 * calibration or profile edited in place is another point. Its file is
 * DIR/runs/<first 16 hex of id>.h5 and its row is keyed by id; ids are
 * shown by their first 16 hex digits everywhere and any unique prefix
 * names a run.
 *
 * out_sweep_run executes every point that DIR's catalog and files do not
 * vouch for (out_catalog_check): a point runs unless its row is 'done', its
 * file has the size and SHA-256 the row recorded, and the row's revision is
 * this build's (out_build_rev, or opts git_rev) — or, with keep_stale,
 * another one, and then the row is marked stale. Each point runs in a
 * fork()ed child (run function, HDF5 write, file digest), which reports
 * metrics and digest to the parent over a pipe; only the parent writes the
 * catalog. All points are built before anything is created on disk, and a
 * sweep rejected before its first point (bad axis value, catalog
 * unreadable) removes the directory, lock and catalog it created. A sweep
 * whose directory another sweep is writing (DIR/.sweep.lock) says so on
 * stderr and waits for it, then skips what that one did. A child that dies without a report is retried once in the same
 * sweep, then marked failed; a run function error fails the point at once.
 * Both are recorded with their error and the sweep carries on. SIGINT or
 * SIGTERM stops a local sweep in order: no new point starts, the workers
 * in flight are killed and reaped, their points marked 'interrupted' (the
 * attempt not counted, their temporaries removed; a worker that had already
 * reported keeps its result), and out_sweep_run returns KS_ERUNTIME naming
 * the signal; the next sweep runs the interrupted points as if they had
 * never started. Under
 * mpirun (built with KVSIM_HAVE_MPI, OMPI_COMM_WORLD_SIZE > 1), rank 0 hands
 * points out one at a time and owns the catalog; other ranks run points the
 * same way. Results depend only on the point, never on -j or the rank count.
 * Errors: KS_EINPUT (bad axis, unknown key, bad value), KS_EIO (catalog,
 * lock, results directory), KS_ENOMEM; failed points are not errors.
 */
#ifndef KVSIM_OUT_SWEEP_H
#define KVSIM_OUT_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"
#include "sim/out/out_catalog.h"
#include "sim/out/out_hdf5.h"
#include "sim/base/results.h"

/* Runs one experiment: fills *res (later released with sim_results_free),
 * returns 0 or a KS_E* code with e set. sim_run fits through a wrapper. */
typedef int (*out_run_fn)(const cfg_t *cfg, sim_results_t *res, err_t *e, void *ctx);

typedef struct out_grid out_grid_t;

out_grid_t *out_grid_new(void);
void out_grid_free(out_grid_t *g);
/* Adds an axis: "section.key=v1,v2,..." or "section.key=start:stop:step"
 * (stop inclusive). zip != 0 adds it to the paired axis. */
int out_grid_add(out_grid_t *g, const char *spec, int zip, err_t *e);
/* Number of seeds per grid point (default 1). */
int out_grid_set_seeds(out_grid_t *g, unsigned n, err_t *e);
/* Number of points (axes product x seeds). */
size_t out_grid_points(const out_grid_t *g);

uint64_t out_seed_derive(uint64_t base, unsigned i);

typedef struct out_point {
	size_t index;
	cfg_t *cfg;           /* owned: base + axis values + seed, finalized */
	uint64_t seed;
	out_param_t *params;  /* owned array; strings point into the grid */
	size_t n_params;
	char *inputs;         /* owned: out_point_inputs' text ("" when none) */
	char id[65];          /* SHA-256 hex of config text + seed + inputs */
	char digest[65];      /* cfg_digest */
	char h5_rel[64];      /* "runs/<id16>.h5" */
} out_point_t;

/* Builds point i over base (finalized). seed_key ("section.key") may be NULL
 * or absent from the schema only when there is one seed. */
int out_point_make(const out_grid_t *g, const cfg_t *base, const char *seed_key, size_t i,
		   out_point_t *p, err_t *e);
void out_point_free(out_point_t *p);
/* Names, once per sweep, each axis of g that has no effect on some of its
 * points (cfg_key_inert: a key outside its condition, a parameter of a
 * policy the point does not select), on f (NULL: nothing): "kvsim sweep:
 * warning: --grid KEY: on N of M points (the first: KEY = VALUE): WHY; they
 * still run, each with its own row". Points count without their seeds. A
 * point that does not build is left to the sweep to report; out_point_make
 * says nothing about its axis values itself. 0 or KS_ENOMEM. */
int out_grid_note_inert(const out_grid_t *g, const cfg_t *base, FILE *f);
/* The identity of a run: SHA-256 hex of the config text without its comment
 * lines, followed by "\nseed=SEED\n" and, when inputs is not empty,
 * "inputs:\n" and inputs (out_point_inputs' text). */
void out_point_id(const char *config_text, uint64_t seed, const char *inputs, char id[65]);


/* DIR/runs/.write.lock (runs = DIR/runs): a run recorded outside a sweep
 * holds it shared while it writes its temporary and renames it; a sweep
 * holds it exclusive while it removes the *.h5.tmp its stopped workers
 * left, so it never takes a temporary that someone is still writing.
 * Returns the descriptor to give out_runs_unlock, or -1 when the lock
 * cannot be had (then nothing is held and the caller goes on unlocked). */
int out_runs_lock(const char *runs, int exclusive);
void out_runs_unlock(int fd);

/* Records one finished run outside a sweep (kvsim run): writes
 * DIR/runs/<id16>.h5 and a 'done' catalog row with params (may be NULL),
 * every metric of r and the file's ledger entry (size, SHA-256, revision:
 * r->git_rev, or this build's). id (may be NULL) receives the identity. */
int out_run_record(const char *dir, const cfg_t *cfg, const sim_results_t *r,
		   const out_param_t *params, size_t n_params, const out_hdf5_opts_t *h5,
		   char id[65], err_t *e);
/* The same for a run that also loaded plugins (their files are inputs). */
int out_run_record_plugins(const char *dir, const cfg_t *cfg, const sim_results_t *r,
			   const char *const *plugins, size_t n_plugins, const out_hdf5_opts_t *h5,
			   char id[65], err_t *e);
/* The identity out_run_record_plugins gives a run of cfg and seed with
 * those plugins, before it runs (to name it in warnings). */
int out_run_id(const cfg_t *cfg, uint64_t seed, const char *const *plugins, size_t n_plugins,
	       char id[65], err_t *e);

/* Before a run that out_run_record_plugins would record in dir: its id
 * (config text, seed, the content of its inputs and plugins) and what dir
 * holds of it, as a sweep of this build would see it (out_catalog_check,
 * OUT_CHECK_*; TODO when dir has no catalog). Reads the catalog only. */
int out_run_lookup(const char *dir, const cfg_t *cfg, uint64_t seed, const char *const *plugins,
		   size_t n_plugins, char id[65], int *verdict, err_t *e);

typedef struct out_sweep_opts {
	const char *dir;      /* results directory (created) */
	unsigned jobs;        /* local worker processes, >= 1 */
	int progress;         /* -1: when stderr is a terminal, 0 off, 1 on */
	const char *seed_key; /* "experiment.seed" */
	out_run_fn run;
	void *run_ctx;
	out_hdf5_opts_t h5;
	int mpi;              /* -1: use MPI when launched by mpirun, 0: never */
	int keep_stale;       /* keep intact points of another revision */
	const char *git_rev;  /* the revision to record and compare; NULL: this
			       * build's (out_build_rev) */
} out_sweep_opts_t;

typedef struct out_sweep_stats {
	size_t total;   /* points in the grid (distinct ids) */
	size_t skipped; /* already done in the catalog (kept_stale included) */
	size_t done, failed, retried;
	size_t rerun_stale;   /* of the points run: done by another revision */
	size_t rerun_missing; /* done, but the file was gone */
	size_t rerun_damaged; /* done, but the file was truncated or corrupt */
	size_t rerun_unverified; /* done, but no digest of its file was recorded */
	size_t kept_stale;    /* skipped though of another revision (keep_stale) */
	size_t failed_input; /* of failed: by an input error (bad config or trace) */
	int interrupted;      /* SIGINT or SIGTERM when a signal stopped the sweep */
	size_t interrupted_points; /* in flight then, now 'interrupted' */
	int rank;       /* MPI rank (0 when local); only rank 0 has counts */
	int ranks;      /* 1 when local */
} out_sweep_stats_t;

int out_sweep_run(const out_grid_t *g, const cfg_t *base, const out_sweep_opts_t *o,
		  out_sweep_stats_t *st, err_t *e);

/* ---- capacity search (kvsim sweep --capacity; out_capacity.c) ------------
 *
 * For every point of g (seeds included) a bisection in log space finds the
 * highest value of key in [lo, hi] at which the summary metric meets the
 * target (metric >= target), assuming it meets it at every value below
 * one where it does (monotone: more load never helps). Probes go in rounds:
 * the first probes lo and hi, each later one the geometric mean of the
 * bracket (printed to 6 significant digits, the value then used), until
 * hi / lo <= 1 + tol or max_probes probes (lo and hi included). Each round
 * is one out_sweep_run over the round's probes (zipped axes: the point's
 * parameters, key, and experiment.seed when g has several seeds), so every
 * probe is an ordinary, resumable catalog row and results do not depend on
 * the workers. A probe whose run failed, or whose metric is NaN, fails the
 * target; a failed run ends its search with verdict "failed". */
typedef struct out_capacity_opts {
	const char *key;     /* "section.key" */
	double lo, hi;       /* 0 < lo < hi */
	const char *metric;  /* summary metric name */
	double target;
	double tol;          /* > 0 */
	unsigned max_probes; /* >= 2 */
} out_capacity_opts_t;

typedef struct out_capacity_result {
	size_t point;      /* index in g */
	uint64_t seed;
	char params[512];  /* "k=v k=v" (g's parameters; "" for none) */
	double value;      /* highest value meeting the target; NaN: none */
	double lo, hi;     /* the last bracket: lo met it, hi did not (NaN: unknown) */
	unsigned probes;
	const char *verdict; /* "bracketed", "lo_fails", "hi_passes", "probe_limit", "failed" */
} out_capacity_result_t;

/* Runs every search into so->dir (whose catalog also gets a "capacity" row
 * per search, out_catalog_capacity_put); *res (n entries, malloc'd) in g's
 * point order. Errors as out_sweep_run's, and KS_EINPUT when key is one of
 * g's axes or the metric is no catalog column. */
int out_capacity_run(const out_grid_t *g, const cfg_t *base, const out_sweep_opts_t *so,
		     const out_capacity_opts_t *co, out_capacity_result_t **res, size_t *n,
		     err_t *e);

#endif
