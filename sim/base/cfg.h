/* cfg — experiment configuration: a schema of typed keys and resolved values.
 *
 * Every key an experiment may set has a cfg_key_t: section, name, type,
 * default (as text), range or choices, unit and a one-line doc. Modules own
 * their key arrays; cfg_schema_default() (sim/run/sim_schema.h) gathers them all. Values come from,
 * in order: defaults, an INI file (libinih) or built-in text, then --set
 * "section.key=value" overrides, each checked against the schema. Errors are
 * KS_EINPUT with "file:line: [section] key: reason" (and the nearest valid
 * key for unknown names). Policy parameters live in "policy.<family>"
 * sections; a key whose owner is set is used only while that section's
 * "name" selects that owner: set for another policy it is ignored, with one
 * warning line (so one file can be swept over policy names). Warnings go to
 * the schema's warning stream (stderr unless changed), at most once per key
 * per schema: the points of a sweep share their base config's schema.
 *
 * A preset is a named set of values for other keys, chosen by one enum key
 * ("[policy] preset = vllm"). cfg_finalize applies it: every key of the
 * preset that was not given explicitly (file or --set, in any order) takes
 * the preset's value, with origin "preset NAME". Finalizing again first puts
 * back the defaults of what a preset set, so a clone may select another one.
 * The cfg_t owns its strings; accessors on a key that is not in the schema
 * abort (a programming error, not bad input). Reading a const cfg_t never
 * changes it: a key added to the schema after the cfg was made (a plugin's
 * parameters) reads as its default, kept parsed in the schema; cfg_finalize,
 * cfg_set and the loads give the cfg its own value for such keys.
 *
 * Modules declare their keys once, as typed keys (cfg_tkey_t below) that
 * also say where each value goes in the module's own struct; cfg_fill fills
 * that struct and the module receives it, not the config store.
 */
#ifndef KVSIM_CFG_H
#define KVSIM_CFG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Origin prefix of the values of the built-in default experiment: a preset
 * ranks above them (cfg_finalize), a user's file or --set above a preset. */
#define CFG_ORIGIN_DEFAULT_EXPERIMENT "<default experiment>"


#include "sim/base/err.h"

typedef enum { CFG_INT, CFG_FLOAT, CFG_BOOL, CFG_STR, CFG_ENUM } cfg_type_t;
/* The type's name in messages and key listings: "int", "float", "bool",
 * "string", "enum"; "?" for a value outside the enum. Static storage. */
const char *cfg_type_name(cfg_type_t t);

typedef struct cfg_key {
	const char *section; /* "cluster", "policy.routing", ... */
	const char *name;
	cfg_type_t type;
	const char *def;     /* default value as text ("" allowed for CFG_STR) */
	double min, max;     /* inclusive numeric range; ignored when min >= max */
	const char *choices; /* CFG_ENUM: comma-separated ("lru,lfu"); NULL with a map */
	const char *unit;    /* "ns", "bytes", "tokens", "s", "" ... */
	const char *doc;
	const char *owner;   /* policy sections: the policy this key belongs to */
} cfg_key_t;

/* ---- typed keys --------------------------------------------------------
 * A module declares each key once, in a table of cfg_tkey_t: the key and
 * where its value goes in the module's typed struct. cfg_fill fills that
 * struct from a config, and the module receives the struct, never the
 * config store. The field's C type, by kind, and the key types it takes:
 *   CFG_F_I64 int64_t, CFG_F_U32 uint32_t, CFG_F_U64 uint64_t: CFG_INT (a
 *     U32/U64 key's range must lie in the field's; the schema checks);
 *   CFG_F_DOUBLE double: CFG_FLOAT or CFG_INT;
 *   CFG_F_BOOL int (0/1): CFG_BOOL;
 *   CFG_F_STR const char *: CFG_STR or CFG_ENUM, borrowed from the cfg_t
 *     (valid while it lives unchanged) or from the key's default;
 *   CFG_F_STRDUP char *: the same, an owned copy (cfg_fill_free frees it);
 *   CFG_F_ENUM int: CFG_ENUM, the C value its map gives the name;
 *   CFG_F_LOAD nothing: a CFG_STR directive to the loader (experiment.base),
 *     accepted only in a config file (cfg_set refuses it) and never written
 *     back (cfg_write), so it is no part of the resolved config, its text
 *     or its digest. */
