/* kvreplay host backend: the same schedules with threads and memcpy, so the
 * replay pipeline runs (and is tested) where no GPU exists. "Devices" are
 * malloc'd buffers; each stream is a thread. Compute: single-precision GEMM
 * through GSL's CBLAS and a summing read, the CPU stand-ins for the GPU's
 * bf16 GEMMs and read kernel. See kvr_backend.h for the contract. */
#include <gsl/gsl_cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "gpu_validation/kvreplay/kvr_backend.h"

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
	int64_t d = t - now_ns();
	if (d > 200000) { /* sleep most of a long wait, spin the rest */
		struct timespec ts = {.tv_sec = (t - 100000) / 1000000000,
		                      .tv_nsec = (t - 100000) % 1000000000};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	while (now_ns() < t)
		;
}

static int fail(err_t *e, int code, const char *msg)
{
	e->code = code;
	snprintf(e->msg, sizeof e->msg, "%s", msg);
	return code;
}

typedef struct host_state {
	char *host_src, *host_dst;
	char *dev_src[GV_MAX_DEV], *dev_dst[GV_MAX_DEV];
} host_state_t;

static int host_probe(int *n_dev, gv_meas_t *meta, err_t *e)
{
	(void)e;
	struct utsname u;
	*n_dev = 2; /* emulated; --devices overrides */
	if (uname(&u) == 0)
		snprintf(meta->device, sizeof meta->device, "host memcpy (%.20s %.60s)", u.machine,
		         u.release);
	snprintf(meta->driver, sizeof meta->driver, "none");
	snprintf(meta->runtime, sizeof meta->runtime, "libc memcpy");
	long mhz = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[256];
		double v;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "cpu MHz : %lf", &v) == 1) {
				mhz = (long)v;
				break;
			}
		fclose(f);
	}
	meta->clock_khz = mhz * 1000;
	return 0;
}

static char *alloc_touched(uint64_t n)
{
	if (!n)
		return NULL;
	char *p = malloc(n);
	if (p)
		memset(p, 0x5a, n); /* fault every page in before timing */
	return p;
}

static void host_close(void *state)
{
	host_state_t *s = state;
	if (!s)
		return;
	free(s->host_src);
	free(s->host_dst);
	for (int d = 0; d < GV_MAX_DEV; d++) {
		free(s->dev_src[d]);
		free(s->dev_dst[d]);
	}
	free(s);
}

static int host_open(void **state, const gv_replay_t *r, gv_meas_t *meta, err_t *e)
{
	host_state_t *s = calloc(1, sizeof *s);
	if (!s)
		return fail(e, KS_ENOMEM, "host backend: out of memory");
	int bad = (r->host_src && !(s->host_src = alloc_touched(r->host_src))) ||
	          (r->host_dst && !(s->host_dst = alloc_touched(r->host_dst)));
	for (int d = 0; d < r->n_dev && !bad; d++)
		bad = (r->dev_src[d] && !(s->dev_src[d] = alloc_touched(r->dev_src[d]))) ||
		      (r->dev_dst[d] && !(s->dev_dst[d] = alloc_touched(r->dev_dst[d])));
	if (bad) {
		host_close(s);
		return fail(e, KS_ENOMEM, "host backend: cannot allocate the copy buffers");
	}
	snprintf(meta->peer, sizeof meta->peer, "host memory (no peer access involved)");
	*state = s;
	return 0;
}

/* Threads wait on `go` so that every stream starts from the same t0; `abort`
 * releases them without work when a thread could not be created. */
typedef struct start_gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int go, abort;
	int64_t t0;
} start_gate_t;

typedef struct worker {
	host_state_t *s;
	const gv_op_t *op; /* the phase's ops */
	size_t n;
	int stream;
	int64_t *start, *end;
	start_gate_t *gate;
} worker_t;

static void copy_once(host_state_t *s, const gv_op_t *o)
{
	char *src = o->src_dev < 0 ? s->host_src : s->dev_src[o->src_dev];
	char *dst = o->dst_dev < 0 ? s->host_dst : s->dev_dst[o->dst_dev];
	if (o->shape == MDL_SHAPE_CONTIG) {
		memcpy(dst, src, o->bytes);
		return;
	}
	uint64_t bb = o->bytes / o->blocks;
	for (uint32_t b = 0; b < o->blocks; b++) {
		uint64_t off = b * bb, len = b + 1 == o->blocks ? o->bytes - off : bb;
		memcpy(dst + off, src + off, len);
	}
}

