/* out_exec — runs a sweep's points (see out_sweep.h): forked children write
 * HDF5 and report metrics over a pipe; the parent (or MPI rank 0) owns the
 * catalog, retries crashed points once and shows progress. This file
 * prepares the sweep (points, directory, lock, catalog, queue) and ends it;
 * the rest is in out_exec_coord.c, out_exec_mpi.c and out_exec_proc.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef KVSIM_HAVE_MPI
#include <mpi.h>
#endif

#include "sim/out/out_exec_int.h"

/* ---- the sweep ---------------------------------------------------------- */

/* Headroom under the open-file limit for what the parent keeps open besides
 * one pipe per worker (standard streams, the lock, the catalog's SQLite
 * files, HDF5): own choice, several times what a sweep was seen to use. */
enum { SWEEP_FD_RESERVE = 32 };

/* -j N needs N pipes open at once and poll() refuses more descriptors than
 * the open-file limit (EINVAL): such a -j is refused before the sweep
 * creates anything, naming the limit. */
static int jobs_check(unsigned jobs, err_t *e)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	rlim_t most = rl.rlim_cur > 2 * SWEEP_FD_RESERVE ? rl.rlim_cur - SWEEP_FD_RESERVE
							 : rl.rlim_cur / 2;
	if (jobs <= most)
		return 0;
	return err_set(e, KS_EINPUT,
		       "-j %u: more workers than the open-file limit allows (ulimit -n is %llu, "
		       "one pipe per worker and %d for the rest): use -j %llu or fewer, or raise "
		       "the limit",
		       jobs, (unsigned long long)rl.rlim_cur, SWEEP_FD_RESERVE,
		       (unsigned long long)(most ? most : 1));
}

/* What prepare created, so that a rejected sweep removes it again. */
typedef struct made {
	char top[4096]; /* shallowest directory created ("" when none) */
	int runs, lock, catalog;
} made_t;

static int exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

/* Notes in m->top the shallowest missing directory of dir (dir itself when
 * only it is missing). */
static void note_missing_dirs(const char *dir, made_t *m)
{
	char p[4096];
	snprintf(p, sizeof p, "%s", dir);
	m->top[0] = '\0';
	while (*p && !exists(p)) {
		snprintf(m->top, sizeof m->top, "%s", p);
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
	}
}

/* Removes what prepare made, deepest first; rmdir leaves any directory that
 * something else has filled meanwhile. The lock goes last but one, while
 * still held, so no other sweep can open the catalog files being removed. */
static void unmake(const char *dir, const made_t *m)
{
	char p[4200];
	static const char *const cat_files[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; m->catalog && i < sizeof cat_files / sizeof cat_files[0]; i++) {
		snprintf(p, sizeof p, "%s/%s%s", dir, OUT_CATALOG_FILE, cat_files[i]);
		unlink(p);
	}
	if (m->runs) {
		snprintf(p, sizeof p, "%s/runs", dir);
		rmdir(p);
	}
	if (m->lock) {
		snprintf(p, sizeof p, "%s/.sweep.lock", dir);
		unlink(p);
	}
	if (!m->top[0])
		return;
	snprintf(p, sizeof p, "%s", dir);
	for (;;) {
		rmdir(p);
		char *slash = strrchr(p, '/');
		if (!strcmp(p, m->top) || !slash || slash == p)
			break;
		*slash = '\0';
	}
}

/* Builds every point first (a bad axis value is an input error before
 * anything exists on disk), then takes the directory, its lock and catalog,
 * and queues each point the catalog and its file do not vouch for. */
