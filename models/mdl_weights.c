/* mdl_weights — an LLM's weight bytes: the width of each part (embedding
 * and LM head, experts, the rest), the parameter split between them, and
 * the bytes one GPU of a TP group holds. See mdl.h.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "models/mdl.h"

double mdl_expert_weight_bytes(const mdl_llm_t *m)
{
	return m->expert_weight_bytes > 0 ? m->expert_weight_bytes : m->weight_bytes;
}

double mdl_embed_weight_bytes(const mdl_llm_t *m)
{
	return m->embed_weight_bytes > 0 ? m->embed_weight_bytes : m->weight_bytes;
}

int mdl_weights_one_width(const mdl_llm_t *m)
{
	return mdl_expert_weight_bytes(m) == m->weight_bytes &&
	       mdl_embed_weight_bytes(m) == m->weight_bytes;
}

void mdl_params_split(const mdl_llm_t *m, mdl_params_split_t *s)
{
	memset(s, 0, sizeof *s);
	s->embed = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
	if (m->experts > m->experts_active) {
		s->routed_one = (double)(m->params_total - m->params_active) /
		                (m->experts - m->experts_active);
		/* SwiGLU shared experts: gate, up (hidden x I) and down (I x hidden) */
		s->shared_experts = (double)(m->layers - m->dense_layers) * 3.0 * m->hidden *
		                    m->shared_intermediate;
		s->experts = m->experts * s->routed_one + s->shared_experts;
	}
	s->other = (double)m->params_total - s->embed - s->experts;
}

uint64_t mdl_weights_bytes_per_gpu(const mdl_llm_t *m, uint32_t tp)
{
	if (tp < 1)
		tp = 1;
	if (mdl_weights_one_width(m))
		return (uint64_t)ceil((double)m->params_total * m->weight_bytes / tp);
	mdl_params_split_t s;
	mdl_params_split(m, &s);
	double b = s.embed * mdl_embed_weight_bytes(m) + s.experts * mdl_expert_weight_bytes(m) +
	           s.other * m->weight_bytes;
	return (uint64_t)ceil(b / tp);
}
