/* gv_replay — turns a schedule into what a kvreplay backend executes.
 *
 * Each scheduled transfer becomes one gv_op_t: its endpoints mapped onto the
 * devices at hand (distinct (instance, gpu) pairs in order of first use,
 * round-robin over n_dev; -1 = host memory), its kind (H2D, D2H, D2D on one
 * device, P2P between two), the model link it exercises, its shape, a stream
 * (greedy interval colouring of planned intervals: one stream per concurrent
 * flow) and a launch offset from its phase's start. A schedule is one phase
 * replayed at its relative start offsets; a plan (or --groups) makes each set
 * of equal start_ns an isolated phase, timed alone. m_same / m_opp count the
 * copies whose planned intervals overlap on the same link in the same /
 * reverse direction. Cancelled and host-to-host transfers are skipped and
 * counted, as are those past opts.limit / opts.span_ns. Times ns, sizes bytes. gv_replay_t owns its
 * arrays (gv_replay_free); errors: KS_EINPUT (nothing to replay), KS_ENOMEM.
 */
#ifndef KVSIM_GV_REPLAY_H
#define KVSIM_GV_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_validation/gv_sched.h"
#include "sim/base/err.h"

#define GV_MAX_DEV 16

typedef struct gv_op {
	uint64_t id;
	int kind;             /* GV_COPY_* */
	int link;             /* MDL_LINK_* */
	int shape;            /* MDL_SHAPE_* */
	int src_dev, dst_dev; /* -1: host */
	uint64_t bytes;
	uint32_t blocks; /* copies per pass in the granular shapes: blocks x slices */
	uint32_t inner;  /* passes between two timestamps */
	int stream;
	int phase;
	int64_t offset_ns; /* launch time from the phase start */
	int64_t planned_start_ns, planned_ns;
	int m_same, m_opp;
} gv_op_t;

typedef struct gv_replay_opts {
	int n_dev;            /* devices available (>= 1) */
	int groups;           /* 1: phases by equal start_ns; 0: one phase; -1: plan decides */
	int batch;            /* granular transfers as one batched call per pass */
	uint32_t slices;      /* granular: copies per block, e.g. one per layer (0 = 1) */
	uint64_t inner_bytes; /* group mode: repeat a transfer until it moves this much (max 64) */
	size_t limit;         /* replay at most this many transfers, earliest first (0: all) */
	int64_t span_ns;      /* only transfers starting within this of the first (0: all) */
} gv_replay_opts_t;

typedef struct gv_replay {
	gv_op_t *op; /* sorted by phase, then offset */
	size_t n_op;
	size_t *phase_first; /* n_phase + 1 entries: ops of phase p are [first[p], first[p+1]) */
	size_t n_phase;
	int n_streams; /* most streams any phase uses */
	int n_dev;     /* devices referenced (max index + 1) */
	size_t skipped_cancelled, skipped_host, skipped_limit;
	/* largest transfer read from / written to each place: buffer sizes */
	uint64_t host_src, host_dst, dev_src[GV_MAX_DEV], dev_dst[GV_MAX_DEV];
	int uses_p2p[GV_MAX_DEV][GV_MAX_DEV];
} gv_replay_t;

int gv_replay_build(gv_replay_t *r, const gv_sched_t *s, const gv_replay_opts_t *o, err_t *e);
void gv_replay_free(gv_replay_t *r);

/* Median of n values (sorts v in place); n >= 1. */
int64_t gv_median_i64(int64_t *v, size_t n);

#endif
