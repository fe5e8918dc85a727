/* kvreplay CUDA backend (see kvr_backend.h): pinned host buffers
 * (cudaHostAlloc), device buffers (cudaMalloc, never managed memory), all
 * touched before timing; one stream per replay stream and device; each copy
 * bracketed by CUDA events; peer access enabled where P2P copies exist, with
 * a staged fallback (cudaMemcpyPeerAsync) when refused. Built as a shared
 * object with nvcc and loaded by kvreplay with dlopen. Compute: cuBLAS bf16
 * GEMMs (fp32 accumulate) and a vectorised read kernel. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_validation/kvreplay/kvr_backend.h"
#include "models/mdl_xfer.h"

#define MAX_STREAMS 256

static int fail_cuda(err_t *e, int code, const char *what, cudaError_t err)
{
	e->code = code;
	snprintf(e->msg, sizeof e->msg, "%s: %s (%s)", what, cudaGetErrorString(err),
	         cudaGetErrorName(err));
	return code;
}

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t err_ = (call);                                                         \
		if (err_ != cudaSuccess)                                                           \
			return fail_cuda(e, KS_ERUNTIME, #call, err_);                             \
	} while (0)

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct cuda_state {
	int n_dev;
	char *host_src, *host_dst;
	char *dev_src[GV_MAX_DEV], *dev_dst[GV_MAX_DEV];
	cudaStream_t stream[GV_MAX_DEV][MAX_STREAMS];
	int n_streams;
	int peer_ok[GV_MAX_DEV][GV_MAX_DEV];
} cuda_state_t;

static int cuda_probe(int *n_dev, gv_meas_t *meta, err_t *e)
{
	int n = 0, drv = 0, rt = 0;
	cudaError_t err = cudaGetDeviceCount(&n);
	if (err != cudaSuccess)
		return fail_cuda(e, KVR_SKIP, "cudaGetDeviceCount", err);
	if (n < 1) {
		e->code = KVR_SKIP;
		snprintf(e->msg, sizeof e->msg, "cudaGetDeviceCount: no CUDA device");
		return KVR_SKIP;
	}
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	CK(cudaDriverGetVersion(&drv));
	CK(cudaRuntimeGetVersion(&rt));
	int clk = 0, mclk = 0;
	cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
	cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, 0);
	snprintf(meta->device, sizeof meta->device, "%.127s", p.name);
	snprintf(meta->driver, sizeof meta->driver, "%d.%d", drv / 1000, drv % 1000 / 10);
	snprintf(meta->runtime, sizeof meta->runtime, "%d.%d", rt / 1000, rt % 1000 / 10);
	meta->clock_khz = clk;
	meta->mem_clock_khz = mclk;
	*n_dev = n;
	return 0;
}

static void cuda_close(void *state)
{
	cuda_state_t *s = (cuda_state_t *)state;
	if (!s)
		return;
	for (int d = 0; d < s->n_dev; d++) {
		cudaSetDevice(d);
		for (int k = 0; k < s->n_streams; k++)
			if (s->stream[d][k])
				cudaStreamDestroy(s->stream[d][k]);
		cudaFree(s->dev_src[d]);
		cudaFree(s->dev_dst[d]);
	}
	cudaFreeHost(s->host_src);
	cudaFreeHost(s->host_dst);
	free(s);
}

static int alloc_host(char **p, uint64_t n, err_t *e)
{
	if (!n)
		return 0;
	CK(cudaHostAlloc((void **)p, n, cudaHostAllocPortable));
	memset(*p, 0x5a, n); /* fault every page in before timing */
	return 0;
}

static int alloc_dev(char **p, uint64_t n, err_t *e)
{
	if (!n)
		return 0;
	CK(cudaMalloc((void **)p, n));
	CK(cudaMemset(*p, 0x5a, n));
	return 0;
}

