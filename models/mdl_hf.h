/* mdl_hf — a Hugging Face config.json, as published, read into an LLM spec.
 *
 * The reader takes the language model's fields from the root object or from
 * its `text_config` (multimodal checkpoints), the weight widths from
 * `quantization_config` (fp8, compressed-tensors with its ignore list, awq,
 * gptq), and computes from the shapes what a spec file states: parameter
 * counts (total, and active per token for MoE), the per-component widths
 * (mdl.h: weight_bytes for attention and the rest, expert_weight_bytes,
 * embed_weight_bytes), shared experts and dense layers. The formulas are in
 * mdl_hf.c beside the code.
 *
 * Parts of a checkpoint kvsim does not cost (a vision tower, multi-token
 * prediction layers, chunked or indexed sparse attention costed as full
 * attention, an unknown model_type read as a Llama-style decoder) are named
 * in info->uncosted, never dropped silently. A field that changes the
 * architecture in a way kvsim cannot represent (per-layer sliding windows of
 * Qwen, attention left unquantized in some layers only, an unknown
 * quantization method) is an error, as is a missing required field:
 * KS_EINPUT "ORIGIN: json.path: reason" (a JSON syntax error "ORIGIN:LINE:
 * reason"). Nothing is allocated for the caller.
 */
#ifndef KVSIM_MDL_HF_H
#define KVSIM_MDL_HF_H

#include <stddef.h>

#include "models/mdl.h"
#include "sim/base/err.h"

#define MDL_HF_NOTES 8
#define MDL_HF_NOTE_MAX 240

typedef struct mdl_hf_info {
	size_t n_uncosted;
	char uncosted[MDL_HF_NOTES][MDL_HF_NOTE_MAX]; /* "part: how it is treated" */
	double params_attn; /* attention projections (and their norms, biases), all layers */
} mdl_hf_info_t;

/* text: the JSON; origin names it in messages (a path). info may be NULL. */
int mdl_hf_parse(const char *origin, const char *text, size_t len, mdl_llm_t *llm,
                 mdl_hf_info_t *info, err_t *e);
int mdl_hf_load_file(const char *path, mdl_llm_t *llm, mdl_hf_info_t *info, err_t *e);

#endif
