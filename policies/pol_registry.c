/* pol_registry — the built-in table, plugin loading (dlopen) and opening a
 * policy by name (see pol.h). */
#include "policies/pol.h"
#include "sim/base/vec.h"
#include "policies/pol_int.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* The built-in policies, one line each: family, ops type, the table its
 * file defines. The externs, pol_builtins[] and so each family's `name`
 * choices (pol_cfg.c) and `kvsim policies` all come from this list, in its
 * order; adding a policy is its file plus one line here (CONTRIBUTING.md). */
#define POL_BUILTIN_LIST(X)                                                                        \
	X(POL_PREDICTOR, pol_predictor_ops, pol_pred_oracle)                                       \
	X(POL_PREDICTOR, pol_predictor_ops, pol_pred_repeat_count)                                 \
	X(POL_PREDICTOR, pol_predictor_ops, pol_pred_ewma)                                         \
	X(POL_PREDICTOR, pol_predictor_ops, pol_pred_holt)                                         \
	X(POL_PREDICTOR, pol_predictor_ops, pol_pred_hawkes)                                       \
	X(POL_PREDICTOR, pol_predictor_ops, pol_pred_lookahead)                                    \
	X(POL_REPLICATION, pol_replication_ops, pol_repl_none)                                     \
	X(POL_REPLICATION, pol_replication_ops, pol_repl_reactive_hotspot)                         \
	X(POL_REPLICATION, pol_replication_ops, pol_repl_early_rdma)                               \
	X(POL_REPLICATION, pol_replication_ops, pol_repl_speculative)                              \
	X(POL_REPLICATION, pol_replication_ops, pol_repl_full)                                     \
	X(POL_ROUTING, pol_routing_ops, pol_route_round_robin)                                     \
	X(POL_ROUTING, pol_routing_ops, pol_route_random)                                          \
	X(POL_ROUTING, pol_routing_ops, pol_route_least_load)                                      \
	X(POL_ROUTING, pol_routing_ops, pol_route_cache_aware)                                     \
	X(POL_ROUTING, pol_routing_ops, pol_route_kv_cost)                                         \
	X(POL_ROUTING, pol_routing_ops, pol_route_weighted_score)                                  \
	X(POL_ROUTING, pol_routing_ops, pol_route_preble)                                          \
	X(POL_ROUTING, pol_routing_ops, pol_route_min_ttft)                                        \
	X(POL_ROUTING, pol_routing_ops, pol_route_power_of_two)                                    \
	X(POL_EVICTION, pol_eviction_ops, pol_evict_lru)                                           \
	X(POL_EVICTION, pol_eviction_ops, pol_evict_lfu)                                           \
	X(POL_EVICTION, pol_eviction_ops, pol_evict_spec_first)                                    \
	X(POL_EVICTION, pol_eviction_ops, pol_evict_cost_aware)                                    \
	X(POL_TRANSFER, pol_transfer_ops, pol_xfer_immediate)                                      \
	X(POL_TRANSFER, pol_transfer_ops, pol_xfer_idle_window)                                    \
	X(POL_TRANSFER, pol_transfer_ops, pol_xfer_rate_cap)                                       \
	X(POL_ADMISSION, pol_admission_ops, pol_admit_accept_all)                                  \
	X(POL_ADMISSION, pol_admission_ops, pol_admit_slo_reject)

#define POL_BUILTIN_EXTERN(fam, type, var) extern const struct type var;
POL_BUILTIN_LIST(POL_BUILTIN_EXTERN)
#undef POL_BUILTIN_EXTERN

#define POL_BUILTIN_ENTRY(fam, type, var) {fam, NULL, &var.base},
const pol_reg_entry_t pol_builtins[] = {
    POL_BUILTIN_LIST(POL_BUILTIN_ENTRY){POL_NFAMILY, NULL, NULL},
};
#undef POL_BUILTIN_ENTRY