typedef enum cfg_field_kind {
	CFG_F_NONE = 0, /* the key fills nothing */
	CFG_F_I64,
	CFG_F_U32,
	CFG_F_U64,
	CFG_F_DOUBLE,
	CFG_F_BOOL,
	CFG_F_STR,
	CFG_F_STRDUP,
	CFG_F_ENUM,
	CFG_F_LOAD
} cfg_field_kind_t;

/* One name of an enum key and its C value; a map ends with {NULL, 0}. The
 * key's choices are the map's names in map order (key.choices NULL), so no
 * list has to follow a C enum's order by hand. */
typedef struct cfg_enum {
	const char *name;
	int value;
} cfg_enum_t;

/* When a key acts: a condition on other keys' resolved values, declared
 * beside the key (cfg_field_t.when) or for a whole section
 * (cfg_schema_set_section_when), and what to do instead. A key set in a
 * file, by --set or on a sweep grid whose condition is false in the
 * resolved config has no effect there: cfg_finalize says so once per key
 * (cfg_key_inert). cond is clauses joined by " and ", conjunctions joined
 * by " or " (and binds tighter), tokens separated by one blank:
 *   KEY = V1|V2|...   KEY != V1|V2|...   (the value's text; numbers compare
 *                                          as numbers)
 *   KEY < EXPR, <=, >, >=                 (EXPR: factors joined by '*', each
 *                                          a number or a numeric KEY)
 * KEY is "section.name" of a key in the schema, and each value of an enum
 * key is one of its choices (cfg_schema_check_when). */
typedef struct cfg_when {
	const char *cond;
	const char *instead; /* advice after "otherwise ": the key that acts
			      * ("use trace.rate_scale, ..."); NULL for none */
} cfg_when_t;

typedef struct cfg_field {
	cfg_field_kind_t kind;
	size_t off;            /* offsetof(struct, member) */
	const cfg_enum_t *map; /* enum keys: names and C values */
	/* An old name kept for configs in use: "section.name" of the key it
	 * sets. An alias holds no value, is accepted wherever a key is (file,
	 * --set) and never written back; only its section, name and doc count
	 * (CFG_ALIAS). */
	const char *alias_of;
	const cfg_when_t *when; /* NULL: the key always acts (as far as the
				 * schema knows; a section's own applies) */
} cfg_field_t;

typedef struct cfg_tkey {
	cfg_key_t key;
	cfg_field_t at;
} cfg_tkey_t;

/* Field descriptors of table rows: {{"cluster", "nodes", ...}, CFG_AT(U32,
 * sim_params_t, nodes)}. */
#define CFG_AT(kind, type, member) {CFG_F_##kind, offsetof(type, member), NULL, NULL, NULL}
#define CFG_AT_ENUM(type, member, map) {CFG_F_ENUM, offsetof(type, member), map, NULL, NULL}
#define CFG_NOWHERE {CFG_F_NONE, 0, NULL, NULL, NULL}
/* The same for a key that acts only when *w holds (w: a const cfg_when_t *). */
#define CFG_AT_WHEN(kind, type, member, w) {CFG_F_##kind, offsetof(type, member), NULL, NULL, w}
#define CFG_AT_ENUM_WHEN(type, member, map, w) {CFG_F_ENUM, offsetof(type, member), map, NULL, w}
#define CFG_NOWHERE_WHEN(w) {CFG_F_NONE, 0, NULL, NULL, w}
/* A loader's directive (CFG_F_LOAD above). */
#define CFG_LOAD {CFG_F_LOAD, 0, NULL, NULL, NULL}
/* An alias row: [sec] nm sets key target ("section.name"); dc says so. */
#define CFG_ALIAS(sec, nm, target, dc)                                                     \
	{{sec, nm, CFG_STR, "", 0, 0, NULL, "", dc, NULL}, {CFG_F_NONE, 0, NULL, target, NULL}}

