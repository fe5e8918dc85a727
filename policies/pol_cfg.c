/* pol_cfg — config keys of the policy families and reading a policy's
 * parameters from a resolved config (see pol.h).
 *
 * Sections policy.predictor, policy.replication, policy.routing,
 * policy.eviction, policy.transfer, policy.admission each hold `name` (an
 * enum of the registered policies) and every policy's own parameters,
 * tagged with owner = policy name, so cfg_finalize ignores (with a warning)
 * a parameter set for a policy the section does not select. Family-wide
 * keys (no owner, e.g. [policy.routing] view) hold whichever policy is
 * named. Section policy holds `preset` (pol_preset.c, policies/presets/). */
#include "policies/pol.h"
#include "sim/base/rng.h"
#include "policies/pol_int.h"

#include <stdlib.h>
#include <string.h>

/* Each family's `name` key; its choices are the built-ins of the family in
 * pol_builtins order, filled in by name_choices at registration (plugins
 * widen them later, pol_cfg_register_plugins). */
#define NAME_KEY(fam, def, doc) {"policy." fam, "name", CFG_ENUM, def, 0, 0, NULL, "", doc, NULL}
static cfg_key_t name_keys[POL_NFAMILY] = {
    NAME_KEY("predictor", "repeat_count",
             "demand forecaster feeding the replication policy (kvsim policies lists them)"),
    NAME_KEY("replication", "none", "how KV is copied between instances ahead of or on demand"),
    NAME_KEY("routing", "least_load", "which instance serves a request"),
    NAME_KEY("eviction", "lru", "which evictable KV block goes first when the pool is full"),
    NAME_KEY("transfer", "immediate", "when background (speculative) copies may use the links"),
    NAME_KEY("admission", "accept_all", "whether a request is admitted at arrival"),
};
#undef NAME_KEY

/* Room for one family's built-in names; pol_builtins is constant, so they
 * are joined once and the schema may keep pointing at them. */
#define POL_NAMES_MAX 1024
static char name_choices[POL_NFAMILY][POL_NAMES_MAX];

static int name_choices_fill(void)
{
	for (int f = 0; f < POL_NFAMILY; f++) {
		if (name_keys[f].choices)
			continue;
		char *names = pol_names(NULL, (pol_family_t)f);
		if (!names)
			return KS_ENOMEM;
		size_t n = strlen(names);
		if (n >= POL_NAMES_MAX) {
			free(names);
			return KS_EINPUT; /* raise POL_NAMES_MAX */
		}
		memcpy(name_choices[f], names, n + 1);
		free(names);
		name_keys[f].choices = name_choices[f];
	}
	return 0;
}

/* Its choices are filled in by pol_preset_register. */
static const cfg_key_t preset_key = {
    "policy",
    "preset",
    CFG_ENUM,
    "none",
    0,
    0,
    "none",
    "",
    "serving-framework preset: sets each of its keys that is not given explicitly (file "
    "or --set, which always win); 'kvsim policies --presets' lists what each sets and "
    "why (own design; the values cite each framework)",
    NULL};

/* Keys of a whole family, read by the simulator whichever policy is named. */
enum { VIEW_AUTO, VIEW_COMPUTED, VIEW_ROUTED, VIEW_EVENTS };
typedef struct family_params {
	int view; /* VIEW_* */
	uint32_t view_blocks;
	pol_view_params_t ev; /* the events view and the router replicas */
} family_params_t;
static const cfg_enum_t view_map[] = {{"auto", VIEW_AUTO},
                                      {"computed", VIEW_COMPUTED},
                                      {"routed", VIEW_ROUTED},
                                      {"events", VIEW_EVENTS},
                                      {NULL, 0}};
static const cfg_enum_t delay_dist_map[] = {{"fixed", POL_DELAY_FIXED},
                                            {"exponential", POL_DELAY_EXPONENTIAL},
                                            {"lognormal", POL_DELAY_LOGNORMAL},
                                            {NULL, 0}};
static const cfg_enum_t index_map[] = {{"exact", POL_INDEX_EXACT},
                                       {"bloom", POL_INDEX_BLOOM},
                                       {"cuckoo", POL_INDEX_CUCKOO},
                                       {"ttl", POL_INDEX_TTL},
                                       {NULL, 0}};
static const cfg_enum_t assign_map[] = {
    {"round_robin", POL_ASSIGN_ROUND_ROBIN}, {"random", POL_ASSIGN_RANDOM}, {NULL, 0}};
