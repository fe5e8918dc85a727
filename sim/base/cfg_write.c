/* cfg_write — a config written out: the resolved INI that loads back, its
 * text and SHA-256 digest, and the key reference (cfg_write_doc).
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"

#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>

/* Whether key i is the first of its section in schema order (aliases, never
 * written, do not count): its section is not among the *n sections seen[]
 * before it, which it then joins. One pass over the keys, the sections few. */
static bool section_first(const cfg_schema_t *s, size_t i, const char **seen, size_t *n)
{
	if (cfg_key_alias(s, i) || cfg_key_load(s, i))
		return false;
	const char *sec = s->keys[i]->section;
	for (size_t j = *n; j-- > 0;)
		if (seen[j] == sec || !strcmp(seen[j], sec))
			return false;
	seen[(*n)++] = sec;
	return true;
}

static void write_range(const cfg_key_t *k, const char *choices, FILE *f)
{
	if (k->type == CFG_ENUM)
		fprintf(f, "one of: %s", *choices ? choices : "(none registered)");
	else if ((k->type == CFG_INT || k->type == CFG_FLOAT) && k->min < k->max) {
		char lo[32], hi[32];
		cfg_float_text(k->min, lo, sizeof lo);
		cfg_float_text(k->max, hi, sizeof hi);
		fprintf(f, "range [%s, %s]", lo, hi);
	} else if (k->type == CFG_BOOL)
		fprintf(f, "true or false");
	else
		fprintf(f, "any %s", k->type == CFG_STR ? "text" : "value");
}

int cfg_write(const cfg_t *c, FILE *f)
{
	return cfg_write_ex(c, f, 0);
}

/* The source of the preset entry that set key i, "" if none. */
static const char *preset_source(const cfg_t *c, size_t i)
{
	const cfg_preset_t *p = cfg_val_of(c, i)->preset;
	for (size_t j = 0; p && j < p->n; j++)
		if (cfg_key_index_dotted(c->s, p->kv[j].key) == (ssize_t)i)
			return p->kv[j].source;
	return "";
}

int cfg_write_ex(const cfg_t *c, FILE *f, int flags)
{
	const cfg_schema_t *s = c->s;
	bool first = true;
	const char **seen = malloc((s->n ? s->n : 1) * sizeof *seen);
	size_t n_seen = 0;
	if (!seen)
		return KS_ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		if (!section_first(s, i, seen, &n_seen))
			continue;
		const char *sec = s->keys[i]->section;
		fprintf(f, "%s[%s]\n", first ? "" : "\n", sec);
		first = false;
		for (size_t j = i; j < s->n; j++) {
			const cfg_key_t *k = s->keys[j];
			const cfg_val_t *v = cfg_val_of(c, j);
			const char *sel;
			if (strcmp(k->section, sec) || cfg_key_alias(s, j) || cfg_key_load(s, j) ||
			    !cfg_owner_active(c, k, &sel))
				continue;
			if (k->doc && *k->doc) {
				fprintf(f, "# %s", k->doc);
				if (k->unit && *k->unit)
					fprintf(f, " [%s]", k->unit);
				fputc('\n', f);
			}
			if ((flags & CFG_WRITE_ORIGINS) && v->preset)
				fprintf(f, "# from preset %s: %s\n", v->preset->name,
				        preset_source(c, j));
			fprintf(f, "%s =%s%s\n", k->name, *v->text ? " " : "", v->text);
		}
	}
	free(seen);
	return ferror(f) ? KS_EIO : 0;
}

char *cfg_text(const cfg_t *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int rc = cfg_write(c, f);
	if (fclose(f) || rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

int cfg_write_doc(const cfg_schema_t *s, FILE *f)
{
	return cfg_write_doc_ref(s, NULL, NULL, f);
}

int cfg_write_doc_ref(const cfg_schema_t *s, const cfg_t *ref, const char *ref_name, FILE *f)
{
	for (size_t i = 0; i < s->n; i++) {
		const cfg_key_t *k = s->keys[i];
		if (cfg_key_alias(s, i)) {
			fprintf(f, "[%s] %s\n    alias of %s\n    %s\n", k->section, k->name,
			        cfg_key_alias(s, i), k->doc && *k->doc ? k->doc : "(undocumented)");
			continue;
		}
		fprintf(f, "[%s] %s\n    type %s, default '%s', ", k->section, k->name,
		        cfg_type_name(k->type), k->def);
		if (ref && ref->s == s && strcmp(cfg_val_of(ref, i)->text, s->defv[i].text))
			fprintf(f, "%s '%s', ", ref_name ? ref_name : "reference",
			        cfg_val_of(ref, i)->text);
		write_range(k, cfg_key_choices(s, i), f);
		if (k->unit && *k->unit)
			fprintf(f, ", unit %s", k->unit);
		if (k->owner)
			fprintf(f, ", only with name = %s", k->owner);
		const cfg_when_t *w = cfg_key_when_i(s, i);
		if (w)
			fprintf(f, "\n    acts only when %s%s%s", w->cond,
			        w->instead ? "; otherwise " : "", w->instead ? w->instead : "");
		if (cfg_key_load(s, i))
			fprintf(f, "\n    read from a config file as it loads; not part of the resolved "
			           "config");
		fprintf(f, "\n    %s\n", k->doc && *k->doc ? k->doc : "(undocumented)");
	}
	return ferror(f) ? KS_EIO : 0;
}

void cfg_digest(const cfg_t *c, char out[65])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	char *t = cfg_text(c);
	sha256_init(&ctx);
	if (t)
		sha256_update(&ctx, strlen(t), (const uint8_t *)t);
	sha256_digest(&ctx, sizeof d, d);
	free(t);
	for (size_t i = 0; i < sizeof d; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}