struct pol_registry {
	const pol_base_t **tab[POL_NFAMILY];
	size_t n[POL_NFAMILY], cap[POL_NFAMILY];
	void **dl;
	size_t n_dl;
};

static int name_ok(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

/* The first byte past field f in its struct (0 for a key that fills none). */
static size_t field_end(const cfg_field_t *f)
{
	static const size_t size[] = {
	    [CFG_F_I64] = sizeof(int64_t), [CFG_F_U32] = sizeof(uint32_t),
	    [CFG_F_U64] = sizeof(uint64_t), [CFG_F_DOUBLE] = sizeof(double),
	    [CFG_F_BOOL] = sizeof(int),     [CFG_F_STR] = sizeof(char *),
	    [CFG_F_STRDUP] = sizeof(char *), [CFG_F_ENUM] = sizeof(int)};
	if (f->kind == CFG_F_NONE)
		return 0;
	return (unsigned)f->kind < sizeof size / sizeof size[0] ? f->off + size[f->kind] : SIZE_MAX;
}

/* Checks a table on its own; duplicates are checked against r by the caller. */
static int ops_check(const pol_base_t *ops, err_t *e)
{
	if (!ops)
		return err_set(e, KS_EINPUT, "policy table is NULL");
	if (ops->version < POL_ABI_MIN || ops->version > POL_ABI_VERSION)
		return err_set(e, KS_EINPUT,
		               "policy '%s': ABI version %d, host supports %d..%d (tables "
		               "before %d have untyped parameters: rebuild against policies/pol.h)",
		               ops->name && ops->version >= POL_ABI_MIN ? ops->name : "?",
		               ops->version, POL_ABI_MIN, POL_ABI_VERSION, POL_ABI_MIN);
	if ((unsigned)ops->family >= POL_NFAMILY)
		return err_set(e, KS_EINPUT, "policy '%s': bad family %d",
		               ops->name ? ops->name : "?", (int)ops->family);
	if (!name_ok(ops->name) || !strcmp(ops->name, "name"))
		return err_set(e, KS_EINPUT, "policy name '%s': expected [a-z0-9_]+",
		               ops->name ? ops->name : "");
	const char *sec = pol_family_section(ops->family);
	for (size_t i = 0; i < ops->n_params; i++) {
		const cfg_key_t *k = &ops->params[i].key;
		if (field_end(&ops->params[i].at) > ops->params_size)
			return err_set(e, KS_EINPUT,
			               "policy '%s': parameter '%s' lies outside params_size %zu",
			               ops->name, k->name ? k->name : "?", ops->params_size);
		if (!k->name || !k->section || strcmp(k->section, sec) || !k->owner ||
		    strcmp(k->owner, ops->name) || !strcmp(k->name, "name"))
			return err_set(
			    e, KS_EINPUT,
			    "policy '%s': parameter '%s' must be in [%s] with owner '%s'",
			    ops->name, k->name ? k->name : "?", sec, ops->name);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(ops->params[j].key.name, k->name))
				return err_set(e, KS_EINPUT, "policy '%s': parameter '%s' twice",
				               ops->name, k->name);
	}
	const void *hooks_ok = NULL;
	switch (ops->family) {
	case POL_PREDICTOR: {
		const struct pol_predictor_ops *o = (const void *)ops;
		hooks_ok = o->observe && o->forecast ? o : NULL;
		break;
	}
	case POL_REPLICATION: {
		const struct pol_replication_ops *o = (const void *)ops;
		hooks_ok = o->timing ? o : NULL;
		break;
	}
	case POL_ROUTING:
		hooks_ok = ((const struct pol_routing_ops *)(const void *)ops)->route ? ops : NULL;
		break;
	case POL_EVICTION:
		hooks_ok =
		    ((const struct pol_eviction_ops *)(const void *)ops)->priority ? ops : NULL;
		break;
	case POL_TRANSFER:
		hooks_ok = ((const struct pol_transfer_ops *)(const void *)ops)->mode ? ops : NULL;
		break;
	case POL_ADMISSION:
		hooks_ok =
		    ((const struct pol_admission_ops *)(const void *)ops)->admit ? ops : NULL;
		break;
	default:
		break;
	}
	if (!hooks_ok)
		return err_set(e, KS_EINPUT, "policy '%s': a required %s hook is NULL", ops->name,
		               pol_family_name(ops->family));
	return 0;
}

