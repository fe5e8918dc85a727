/* out_exec — runs a sweep's points (see out_sweep.h): forked children write
 * HDF5 and report metrics over a pipe; the parent (or MPI rank 0) owns the
 * catalog, retries crashed points once and shows progress. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef KVSIM_HAVE_MPI
#include <mpi.h>
#endif

#include <hdf5.h>

#include "sim/base/cli_voice.h"
#include "sim/base/file.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"
#include "sim/out/out_sweep.h"

#define REP_MAGIC 0x6b767270u /* "kvrp" */
enum { REP_OK = 0, REP_ERROR = 1, REP_CRASH = 2 };
#define MAX_TRIES 2 /* a crashed point is retried once */

typedef struct rep_hdr {
	uint32_t magic;
	int32_t kind; /* REP_* */
	int32_t code; /* KS_E* for REP_ERROR */
	uint32_t n_metric;
	uint32_t err_len;
	uint32_t warn_len; /* what the run wrote to stderr, after the metrics */
	double wall_s;
	uint64_t h5_size;     /* the written file, for the ledger (REP_OK) */
	char h5_sha256[64];
} rep_hdr_t;

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

static int buf_put(buf_t *b, const void *d, size_t n)
{
	if (VEC_GROW(b->p, b->cap, b->len + n, 256))
		return -1;
	memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

static int rep_encode(buf_t *b, const report_t *r)
{
	size_t el = strnlen(r->err, sizeof r->err - 1), n = r->n_metric;
	size_t wl = strnlen(r->warn, sizeof r->warn - 1);
	rep_hdr_t h = {REP_MAGIC, r->kind, r->code, (uint32_t)n, (uint32_t)el, (uint32_t)wl,
		       r->wall_s, r->h5_size, {0}};
	memcpy(h.h5_sha256, r->h5_sha256, sizeof h.h5_sha256);
	b->len = 0;
	return buf_put(b, &h, sizeof h) || (el && buf_put(b, r->err, el)) ||
			       (n && buf_put(b, r->metric, n * sizeof *r->metric)) ||
			       (wl && buf_put(b, r->warn, wl))
		       ? -1
		       : 0;
}

/* 0 when b holds exactly one complete report. */
static int rep_decode(const buf_t *b, report_t *r)
{
	memset(r, 0, sizeof *r);
	rep_hdr_t h;
	if (b->len < sizeof h)
		return -1;
	memcpy(&h, b->p, sizeof h);
	size_t mb = (size_t)h.n_metric * sizeof(res_metric_t);
	if (h.magic != REP_MAGIC || h.err_len > 1023 || h.warn_len >= sizeof r->warn ||
	    h.kind < REP_OK || h.kind > REP_CRASH ||
	    b->len != sizeof h + h.err_len + mb + h.warn_len)
		return -1;
	memcpy(r->warn, b->p + sizeof h + h.err_len + mb, h.warn_len);
	r->warn[h.warn_len] = '\0';
	r->kind = h.kind;
	r->code = h.code;
	r->wall_s = h.wall_s;
	r->h5_size = h.h5_size;
	memcpy(r->h5_sha256, h.h5_sha256, sizeof h.h5_sha256);
	r->h5_sha256[64] = '\0';
	memcpy(r->err, b->p + sizeof h, h.err_len);
	r->err[h.err_len] = '\0';
	if (h.n_metric) {
		r->metric = malloc(h.n_metric * sizeof *r->metric);
		if (!r->metric)
			return -1;
		memcpy(r->metric, b->p + sizeof h + h.err_len, h.n_metric * sizeof *r->metric);
		for (size_t i = 0; i < h.n_metric; i++) {
			r->metric[i].name[sizeof r->metric[i].name - 1] = '\0';
			r->metric[i].unit[sizeof r->metric[i].unit - 1] = '\0';
		}
		r->n_metric = h.n_metric;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* SIGINT and SIGTERM stop a local sweep in order (out_sweep_run): the
 * handler only notes the signal; the parent keeps both blocked except while
 * it waits in ppoll, so a signal can never slip in between a check and the
 * wait. Workers get the default actions and the mask back. */
static volatile sig_atomic_t sweep_signal;
static struct {
	int armed;
	sigset_t old_mask;
	struct sigaction old_int, old_term;
} sweep_sigs;

static void sweep_on_signal(int sig)
{
	sweep_signal = sig;
}

static void sweep_signals_arm(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sweep_on_signal;
	sigemptyset(&sa.sa_mask);
	sweep_signal = 0;
	sigaction(SIGINT, &sa, &sweep_sigs.old_int);
	sigaction(SIGTERM, &sa, &sweep_sigs.old_term);
	sigprocmask(SIG_BLOCK, NULL, &sweep_sigs.old_mask);
	sweep_sigs.armed = 1;
}

static void sweep_signals_block(int block)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}

static void sweep_signals_disarm(void)
{
	if (!sweep_sigs.armed)
		return;
	sigaction(SIGINT, &sweep_sigs.old_int, NULL);
	sigaction(SIGTERM, &sweep_sigs.old_term, NULL);
	sigprocmask(SIG_SETMASK, &sweep_sigs.old_mask, NULL);
	sweep_sigs.armed = 0;
}

/* In a forked worker: the signal actions and mask the sweep started with. */
static void sweep_signals_child(void)
{
	if (!sweep_sigs.armed)
		return;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigprocmask(SIG_SETMASK, &sweep_sigs.old_mask, NULL);
}

static const char *sweep_rev(const out_sweep_opts_t *o)
{
	return o->git_rev ? o->git_rev : out_build_rev();
}

/* The child: run, write the HDF5 file, digest it, report, _exit (no atexit
 * handlers, no stdio flush: the parent's buffers and connections are not
 * ours). */
static void child_main(const out_point_t *p, const out_sweep_opts_t *o, int fd, pid_t parent)
{
	/* Die with the sweep: a SIGKILLed sweep must not leave runs behind. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(4); /* the sweep is gone already */
	double t0 = now_s();
	sim_results_t r;
	memset(&r, 0, sizeof r);
	err_t e = {0};
	static report_t rep; /* zero; static: no 5 kB on the stack */
	/* what the run says on stderr goes to the parent, which names the
	 * point and says each warning once per sweep */
	FILE *said = tmpfile();
	if (said && dup2(fileno(said), STDERR_FILENO) < 0) {
		fclose(said);
		said = NULL;
	}
	int rc = o->run(p->cfg, &r, &e, o->run_ctx);
	if (!rc) {
		if (!r.config_text)
			r.config_text = cfg_text(p->cfg);
		if (!r.seed)
			r.seed = p->seed;
		if (!r.start_unix)
			r.start_unix = (int64_t)time(NULL);
		snprintf(r.git_rev, sizeof r.git_rev, "%s", sweep_rev(o));
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", o->dir, p->h5_rel);
		rc = out_hdf5_write(path, &r, &o->h5, &e);
		if (!rc)
			rc = out_file_sha256(path, &rep.h5_size, rep.h5_sha256, &e);
	}
	buf_t b = {0};
	if (rc && !e.msg[0])
		err_set(&e, rc, "run failed: %s", err_name(rc));
	rep.kind = rc ? REP_ERROR : REP_OK;
	rep.code = rc;
	rep.wall_s = now_s() - t0;
	snprintf(rep.err, sizeof rep.err, "%s", rc ? e.msg : "");
	rep.metric = r.metric;
	rep.n_metric = rc ? 0 : r.n_metric;
	fflush(stderr);
	ssize_t got = said ? pread(fileno(said), rep.warn, sizeof rep.warn - 1, 0) : 0;
	rep.warn[got > 0 ? got : 0] = '\0';
	if (got == (ssize_t)sizeof rep.warn - 1 && strrchr(rep.warn, '\n'))
		strrchr(rep.warn, '\n')[1] = '\0'; /* whole lines only */
	if (rep_encode(&b, &rep) || file_write_all(fd, b.p, b.len))
		_exit(3);
	_exit(0);
}

typedef struct slot {
	pid_t pid;
	int fd;
	size_t k; /* index into the todo list */
	buf_t b;
} slot_t;

/* close_fd: a descriptor the child must not keep (the sweep lock). */
static int spawn(const out_point_t *p, const out_sweep_opts_t *o, int close_fd, slot_t *s,
		 err_t *e)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return err_set(e, KS_EIO, "pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return err_set(e, KS_EIO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		sweep_signals_child();
		signal(SIGINT, SIG_DFL); /* an MPI worker rank ignores them */
		signal(SIGTERM, SIG_DFL);
		close(pfd[0]);
		if (close_fd >= 0)
			close(close_fd);
		child_main(p, o, pfd[1], parent);
	}
	close(pfd[1]);
	s->pid = pid;
	s->fd = pfd[0];
	s->b.len = 0;
	return 0;
}

/* Reaps the child and turns what it sent into a report; a child that died
 * without a complete report is a crash. */
static void reap(slot_t *s, report_t *r)
{
	int status = 0;
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	close(s->fd);
	s->fd = -1;
	s->pid = 0;
	if (rep_decode(&s->b, r) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	free(r->metric);
	memset(r, 0, sizeof *r);
	r->kind = REP_CRASH;
	r->code = KS_ERUNTIME;
	if (WIFSIGNALED(status))
		snprintf(r->err, sizeof r->err, "worker killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(r->err, sizeof r->err, "worker exited with status %d without a report",
			 WEXITSTATUS(status));
}

/* ---- coordinator state (local parent or MPI rank 0) --------------------- */

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

/* A line the workers wrote (a warning): said once, at the first point that
 * wrote it, and counted over the points (out_sweep_run ends with the
 * counts). Lines that differ only in their numbers (a time, an instance)
 * are one warning. */
typedef struct warn_seen {
	char *shape; /* the line with each run of digits as '#' */
	char *first; /* as the first point wrote it */
	size_t points, last; /* points that wrote it; the last one's index + 1 */
} warn_seen_t;

/* The line's message (after "kvsim CMD: warning: ") into out, and its shape
 * into shape (both n bytes). */
static void warn_shape(const char *line, size_t len, char *out, char *shape, size_t n)
{
	const char *w = memmem(line, len, ": warning: ", 11);
	if (!strncmp(line, "kvsim", 5) && w && !memchr(line, ' ', 5) && w - line < 48) {
		len -= (size_t)(w + 11 - line);
		line = w + 11;
	}
	snprintf(out, n, "%.*s", (int)len, line);
	size_t j = 0;
	for (const char *p = out; *p && j + 1 < n; p++) {
		if (*p >= '0' && *p <= '9') {
			while (p[1] >= '0' && p[1] <= '9')
				p++;
			shape[j++] = '#';
		} else {
			shape[j++] = *p;
		}
	}
	shape[j] = '\0';
}

/* Counts and, the first time, says each line point k's worker wrote, naming
 * the point: "kvsim sweep: warning: point 3, run ID16 (seed S): MESSAGE". */
static void warn_note(sweep_t *s, size_t k, const char *text)
{
	const out_point_t *p = &s->pts[k];
	for (const char *l = text; *l;) {
		size_t len = strcspn(l, "\n");
		char msg[4096], shape[4096];
		warn_shape(l, len, msg, shape, sizeof msg);
		l += len + (l[len] == '\n');
		if (!*msg)
			continue;
		warn_seen_t *w = NULL;
		for (size_t i = 0; i < s->nws && !w; i++)
			if (!strcmp(s->ws[i].shape, shape))
				w = &s->ws[i];
		if (w) {
			w->points += w->last != k + 1;
			w->last = k + 1;
			continue;
		}
		if (VEC_GROW(s->ws, s->cws, s->nws + 1, 8))
			continue; /* out of memory: said again, not lost */
		w = &s->ws[s->nws];
		*w = (warn_seen_t){strdup(shape), strdup(msg), 1, k + 1};
		if (!w->shape || !w->first) {
			FREE_ALL(w->shape, w->first);
			continue;
		}
		s->nws++;
		char where[160];
		snprintf(where, sizeof where, "point %zu, run %.16s (seed %llu)", p->index, p->id,
			 (unsigned long long)p->seed);
		if (s->progress)
			fputs("\r\033[K", stderr); /* ECMA-48 EL: the progress line goes */
		cli_warn_where(where);
		cli_warn("%s", msg);
		cli_warn_where(NULL);
	}
}

/* The end of a sweep whose workers warned: each warning once, with the
 * number of points that gave it. */
static void warn_summary(sweep_t *s)
{
	size_t ran = s->st->done + s->st->failed;
	if (s->nws)
		fprintf(stderr, "sweep: %zu warning%s over the %zu point%s run (each said above at "
				"its first point):\n",
			s->nws, s->nws == 1 ? "" : "s", ran, ran == 1 ? "" : "s");
	for (size_t i = 0; i < s->nws; i++) {
		const warn_seen_t *w = &s->ws[i];
		int cut = strlen(w->first) > 200;
		fprintf(stderr, "  %zu of %zu: %.200s%s\n", w->points, ran, w->first, cut ? " [...]" : "");
		FREE_ALL(w->shape, w->first);
	}
	free(s->ws);
	s->ws = NULL;
	s->nws = s->cws = 0;
}

static void progress_draw(sweep_t *s, int final)
{
	if (!s->progress)
		return;
	double t = now_s();
	if (!final && t - s->last_draw < 0.2)
		return;
	s->last_draw = t;
	size_t fin = s->st->done + s->st->failed, all = s->todo;
	double el = t - s->t0, rate = el > 0 ? (double)fin / el : 0;
	double eta = rate > 0 ? (double)(all - fin) / rate : 0;
	fprintf(stderr, "\rsweep: %zu/%zu done, %zu failed, %zu skipped, %.2f points/s, ETA %d:%02d  ",
		s->st->done, all, s->st->failed, s->st->skipped, rate, (int)eta / 60,
		(int)eta % 60);
	if (final)
		fputc('\n', stderr);
	fflush(stderr);
}

static int start_point(sweep_t *s, size_t k, err_t *e)
{
	const out_point_t *p = &s->pts[k];
	out_run_info_t ri = {
		p->id, p->digest, p->seed, p->params, p->n_params, p->h5_rel, NULL, p->inputs};
	char *text = cfg_text(p->cfg);
	ri.config_text = text;
	int rc = out_catalog_begin(s->cat, &ri, e);
	free(text);
	s->tries[k]++;
	return rc;
}

static int finish_point(sweep_t *s, size_t k, report_t *r, err_t *e)
{
	int rc = 0;
	const out_point_t *p = &s->pts[k];
	if (r->kind != REP_CRASH)
		warn_note(s, k, r->warn);
	if (r->kind == REP_OK) {
		out_run_file_t f = {r->h5_size, "", sweep_rev(s->o)};
		memcpy(f.sha256, r->h5_sha256, sizeof f.sha256);
		rc = out_catalog_done_file(s->cat, p->id, r->metric, r->n_metric, r->wall_s, &f, e);
		/* per-window summaries travel in the run's file, not the report */
		res_window_t *w = NULL;
		size_t nw = 0;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", s->o->dir, p->h5_rel);
		if (!rc && !(rc = out_hdf5_read_windows(path, &w, &nw, e)) && nw)
			rc = out_catalog_windows_put(s->cat, p->id, w, nw, e);
		free(w);
		s->st->done++;
	} else if (r->kind == REP_CRASH && s->tries[k] < MAX_TRIES) {
		s->queue[s->qtail++] = k;
		s->st->retried++;
	} else {
		char msg[1200];
		snprintf(msg, sizeof msg, "%s%s",
			 r->kind == REP_CRASH ? "crashed on every attempt; last: " : "", r->err);
		rc = out_catalog_failed(s->cat, p->id, msg, e);
		s->st->failed++;
		s->st->failed_input += r->kind == REP_ERROR && r->code == KS_EINPUT;
	}
	free(r->metric);
	r->metric = NULL;
	progress_draw(s, 0);
	return rc;
}

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

/* Ends the workers still running (the sweep stops on an error it cannot
 * wait through): each is killed and reaped, its point left to a rerun. */
static void kill_active(slot_t *sl, unsigned jobs)
{
	for (unsigned j = 0; j < jobs; j++)
		if (sl[j].fd >= 0) {
			report_t r = {0};
			kill(sl[j].pid, SIGKILL);
			reap(&sl[j], &r);
			free(r.metric);
		}
}

/* Removes *.h5.tmp left by children of a killed sweep (we hold the lock). */
static void clean_stale_tmp(const char *runs)
{
	DIR *d = opendir(runs);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n > 7 && !strcmp(de->d_name + n - 7, ".h5.tmp")) {
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
	closedir(d);
}

/* Point k, in flight when the sweep was told to stop: 'interrupted' in the
 * catalog (rerun by the next sweep), and its file gone (one a worker
 * finished but did not report has no row). */
static int mark_interrupted(sweep_t *s, size_t k, const char *why, err_t *e)
{
	const out_point_t *p = &s->pts[k];
	int rc = out_catalog_interrupted(s->cat, p->id, why, e);
	char f[4200];
	snprintf(f, sizeof f, "%s/%s", s->o->dir, p->h5_rel);
	unlink(f);
	return rc;
}

/* The temporaries stopped workers left in DIR/runs. */
static void clean_runs_tmp(sweep_t *s)
{
	char runs[4200];
	snprintf(runs, sizeof runs, "%s/runs", s->o->dir);
	clean_stale_tmp(runs);
}

/* The sweep was told to stop by signal sig: each worker still running is
 * killed and reaped; one that had finished its report keeps its result,
 * the others' points become 'interrupted' (rerun by the next sweep), and
 * their temporaries go. The sweep then ends with KS_ERUNTIME naming the
 * signal. */
static int stop_on_signal(sweep_t *s, slot_t *sl, unsigned jobs, int sig, int rc, err_t *e)
{
	char why[64];
	snprintf(why, sizeof why, "interrupted by %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
	size_t stopped = 0;
	for (unsigned j = 0; j < jobs; j++) {
		if (sl[j].fd < 0)
			continue;
		/* what the worker sent so far: a complete report is a result */
		char tmp[8192];
		ssize_t got;
		int fl = fcntl(sl[j].fd, F_GETFL);
		fcntl(sl[j].fd, F_SETFL, fl | O_NONBLOCK);
		while ((got = read(sl[j].fd, tmp, sizeof tmp)) > 0)
			if (buf_put(&sl[j].b, tmp, (size_t)got))
				break;
		report_t r;
		kill(sl[j].pid, SIGKILL);
		reap(&sl[j], &r);
		if (r.kind != REP_CRASH) {
			int frc = finish_point(s, sl[j].k, &r, e);
			rc = rc ? rc : frc;
			continue;
		}
		err_t ie = {0};
		if (mark_interrupted(s, sl[j].k, why, &ie) && !rc)
			rc = err_set(e, ie.code, "%s", ie.msg);
		stopped++;
	}
	clean_runs_tmp(s);
	s->st->interrupted = sig;
	s->st->interrupted_points = stopped;
	if (rc)
		return rc;
	return err_set(e, KS_ERUNTIME,
		       "%s: %zu point(s) in flight marked interrupted, %zu done, %zu not "
		       "started; run the same command again to resume",
		       why, stopped, s->st->done, s->qtail - s->qhead);
}

static int run_local(sweep_t *s, err_t *e)
{
	unsigned jobs = s->o->jobs ? s->o->jobs : 1;
	slot_t *sl = calloc(jobs, sizeof *sl);
	struct pollfd *pf = calloc(jobs, sizeof *pf);
	int rc = 0;
	if (!sl || !pf) {
		free(sl);
		free(pf);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	unsigned active = 0;
	for (unsigned j = 0; j < jobs; j++)
		sl[j].fd = -1;
	/* Every point's child writes an HDF5 file: the library is set up once
	 * here, before the forks, not once in each (no file is open yet). */
	H5open();
	sigset_t wait_mask; /* SIGINT and SIGTERM come in only while waiting */
	sigprocmask(SIG_BLOCK, NULL, &wait_mask);
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGTERM);
	if (sweep_sigs.armed)
		sweep_signals_block(1);
	while (!rc || active) {
		if (sweep_sigs.armed && sweep_signal) {
			rc = stop_on_signal(s, sl, jobs, sweep_signal, rc, e);
			break;
		}
		for (unsigned j = 0; !rc && j < jobs && s->qhead < s->qtail; j++) {
			if (sl[j].fd >= 0)
				continue;
			size_t k = s->queue[s->qhead++];
			sl[j].k = k;
			if ((rc = start_point(s, k, e)) || (rc = spawn(&s->pts[k], s->o, s->lock_fd, &sl[j], e)))
				break;
			active++;
		}
		if (!active)
			break;
		nfds_t n = 0;
		for (unsigned j = 0; j < jobs; j++)
			pf[j] = (struct pollfd){sl[j].fd, POLLIN, 0};
		n = jobs;
		int ready = ppoll(pf, n, NULL, sweep_sigs.armed ? &wait_mask : NULL);
		/* A signal can come with ready workers (killed by the same
		 * Ctrl-C), and ppoll then returns them with the signal still
		 * pending: let it in, and stop first, so that none of them
		 * counts as a crash. */
		if (sweep_sigs.armed) {
			sweep_signals_block(0);
			sweep_signals_block(1);
			if (sweep_signal)
				continue;
		}
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			/* waiting again would fail again at once, forever */
			int en = errno;
			kill_active(sl, jobs);
			if (!rc)
				rc = err_set(e, KS_EIO, "waiting for %u workers: poll: %s", active,
					     strerror(en));
			break;
		}
		for (unsigned j = 0; j < jobs; j++) {
			if (sl[j].fd < 0 || !(pf[j].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char tmp[8192];
			ssize_t got = read(sl[j].fd, tmp, sizeof tmp);
			if (got < 0 && errno == EINTR)
				continue;
			if (got > 0) {
				if (buf_put(&sl[j].b, tmp, (size_t)got) && !rc)
					rc = err_set(e, KS_ENOMEM, "out of memory");
				continue;
			}
			report_t r;
			reap(&sl[j], &r);
			active--;
			int frc = finish_point(s, sl[j].k, &r, e);
			if (!rc)
				rc = frc;
		}
	}
	for (unsigned j = 0; j < jobs; j++)
		free(sl[j].b.p);
	free(sl);
	free(pf);
	return rc;
}

/* ---- MPI ---------------------------------------------------------------- */

#ifdef KVSIM_HAVE_MPI
enum { TAG_READY = 1, TAG_RESULT = 2, TAG_WORK = 3, TAG_STOP = 4 };

/* Rank 0 told to stop by signal sig: the points the ranks hold (holding[w]
 * = point + 1, 0 none) become 'interrupted' (rerun by the next sweep), their
 * files go, and the whole job ends with exit 1 (MPI_Abort: the ranks cannot
 * be asked to stop mid-point; their workers die with them, PR_SET_PDEATHSIG),
 * after saying what the local sweep says. */
static _Noreturn void mpi_interrupted(sweep_t *s, const size_t *holding, int size, int sig)
{
	char why[64];
	snprintf(why, sizeof why, "interrupted by %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
	size_t stopped = 0;
	err_t e = {0};
	for (int w = 1; w < size; w++) {
		if (!holding[w])
			continue;
		err_t ie = {0};
		if (mark_interrupted(s, holding[w] - 1, why, &ie) && !e.code)
			e = ie;
		stopped++;
	}
	clean_runs_tmp(s);
	if (!e.code)
		err_set(&e, KS_ERUNTIME,
			"%s: %zu point(s) in flight marked interrupted, %zu done, %zu not "
			"started; run the same command again to resume",
			why, stopped, s->st->done, s->qtail - s->qhead);
	progress_draw(s, 1);
	fprintf(stderr, "kvsim sweep: %s\n", e.msg);
	fflush(stderr);
	out_catalog_close(s->cat);
	s->cat = NULL;
	MPI_Abort(MPI_COMM_WORLD, 1);
	_exit(1);
}

/* Rank 0: hand points out one at a time as ranks ask; own the catalog. */
static int mpi_coordinate(sweep_t *s, int size, err_t *e)
{
	int *idle = calloc((size_t)size, sizeof *idle), n_idle = 0, stopped = 0;
	size_t *holding = calloc((size_t)size, sizeof *holding), in_flight = 0;
	buf_t b = {0};
	int rc = 0;
	if (!idle || !holding) {
		free(idle);
		free(holding);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	while (stopped < size - 1) {
		while (!rc && n_idle && s->qhead < s->qtail) {
			size_t k = s->queue[s->qhead++];
			int w = idle[--n_idle];
			if ((rc = start_point(s, k, e)))
				break;
			uint64_t gi = s->pts[k].index;
			holding[w] = k + 1;
			in_flight++;
			MPI_Send(&gi, 1, MPI_UINT64_T, w, TAG_WORK, MPI_COMM_WORLD);
		}
		if ((rc || s->qhead == s->qtail) && !in_flight) {
			uint64_t z = 0;
			for (int i = 0; i < n_idle; i++)
				MPI_Send(&z, 1, MPI_UINT64_T, idle[i], TAG_STOP, MPI_COMM_WORLD);
			stopped += n_idle;
			n_idle = 0;
			if (stopped == size - 1)
				break;
		}
		MPI_Status ms;
		int cnt, any = 0;
		/* waits for a message while watching for SIGINT and SIGTERM (mpirun
		 * forwards them to rank 0): polled, as MPI_Probe cannot be woken */
		while (!any) {
			MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &any, &ms);
			if (!any && sweep_signal)
				mpi_interrupted(s, holding, size, sweep_signal);
			if (!any)
				nanosleep(&(struct timespec){0, 500000}, NULL);
		}
		MPI_Get_count(&ms, MPI_BYTE, &cnt);
		b.len = 0;
		if (cnt > 0 && (size_t)cnt > b.cap) {
			char *p = realloc(b.p, (size_t)cnt);
			if (!p) {
				rc = err_set(e, KS_ENOMEM, "out of memory");
				break; /* cannot receive: nothing sane is left */
			}
			b.p = p;
			b.cap = (size_t)cnt;
		}
		MPI_Recv(b.p, cnt, MPI_BYTE, ms.MPI_SOURCE, ms.MPI_TAG, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		b.len = (size_t)cnt;
		if (ms.MPI_TAG == TAG_RESULT) {
			report_t r;
			if (rep_decode(&b, &r)) {
				memset(&r, 0, sizeof r);
				r.kind = REP_CRASH;
				snprintf(r.err, sizeof r.err, "rank %d sent a bad report", ms.MPI_SOURCE);
			}
			in_flight--;
			if (!rc)
				rc = finish_point(s, holding[ms.MPI_SOURCE] - 1, &r, e);
			holding[ms.MPI_SOURCE] = 0;
			free(r.metric);
		}
		idle[n_idle++] = ms.MPI_SOURCE;
	}
	free(b.p);
	free(idle);
	free(holding);
	return rc;
}

/* Other ranks: ask, run the point in a forked child, send the report.
 * SIGINT and SIGTERM are rank 0's to act on (mpirun sends SIGTERM to every
 * rank, then SIGKILL a second later): a worker rank that died of it first
 * would have the job torn down before rank 0 marks the points in flight.
 * Rank 0's MPI_Abort, or mpirun's SIGKILL, ends the workers; their
 * children, back at the default actions, die with them (PR_SET_PDEATHSIG). */
static void mpi_work(const out_grid_t *g, const cfg_t *base, const out_sweep_opts_t *o)
{
	buf_t b = {0};
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
	for (;;) {
		uint64_t gi;
		MPI_Status ms;
		MPI_Recv(&gi, 1, MPI_UINT64_T, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &ms);
		if (ms.MPI_TAG == TAG_STOP)
			break;
		/* Only now: a sweep that rank 0 rejects must leave no directory. */
		char runs[4096];
		snprintf(runs, sizeof runs, "%s/runs", o->dir);
		(void)out_mkdir_p(runs); /* a child that cannot write reports why */
		out_point_t p;
		err_t e = {0};
		report_t r = {0};
		if (out_point_make(g, base, o->seed_key, (size_t)gi, &p, &e)) {
			r.kind = REP_ERROR;
			snprintf(r.err, sizeof r.err, "%s", e.msg);
		} else {
			slot_t s = {0};
			if (spawn(&p, o, -1, &s, &e)) {
				r.kind = REP_CRASH;
				snprintf(r.err, sizeof r.err, "%s", e.msg);
			} else {
				char tmp[8192];
				ssize_t got;
				while ((got = read(s.fd, tmp, sizeof tmp)) != 0) {
					if (got < 0 && errno == EINTR)
						continue;
					if (got < 0 || buf_put(&s.b, tmp, (size_t)got))
						break;
				}
				reap(&s, &r);
				free(s.b.p);
			}
			out_point_free(&p);
		}
		if (rep_encode(&b, &r))
			b.len = 0; /* rank 0 reads an empty result as a bad report */
		free(r.metric);
		MPI_Send(b.p, (int)b.len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
	}
	free(b.p);
}

static int mpi_world_size(void)
{
	const char *s = getenv("OMPI_COMM_WORLD_SIZE");
	return s ? atoi(s) : 0;
}
#endif

/* ---- the sweep ---------------------------------------------------------- */

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
			if (sweep_sigs.armed && sweep_signal)
				return err_set(e, KS_ERUNTIME,
					       "interrupted by %s while waiting for another sweep "
					       "writing %s",
					       sweep_signal == SIGINT ? "SIGINT" : "SIGTERM", o->dir);
		}
	}
	snprintf(p, sizeof p, "%s/runs", o->dir);
	m->runs = !exists(p);
	if (mkdir(p, 0777) < 0 && errno != EEXIST)
		return err_set(e, KS_EIO, "%s: cannot create directory: %s", p, strerror(errno));
	clean_stale_tmp(p);
	snprintf(p, sizeof p, "%s/%s", o->dir, OUT_CATALOG_FILE);
	m->catalog = !exists(p);
	if ((rc = out_catalog_open(o->dir, 0, &s->cat, e)))
		return rc;
	const char *rev = sweep_rev(o);
	size_t queued = 0;
	for (size_t k = 0; k < s->npts; k++) {
		out_point_t *pt = &s->pts[k];
		int v;
		if (sweep_sigs.armed && sweep_signal)
			return err_set(e, KS_ERUNTIME, "interrupted by %s before any point ran",
				       sweep_signal == SIGINT ? "SIGINT" : "SIGTERM");
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
	int use_mpi = o->mpi != 0 && mpi_world_size() > 1;
	if (use_mpi) {
		MPI_Init(NULL, NULL);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		MPI_Comm_size(MPI_COMM_WORLD, &size);
		st->rank = rank;
		st->ranks = size;
		if (rank != 0) {
			mpi_work(g, base, o);
			MPI_Finalize();
			return 0;
		}
	}
#endif
	/* before anything is created: a refused sweep leaves nothing */
	if (size == 1 && (rc = jobs_check(o->jobs ? o->jobs : 1, e)))
		return rc;
	made_t made = {0};
	sweep_signals_arm(); /* local: waited for in ppoll; rank 0: polled */
	int rejected = rc = prepare(&s, g, base, &made, e);
	s.progress = o->progress < 0 ? isatty(2) : o->progress;
	s.t0 = now_s();
	if (!rc) {
		progress_draw(&s, 0);
		if (size > 1) {
#ifdef KVSIM_HAVE_MPI
			rc = mpi_coordinate(&s, size, e);
#endif
		} else {
			rc = run_local(&s, e);
		}
		progress_draw(&s, 1);
	}
	warn_summary(&s);
#ifdef KVSIM_HAVE_MPI
	if (size > 1) {
		if (rc && s.st->done + s.st->failed == 0 && s.qhead == 0) {
			/* Preparing failed: with nothing queued, coordinating just
			 * tells every waiting rank to stop. */
			err_t ignored;
			s.qtail = 0;
			mpi_coordinate(&s, size, &ignored);
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
	sweep_signals_disarm();
	(void)rank;
	return rc;
}