/* The choices of enum key t as text: key.choices, or its map's names joined
 * by commas into buf (n bytes; cut short when they do not fit); "" if none. */
const char *cfg_tkey_choices(const cfg_tkey_t *t, char *buf, size_t n);

typedef struct cfg_schema cfg_schema_t;
typedef struct cfg cfg_t;

cfg_schema_t *cfg_schema_new(void);
void cfg_schema_free(cfg_schema_t *s);
/* Adds n keys (copied by pointer: keys must outlive the schema). */
int cfg_schema_add(cfg_schema_t *s, const cfg_key_t *keys, size_t n);
/* The same for typed keys (a field kind must fit its key's type, an enum
 * with a map has no choices string, an alias names "section.name"). */
int cfg_schema_add_typed(cfg_schema_t *s, const cfg_tkey_t *keys, size_t n);
/* The current choices of enum key section.name ("" when none or no such
 * key): replaced ones, the key's own, or its map's names. */
const char *cfg_schema_choices(const cfg_schema_t *s, const char *section, const char *name);
/* Replaces the choices of an existing enum key (policy names grow with
 * plugins); the string is copied. */
int cfg_schema_set_choices(cfg_schema_t *s, const char *section, const char *name,
			   const char *choices);
size_t cfg_schema_count(const cfg_schema_t *s);
/* Where cfg_finalize writes its warnings (stderr by default; NULL: nowhere). */
void cfg_schema_set_warnings(cfg_schema_t *s, FILE *f);
FILE *cfg_schema_warnings(const cfg_schema_t *s);
/* Every key of section without a condition of its own acts only when *w
 * holds (a policy family that another family's choice may leave unused),
 * keys added later included. w is kept by pointer. */
int cfg_schema_set_section_when(cfg_schema_t *s, const char *section, const cfg_when_t *w);
/* The condition key section.name acts under (its own, else its
 * section's), NULL for none or no such key. */
const cfg_when_t *cfg_key_when(const cfg_schema_t *s, const char *section, const char *name);
/* Checks every key's condition against the schema (syntax, keys, enum
 * values): a bad one is a programming error, KS_EINPUT with the key and
 * the reason on stderr. Call once the schema holds every key. */
int cfg_schema_check_when(const cfg_schema_t *s);

/* A preset: data only (policies/presets/ holds the built-in ones). */
typedef struct cfg_preset_kv {
	const char *key;    /* "section.name" (the section may contain dots) */
	const char *value;  /* as written in an INI file */
	const char *source; /* documentation, code or paper the value comes from */
	const char *where;  /* "FILE:LINE" that defines it, named in errors; or NULL */
} cfg_preset_kv_t;
typedef struct cfg_preset {
	const char *name, *doc;
	const cfg_preset_kv_t *kv;
	size_t n;
} cfg_preset_t;
/* Makes enum key section.name select one of the n presets, or "none" (its
 * choices become "none" and the preset names, in order). Every preset key
 * must be in the schema, must not be the selector, and its value must pass
 * the key's type, range and choices: keys are checked now, so call this once
 * the schema holds them all. A bad table is a programming error: KS_EINPUT
 * with the preset, the entry's where (if any) and key named on stderr.
 * Presets are kept by pointer. */
int cfg_schema_set_presets(cfg_schema_t *s, const char *section, const char *name,
			   const cfg_preset_t *p, size_t n);
/* The preset a config selects (NULL for none or without a selector). */
const cfg_preset_t *cfg_preset(const cfg_t *c);
const cfg_key_t *cfg_schema_key(const cfg_schema_t *s, size_t i);
const cfg_key_t *cfg_schema_find(const cfg_schema_t *s, const char *section,
				 const char *name);
