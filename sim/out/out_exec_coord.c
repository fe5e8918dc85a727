/* out_exec_coord — a sweep's coordinator, the local parent or MPI rank 0
 * (see out_exec_int.h): the catalog row of each point as it starts and
 * ends, the workers' warnings, the progress line, a stop on a signal, and
 * the local run of the queued points on forked workers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "sim/base/cli_voice.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"
#include "sim/out/out_exec_int.h"

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
void out_exec_warn_summary(sweep_t *s)
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

void out_exec_progress_draw(sweep_t *s, int final)
{
	if (!s->progress)
		return;
	double t = out_exec_now_s();
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

int out_exec_start_point(sweep_t *s, size_t k, err_t *e)
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

int out_exec_finish_point(sweep_t *s, size_t k, report_t *r, err_t *e)
{
	int rc = 0;
	const out_point_t *p = &s->pts[k];
	if (r->kind != REP_CRASH)
		warn_note(s, k, r->warn);
	if (r->kind == REP_OK) {
		out_run_file_t f = {r->h5_size, "", out_exec_rev(s->o)};
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
	out_exec_progress_draw(s, 0);
	return rc;
}

/* Ends the workers still running (the sweep stops on an error it cannot
 * wait through): each is killed and reaped, its point left to a rerun. */
static void kill_active(slot_t *sl, unsigned jobs)
{
	for (unsigned j = 0; j < jobs; j++)
		if (sl[j].fd >= 0) {
			report_t r = {0};
			kill(sl[j].pid, SIGKILL);
			out_exec_reap(&sl[j], &r);
			free(r.metric);
		}
}

/* Removes *.h5.tmp left by children of a killed sweep (we hold the sweep
 * lock), never one a run recorded beside the sweep is writing (out_runs_lock). */
void out_exec_clean_stale_tmp(const char *runs)
{
	int lk = out_runs_lock(runs, 1);
	DIR *d = opendir(runs);
	if (!d) {
		out_runs_unlock(lk);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n > 7 && !strcmp(de->d_name + n - 7, ".h5.tmp")) {
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
	closedir(d);
	out_runs_unlock(lk);
}

/* Point k, in flight when the sweep was told to stop: 'interrupted' in the
 * catalog (rerun by the next sweep), and its file gone (one a worker
 * finished but did not report has no row). */
int out_exec_mark_interrupted(sweep_t *s, size_t k, const char *why, err_t *e)
{
	const out_point_t *p = &s->pts[k];
	int rc = out_catalog_interrupted(s->cat, p->id, why, e);
	char f[4200];
	snprintf(f, sizeof f, "%s/%s", s->o->dir, p->h5_rel);
	unlink(f);
	return rc;
}

/* The temporaries stopped workers left in DIR/runs. */
void out_exec_clean_runs_tmp(sweep_t *s)
{
	char runs[4200];
	snprintf(runs, sizeof runs, "%s/runs", s->o->dir);
	out_exec_clean_stale_tmp(runs);
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
			if (out_exec_buf_put(&sl[j].b, tmp, (size_t)got))
				break;
		report_t r;
		kill(sl[j].pid, SIGKILL);
		out_exec_reap(&sl[j], &r);
		if (r.kind != REP_CRASH) {
			int frc = out_exec_finish_point(s, sl[j].k, &r, e);
			rc = rc ? rc : frc;
			continue;
		}
		err_t ie = {0};
		if (out_exec_mark_interrupted(s, sl[j].k, why, &ie) && !rc)
			rc = err_set(e, ie.code, "%s", ie.msg);
		stopped++;
	}
	out_exec_clean_runs_tmp(s);
	s->st->interrupted = sig;
	s->st->interrupted_points = stopped;
	if (rc)
		return rc;
	return err_set(e, KS_ERUNTIME,
		       "%s: %zu point(s) in flight marked interrupted, %zu done, %zu not "
		       "started; run the same command again to resume",
		       why, stopped, s->st->done, s->qtail - s->qhead);
}

int out_exec_run_local(sweep_t *s, err_t *e)
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
	if (out_exec_sigs.armed)
		out_exec_signals_block(1);
	while (!rc || active) {
		if (out_exec_sigs.armed && out_exec_signal) {
			rc = stop_on_signal(s, sl, jobs, out_exec_signal, rc, e);
			break;
		}
		for (unsigned j = 0; !rc && j < jobs && s->qhead < s->qtail; j++) {
			if (sl[j].fd >= 0)
				continue;
			size_t k = s->queue[s->qhead++];
			sl[j].k = k;
			if ((rc = out_exec_start_point(s, k, e)) || (rc = out_exec_spawn(&s->pts[k], s->o, s->lock_fd, &sl[j], e)))
				break;
			active++;
		}
		if (!active)
			break;
		nfds_t n = 0;
		for (unsigned j = 0; j < jobs; j++)
			pf[j] = (struct pollfd){sl[j].fd, POLLIN, 0};
		n = jobs;
		int ready = ppoll(pf, n, NULL, out_exec_sigs.armed ? &wait_mask : NULL);
		/* A signal can come with ready workers (killed by the same
		 * Ctrl-C), and ppoll then returns them with the signal still
		 * pending: let it in, and stop first, so that none of them
		 * counts as a crash. */
		if (out_exec_sigs.armed) {
			out_exec_signals_block(0);
			out_exec_signals_block(1);
			if (out_exec_signal)
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
				if (out_exec_buf_put(&sl[j].b, tmp, (size_t)got) && !rc)
					rc = err_set(e, KS_ENOMEM, "out of memory");
				continue;
			}
			report_t r;
			out_exec_reap(&sl[j], &r);
			active--;
			int frc = out_exec_finish_point(s, sl[j].k, &r, e);
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
