/* out_exec_mpi — a sweep under mpirun (see out_exec_int.h): rank 0 hands
 * points out one at a time and owns the catalog; the other ranks run them
 * in forked workers and send the reports back. Empty without MPI.
 */
#include "sim/out/out_exec_int.h"

#ifdef KVSIM_HAVE_MPI
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
		if (out_exec_mark_interrupted(s, holding[w] - 1, why, &ie) && !e.code)
			e = ie;
		stopped++;
	}
	out_exec_clean_runs_tmp(s);
	if (!e.code)
		err_set(&e, KS_ERUNTIME,
			"%s: %zu point(s) in flight marked interrupted, %zu done, %zu not "
			"started; run the same command again to resume",
			why, stopped, s->st->done, s->qtail - s->qhead);
	out_exec_progress_draw(s, 1);
	fprintf(stderr, "kvsim sweep: %s\n", e.msg);
	fflush(stderr);
	out_catalog_close(s->cat);
	s->cat = NULL;
	MPI_Abort(MPI_COMM_WORLD, 1);
	_exit(1);
}

/* Rank 0: hand points out one at a time as ranks ask; own the catalog. */
int out_exec_mpi_coordinate(sweep_t *s, int size, err_t *e)
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
			if ((rc = out_exec_start_point(s, k, e)))
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
			if (!any && out_exec_signal)
				mpi_interrupted(s, holding, size, out_exec_signal);
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
			if (out_exec_rep_decode(&b, &r)) {
				memset(&r, 0, sizeof r);
				r.kind = REP_CRASH;
				snprintf(r.err, sizeof r.err, "rank %d sent a bad report", ms.MPI_SOURCE);
			}
			in_flight--;
			if (!rc)
				rc = out_exec_finish_point(s, holding[ms.MPI_SOURCE] - 1, &r, e);
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
void out_exec_mpi_work(const out_grid_t *g, const cfg_t *base, const out_sweep_opts_t *o)
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
			if (out_exec_spawn(&p, o, -1, &s, &e)) {
				r.kind = REP_CRASH;
				snprintf(r.err, sizeof r.err, "%s", e.msg);
			} else {
				char tmp[8192];
				ssize_t got;
				while ((got = read(s.fd, tmp, sizeof tmp)) != 0) {
					if (got < 0 && errno == EINTR)
						continue;
					if (got < 0 || out_exec_buf_put(&s.b, tmp, (size_t)got))
						break;
				}
				out_exec_reap(&s, &r);
				free(s.b.p);
			}
			out_point_free(&p);
		}
		if (out_exec_rep_encode(&b, &r))
			b.len = 0; /* rank 0 reads an empty result as a bad report */
		free(r.metric);
		MPI_Send(b.p, (int)b.len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
	}
	free(b.p);
}

int out_exec_mpi_world_size(void)
{
	const char *s = getenv("OMPI_COMM_WORLD_SIZE");
	return s ? atoi(s) : 0;
}
#endif
