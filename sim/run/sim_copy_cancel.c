/* sim_copy_cancel — a copy stopped before it lands (a policy's cancel, or a
 * deferred copy's source dropped): its timing mode stops paying and records
 * what its shards moved, its reservations leave the destination, the pins it
 * took are released, and the requests waiting there decide again. */
#include "sim/run/sim_copy_mode.h"

/* Asks for an iteration at inst at the current instant, from an event of its
 * own: callers may sit inside another instance's scheduler. */
static int kick_later(sim_ctx_t *s, place_t at)
{
	if (!place_is_inst(at))
		return 0;
	return ev_engine_after(s->eng, 0, s->ev.kick, at.index, 0) == EV_NONE ? KS_ENOMEM : 0;
}

int sim_copy_cancel(sim_ctx_t *s, uint64_t id)
{
	if (id == 0 || id > s->cp->n_copies || !s->cp->copies[id - 1].live)
		return KS_EINPUT;
	kcopy_t *k = &s->cp->copies[id - 1];
	sim_touch_place(s, k->src); /* the timeline: both stores change */
	sim_touch_place(s, k->dst);
	const sim_copy_mode_ops_t *mo = sim_copy_mode_ops(k->mode); /* NULL: not started */
	int rc = mo ? mo->cancel(s, k) : 0;
	if (rc)
		return rc;
	/* exactly what it took (a handoff holds no block) */
	if (k->held && (rc = sim_copy_release(s, k->src, k->dst, k->blocks, k->held, k->n)))
		return rc;
	k->live = 0;
	s->cp->live_events--;
	s->spec.copies_cancelled++;
	if (s->fc)
		fcast_replica_cancel(s->fc, id);
	if (k->deferred) {
		sim_copy_deferred_forget(s, (uint32_t)(id - 1));
		s->spec.deferred_cancelled++;
	}
	/* requests at dst waiting for these blocks now compute them */
	if ((rc = kick_later(s, k->dst)))
		return rc;
	if (k->from_policy) {
		const struct pol_replication_ops *ro =
			POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
		if (ro->on_copy_end)
			ro->on_copy_end(s->pol.h[POL_REPLICATION].state, k->id, 0);
	}
	return 0;
}
