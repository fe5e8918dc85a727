/* out_exec_int — what the files that run a sweep's points share (see
 * out_sweep.h): the report a worker sends, the coordinator's state, the
 * sweep's signal handling. Internal to sim/out; not an API. out_exec.c
 * prepares and ends the sweep, out_exec_coord.c keeps the catalog and runs
 * local workers, out_exec_mpi.c hands points to MPI ranks, out_exec_proc.c
 * forks a point's worker and reads its report. Functions that can fail
 * return 0 or a KS_E* code with e set.
 */
#ifndef KVSIM_OUT_EXEC_INT_H
#define KVSIM_OUT_EXEC_INT_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "sim/out/out_sweep.h"

enum { REP_OK = 0, REP_ERROR = 1, REP_CRASH = 2 };
#define MAX_TRIES 2 /* a crashed point is retried once */

typedef struct report {
	int kind, code;
	double wall_s;
	res_metric_t *metric;
	size_t n_metric;
	uint64_t h5_size;
	char h5_sha256[65];
	char err[1024];
	char warn[4096]; /* the worker's stderr: its warnings, one a line */
} report_t;

typedef struct buf {
	char *p;
	size_t len, cap;
} buf_t;

typedef struct slot {
	pid_t pid;
	int fd;
	size_t k; /* index into the todo list */
	buf_t b;
} slot_t;

typedef struct sweep {
	const out_sweep_opts_t *o;
	out_sweep_stats_t *st;
	out_catalog_t *cat;
	out_point_t *pts; /* every distinct point; those skipped are freed */
	size_t npts, todo; /* todo: points queued to run */
	size_t *queue, qhead, qtail; /* todo indices; retries go to the back */
	unsigned char *tries;
	int progress;
	int lock_fd;
	double t0, last_draw;
	struct warn_seen *ws; /* the distinct lines workers wrote to stderr */
	size_t nws, cws;
} sweep_t;

/* ---- worker processes and signals (out_exec_proc.c) --------------------- */

/* SIGINT and SIGTERM stop a local sweep in order (out_sweep_run): the
 * handler only notes the signal; the parent keeps both blocked except while
 * it waits in ppoll, so a signal can never slip in between a check and the
 * wait. Workers get the default actions and the mask back. */
extern volatile sig_atomic_t out_exec_signal; /* the signal noted; 0 none */
extern struct out_exec_sigs {
	int armed;
	sigset_t old_mask;
	struct sigaction old_int, old_term;
} out_exec_sigs;
void out_exec_signals_arm(void);
/* Blocks (block != 0) or unblocks SIGINT and SIGTERM. */
void out_exec_signals_block(int block);
void out_exec_signals_disarm(void);

/* Appends n bytes of d to b; -1 when out of memory. */
int out_exec_buf_put(buf_t *b, const void *d, size_t n);
/* A report as bytes into b; -1 when out of memory. */
int out_exec_rep_encode(buf_t *b, const report_t *r);
/* 0 when b holds exactly one complete report, then in *r. */
int out_exec_rep_decode(const buf_t *b, report_t *r);
/* Monotonic seconds. */
double out_exec_now_s(void);
/* The revision a sweep records: opts git_rev, or this build's. */
const char *out_exec_rev(const out_sweep_opts_t *o);
/* Forks point p's worker into slot s, reading its report over a pipe;
 * close_fd: a descriptor the child must not keep (the sweep lock). */
int out_exec_spawn(const out_point_t *p, const out_sweep_opts_t *o, int close_fd, slot_t *s,
		   err_t *e);
/* Reaps slot s's worker and turns what it sent into *r; a worker that died
 * without a complete report is a crash. */
void out_exec_reap(slot_t *s, report_t *r);

/* ---- the coordinator (out_exec_coord.c) --------------------------------- */

/* Redraws the progress line (at most every 0.2 s unless final). */
void out_exec_progress_draw(sweep_t *s, int final);
/* Says each warning the workers gave once more, with its count, and
 * forgets them. */
void out_exec_warn_summary(sweep_t *s);
/* Point k's row marked running, one more try counted. */
int out_exec_start_point(sweep_t *s, size_t k, err_t *e);
/* What point k's report says, into the catalog (a crash is queued again
 * while it has tries left); frees r's metrics. */
int out_exec_finish_point(sweep_t *s, size_t k, report_t *r, err_t *e);
int out_exec_mark_interrupted(sweep_t *s, size_t k, const char *why, err_t *e);
void out_exec_clean_stale_tmp(const char *runs);
void out_exec_clean_runs_tmp(sweep_t *s);
/* Runs the queued points on local workers (opts jobs at a time). */
int out_exec_run_local(sweep_t *s, err_t *e);

/* ---- MPI ranks (out_exec_mpi.c) ----------------------------------------- */

#ifdef KVSIM_HAVE_MPI
int out_exec_mpi_coordinate(sweep_t *s, int size, err_t *e);
void out_exec_mpi_work(const out_grid_t *g, const cfg_t *base, const out_sweep_opts_t *o);
/* The job's rank count as mpirun gives it (0 when not under mpirun). */
int out_exec_mpi_world_size(void);
#endif

#endif
