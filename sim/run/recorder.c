/* recorder — see recorder.h. */
#include "sim/run/recorder.h"

#include "sim/base/err.h"

static const rec_metric_def_t defs[REC_N_METRICS] = {
#define X(id, name, unit, doc) [REC_##id] = {name, unit, doc},
    REC_METRICS
#undef X
};

const rec_metric_def_t *rec_metric_def(int id)
{
	return id >= 0 && id < REC_N_METRICS ? &defs[id] : NULL;
}

int rec_metric(sim_results_t *res, int id, double v)
{
	const rec_metric_def_t *d = rec_metric_def(id);
	return d ? sim_results_metric(res, d->name, d->unit, v) : KS_EINPUT;
}

void rec_metric_list(FILE *f)
{
	for (int i = 0; i < REC_N_METRICS; i++)
		fprintf(f, "%s\t%s\t%s\n", defs[i].name, defs[i].unit, defs[i].doc);
}

int rec_request(void *ctx, const res_request_t *row)
{
	return sim_results_append(ctx, RES_T_REQ, row);
}

int rec_transfer(sim_results_t *res, const res_transfer_t *row)
{
	return sim_results_append(res, RES_T_XFER, row);
}

int rec_sample(sim_results_t *res, const res_sample_t *row)
{
	return sim_results_append(res, RES_T_TL, row);
}