static int prepare(sweep_t *s, const out_grid_t *g, const cfg_t *base, made_t *m, err_t *e)
{
	const out_sweep_opts_t *o = s->o;
	size_t n = out_grid_points(g);
	s->pts = calloc(n ? n : 1, sizeof *s->pts);
	s->queue = calloc(n ? MAX_TRIES * n : 1, sizeof *s->queue);
	s->tries = calloc(n ? n : 1, 1);
	if (!s->pts || !s->queue || !s->tries)
		return err_set(e, KS_ENOMEM, "out of memory");
	int rc;
	for (size_t i = 0; i < n; i++) {
		out_point_t *pt = &s->pts[s->npts];
		if ((rc = out_point_make(g, base, o->seed_key, i, pt, e)))
			return rc;
		int dup = 0;
		for (size_t j = 0; j < s->npts && !dup; j++)
			dup = !strcmp(s->pts[j].id, pt->id);
		if (dup) /* two axis values that resolve to the same config */
			out_point_free(pt);
		else
			s->npts++;
	}
	char p[4200];
	note_missing_dirs(o->dir, m);
	if (out_mkdir_p(o->dir) < 0)
		return err_set(e, KS_EIO, "%s: cannot create directory: %s", o->dir, strerror(errno));
	snprintf(p, sizeof p, "%s/.sweep.lock", o->dir);
	m->lock = !exists(p);
	s->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (s->lock_fd < 0)
		return err_set(e, KS_EIO, "%s: %s", p, strerror(errno));
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		/* Another sweep writes here: wait for it, so that sweeps started
		 * together (a job array) all finish; Ctrl-C gives up. */
		m->lock = 0; /* the other sweep's, even if it made it just now */
		if (errno != EWOULDBLOCK)
			return err_set(e, KS_EIO, "%s: cannot lock: %s", p, strerror(errno));
		fprintf(stderr, "sweep: %s: another sweep is writing this results directory; "
				"waiting for it to finish (Ctrl-C gives up)\n",
			o->dir);
		while (flock(s->lock_fd, LOCK_EX) < 0) {
			if (errno != EINTR)
				return err_set(e, KS_EIO, "%s: cannot lock: %s", p, strerror(errno));
			if (out_exec_sigs.armed && out_exec_signal)
				return err_set(e, KS_ERUNTIME,
					       "interrupted by %s while waiting for another sweep "
					       "writing %s",
					       out_exec_signal == SIGINT ? "SIGINT" : "SIGTERM", o->dir);
		}
	}
	snprintf(p, sizeof p, "%s/runs", o->dir);
	m->runs = !exists(p);
	if (mkdir(p, 0777) < 0 && errno != EEXIST)
		return err_set(e, KS_EIO, "%s: cannot create directory: %s", p, strerror(errno));
	out_exec_clean_stale_tmp(p);
	snprintf(p, sizeof p, "%s/%s", o->dir, OUT_CATALOG_FILE);
	m->catalog = !exists(p);
	if ((rc = out_catalog_open(o->dir, 0, &s->cat, e)))
		return rc;
	const char *rev = out_exec_rev(o);
	size_t queued = 0;
	for (size_t k = 0; k < s->npts; k++) {
		out_point_t *pt = &s->pts[k];
		int v;
		if (out_exec_sigs.armed && out_exec_signal)
			return err_set(e, KS_ERUNTIME, "interrupted by %s before any point ran",
				       out_exec_signal == SIGINT ? "SIGINT" : "SIGTERM");
		s->st->total++;
		if ((rc = out_catalog_check(s->cat, pt->id, rev, o->keep_stale, &v, e)))
			return rc;
		if (v == OUT_CHECK_DONE || v == OUT_CHECK_KEPT) {
			if ((rc = out_catalog_mark_stale(s->cat, pt->id, v == OUT_CHECK_KEPT, e)))
				return rc;
			s->st->skipped++;
			s->st->kept_stale += v == OUT_CHECK_KEPT;
			out_point_free(pt);
			continue;
		}
		s->st->rerun_stale += v == OUT_CHECK_STALE;
		s->st->rerun_missing += v == OUT_CHECK_MISSING;
		s->st->rerun_damaged += v == OUT_CHECK_TRUNCATED || v == OUT_CHECK_CORRUPT;
		s->st->rerun_unverified += v == OUT_CHECK_UNVERIFIED;
		s->queue[s->qtail++] = k;
		queued++;
	}
	s->todo = queued;
	return 0;
}

int out_sweep_run(const out_grid_t *g, const cfg_t *base, const out_sweep_opts_t *o,
		  out_sweep_stats_t *st, err_t *e)
{
	memset(st, 0, sizeof *st);
	st->ranks = 1;
	if (!o->run || !o->dir)
		return err_set(e, KS_EINPUT, "sweep: no run function or results directory");
	sweep_t s = {.o = o, .st = st, .lock_fd = -1};
	int rank = 0, size = 1, rc = 0;
#ifdef KVSIM_HAVE_MPI
	int use_mpi = o->mpi != 0 && out_exec_mpi_world_size() > 1;
	if (use_mpi) {
		MPI_Init(NULL, NULL);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		MPI_Comm_size(MPI_COMM_WORLD, &size);
		st->rank = rank;
		st->ranks = size;
		if (rank != 0) {
			out_exec_mpi_work(g, base, o);
			MPI_Finalize();
			return 0;
		}
	}
#endif
	/* before anything is created: a refused sweep leaves nothing */
	if (size == 1 && (rc = jobs_check(o->jobs ? o->jobs : 1, e)))
		return rc;
	made_t made = {0};
	out_exec_signals_arm(); /* local: waited for in ppoll; rank 0: polled */
	int rejected = rc = prepare(&s, g, base, &made, e);
	s.progress = o->progress < 0 ? isatty(2) : o->progress;
	s.t0 = out_exec_now_s();
	if (!rc) {
		out_exec_progress_draw(&s, 0);
		if (size > 1) {
#ifdef KVSIM_HAVE_MPI
			rc = out_exec_mpi_coordinate(&s, size, e);
#endif
		} else {
			rc = out_exec_run_local(&s, e);
		}
		out_exec_progress_draw(&s, 1);
	}
	out_exec_warn_summary(&s);
#ifdef KVSIM_HAVE_MPI
	if (size > 1) {
		if (rc && s.st->done + s.st->failed == 0 && s.qhead == 0) {
			/* Preparing failed: with nothing queued, coordinating just
			 * tells every waiting rank to stop. */
			err_t ignored;
			s.qtail = 0;
			out_exec_mpi_coordinate(&s, size, &ignored);
		}
		MPI_Finalize();
	}
#endif
	for (size_t i = 0; i < s.npts; i++)
		out_point_free(&s.pts[i]);
	free(s.pts);
	free(s.queue);
	free(s.tries);
	out_catalog_close(s.cat);
	if (rejected)
		unmake(o->dir, &made);
	if (s.lock_fd >= 0)
		close(s.lock_fd);
	out_exec_signals_disarm();
	(void)rank;
	return rc;
}
