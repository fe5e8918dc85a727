/* sim_sample — the run's periodic events: the policies' tick (the
 * predictor's forecast, the replication policy's on_tick) and the
 * timeline's samples (output.timeline = every, or only what changed: their
 * rows and state are sim_timeline.c's). */
#include "sim/run/sim_int.h"

/* Whether anything is still to happen (periodic events stop then). */
static int run_active(const sim_ctx_t *s)
{
	return sim_arrivals_active(s->arr) || s->cl.n_live || sim_copies_live(s->cp) > 0;
}

/* The policies' tick (every tick_ns): the predictor's forecast, scored
 * when asked, then the replication policy's on_tick. */
int sim_on_tick(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ev;
	sim_ctx_t *s = ctx;
	const struct pol_replication_ops *ro =
		POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
	pol_forecast_t fc = {0};
	const pol_forecast_t *fcp = NULL;
	int rc;
	if (s->horizon_ns > 0) {
		const struct pol_predictor_ops *po =
			POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
		err_clear(s->err);
		if ((rc = pol_hook_rc(s->pol.h[POL_PREDICTOR].ops, "forecast",
				      po->forecast(s->pol.h[POL_PREDICTOR].state, ev_engine_now(eng),
						   s->horizon_ns, &fc, s->err),
				      0, s->err)))
			return rc;
		fcp = &fc;
		if (s->fc && (rc = fcast_tick(s->fc, ev_engine_now(eng), &fc)))
			return rc;
	}
	if (ro->on_tick) {
		err_clear(s->err);
		if ((rc = pol_hook_rc(s->pol.h[POL_REPLICATION].ops, "on_tick",
				      ro->on_tick(s->pol.h[POL_REPLICATION].state, sim_views_policy(s->vw), &s->act,
						  fcp, s->err),
				      0, s->err)))
			return rc;
	}
	if (run_active(s) && ev_engine_after(eng, s->tick_ns, s->ev.tick, 0, 0) == EV_NONE)
		return KS_ENOMEM;
	return 0;
}

int sim_on_sample(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ev;
	sim_ctx_t *s = ctx;
	int64_t next;
	int rc = sim_timeline_sample(s, ev_engine_now(eng), &next);
	if (rc)
		return rc;
	if (run_active(s) && ev_engine_at(eng, next, s->ev.sample, 0, 0) == EV_NONE)
		return KS_ENOMEM;
	return 0;
}