#define EV_KEY(name, type, def, lo, hi, unit, doc) {"policy.routing", name, type, def, lo, hi, NULL, unit, doc, NULL}
/* When a family key acts (cfg_when_t): each view's own keys only under it. */
#define EVENTS "policy.routing.view = events"
static const cfg_when_t when_routed = {
    "policy.routing.view = routed or policy.routing.view = auto and policy.routing.name = "
    "cache_aware",
    NULL};
static const cfg_when_t when_events = {EVENTS, NULL};
static const cfg_when_t when_lognormal = {EVENTS " and policy.routing.event_delay_dist = lognormal",
                                          NULL};
static const cfg_when_t when_filter = {EVENTS " and policy.routing.index = bloom|cuckoo", NULL};
static const cfg_when_t when_ttl = {EVENTS " and policy.routing.index = ttl", NULL};
static const cfg_when_t when_replicas = {"policy.routing.replicas > 1", NULL};
#undef EVENTS
#define FAM_AT(kind, member, w) CFG_AT_WHEN(kind, family_params_t, member, w)

static const cfg_tkey_t family_keys[] = {
    {{"policy.routing", "view", CFG_ENUM, "auto", 0, 0, NULL, "",
     "what prefix-aware routers match against: computed = KV that exists or is arriving by "
     "a copy at each instance; routed = the routers' own approximate tree of what they sent "
     "where, updated at routing time (sgl-router cache_aware); events = a per-instance KV "
     "index fed by the KV events each instance publishes (block stored when it becomes READY, "
     "removed when evicted), delayed, batched, lossy and approximate as the event_* and "
     "index* keys say (llm-d's KV-cache indexer, Dynamo's KV router); auto = routed for "
     "cache_aware (as SGLang's router), computed for the others",
     NULL},
     CFG_AT_ENUM(family_params_t, view, view_map)},
    {{"policy.routing", "view_blocks", CFG_INT, "0", 0, 4294967295.0, NULL, "blocks",
     "size limit per instance of the routed view, least recently routed evicted first "
     "(sgl-router's max_tree_size with LRU leaf eviction; its default, 2^26 characters, "
     "outgrows any KV pool); 0 = the instance's KV pool size (own choice: the tree forgets "
     "about when the cache does)",
     NULL},
     FAM_AT(U32, view_blocks, &when_routed)},
    {EV_KEY("event_delay_ms", CFG_FLOAT, "0", 0, 1e9, "ms",
            "view = events: mean delay from a KV event message's sending to its applying in "
            "the routers' index (own choice: 0, the index as instant as the computed view)"),
     FAM_AT(DOUBLE, ev.delay_ms, &when_events)},
    {{"policy.routing", "event_delay_dist", CFG_ENUM, "fixed", 0, 0, NULL, "",
      "view = events: distribution of each message's delay, mean event_delay_ms: fixed, "
      "exponential, or lognormal with coefficient of variation event_delay_cv; delivery keeps "
      "each instance's order (a message is applied at max(its drawn time, the previous "
      "message's)) (own choice: fixed)",
      NULL},
     CFG_AT_ENUM_WHEN(family_params_t, ev.delay_dist, delay_dist_map, &when_events)},
    {EV_KEY("event_delay_cv", CFG_FLOAT, "1", 0, 100, "",
            "view = events, event_delay_dist = lognormal: standard deviation / mean of the "
            "delay (own choice: 1)"),
     FAM_AT(DOUBLE, ev.delay_cv, &when_lognormal)},
    {EV_KEY("event_batch_ms", CFG_FLOAT, "0", 0, 1e9, "ms",
            "view = events: 0 = every event its own message; otherwise an instance's events "
            "are sent together every event_batch_ms, the window starting at its first event "
            "(own choice: 0)"),
     FAM_AT(DOUBLE, ev.batch_ms, &when_events)},
    {EV_KEY("event_loss", CFG_FLOAT, "0", 0, 1, "",
            "view = events: probability that an event of a message is lost, independently per "
            "event and per router replica (own choice: 0)"),
     FAM_AT(DOUBLE, ev.loss, &when_events)},
    {{"policy.routing", "index", CFG_ENUM, "exact", 0, 0, NULL, "",
      "view = events: the per-instance index of block ids: exact (a hash set), bloom "
      "(counting Bloom filter), cuckoo (cuckoo filter), ttl (exact set whose entries expire "
      "index_ttl_s after their last stored event; removed events are not applied) "
      "(own choice: exact)",
      NULL},
     CFG_AT_ENUM_WHEN(family_params_t, ev.index, index_map, &when_events)},
    {EV_KEY("index_fpr", CFG_FLOAT, "0.01", 0, 1, "",
            "view = events, index = bloom or cuckoo: target false-positive rate at "
            "index_capacity, in (0, 1) (own choice: 0.01)"),
     FAM_AT(DOUBLE, ev.index_fpr, &when_filter)},
    {EV_KEY("index_ttl_s", CFG_FLOAT, "120", 0, 1e9, "s",
            "view = events, index = ttl: lifetime of an entry after its last stored event, "
            "> 0 (own choice: 120 s)"),
     FAM_AT(DOUBLE, ev.index_ttl_s, &when_ttl)},
    {EV_KEY("index_capacity", CFG_INT, "0", 0, 4294967295.0, "blocks",
            "view = events: entries each instance's index is sized for; 0 = the instance's "
            "KV pool blocks (own choice: the index sized to what the cache can hold)"),
     FAM_AT(U64, ev.index_capacity, &when_events)},
    {EV_KEY("replicas", CFG_INT, "1", 1, 1024, "",
            "router replicas, any view: each arrival is decided by one replica (replica_assign), "
            "which has its own routed tree (updated only by its own decisions) or its own event "
            "index (every replica receives every message, losses drawn per replica); its load "
            "counts are its own: waiting + running is its in-flight requests to the instance "
            "(counted from its route to the request's result row), prefill tokens their prompt "
            "tokens, while KV use, speculative blocks and the queue delay estimate stay the "
            "instance's true ones (own choice: 1, one router)"),
     CFG_AT(U32, family_params_t, ev.replicas)},
    {{"policy.routing", "replica_assign", CFG_ENUM, "round_robin", 0, 0, NULL, "",
      "replicas > 1: which replica decides an arrival: round_robin over arrivals, or random "
      "(drawn from the view's own random stream) (own choice: round_robin)",
      NULL},
     CFG_AT_ENUM_WHEN(family_params_t, ev.assign, assign_map, &when_replicas)},
};
#undef EV_KEY
#undef FAM_AT