/* A parameter name must mean one thing within a family section: two
 * policies may share it only with the same type. Keeps the cfg section flat. */
static int clash_check(const pol_registry_t *r, const pol_base_t *ops, err_t *e)
{
	pol_family_t f = ops->family;
	for (size_t j = 0; j < r->n[f]; j++) {
		const pol_base_t *o = r->tab[f][j];
		if (!strcmp(o->name, ops->name))
			return err_set(e, KS_EINPUT, "%s policy '%s' is already registered",
			               pol_family_name(f), ops->name);
		for (size_t a = 0; a < ops->n_params; a++)
			for (size_t b = 0; b < o->n_params; b++)
				if (!strcmp(ops->params[a].key.name, o->params[b].key.name))
					return err_set(
					    e, KS_EINPUT,
					    "policy '%s': parameter '%s' already used by "
					    "%s policy '%s'",
					    ops->name, ops->params[a].key.name, pol_family_name(f),
					    o->name);
	}
	return 0;
}

int pol_registry_add(pol_registry_t *r, const pol_base_t *ops, err_t *e)
{
	int rc = ops_check(ops, e);
	if (rc || (rc = clash_check(r, ops, e)))
		return rc;
	pol_family_t f = ops->family;
	if (VEC_GROW(r->tab[f], r->cap[f], r->n[f] + 1, 16))
		return err_set(e, KS_ENOMEM, "out of memory");
	r->tab[f][r->n[f]++] = ops;
	return 0;
}

pol_registry_t *pol_registry_new(void)
{
	pol_registry_t *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	err_t e;
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++)
		if (pol_registry_add(r, b->ops, &e)) {
			pol_registry_free(r);
			return NULL;
		}
	return r;
}

void pol_registry_free(pol_registry_t *r)
{
	if (!r)
		return;
	for (int f = 0; f < POL_NFAMILY; f++)
		free(r->tab[f]);
	for (size_t i = 0; i < r->n_dl; i++)
		dlclose(r->dl[i]);
	free(r->dl);
	free(r);
}

static int host_add(pol_registry_t *reg, const pol_base_t *ops, err_t *e)
{
	return pol_registry_add(reg, ops, e);
}

int pol_registry_load(pol_registry_t *r, const char *path, err_t *e)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return err_set(e, KS_EINPUT, "--plugin %s: %s", path, dlerror());
	pol_plugin_register_fn fn;
	*(void **)&fn = dlsym(h, POL_PLUGIN_SYMBOL);
	if (!fn) {
		dlclose(h);
		return err_set(e, KS_EINPUT, "--plugin %s: no symbol %s", path, POL_PLUGIN_SYMBOL);
	}
	if (VEC_RESIZE(r->dl, r->n_dl + 1)) {
		dlclose(h);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	/* Kept open even when registration fails halfway: tables it added
	 * point into it. */
	r->dl[r->n_dl++] = h;
	err_t pe = {0};
	pol_host_api_t api = {POL_ABI_VERSION, r, host_add, &pe};
	int rc = fn(&api);
	if (rc && pe.msg[0])
		return err_set(e, rc < 0 && rc >= KS_ESTATE ? rc : KS_EINPUT,
		               "--plugin %s: registration failed: %s", path, pe.msg);
	if (rc)
		return err_set(e, rc < 0 && rc >= KS_ESTATE ? rc : KS_EINPUT,
		               "--plugin %s: %s returned %d (%s) and gave no reason", path,
		               POL_PLUGIN_SYMBOL, rc, err_name(rc));
	return 0;
}

