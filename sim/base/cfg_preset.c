/* cfg_preset — presets (named sets of values chosen by one enum key) and
 * cfg_finalize, which applies the selected one and warns once per key about
 * values set where they have no effect (see cfg.h).
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"

#include <stdlib.h>
#include <string.h>

/* Values that rank below a preset: the schema default and the built-in
 * default experiment (a preset describes a whole deployment, so it wins over
 * the built-in example, and only a user's file or --set wins over it). */
static int below_preset(const cfg_val_t *v)
{
	return !v->origin || !strncmp(v->origin, CFG_ORIGIN_DEFAULT_EXPERIMENT,
	                              strlen(CFG_ORIGIN_DEFAULT_EXPERIMENT));
}

/* kv: the bad entry, NULL when the preset's name is bad. */
static int preset_bad(const cfg_preset_t *p, const cfg_preset_kv_t *kv, const char *why)
{
	/* Like cfg_schema_bad: a broken preset table is a programming error. */
	const char *key = kv ? kv->key : "name";
	fprintf(stderr, "kvsim: config schema: preset %s: %s%s%s: %s\n",
	        p->name ? p->name : "(null)", kv && kv->where ? kv->where : "",
	        kv && kv->where ? ": " : "", key ? key : "(null)", why);
	return KS_EINPUT;
}

/* Parses value for key ki into *v as preset p's (origin "preset NAME"):
 * 0, 1 with why filled when the value does not fit the key, or KS_ENOMEM. */
static int preset_value(const cfg_schema_t *s, size_t ki, const cfg_preset_t *p, const char *value,
                        cfg_val_t *v, char *why, size_t whylen)
{
	const cfg_key_t *k = s->keys[ki];
	const char *bad = k->type == CFG_STR ? cfg_str_unstorable(value) : NULL;
	memset(v, 0, sizeof *v);
	if (bad) {
		snprintf(why, whylen, "%s", bad);
		return 1;
	}
	if (cfg_val_parse(k, cfg_key_choices(s, ki), value, v, CFG_VAL_CHOICES, why, whylen))
		return 1;
	char org[128];
	snprintf(org, sizeof org, "preset %s", p->name);
	v->text = cfg_val_canonical(k, value, v);
	v->origin = cfg_str_dup(org);
	v->preset = p;
	if (!v->text || !v->origin) {
		cfg_val_clear(v);
		return KS_ENOMEM;
	}
	return 0;
}

int cfg_schema_set_presets(cfg_schema_t *s, const char *section, const char *name,
                           const cfg_preset_t *p, size_t n)
{
	ssize_t si = cfg_key_index(s, section, name);
	if (si < 0 || s->keys[si]->type != CFG_ENUM || strcmp(s->keys[si]->def, "none")) {
		fprintf(stderr,
		        "kvsim: config schema: [%s] %s: a preset selector must be an enum "
		        "key with default 'none'\n",
		        section, name);
		return KS_EINPUT;
	}
	size_t len = sizeof "none";
	for (size_t i = 0; i < n; i++) {
		if (!cfg_name_ok(p[i].name, false) || !strcmp(p[i].name, "none"))
			return preset_bad(&p[i], NULL,
			                  "must be 1-49 of [A-Za-z0-9_-], not 'none'");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p[i].name, p[j].name))
				return preset_bad(&p[i], NULL, "defined twice");
		len += strlen(p[i].name) + 1;
		for (size_t j = 0; j < p[i].n; j++) {
			const cfg_preset_kv_t *kv = &p[i].kv[j];
			ssize_t ki = kv->key ? cfg_key_index_dotted(s, kv->key) : -1;
			char why[512];
			cfg_val_t v;
			if (ki < 0)
				return preset_bad(&p[i], kv, "not in the config schema");
			if (ki == si)
				return preset_bad(&p[i], kv, "a preset cannot select a preset");
			if (!kv->value || !kv->source || !*kv->source || strchr(kv->source, '\n'))
				return preset_bad(&p[i], kv, "needs a value and a one-line source");
			for (size_t m = 0; m < j; m++)
				if (cfg_key_index_dotted(s, p[i].kv[m].key) == ki)
					return preset_bad(&p[i], kv, "set twice");
			int rc = preset_value(s, (size_t)ki, &p[i], kv->value, &v, why, sizeof why);
			if (rc == 1)
				return preset_bad(&p[i], kv, why);
			if (rc)
				return rc;
			cfg_val_clear(&v);
		}
	}
	char *choices = malloc(len);
	if (!choices)
		return KS_ENOMEM;
	char *q = choices + sprintf(choices, "none");
	for (size_t i = 0; i < n; i++)
		q += sprintf(q, ",%s", p[i].name);
	free(s->choices[si]);
	s->choices[si] = choices;
	s->presets = p;
	s->npresets = n;
	s->sel = (size_t)si + 1;
	return 0;
}

