/* gv_plan — the designed calibration schedule (`kvsim calibrate plan`).
 *
 * Groups of transfers that kvreplay times in isolation (all transfers of a
 * group share one start_ns; the file is marked as a plan): every size from
 * min_bytes to max_bytes on a log grid (per_octave points per doubling), in
 * each direction (host->GPU, GPU->host, GPU->GPU), contiguous and
 * block-granular (block sizes 4 KiB..1 MiB, 2..512 blocks, up to
 * max_granular_bytes), and 2..max_streams concurrent copies in the same
 * direction and split over opposite directions. Planned durations come from
 * the default transfer model. Endpoints: instance 0 GPUs 0 and 1, -1 = host.
 * The array is malloc'd (caller frees). Errors: KS_EINPUT (bad options),
 * KS_ENOMEM.
 */
#ifndef KVSIM_GV_PLAN_H
#define KVSIM_GV_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/err.h"
#include "sim/base/results.h"

typedef struct gv_plan_opts {
	uint64_t min_bytes, max_bytes;
	int per_octave;
	int max_streams;
	uint64_t max_granular_bytes;
} gv_plan_opts_t;

void gv_plan_defaults(gv_plan_opts_t *o);
int gv_plan_build(const gv_plan_opts_t *o, res_transfer_t **out, size_t *n, err_t *e);

#endif