/* The predictor runs only for a replication policy that asks it for
 * forecasts (a horizon, pol_repl_timing_t): speculative, early_rdma with
 * early_trigger = forecast, or a plugin's. */
static const cfg_when_t when_predictor = {
    "policy.replication.name != none|reactive_hotspot|full|early_rdma or "
    "policy.replication.name = early_rdma and policy.replication.early_trigger = forecast",
    "select a replication policy that forecasts: policy.replication.name = speculative, or "
    "early_rdma with early_trigger = forecast"};

/* The family keys of c (their defaults if c's schema lacks them). */
static family_params_t family_params(const cfg_t *c)
{
	family_params_t p = {0};
	size_t n = sizeof family_keys / sizeof family_keys[0];
	if (cfg_fill(c, family_keys, n, &p, NULL))
		(void)cfg_fill_defaults(family_keys, n, &p, NULL);
	return p;
}

const char *pol_cfg_name(const cfg_t *c, pol_family_t f)
{
	return cfg_str(c, name_keys[f].section, name_keys[f].name);
}

const char *pol_cfg_preset(const cfg_t *c)
{
	return cfg_str(c, preset_key.section, preset_key.name);
}

int pol_routing_view_routed(const cfg_t *c)
{
	int v = family_params(c).view;
	if (v == VIEW_AUTO)
		return !strcmp(pol_cfg_name(c, POL_ROUTING), "cache_aware");
	return v == VIEW_ROUTED;
}

int pol_routing_view_events(const cfg_t *c)
{
	return family_params(c).view == VIEW_EVENTS;
}

pol_view_params_t pol_routing_view_params(const cfg_t *c)
{
	return family_params(c).ev;
}

uint32_t pol_routing_view_blocks(const cfg_t *c, uint32_t pool_blocks)
{
	uint32_t n = family_params(c).view_blocks;
	return n > 0 ? n : pool_blocks;
}