const cfg_preset_t *cfg_preset(const cfg_t *c)
{
	const cfg_schema_t *s = c->s;
	if (!s->sel)
		return NULL;
	const char *name = cfg_val_of(c, s->sel - 1)->text;
	for (size_t i = 0; i < s->npresets; i++)
		if (!strcmp(s->presets[i].name, name))
			return &s->presets[i];
	return NULL;
}

/* Sets every key of the selected preset that holds its default. Keys that
 * belong to no policy go first, since they include the policy names that
 * decide whether the owned ones apply: a preset's parameter of a policy the
 * user replaced is left out. */
static int preset_apply(cfg_t *c, err_t *e)
{
	const cfg_preset_t *p = cfg_preset(c);
	for (int owned = 0; p && owned < 2; owned++) {
		for (size_t j = 0; j < p->n; j++) {
			size_t ki = (size_t)cfg_key_index_dotted(c->s, p->kv[j].key);
			const cfg_key_t *k = c->s->keys[ki];
			const char *sel;
			if (!k->owner != !owned || !below_preset(&c->v[ki]) ||
			    !cfg_owner_active(c, k, &sel))
				continue;
			cfg_val_t v;
			char why[512];
			int rc = preset_value(c->s, ki, p, p->kv[j].value, &v, why, sizeof why);
			if (rc == 1) /* cfg_schema_set_presets checked it against these choices */
				return err_set(e, KS_EINPUT, "preset %s: [%s] %s: %s", p->name,
				               k->section, k->name, why);
			if (rc)
				return err_set(e, rc, "preset %s: out of memory", p->name);
			if (c->v[ki].origin) { /* keep the default experiment's value */
				v.under_text = c->v[ki].text;
				v.under_origin = c->v[ki].origin;
				v.under_seq = c->v[ki].seq;
				c->v[ki].text = c->v[ki].origin = NULL;
			}
			v.seq = c->v[c->s->sel - 1].seq;
			cfg_val_clear(&c->v[ki]);
			c->v[ki] = v;
		}
	}
	return 0;
}

int cfg_finalize(cfg_t *c, err_t *e)
{
	if (cfg_grow(c))
		return err_set(e, KS_ENOMEM, "out of memory");
	/* What a preset set before (a sweep point cloned from its base) goes
	 * back to its default, so the preset selected now decides. */
	for (size_t i = 0; i < c->n; i++) {
		if (!c->v[i].preset)
			continue;
		char *ut = c->v[i].under_text, *uo = c->v[i].under_origin;
		uint64_t us = c->v[i].under_seq;
		c->v[i].under_text = c->v[i].under_origin = NULL;
		cfg_val_clear(&c->v[i]);
		memset(&c->v[i], 0, sizeof c->v[i]);
		if (cfg_val_default(c->s, i, &c->v[i])) {
			free(ut);
			free(uo);
			return err_set(e, KS_ENOMEM, "out of memory");
		}
		if (ut) { /* back to the default experiment's value */
			char why[256];
			const cfg_key_t *k = c->s->keys[i];
			cfg_val_clear(&c->v[i]);
			(void)cfg_val_parse(k, cfg_key_choices(c->s, i), ut, &c->v[i], CFG_VAL_CHOICES, why,
			                    sizeof why);
			c->v[i].text = ut;
			c->v[i].origin = uo;
			c->v[i].seq = us;
		}
	}
	int rc = preset_apply(c, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < c->n; i++) {
		const cfg_key_t *k = c->s->keys[i];
		const char *sel, *org = c->v[i].origin;
		if (k->owner && org && !cfg_owner_active(c, k, &sel) &&
		    cfg_key_index(c->s, k->section, "name") < 0)
			return err_set(e, KS_EINPUT,
			               "%s: [%s] %s: parameter of policy '%s', but [%s] has no "
			               "'name' key",
			               org, k->section, k->name, k->owner, k->section);
		/* Said, not refused, so that one file serves every point of a sweep
		 * over policy names or generators; once per key per schema. Only a
		 * value someone set: not a default, the default experiment's or a
		 * preset's, and not a sweep axis's (the sweep names those). */
		if (!org || !c->s->warn || c->s->warned[i] || cfg_key_alias(c->s, i) ||
		    !strcmp(org, CFG_ORIGIN_GRID) || below_preset(&c->v[i]) || c->v[i].preset)
			continue;
		char why[1024];
		if (!cfg_key_inert_i(c, i, why, sizeof why))
			continue;
		c->s->warned[i] = 1;
		fprintf(c->s->warn, "kvsim: warning: %s: [%s] %s: %s\n", org, k->section, k->name,
		        why);
	}
	return 0;
}