const pol_base_t *pol_find(const pol_registry_t *r, pol_family_t f, const char *name)
{
	if ((unsigned)f >= POL_NFAMILY || !name)
		return NULL;
	if (!r) {
		for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++)
			if (b->family == f && !strcmp(b->ops->name, name))
				return b->ops;
		return NULL;
	}
	for (size_t i = 0; i < r->n[f]; i++)
		if (!strcmp(r->tab[f][i]->name, name))
			return r->tab[f][i];
	return NULL;
}

size_t pol_count(const pol_registry_t *r, pol_family_t f)
{
	if ((unsigned)f >= POL_NFAMILY)
		return 0;
	if (r)
		return r->n[f];
	size_t n = 0;
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++)
		n += b->family == f;
	return n;
}

const pol_base_t *pol_at(const pol_registry_t *r, pol_family_t f, size_t i)
{
	if ((unsigned)f >= POL_NFAMILY)
		return NULL;
	if (r)
		return i < r->n[f] ? r->tab[f][i] : NULL;
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++)
		if (b->family == f && i-- == 0)
			return b->ops;
	return NULL;
}

char *pol_names(const pol_registry_t *r, pol_family_t f)
{
	size_t n = pol_count(r, f), len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(pol_at(r, f, i)->name) + 1;
	char *s = malloc(len);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(s, ",");
		strcat(s, pol_at(r, f, i)->name);
	}
	return s;
}

int pol_open_ops(const pol_base_t *ops, uint64_t seed, pol_handle_t *h, err_t *e)
{
	h->ops = ops;
	h->state = NULL;
	if (ops->init) {
		err_clear(e);
		int rc = ops->init(h->params.data, seed, &h->state, e);
		if (rc) {
			pol_params_free(&h->params);
			/* a reason the policy gave keeps its code; silence or a stray
			 * value is named by pol_hook_rc (an error, never 0) */
			if (rc < 0 && rc >= KS_ESTATE && e && e->msg[0]) {
				e->code = rc;
				return err_prefix(e, "%s policy '%s'", pol_family_name(ops->family),
				                  ops->name);
			}
			return pol_hook_rc(ops, "init", rc, 0, e);
		}
	}
	return 0;
}

int pol_hook_rc(const pol_base_t *ops, const char *hook, int rc, int max_ok, err_t *e)
{
	if (rc >= 0 && rc <= max_ok)
		return rc;
	const char *fam = pol_family_name(ops->family);
	if (rc < 0 && rc >= KS_ESTATE) {
		if (e && !e->msg[0])
			err_set(e, rc, "%s policy '%s': %s failed (%s) and gave no reason", fam,
			        ops->name, hook, err_name(rc));
		else if (e)
			e->code = rc;
		return rc;
	}
	return err_set(e, KS_ERUNTIME,
	               "%s policy '%s': %s returned %d, neither one of its answers (0..%d) nor an "
	               "error code (%d..%d)",
	               fam, ops->name, hook, rc, max_ok, KS_ESTATE, KS_ERUNTIME);
}

int pol_open(const pol_registry_t *r, pol_family_t f, const char *name, const char *overrides,
             uint64_t seed, pol_handle_t *h, err_t *e)
{
	memset(h, 0, sizeof *h);
	const pol_base_t *ops = pol_find(r, f, name);
	if (!ops) {
		char *names = pol_names(r, f);
		int rc = err_set(e, KS_EINPUT, "[%s] name: unknown policy '%s' (one of %s)",
		                 pol_family_section(f), name ? name : "", names ? names : "?");
		free(names);
		return rc;
	}
	int rc = pol_params_init(&h->params, ops, overrides, e);
	if (rc)
		return err_prefix(e, "%s policy '%s'", pol_family_name(f), ops->name);
	return pol_open_ops(ops, seed, h, e);
}

void pol_close(pol_handle_t *h)
{
	if (!h)
		return;
	if (h->ops && h->ops->free && h->state)
		h->ops->free(h->state);
	pol_params_free(&h->params);
	memset(h, 0, sizeof *h);
}
