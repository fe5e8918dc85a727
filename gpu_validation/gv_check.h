/* gv_check — predicted vs measured time per copy (`kvsim calibrate check`).
 *
 * Joins a run's /transfers schedule and kvreplay's measurements by transfer
 * id. For each replayed copy: the simulator's duration (end_ns - start_ns in
 * the run), the transfer model's prediction for what was executed (link,
 * shape, concurrency), and the measured median. Rows are malloc'd (caller
 * frees). Errors: KS_EINPUT when no id matches, KS_ENOMEM.
 */
#ifndef KVSIM_GV_CHECK_H
#define KVSIM_GV_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_validation/gv_fit.h"
#include "gpu_validation/gv_meas.h"
#include "gpu_validation/gv_sched.h"
#include "models/mdl_xfer.h"

typedef struct gv_check_row {
	uint64_t id;
	int kind, link, shape;
	uint64_t bytes;
	uint32_t blocks;
	int m_same, m_opp;
	double sim_ns, model_ns, meas_ns;
} gv_check_row_t;

typedef struct gv_check_summary {
	size_t n_rows, n_unmatched;
	gv_err_summary_t model, sim; /* |rel err| against the measurement */
} gv_check_summary_t;

int gv_check(const gv_sched_t *run, const gv_meas_t *m, const mdl_xfer_t *x, gv_check_row_t **rows,
             gv_check_summary_t *s, err_t *e);

#endif