cfg_t *cfg_new(const cfg_schema_t *s);
void cfg_free(cfg_t *c);
cfg_t *cfg_clone(const cfg_t *c);
const cfg_schema_t *cfg_schema(const cfg_t *c);
int cfg_load_file(cfg_t *c, const char *path, err_t *e);
int cfg_load_string(cfg_t *c, const char *origin, const char *text, err_t *e);
/* "section.key=value"; the section may contain dots (split at the last). */
int cfg_set(cfg_t *c, const char *assignment, err_t *e);
/* The same with another origin than "--set" (the argument as the user gave
 * it, for commands with their own syntax): it labels errors ("ORIGIN:
 * [section] key: reason") and becomes the value's cfg_origin. */
int cfg_set_as(cfg_t *c, const char *assignment, const char *origin, err_t *e);
/* Applies the selected preset and checks that every key set in a file or
 * by --set acts (cfg_key_inert: a parameter of a policy its section does
 * not select, a key whose condition is false), warning once per key per
 * schema for each that does not; values set with origin CFG_ORIGIN_GRID
 * are left to the sweep, which names such an axis once (out_grid.c). Call
 * after all loads and sets, and again after changing a clone. */
int cfg_finalize(cfg_t *c, err_t *e);
/* The origin of a sweep axis's values (out_point_make). */
#define CFG_ORIGIN_GRID "--grid"
/* 1 when key section.name has no effect in c, with why (n bytes) saying
 * why: "ignored: parameter of 'P', but name = Q" or "no effect: it acts
 * only when COND (here KEY = VALUE, ...); otherwise INSTEAD"; else 0 (why
 * untouched). Whatever its origin. */
int cfg_key_inert(const cfg_t *c, const char *section, const char *name, char *why, size_t n);

int64_t cfg_int(const cfg_t *c, const char *section, const char *name);
double cfg_float(const cfg_t *c, const char *section, const char *name);
int cfg_bool(const cfg_t *c, const char *section, const char *name);
const char *cfg_str(const cfg_t *c, const char *section, const char *name);
/* Fills the typed struct dst from c: for each of keys[0..n) with a field,
 * the resolved value, converted to the field's kind (cfg_field_t). The
 * values passed the schema's type, range and choices when they were set, so
 * errors here are a table that does not match the schema: KS_EINPUT with
 * "[section] key: reason" (a key not in c's schema, a map without the
 * value's name). Reading never changes c. Owned strings (CFG_F_STRDUP) are
 * the caller's, freed by cfg_fill_free even after an error. */
int cfg_fill(const cfg_t *c, const cfg_tkey_t *keys, size_t n, void *dst, err_t *e);
/* The same from each key's default, without a config (the values a module
 * has before any config is read). */
int cfg_fill_defaults(const cfg_tkey_t *keys, size_t n, void *dst, err_t *e);
/* Parses text as a value of key k (type, range, choices) and stores it in
 * k's field of dst: what a "name=value" override does. KS_EINPUT with
 * "[section] key: reason" in the schema's wording. A CFG_F_STR field keeps
 * text by pointer. dst's CFG_F_STRDUP fields must be NULL or owned. */
int cfg_field_set(const cfg_tkey_t *k, void *dst, const char *text, err_t *e);
/* Checks the numeric fields of a struct filled or changed by code against
 * their keys' ranges: KS_EINPUT "[section] key: V is out of range [lo, hi]". */
int cfg_fields_check(const cfg_tkey_t *keys, size_t n, const void *src, err_t *e);
/* The number in t's field of src (bool and enum fields as their int):
 * 1 with *out set, 0 for a text field or none. */
int cfg_field_number(const cfg_tkey_t *t, const void *src, double *out);
/* The text of t's field of src: a string field's text, an enum field's
 * name in its map; "" otherwise (and for a NULL string). */
const char *cfg_field_text(const cfg_tkey_t *t, const void *src);
/* The name of value in map (the names an enum key's choices come from);
 * "" when the map has none. Turns a filled enum field back into the text
 * a config would give it, without reading the config by key name. */
const char *cfg_enum_name(const cfg_enum_t *map, int value);
/* Frees the CFG_F_STRDUP fields of dst and sets them to NULL. */
void cfg_fill_free(const cfg_tkey_t *keys, size_t n, void *dst);

