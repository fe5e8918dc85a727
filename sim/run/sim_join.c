/* sim_join — cold joins (sim_join.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/run/recorder.h"
#include "sim/run/sim_join.h"
#include "sim/run/sim_rview.h"

struct sim_join {
	uint32_t first;  /* the first cold instance: n_instances - count */
	uint32_t count;  /* join_instances */
	uint32_t joined; /* of them, joined so far */
	int64_t *at_ns;  /* join time of instance first + k, non-decreasing */
	uint32_t ev;     /* event type */
};

/* The views see instances [0, n). */
static void join_present(sim_ctx_t *s, uint32_t n)
{
	sim_views_set_present(s->vw, n);
	if (s->rvw)
		sim_rv_set_present(s->rvw, n);
}

static int on_join(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	struct sim_join *j = s->jn;
	uint32_t i = ev->target;
	/* events at one time fire in the order scheduled: index order */
	if (i != j->first + j->joined)
		return err_set(s->err, KS_ERUNTIME, "cold join: instance %u joins before instance %u",
			       i, j->first + j->joined);
	uint32_t held = kv_used(s->cl.inst[i].kv);
	if (held)
		return err_set(s->err, KS_ERUNTIME,
			       "cold join: instance %u joins holding %u KV blocks (it was absent)", i,
			       held);
	j->joined++;
	join_present(s, i + 1);
	return 0;
}

/* join_at_s: count times, each > 0 and finite, non-decreasing. */
static int join_parse(const sim_ctx_t *s, const char *text, int64_t *at_ns, uint32_t count,
		      err_t *e)
{
	const char *p = text;
	uint32_t k = 0;
	double prev = 0;
	for (;;) {
		char *end;
		errno = 0;
		double t = strtod(p, &end);
		while (end != p && (*end == ' ' || *end == '\t'))
			end++;
		if (end == p || (*end && *end != ',') || errno)
			return cfg_err_keys(s->cfg, e, "cluster.join_at_s",
					    "'%s': entry %u is not a number of seconds "
					    "(expected times like 20,40,60)",
					    text, k + 1);
		if (!(t > 0 && t <= 4e9))
			return cfg_err_keys(s->cfg, e, "cluster.join_at_s",
					    "'%s': entry %u (%g s) is out of range (0, 4e9]", text,
					    k + 1, t);
		if (t < prev)
			return cfg_err_keys(s->cfg, e, "cluster.join_at_s",
					    "'%s': entry %u (%g s) comes before entry %u (%g s); "
					    "instances join in index order, so times are non-decreasing",
					    text, k + 1, t, k, prev);
		if (k < count)
			at_ns[k] = llround(t * 1e9);
		k++;
		prev = t;
		if (!*end)
			break;
		p = end + 1;
	}
	if (k != count)
		return cfg_err_keys(s->cfg, e, "cluster.join_at_s,cluster.join_instances",
				    "'%s' gives %u join times for join_instances = %u (one per "
				    "joining instance)",
				    text, k, count);
	return 0;
}

int sim_join_setup(sim_ctx_t *s, err_t *e)
{
	const sim_join_params_t *p = &s->prm.jn;
	int have_at = p->at_s && *p->at_s, have_every = p->every_s > 0;
	uint32_t n = s->cl.p.n_instances;
	if (p->instances == 0) {
		if (have_at || have_every)
			return cfg_err_keys(s->cfg, e,
					    have_at ? "cluster.join_at_s" : "cluster.join_every_s",
					    "set, but join_instances = 0: no instance joins");
		return 0;
	}
	if (s->dg)
		return cfg_err_keys(s->cfg, e, "cluster.join_instances,cluster.disagg",
				    "cold join needs disagg = false (the decode pool's instance "
				    "ids follow the prefill pool's)");
	if (p->instances >= n)
		return cfg_err_keys(s->cfg, e, "cluster.join_instances",
				    "%u of %u instances: at least one must serve from the start",
				    p->instances, n);
	if (have_at == have_every)
		return cfg_err_keys(s->cfg, e,
				    "cluster.join_instances,cluster.join_at_s,cluster.join_every_s",
				    "join_instances = %u needs exactly one of join_at_s (a time per "
				    "instance) and join_every_s",
				    p->instances);
	struct sim_join *j = s->jn = calloc(1, sizeof *j);
	if (!j || !(j->at_ns = calloc(p->instances, sizeof *j->at_ns)))
		return err_set(e, KS_ENOMEM, "out of memory");
	j->first = n - p->instances;
	j->count = p->instances;
	int rc;
	if (have_at && (rc = join_parse(s, p->at_s, j->at_ns, j->count, e)))
		return rc;
	for (uint32_t k = 0; have_every && k < j->count; k++) {
		double t = (k + 1) * p->every_s;
		if (t > 4e9)
			return cfg_err_keys(s->cfg, e, "cluster.join_every_s",
					    "%g s: instance %u would join at %g s, past 4e9 s",
					    p->every_s, j->first + k, t);
		j->at_ns[k] = llround(t * 1e9);
	}
	if (ev_engine_type_new(s->eng, on_join, s, &j->ev))
		return err_set(e, KS_ERUNTIME, "no event type left (EV_MAX_TYPES)");
	for (uint32_t k = 0; k < j->count; k++)
		if (ev_engine_at(s->eng, j->at_ns[k], j->ev, j->first + k, k) == EV_NONE)
			return err_set(e, KS_ENOMEM, "out of memory");
	/* the load index groups every instance, absent ones included */
	sim_views_scan_loads(s->vw);
	join_present(s, j->first);
	return 0;
}

int sim_join_report(const sim_ctx_t *s, sim_results_t *res)
{
	const struct sim_join *j = s->jn;
	if (!j)
		return 0;
	/* REC_JOIN_INSTANCES .. REC_JOIN_LAST_S, in the recorder's order */
	const double m[] = {(double)j->count, j->at_ns[0] / 1e9, j->at_ns[j->count - 1] / 1e9};
	_Static_assert(sizeof m / sizeof m[0] == REC_JOIN_LAST_S - REC_JOIN_INSTANCES + 1,
		       "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (rec_metric(res, REC_JOIN_INSTANCES + (int)i, m[i]))
			return KS_ENOMEM;
	return 0;
}

void sim_join_free(sim_ctx_t *s)
{
	if (s->jn)
		free(s->jn->at_ns);
	free(s->jn);
	s->jn = NULL;
}
