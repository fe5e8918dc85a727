/* kvr_backend — the interface between kvreplay's driver and a copy engine.
 *
 * A backend is a versioned table of functions (host threads + memcpy in
 * host.c; the CUDA runtime in cuda.cu, built as a shared object that the
 * driver loads with dlopen, so kvreplay runs where no CUDA library exists).
 * Times are ns, relative to the start of the phase being run. Functions return
 * 0, KVR_SKIP when no usable device exists (the reason in e->msg), or a
 * negative KS_* code with e->msg filled. The CUDA object cannot call err_set
 * (it is not linked against libkvsim), so backends fill err_t directly.
 */
#ifndef KVSIM_KVR_BACKEND_H
#define KVSIM_KVR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "gpu_validation/gv_meas.h"
#include "gpu_validation/gv_replay.h"
#include "models/mdl_xfer.h"
#include "sim/base/err.h"

#define KVR_BACKEND_VERSION 1
#define KVR_SKIP 77

typedef struct kvr_backend_ops {
	int version; /* KVR_BACKEND_VERSION */
	const char *name;
	/* Counts devices and fills meta's device, driver, runtime and clocks. */
	int (*probe)(int *n_dev, gv_meas_t *meta, err_t *e);
	/* Allocates and touches the buffers r needs, enables peer access where
	 * r copies between devices (meta->peer says what happened). */
	int (*open)(void **state, const gv_replay_t *r, gv_meas_t *meta, err_t *e);
	/* Runs the ops of one phase once, each at its offset on its stream;
	 * start/end[i] for op first+i, per transfer (divided by inner). */
	int (*run_phase)(void *state, const gv_replay_t *r, size_t phase, int64_t *start,
	                 int64_t *end, err_t *e);
	/* Times each row's op (rows come with op, m, n, k, flops, bytes set):
	 * fills time_ns with the median of reps after warmup runs. */
	int (*compute)(gv_compute_t *rows, size_t n, int warmup, int reps, err_t *e);
	void (*close)(void *state);
} kvr_backend_ops_t;

extern const kvr_backend_ops_t kvr_backend_host;
/* Name of the table the CUDA shared object exports. */
#define KVR_CUDA_SYMBOL "kvr_backend_cuda"

#ifdef __cplusplus
}
#endif

#endif
