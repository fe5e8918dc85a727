/* mdl_field — internal to models/: every spec key declared once, in one
 * table per spec kind ([gpu] -> mdl_hw_t, [model] -> mdl_llm_t), read by
 * the spec-file parser (mdl_spec.c, through the typed INI reader) and by
 * the config overrides (mdl_cfg.c), so both accept exactly the same keys
 * and set the same member.
 *
 * A row holds the key twice, from one macro: as a config override (a
 * cfg_tkey_t: [gpu] or [model], the name, type, default -1 = "from the
 * spec", range, unit and doc; its value fills one mdl_over_t slot), and as
 * the spec file's key (an ini_key_t, sim/base/ini_typed.h: the same name,
 * range from 0, the spec struct's member it sets -- CFG_AT into mdl_hw_t or
 * mdl_llm_t: U32, U64, I64, DOUBLE, or ENUM with its map; the name, a
 * char[MDL_NAME_MAX] that no override sets, is a text row whose override
 * fills nothing -- and INI_REQUIRED when a spec file must give it). */
#ifndef KVSIM_MDL_FIELD_H
#define KVSIM_MDL_FIELD_H

#include <stddef.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"
#include "sim/base/ini_typed.h"

/* The most rows one spec table has (the parser marks the keys it saw). */
#define MDL_SPEC_KEYS_MAX 40

/* The value an override choice takes for "spec" (keep the spec's). */
#define MDL_OVER_SPEC (-1)

/* One override's value: v for a number key (-1: from the spec), choice for
 * an enum key (MDL_OVER_SPEC or the spec map's value). */
typedef struct mdl_over {
	double v;
	int choice;
} mdl_over_t;

typedef struct mdl_spec_key {
	cfg_tkey_t cfg; /* the override key; its field lies in an mdl_over_t */
	ini_key_t file; /* the spec file's key; its field, the member of
	                 * mdl_hw_t or mdl_llm_t both set */
} mdl_spec_key_t;

extern const mdl_spec_key_t mdl_hw_keys[];
extern const size_t mdl_hw_keys_n;
extern const mdl_spec_key_t mdl_llm_keys[];
extern const size_t mdl_llm_keys_n;

/* The key's name in spec files and configs. */
static inline const char *mdl_spec_key_name(const mdl_spec_key_t *k)
{
	return k->cfg.key.name;
}

const mdl_spec_key_t *mdl_spec_key_find(const mdl_spec_key_t *keys, size_t n, const char *name);
/* Sets k's member of the struct at dst from an override's number; on a
 * value the member cannot hold returns -1 with *why a static reason. */
int mdl_spec_set_number(const mdl_spec_key_t *k, void *dst, double v, const char **why);

/* Reads a whole text file of at most max bytes into a malloc'd
 * NUL-terminated string (*len its length, may be NULL); KS_EINPUT "PATH:
 * larger than MAX bytes, not a WHAT" or "contains a NUL byte". */
int mdl_read_small_file(const char *path, size_t max, const char *what, char **out, size_t *len,
                        err_t *e);

#endif
