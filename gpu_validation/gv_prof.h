/* gv_prof — kvreplay's --compute measurements as a per-operator profile
 * (models/mdl_prof.h, Vidur's mlp.csv format), so `kvsim calibrate compute
 * fit` runs on what the GPU harness measured.
 *
 * kvreplay times one decoder layer's four GEMMs (gemm_qkv, gemm_o,
 * gemm_gate_up, gemm_down) per token count at the shape it was given; the
 * harness gives it the per-GPU shape of each TP degree (heads/tp,
 * kv_heads/tp, ffn/tp). The TP of a file is read back from gemm_o's input
 * width (heads*head_dim/tp). Small kernels (norms, rope, activation, add)
 * are not measured: their time is 0 ("not measured"), which the fit skips.
 * Rows are malloc'd and appended to *rows (caller frees). Errors: KS_EINPUT
 * naming the op and token count ("gemm_down at 512 tokens: missing"),
 * KS_ENOMEM.
 */
#ifndef KVSIM_GV_PROF_H
#define KVSIM_GV_PROF_H

#include <stddef.h>

#include "gpu_validation/gv_meas.h"
#include "models/mdl.h"
#include "models/mdl_prof.h"

/* origin names the measurements file in messages. */
int gv_prof_rows(const char *origin, const gv_meas_t *m, const mdl_llm_t *llm,
                 mdl_prof_row_t **rows, size_t *n, err_t *e);

#endif
