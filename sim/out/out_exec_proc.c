/* out_exec_proc — a sweep point's worker process (see out_exec_int.h):
 * the report it sends over its pipe, fork, the child's run, HDF5 file and
 * digest, and reaping it; and the sweep's handling of SIGINT and SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/file.h"
#include "sim/base/vec.h"
#include "sim/out/out_exec_int.h"

#define REP_MAGIC 0x6b767270u /* "kvrp" */

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

int out_exec_buf_put(buf_t *b, const void *d, size_t n)
{
	if (VEC_GROW(b->p, b->cap, b->len + n, 256))
		return -1;
	memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

int out_exec_rep_encode(buf_t *b, const report_t *r)
{
	size_t el = strnlen(r->err, sizeof r->err - 1), n = r->n_metric;
	size_t wl = strnlen(r->warn, sizeof r->warn - 1);
	rep_hdr_t h = {REP_MAGIC, r->kind, r->code, (uint32_t)n, (uint32_t)el, (uint32_t)wl,
		       r->wall_s, r->h5_size, {0}};
	memcpy(h.h5_sha256, r->h5_sha256, sizeof h.h5_sha256);
	b->len = 0;
	return out_exec_buf_put(b, &h, sizeof h) || (el && out_exec_buf_put(b, r->err, el)) ||
			       (n && out_exec_buf_put(b, r->metric, n * sizeof *r->metric)) ||
			       (wl && out_exec_buf_put(b, r->warn, wl))
		       ? -1
		       : 0;
}

/* 0 when b holds exactly one complete report. */
int out_exec_rep_decode(const buf_t *b, report_t *r)
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

double out_exec_now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

volatile sig_atomic_t out_exec_signal;
struct out_exec_sigs out_exec_sigs;

static void sweep_on_signal(int sig)
{
	out_exec_signal = sig;
}

void out_exec_signals_arm(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sweep_on_signal;
	sigemptyset(&sa.sa_mask);
	out_exec_signal = 0;
	sigaction(SIGINT, &sa, &out_exec_sigs.old_int);
	sigaction(SIGTERM, &sa, &out_exec_sigs.old_term);
	sigprocmask(SIG_BLOCK, NULL, &out_exec_sigs.old_mask);
	out_exec_sigs.armed = 1;
}

void out_exec_signals_block(int block)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}

void out_exec_signals_disarm(void)
{
	if (!out_exec_sigs.armed)
		return;
	sigaction(SIGINT, &out_exec_sigs.old_int, NULL);
	sigaction(SIGTERM, &out_exec_sigs.old_term, NULL);
	sigprocmask(SIG_SETMASK, &out_exec_sigs.old_mask, NULL);
	out_exec_sigs.armed = 0;
}

/* In a forked worker: the signal actions and mask the sweep started with. */
static void sweep_signals_child(void)
{
	if (!out_exec_sigs.armed)
		return;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigprocmask(SIG_SETMASK, &out_exec_sigs.old_mask, NULL);
}

const char *out_exec_rev(const out_sweep_opts_t *o)
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
	double t0 = out_exec_now_s();
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
		snprintf(r.git_rev, sizeof r.git_rev, "%s", out_exec_rev(o));
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
	rep.wall_s = out_exec_now_s() - t0;
	snprintf(rep.err, sizeof rep.err, "%s", rc ? e.msg : "");
	rep.metric = r.metric;
	rep.n_metric = rc ? 0 : r.n_metric;
	fflush(stderr);
	ssize_t got = said ? pread(fileno(said), rep.warn, sizeof rep.warn - 1, 0) : 0;
	rep.warn[got > 0 ? got : 0] = '\0';
	if (got == (ssize_t)sizeof rep.warn - 1 && strrchr(rep.warn, '\n'))
		strrchr(rep.warn, '\n')[1] = '\0'; /* whole lines only */
	if (out_exec_rep_encode(&b, &rep) || file_write_all(fd, b.p, b.len))
		_exit(3);
	_exit(0);
}

/* close_fd: a descriptor the child must not keep (the sweep lock). */
int out_exec_spawn(const out_point_t *p, const out_sweep_opts_t *o, int close_fd, slot_t *s,
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
void out_exec_reap(slot_t *s, report_t *r)
{
	int status = 0;
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	close(s->fd);
	s->fd = -1;
	s->pid = 0;
	if (out_exec_rep_decode(&s->b, r) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
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