static int cuda_open_inner(cuda_state_t *s, const gv_replay_t *r, gv_meas_t *meta, err_t *e)
{
	if (alloc_host(&s->host_src, r->host_src, e) || alloc_host(&s->host_dst, r->host_dst, e))
		return e->code;
	s->n_streams = r->n_streams < MAX_STREAMS ? r->n_streams : MAX_STREAMS;
	size_t len = 0;
	meta->peer[0] = 0;
	for (int d = 0; d < s->n_dev; d++) {
		CK(cudaSetDevice(d));
		if (alloc_dev(&s->dev_src[d], r->dev_src[d], e) ||
		    alloc_dev(&s->dev_dst[d], r->dev_dst[d], e))
			return e->code;
		for (int k = 0; k < s->n_streams; k++)
			CK(cudaStreamCreateWithFlags(&s->stream[d][k], cudaStreamNonBlocking));
		for (int p = 0; p < s->n_dev; p++) {
			if (!r->uses_p2p[d][p])
				continue;
			int can = 0;
			CK(cudaDeviceCanAccessPeer(&can, d, p));
			cudaError_t err = can ? cudaDeviceEnablePeerAccess(p, 0) : cudaSuccess;
			if (err == cudaErrorPeerAccessAlreadyEnabled)
				err = cudaSuccess, cudaGetLastError();
			s->peer_ok[d][p] = can && err == cudaSuccess;
			if (err != cudaSuccess)
				cudaGetLastError();
			len += (size_t)snprintf(
			    meta->peer + len, len < sizeof meta->peer ? sizeof meta->peer - len : 0,
			    "%s%d->%d %s", len ? "; " : "", d, p,
			    s->peer_ok[d][p] ? "enabled"
			    : can            ? "refused (staged through host)"
					     : "not supported (staged through host)");
			if (!s->peer_ok[d][p])
				fprintf(stderr,
				        "kvreplay: peer access %d->%d %s: %s; those copies are "
				        "staged through host memory\n",
				        d, p, can ? "refused" : "not supported",
				        can ? cudaGetErrorString(err)
				            : "cudaDeviceCanAccessPeer = 0");
		}
	}
	for (int d = 0; d < s->n_dev; d++) {
		CK(cudaSetDevice(d));
		CK(cudaDeviceSynchronize());
	}
	return 0;
}

static int cuda_open(void **state, const gv_replay_t *r, gv_meas_t *meta, err_t *e)
{
	cuda_state_t *s = (cuda_state_t *)calloc(1, sizeof *s);
	if (!s) {
		e->code = KS_ENOMEM;
		snprintf(e->msg, sizeof e->msg, "cuda backend: out of memory");
		return KS_ENOMEM;
	}
	int n = 0;
	cudaGetDeviceCount(&n);
	s->n_dev = r->n_dev < n ? r->n_dev : n;
	if (r->n_dev > n) {
		free(s);
		e->code = KS_EINPUT;
		snprintf(e->msg, sizeof e->msg, "replay needs %d devices, %d visible", r->n_dev, n);
		return KS_EINPUT;
	}
	int rc = cuda_open_inner(s, r, meta, e);
	if (rc) {
		cuda_close(s);
		return rc;
	}
	*state = s;
	return 0;
}

/* Issue device of a copy: where its stream lives. */
static int issuer(const gv_op_t *o)
{
	return o->src_dev >= 0 ? o->src_dev : o->dst_dev;
}

typedef struct batch_args {
	void **dst;
	const void **src;
	size_t *size;
} batch_args_t;

