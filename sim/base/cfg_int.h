/* cfg_int — the config store's own state and helpers, shared by the files
 * of the cfg module: cfg_val.c (one value), cfg_schema.c (keys and their
 * lookup), cfg.c (a config's values and accessors), cfg_load.c (INI text
 * and --set), cfg_when.c (when a key acts), cfg_preset.c (presets and
 * cfg_finalize), cfg_fill.c (typed structs) and cfg_write.c (INI and doc
 * output). Internal to sim/base; not an API: everyone else includes cfg.h.
 * Strings returned are borrowed from the schema or config unless a comment
 * says malloc'd; errors come back as in cfg.h (KS_* codes).
 */
#ifndef KVSIM_CFG_INT_H
#define KVSIM_CFG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sim/base/cfg.h"

/* inih keeps section and key names in 50-byte buffers (MAX_SECTION,
 * MAX_NAME in ini.c); longer schema names could never match. */
#define CFG_NAME_MAX 49

struct cfg_schema {
	const cfg_key_t **keys;
	char **choices;        /* per key: replacement choices (owned) or NULL */
	unsigned char *warned; /* per key: its "ignored" warning was written */
	struct cfg_val *defv;  /* per key: its parsed default (text owned) */
	const cfg_field_t **at; /* per key: its field (typed keys) or NULL */
	size_t n, cap;
	FILE *warn; /* cfg_finalize's warnings; NULL = none */
	const cfg_preset_t *presets;
	size_t npresets;
	size_t sel; /* index + 1 of the preset selector key, 0 = none */
	/* Sections whose keys act only under a condition (set_section_when). */
	struct swhen {
		const char *section;
		const cfg_when_t *w;
	} *swhen;
	size_t nswhen;
	/* Open-addressing index on (section, name): key index + 1, 0 = empty.
	 * Accessors run once per lookup, and some are called per request. */
	uint32_t *slot;
	size_t nslot; /* power of two, at least 2n */
};

struct cfg_val {
	char *text;   /* canonical text (owned) */
	int64_t i;    /* CFG_INT, CFG_BOOL (0/1) */
	double f;     /* CFG_FLOAT (and CFG_INT as double) */
	char *origin; /* "FILE:LINE", "--set" or "preset NAME" (owned); NULL = default */
	const cfg_preset_t *preset; /* the preset that set it, NULL if none did */
	/* A preset replaced a value of the built-in default experiment: that
	 * value's text and origin (owned), restored when the preset goes. */
	char *under_text, *under_origin;
	/* Order in which values were set (cfg_err_keys names the latest): 0 for
	 * a default, else the cfg's counter when the value was committed; a
	 * preset's value takes its selector's. */
	uint64_t seq, under_seq;
};
typedef struct cfg_val cfg_val_t;

struct cfg {
	const cfg_schema_t *s;
	size_t n; /* keys known when the cfg was made */
	cfg_val_t *v;
	uint64_t seq; /* the last value's seq */
};

/* ---- one value (cfg_val.c) --------------------------------------------- */

/* A malloc'd copy of s, NULL when out of memory. */
char *cfg_str_dup(const char *s);
void cfg_float_text(double x, char *buf, size_t len);
/* cfg_val_parse's flags. */
#define CFG_VAL_CHOICES 1   /* an enum's text must be one of choices (off for
                             * built-in defaults whose choices come later) */
#define CFG_VAL_WHOLE_E 2   /* an int key also takes e-notation whose value is
                             * whole ("80e9"; CFG_WHOLE_ENOTATION) */
#define CFG_VAL_ABOVE_MIN 4 /* a ranged number lies in (min, max]: min refused */
/* Parses text as a value of key k into *v (v->text left NULL), or writes
 * the reason into why and returns -1. */
int cfg_val_parse(const cfg_key_t *k, const char *choices, const char *text, cfg_val_t *v,
                  int flags, char *why, size_t whylen);
char *cfg_val_canonical(const cfg_key_t *k, const char *text, const cfg_val_t *v);
/* Frees v's strings and sets them to NULL. */
void cfg_val_clear(cfg_val_t *v);

/* ---- the schema (cfg_schema.c) ----------------------------------------- */

bool cfg_name_ok(const char *s, bool allow_dot);
/* The index of key section.name, -1 when the schema has none. */
ssize_t cfg_key_index(const cfg_schema_t *s, const char *section, const char *name);
ssize_t cfg_key_index_dotted(const cfg_schema_t *s, const char *key);
bool cfg_section_known(const cfg_schema_t *s, const char *section);
/* The current choices of key i ("" when none). */
const char *cfg_key_choices(const cfg_schema_t *s, size_t i);
const char *cfg_key_alias(const cfg_schema_t *s, size_t i);
bool cfg_key_load(const cfg_schema_t *s, size_t i);
int cfg_schema_bad(const cfg_key_t *k, const char *why);

/* ---- a config's values (cfg.c) ----------------------------------------- */

int cfg_val_default(const cfg_schema_t *s, size_t i, cfg_val_t *x);
const cfg_val_t *cfg_val_of(const cfg_t *c, size_t i);
int cfg_grow(cfg_t *c);
size_t cfg_must_index(const cfg_t *c, const char *section, const char *name, const char *fn);
bool cfg_owner_active(const cfg_t *c, const cfg_key_t *k, const char **sel);

/* ---- typed fields (cfg_fill.c) ---------------------------------------- */

/* Parses text as a value of typed key t (type, range, choices; flags as
 * cfg_val_parse's, CFG_VAL_CHOICES implied for an enum) and stores it in
 * t's field of dst: 0, or KS_EINPUT / KS_ENOMEM with the reason in why
 * (n bytes), without a place, for the caller to name the key its way. */
int cfg_field_parse(const cfg_tkey_t *t, void *dst, const char *text, int flags, char *why,
                    size_t n);

/* ---- when a key acts (cfg_when.c) -------------------------------------- */

/* The condition key i acts under (its own, else its section's), or NULL. */
const cfg_when_t *cfg_key_when_i(const cfg_schema_t *s, size_t i);
bool cfg_key_inert_i(const cfg_t *c, size_t i, char *why, size_t n);

#endif