/* Where a value came from: "default", "FILE:LINE", "--set" or "preset NAME". */
const char *cfg_origin(const cfg_t *c, const char *section, const char *name);
/* A legal value that matches no real system: writes "kvsim: warning: PLACE:
 * [section] name: MESSAGE" (PLACE its cfg_origin) to the schema's warning
 * stream, at most once per key per schema, as cfg_finalize's warnings. */
void cfg_warn_once(const cfg_t *c, const char *section, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whole numbers as every reader of kvsim input parses them (config values,
 * scenario files, command-line counts): decimal digits with an optional sign;
 * with CFG_WHOLE_ENOTATION also e-notation or a point whose value is whole
 * ("1e9", "2.5e3"). Returns 0 with *out set, CFG_NOT_WHOLE when text is no
 * whole number (empty, blanks, other characters, a fraction), or
 * CFG_OUT_OF_RANGE when it is one but lies outside [lo, hi] (beyond 64 bits
 * included), so callers can tell the two apart. */
enum { CFG_NOT_WHOLE = 1, CFG_OUT_OF_RANGE = 2 };
#define CFG_WHOLE_ENOTATION 1
int cfg_parse_whole(const char *text, int flags, int64_t lo, int64_t hi, int64_t *out);

/* Why v cannot be the value of a string key, NULL when it can: a value
 * written back as "key = VALUE" must read back the same through any INI
 * reader (no line break or other control character, no blank at either
 * end, no ';' first or after a blank, which INI reads as a comment).
 * Static storage. */
const char *cfg_str_unstorable(const char *v);

/* An error found by checking keys together (a cross-field rule): sets e to
 * KS_EINPUT with "PLACE: [section] key: REASON" (REASON printf-style), where
 * key is whichever of keys ("section.name", comma-separated) was set last —
 * the later line of a file, the later --set, a preset's value when its
 * selector was — and PLACE is that key's cfg_origin; without a PLACE while
 * all of them hold their defaults. A key not in the schema aborts (a
 * programming error). Returns KS_EINPUT. */
int cfg_err_keys(const cfg_t *c, err_t *e, const char *keys, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Gives an error about one key its place: when e->msg is "[section] key:
 * ..." for a key of c that was set (not a default), prepends its origin, so
 * checks made after loading read like the loader's own errors. */
void cfg_err_locate(const cfg_t *c, err_t *e);

/* String key section.name as a file path. A relative path set in a config
 * file ("FILE:LINE" origin) names a file beside that config file when one is
 * readable there, else it is taken as given (relative to the working
 * directory); an absolute path, or one from --set, a preset or the built-in
 * experiment, is taken as given. Writes the path to out (n bytes); KS_EINPUT
 * naming the key's place when it does not fit. */
int cfg_path(const cfg_t *c, const char *section, const char *name, char *out, size_t n, err_t *e);

/* The config file that c's latest value read from a file came from (an
 * origin "FILE:LINE" naming a regular file), into out (n bytes): 1, or 0
 * when no value came from a file. */
int cfg_file(const cfg_t *c, char *out, size_t n);

/* Writes the resolved config as INI that cfg_load_file accepts back. */
int cfg_write(const cfg_t *c, FILE *f);
/* The same, with flags: CFG_WRITE_ORIGINS adds a comment before each value a
 * preset set ("# from preset vllm: SOURCE"). Comments aside, the text is
 * cfg_write's, which the digest covers. */
#define CFG_WRITE_ORIGINS 1
int cfg_write_ex(const cfg_t *c, FILE *f, int flags);
/* The same text in a malloc'd string (caller frees). */
char *cfg_text(const cfg_t *c);
/* Writes every key with type, default, range, unit, when it acts and doc. */
int cfg_write_doc(const cfg_schema_t *s, FILE *f);
/* The same, also naming ref's value of each key where it differs from the
 * key's default (", REF_NAME 'VALUE'"); ref NULL: cfg_write_doc. */
int cfg_write_doc_ref(const cfg_schema_t *s, const cfg_t *ref, const char *ref_name, FILE *f);
/* SHA-256 of cfg_text as 64 hex chars + NUL. */
void cfg_digest(const cfg_t *c, char out[65]);

#endif
