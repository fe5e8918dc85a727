/* gv_meas — kvreplay's measurements and their HDF5 file.
 *
 * One gv_copy_t per replayed transfer: the schedule's id and planned start,
 * what was executed (kind, link kind for the model, shape, stream, devices)
 * and the median over repetitions of its duration (end_ns - start_ns; start_ns
 * is that repetition's start on the replay clock, which shares its origin with
 * the planned start). A copy that was repeated `inner` times between two
 * timestamps (tiny copies) reports the per-transfer time. gv_compute_t holds
 * the --compute results. The file has /copies and /compute compound tables
 * and the run's context as root attributes (backend, device, driver and
 * runtime versions, clocks in kHz, command line, peaks). gv_meas_t owns its
 * arrays (gv_meas_free). Errors: KS_EIO / KS_EINPUT / KS_ENOMEM.
 */
#ifndef KVSIM_GV_MEAS_H
#define KVSIM_GV_MEAS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/err.h"

enum { GV_COPY_H2D = 0, GV_COPY_D2H = 1, GV_COPY_D2D = 2, GV_COPY_P2P = 3 };

typedef struct gv_copy {
	uint64_t id;   /* res_transfer_t id */
	int32_t group; /* replay phase: a plan group, or 0 for a schedule */
	int32_t kind;  /* GV_COPY_* */
	int32_t link;  /* MDL_LINK_* it exercised */
	int32_t shape; /* MDL_SHAPE_* */
	int32_t stream;
	int32_t src_dev, dst_dev; /* -1: host memory */
	uint64_t bytes;
	uint32_t blocks;
	uint32_t inner;        /* repeats between timestamps; time is per transfer */
	int32_t m_same, m_opp; /* concurrent copies on its link: same / reverse direction */
	int32_t reps;
	int64_t planned_start_ns, start_ns, end_ns;
	int64_t min_ns, max_ns; /* fastest and slowest repetition */
} gv_copy_t;

typedef struct gv_compute {
	char op[32];     /* "gemm_qkv", "read", ... */
	int64_t m, n, k; /* GEMM shape (m = tokens); read: m = bytes */
	double flops, bytes;
	int64_t time_ns; /* median */
	double flops_per_s, bytes_per_s;
} gv_compute_t;

typedef struct gv_meas {
	gv_copy_t *copy;
	size_t n_copy;
	gv_compute_t *comp;
	size_t n_comp;
	char backend[16];
	char device[128];
	char driver[64], runtime[64];
	int64_t clock_khz, mem_clock_khz;
	char cmdline[2048];
	char schedule[1024];
	char peer[512];                      /* how peer copies ran ("0->1 enabled", ...) */
	double peak_flops, peak_bytes_per_s; /* 0: unknown */
} gv_meas_t;

int gv_meas_write(const char *path, const gv_meas_t *m, err_t *e);
int gv_meas_read(gv_meas_t *m, const char *path, err_t *e);
void gv_meas_free(gv_meas_t *m);
/* Appends src's copies and compute rows to dst (dst keeps its attributes;
 * peaks it lacks come from src). 0 or KS_ENOMEM (dst unchanged). */
int gv_meas_append(gv_meas_t *dst, const gv_meas_t *src, err_t *e);
const char *gv_copy_kind_name(int kind);

#endif