int pol_cfg_register(cfg_schema_t *s)
{
	int rc = name_choices_fill();
	if (rc || (rc = cfg_schema_add(s, &preset_key, 1)))
		return rc;
	for (int f = 0; f < POL_NFAMILY; f++)
		if ((rc = cfg_schema_add(s, &name_keys[f], 1)))
			return rc;
	if ((rc = cfg_schema_add_typed(s, family_keys, sizeof family_keys / sizeof family_keys[0])))
		return rc;
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++)
		if ((rc = cfg_schema_add_typed(s, b->ops->params, b->ops->n_params)))
			return rc;
	return cfg_schema_set_section_when(s, pol_family_section(POL_PREDICTOR), &when_predictor);
}

static int is_builtin(const pol_base_t *ops)
{
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++)
		if (b->ops == ops)
			return 1;
	return 0;
}

int pol_cfg_register_plugins(cfg_schema_t *s, const pol_registry_t *r, err_t *e)
{
	for (int f = 0; f < POL_NFAMILY; f++) {
		size_t n = pol_count(r, (pol_family_t)f);
		for (size_t i = 0; i < n; i++) {
			const pol_base_t *ops = pol_at(r, (pol_family_t)f, i);
			if (is_builtin(ops) || !ops->n_params)
				continue;
			if (cfg_schema_find(s, ops->params[0].key.section, ops->params[0].key.name))
				continue; /* already added */
			if (cfg_schema_add_typed(s, ops->params, ops->n_params))
				return err_set(e, KS_EINPUT,
				               "plugin policy '%s': its parameters clash with the "
				               "config schema",
				               ops->name);
		}
		char *names = pol_names(r, (pol_family_t)f);
		if (!names)
			return err_set(e, KS_ENOMEM, "out of memory");
		int rc =
		    cfg_schema_set_choices(s, pol_family_section((pol_family_t)f), "name", names);
		free(names);
		if (rc)
			return err_set(e, rc, "[%s] name: cannot widen its choices",
			               pol_family_section((pol_family_t)f));
	}
	return 0;
}

int pol_params_from_cfg(pol_params_t *p, const pol_base_t *ops, const cfg_t *c, err_t *e)
{
	/* defaults first (allocates), then the config's values */
	int rc = pol_params_init(p, ops, NULL, e);
	if (!rc && (rc = cfg_fill(c, p->keys, p->n, p->data, e))) {
		pol_params_free(p);
		err_prefix(e, "plugin keys need pol_cfg_register_plugins");
	}
	return rc;
}

int pol_open_cfg(const pol_registry_t *r, pol_family_t f, const cfg_t *c, uint64_t seed,
                 pol_handle_t *h, err_t *e)
{
	memset(h, 0, sizeof *h);
	const char *sec = pol_family_section(f);
	if (!sec)
		return err_set(e, KS_EINPUT, "bad policy family %d", (int)f);
	const char *name = pol_cfg_name(c, f);
	const pol_base_t *ops = pol_find(r, f, name);
	if (!ops)
		return err_set(e, KS_EINPUT, "[%s] name: unknown policy '%s'", sec, name);
	int rc = pol_params_from_cfg(&h->params, ops, c, e);
	if (rc)
		return err_prefix(e, "%s policy '%s'", pol_family_name(f), name);
	if ((rc = pol_open_ops(ops, seed, h, e)) != KS_EINPUT || !e)
		return rc;
	/* an init that refuses a value names its key: say where it was set */
	for (size_t i = 0; i < ops->n_params; i++) {
		char tag[256];
		snprintf(tag, sizeof tag, "[%s] %s:", sec, ops->params[i].key.name);
		if (strstr(e->msg, tag))
			return err_prefix(e, "%s", cfg_origin(c, sec, ops->params[i].key.name));
	}
	return rc;
}

uint64_t pol_seed(uint64_t master, pol_family_t f)
{
	/* the simulator's derivation, in streams of their own: the trace's
	 * stream must never coincide with a policy's */
	return sim_seed_for(master, SIM_STREAM_POLICY + (uint64_t)f);
}

int pol_set_open_cfg(const pol_registry_t *r, const cfg_t *c, uint64_t master_seed, pol_set_t *s,
                     err_t *e)
{
	memset(s, 0, sizeof *s);
	for (int f = 0; f < POL_NFAMILY; f++) {
		int rc = pol_open_cfg(r, (pol_family_t)f, c, pol_seed(master_seed, (pol_family_t)f),
		                      &s->h[f], e);
		if (rc) {
			pol_set_close(s);
			return rc;
		}
	}
	return 0;
}

void pol_set_close(pol_set_t *s)
{
	for (int f = 0; f < POL_NFAMILY; f++)
		pol_close(&s->h[f]);
}