static void run_stream(worker_t *w, int64_t t0)
{
	for (size_t i = 0; i < w->n; i++) {
		const gv_op_t *o = &w->op[i];
		if (o->stream != w->stream)
			continue;
		sleep_until(t0 + o->offset_ns);
		int64_t a = now_ns();
		for (uint32_t k = 0; k < o->inner; k++)
			copy_once(w->s, o);
		int64_t b = now_ns();
		w->start[i] = a - t0;
		w->end[i] = w->start[i] + (b - a) / o->inner;
	}
}

static void *worker_main(void *arg)
{
	worker_t *w = arg;
	start_gate_t *g = w->gate;
	pthread_mutex_lock(&g->mu);
	while (!g->go)
		pthread_cond_wait(&g->cv, &g->mu);
	int abort = g->abort;
	int64_t t0 = g->t0;
	pthread_mutex_unlock(&g->mu);
	if (!abort)
		run_stream(w, t0);
	return NULL;
}

static int host_run_phase(void *state, const gv_replay_t *r, size_t phase, int64_t *start,
                          int64_t *end, err_t *e)
{
	host_state_t *s = state;
	size_t first = r->phase_first[phase], n = r->phase_first[phase + 1] - first;
	const gv_op_t *op = &r->op[first];
	int n_streams = 0;
	for (size_t i = 0; i < n; i++)
		if (op[i].stream + 1 > n_streams)
			n_streams = op[i].stream + 1;
	if (n_streams == 1) { /* one flow: no thread needed */
		worker_t w = {s, op, n, 0, start, end, NULL};
		run_stream(&w, now_ns());
		return 0;
	}
	worker_t *w = calloc((size_t)n_streams, sizeof *w);
	pthread_t *th = calloc((size_t)n_streams, sizeof *th);
	start_gate_t g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	if (!w || !th) {
		free(w);
		free(th);
		return fail(e, KS_ENOMEM, "host backend: out of memory for threads");
	}
	int started = 0, rc = 0;
	for (int k = 0; k < n_streams; k++) {
		w[k] = (worker_t){s, op, n, k, start, end, &g};
		if (pthread_create(&th[k], NULL, worker_main, &w[k])) {
			rc = fail(e, KS_ERUNTIME, "host backend: pthread_create failed");
			break;
		}
		started++;
	}
	pthread_mutex_lock(&g.mu);
	g.go = 1;
	g.abort = rc != 0;
	g.t0 = now_ns() + 50000; /* every thread wakes before the first launch */
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	free(w);
	free(th);
	return rc;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int host_compute(gv_compute_t *rows, size_t n, int warmup, int reps, err_t *e)
{
	int64_t *t = calloc((size_t)(reps > 0 ? reps : 1), sizeof *t);
	if (!t)
		return fail(e, KS_ENOMEM, "host compute: out of memory");
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		gv_compute_t *c = &rows[i];
		int is_read = !strcmp(c->op, "read");
		size_t na = is_read ? (size_t)c->m / sizeof(float) : (size_t)(c->n * c->k);
		size_t nb = is_read ? 1 : (size_t)(c->k * c->m),
		       nc = is_read ? 1 : (size_t)(c->n * c->m);
		float *a = malloc(na * sizeof(float) + 8), *b = malloc(nb * sizeof(float)),
		      *cc = malloc(nc * sizeof(float));
		if (!a || !b || !cc) {
			rc = fail(e, KS_ENOMEM, "host compute: out of memory");
		} else {
			memset(a, 0, na * sizeof(float));
			for (size_t j = 0; j < nb; j++)
				b[j] = (float)(j % 7) * 0.1f;
			volatile uint64_t sink = 0;
			for (int rep = -warmup; rep < reps; rep++) {
				int64_t t0 = now_ns();
				if (is_read) {
					const uint64_t *p = (const uint64_t *)a;
					uint64_t acc = 0;
					for (size_t j = 0; j < na / 2; j++)
						acc += p[j]; /* na floats = na/2 words */
					sink += acc;
				} else {
					/* C(n x m) = A(n x k) * B(k x m), column-major like cuBLAS
					 */
					cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans,
					            (int)c->n, (int)c->m, (int)c->k, 1.0f, a,
					            (int)c->n, b, (int)c->k, 0.0f, cc, (int)c->n);
				}
				if (rep >= 0)
					t[rep] = now_ns() - t0;
			}
			(void)sink;
			qsort(t, (size_t)reps, sizeof *t, cmp_i64);
			c->time_ns = t[reps / 2];
		}
		free(a);
		free(b);
		free(cc);
	}
	free(t);
	return rc;
}

const kvr_backend_ops_t kvr_backend_host = {
    .version = KVR_BACKEND_VERSION,
    .name = "host",
    .probe = host_probe,
    .open = host_open,
    .run_phase = host_run_phase,
    .compute = host_compute,
    .close = host_close,
};