static int issue_copy(cuda_state_t *s, const gv_op_t *o, cudaStream_t st, const batch_args_t *ba,
                      err_t *e)
{
	char *src = o->src_dev < 0 ? s->host_src : s->dev_src[o->src_dev];
	char *dst = o->dst_dev < 0 ? s->host_dst : s->dev_dst[o->dst_dev];
	int staged = o->kind == GV_COPY_P2P && !s->peer_ok[o->src_dev][o->dst_dev];
	if (o->shape == MDL_SHAPE_BATCH && !staged) {
#if CUDART_VERSION >= 12080
		struct cudaMemcpyAttributes attr;
		memset(&attr, 0, sizeof attr);
		attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
		size_t idx = 0;
#if CUDART_VERSION >= 13000
		CK(cudaMemcpyBatchAsync(ba->dst, ba->src, ba->size, o->blocks, &attr, &idx, 1, st));
#else
		size_t fail_idx = 0;
		CK(cudaMemcpyBatchAsync(ba->dst, (void **)ba->src, ba->size, o->blocks, &attr, &idx,
		                        1, &fail_idx, st));
#endif
		return 0;
#else
		(void)ba; /* no batch API in this runtime: per-block copies below */
#endif
	}
	uint64_t n_copies = o->shape == MDL_SHAPE_CONTIG ? 1 : o->blocks;
	uint64_t bb = o->bytes / n_copies;
	for (uint64_t b = 0; b < n_copies; b++) {
		uint64_t off = b * bb, len = b + 1 == n_copies ? o->bytes - off : bb;
		if (staged)
			CK(cudaMemcpyPeerAsync(dst + off, o->dst_dev, src + off, o->src_dev, len,
			                       st));
		else
			CK(cudaMemcpyAsync(dst + off, src + off, len, cudaMemcpyDefault, st));
	}
	return 0;
}

static int run_phase_inner(cuda_state_t *s, const gv_op_t *op, size_t n, cudaEvent_t *ev,
                           cudaEvent_t *t0, batch_args_t *ba, int64_t *start, int64_t *end,
                           err_t *e)
{
	for (int d = 0; d < s->n_dev; d++) {
		CK(cudaSetDevice(d));
		CK(cudaEventCreate(&t0[d]));
	}
	for (size_t i = 0; i < n; i++) {
		int d = issuer(&op[i]);
		CK(cudaSetDevice(d));
		CK(cudaEventCreate(&ev[2 * i]));
		CK(cudaEventCreate(&ev[2 * i + 1]));
		if (op[i].shape == MDL_SHAPE_BATCH) { /* built before the clock starts */
			const gv_op_t *o = &op[i];
			char *src = o->src_dev < 0 ? s->host_src : s->dev_src[o->src_dev];
			char *dst = o->dst_dev < 0 ? s->host_dst : s->dev_dst[o->dst_dev];
			ba[i].dst = (void **)malloc(o->blocks * sizeof(void *));
			ba[i].src = (const void **)malloc(o->blocks * sizeof(void *));
			ba[i].size = (size_t *)malloc(o->blocks * sizeof(size_t));
			if (!ba[i].dst || !ba[i].src || !ba[i].size) {
				e->code = KS_ENOMEM;
				snprintf(e->msg, sizeof e->msg, "out of memory");
				return KS_ENOMEM;
			}
			uint64_t bb = o->bytes / o->blocks;
			for (uint32_t b = 0; b < o->blocks; b++) {
				ba[i].dst[b] = dst + b * bb;
				ba[i].src[b] = src + b * bb;
				ba[i].size[b] = b + 1 == o->blocks ? o->bytes - b * bb : bb;
			}
		}
	}
	for (int d = 0; d < s->n_dev; d++) {
		CK(cudaSetDevice(d));
		CK(cudaEventRecord(t0[d], s->stream[d][0]));
	}
	int64_t h0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		const gv_op_t *o = &op[i];
		int d = issuer(o);
		cudaStream_t st = s->stream[d][o->stream % s->n_streams];
		while (now_ns() - h0 < o->offset_ns)
			; /* launch at the schedule's offset (host clock) */
		CK(cudaSetDevice(d));
		CK(cudaEventRecord(ev[2 * i], st));
		for (uint32_t k = 0; k < o->inner; k++)
			if (issue_copy(s, o, st, &ba[i], e))
				return e->code;
		CK(cudaEventRecord(ev[2 * i + 1], st));
	}
	for (int d = 0; d < s->n_dev; d++) {
		CK(cudaSetDevice(d));
		CK(cudaDeviceSynchronize());
	}
	for (size_t i = 0; i < n; i++) {
		int d = issuer(&op[i]);
		float a = 0, dur = 0;
		CK(cudaEventElapsedTime(&a, t0[d], ev[2 * i]));
		/* the duration from its own pair: a float of ms since t0 loses
		 * microseconds seconds into a long schedule */
		CK(cudaEventElapsedTime(&dur, ev[2 * i], ev[2 * i + 1]));
		start[i] = (int64_t)((double)a * 1e6);
		end[i] = start[i] + (int64_t)((double)dur * 1e6) / op[i].inner;
	}
	return 0;
}

