/* gv_sched — the transfer schedules that kvreplay replays, in HDF5.
 *
 * A schedule is the `/transfers` dataset of a kvsim run file: a 1-D compound
 * table whose members carry the names of res_transfer_t (sim/base/results.h).
 * gv_sched_read matches members by name, so their order in the file does not
 * matter, and reports a missing member by name. A calibration plan is the same
 * table plus the root attribute `kvsim_plan` = 1, which tells kvreplay to time
 * each set of transfers with equal start_ns as an isolated group. Times are
 * ns, sizes bytes; instance or gpu -1 means host memory. gv_sched_t owns its
 * array (gv_sched_free). Errors: KS_EIO (HDF5), KS_EINPUT (bad table),
 * KS_ENOMEM, with the path in the message.
 */
#ifndef KVSIM_GV_SCHED_H
#define KVSIM_GV_SCHED_H

#include <stddef.h>

#include "sim/base/err.h"
#include "sim/base/results.h"

typedef struct gv_sched {
	res_transfer_t *xfer;
	size_t n;
	int is_plan;
} gv_sched_t;

int gv_sched_read(gv_sched_t *s, const char *path, err_t *e);
void gv_sched_free(gv_sched_t *s);
/* Writes (or replaces) path with a /transfers table; written to a
 * temporary name and renamed when complete. */
int gv_sched_write(const char *path, const res_transfer_t *t, size_t n, int is_plan, err_t *e);

#endif