static int cuda_run_phase(void *state, const gv_replay_t *r, size_t phase, int64_t *start,
                          int64_t *end, err_t *e)
{
	cuda_state_t *s = (cuda_state_t *)state;
	size_t first = r->phase_first[phase], n = r->phase_first[phase + 1] - first;
	cudaEvent_t *ev = (cudaEvent_t *)calloc(2 * n, sizeof *ev);
	batch_args_t *ba = (batch_args_t *)calloc(n, sizeof *ba);
	cudaEvent_t t0[GV_MAX_DEV];
	memset(t0, 0, sizeof t0);
	if (!ev || !ba) {
		free(ev);
		free(ba);
		e->code = KS_ENOMEM;
		snprintf(e->msg, sizeof e->msg, "out of memory");
		return KS_ENOMEM;
	}
	int rc = run_phase_inner(s, &r->op[first], n, ev, t0, ba, start, end, e);
	for (size_t i = 0; i < 2 * n; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	for (int d = 0; d < s->n_dev; d++)
		if (t0[d])
			cudaEventDestroy(t0[d]);
	for (size_t i = 0; i < n; i++) {
		free(ba[i].dst);
		free((void *)ba[i].src);
		free(ba[i].size);
	}
	free(ev);
	free(ba);
	return rc;
}

/* ---- compute --------------------------------------------------------------- */

/* Reads n 16-byte words; the conditional store keeps the loads alive. */
__global__ void read_kernel(const uint4 *p, size_t n, unsigned int *sink)
{
	unsigned int acc = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = p[i];
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x9e3779b9u)
		*sink = acc;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static const char *cublas_name(cublasStatus_t st)
{
	return cublasGetStatusString(st);
}

#define CB(call)                                                                                   \
	do {                                                                                       \
		cublasStatus_t st_ = (call);                                                       \
		if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
			e->code = KS_ERUNTIME;                                                     \
			snprintf(e->msg, sizeof e->msg, "%s: %s", #call, cublas_name(st_));        \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)
#define CKG(call)                                                                                  \
	do {                                                                                       \
		cudaError_t err_ = (call);                                                         \
		if (err_ != cudaSuccess) {                                                         \
			fail_cuda(e, KS_ERUNTIME, #call, err_);                                    \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

/* What the rows need allocated: the largest weight, input and output matrix
 * of their GEMMs (elements) and their largest read (bytes). */
static void compute_sizes(const gv_compute_t *rows, size_t n, size_t *wmax, size_t *xmax,
                          size_t *cmax, size_t *rmax)
{
	*wmax = *xmax = *cmax = *rmax = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(rows[i].op, "read")) {
			*rmax = (size_t)rows[i].m > *rmax ? (size_t)rows[i].m : *rmax;
			continue;
		}
		size_t w = (size_t)(rows[i].n * rows[i].k), x = (size_t)(rows[i].k * rows[i].m),
		       c = (size_t)(rows[i].n * rows[i].m);
		*wmax = w > *wmax ? w : *wmax;
		*xmax = x > *xmax ? x : *xmax;
		*cmax = c > *cmax ? c : *cmax;
	}
}

static int cuda_compute(gv_compute_t *rows, size_t n, int warmup, int reps, err_t *e)
{
	size_t wmax, xmax, cmax, rmax;
	compute_sizes(rows, n, &wmax, &xmax, &cmax, &rmax);
	cublasHandle_t h = NULL;
	cudaStream_t st = NULL;
	cudaEvent_t a = NULL, b = NULL;
	__nv_bfloat16 *W = NULL, *X = NULL, *C = NULL;
	char *R = NULL;
	unsigned int *sink = NULL;
	float *t = (float *)calloc((size_t)reps, sizeof(float));
	const int iters = 10; /* per timed rep: one GEMM alone is too short to time */
	int blocks = 0;
	cudaDeviceProp p;
	e->code = 0;
	if (!t) {
		e->code = KS_ENOMEM;
		snprintf(e->msg, sizeof e->msg, "out of memory");
		return KS_ENOMEM;
	}
	CKG(cudaSetDevice(0));
	CKG(cudaGetDeviceProperties(&p, 0));
	CKG(cudaStreamCreate(&st));
	CKG(cudaEventCreate(&a));
	CKG(cudaEventCreate(&b));
	if (wmax) {
		CKG(cudaMalloc((void **)&W, wmax * 2));
		CKG(cudaMalloc((void **)&X, xmax * 2));
		CKG(cudaMalloc((void **)&C, cmax * 2));
		/* 0x3c3c as bf16 is ~0.0115: finite values, no denormals */
		CKG(cudaMemset(W, 0x3c, wmax * 2));
		CKG(cudaMemset(X, 0x3c, xmax * 2));
		CB(cublasCreate(&h));
		CB(cublasSetStream(h, st));
	}
	if (rmax) {
		CKG(cudaMalloc((void **)&R, rmax));
		CKG(cudaMemset(R, 0x11, rmax));
		CKG(cudaMalloc((void **)&sink, sizeof *sink));
		int per_sm = 0;
		CKG(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_kernel, 512, 0));
		blocks = p.multiProcessorCount * (per_sm > 0 ? per_sm : 1);
	}
	for (size_t i = 0; i < n; i++) {
		gv_compute_t *c = &rows[i];
		int is_read = !strcmp(c->op, "read");
		float alpha = 1, beta = 0;
		for (int rep = -warmup; rep < reps; rep++) {
			CKG(cudaEventRecord(a, st));
			for (int k = 0; k < iters; k++) {
				if (is_read) {
					read_kernel<<<blocks, 512, 0, st>>>(
					    (const uint4 *)R, (size_t)c->m / 16, sink);
				} else {
					/* C(n x m) = W(n x k) X(k x m), column-major, bf16 in,
					 * fp32 accumulate */
					CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)c->n,
					                (int)c->m, (int)c->k, &alpha, W,
					                CUDA_R_16BF, (int)c->n, X, CUDA_R_16BF,
					                (int)c->k, &beta, C, CUDA_R_16BF, (int)c->n,
					                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
				}
			}
			CKG(cudaGetLastError());
			CKG(cudaEventRecord(b, st));
			CKG(cudaEventSynchronize(b));
			float ms = 0;
			CKG(cudaEventElapsedTime(&ms, a, b));
			if (rep >= 0)
				t[rep] = ms / iters;
		}
		qsort(t, (size_t)reps, sizeof *t, cmp_float);
		c->time_ns = (int64_t)(t[reps / 2] * 1e6);
	}
out:
	if (h)
		cublasDestroy(h);
	cudaFree(W);
	cudaFree(X);
	cudaFree(C);
	cudaFree(R);
	cudaFree(sink);
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	if (st)
		cudaStreamDestroy(st);
	free(t);
	return e->code;
}

extern "C" {
extern const kvr_backend_ops_t kvr_backend_cuda;
const kvr_backend_ops_t kvr_backend_cuda = {
    KVR_BACKEND_VERSION, "cuda", cuda_probe, cuda_open, cuda_run_phase, cuda_compute, cuda_close,
};
}
