/* mdl_field — internal to models/: the table that maps spec keys to struct
 * fields, shared by the INI parser (mdl_spec.c) and the config overrides
 * (mdl_cfg.c) so both accept exactly the same keys and values. */
#ifndef KVSIM_MDL_FIELD_H
#define KVSIM_MDL_FIELD_H

#include <stddef.h>

typedef enum { MDL_F_NAME, MDL_F_U32, MDL_F_U64, MDL_F_I64, MDL_F_DBL, MDL_F_ATTN } mdl_ftype_t;

typedef struct mdl_field {
	const char *key;
	mdl_ftype_t type;
	int required; /* must appear in a spec file */
	size_t off, size;
} mdl_field_t;

extern const mdl_field_t mdl_hw_fields[];
extern const size_t mdl_hw_fields_n;
extern const mdl_field_t mdl_llm_fields[];
extern const size_t mdl_llm_fields_n;

const mdl_field_t *mdl_field_find(const mdl_field_t *fields, size_t n, const char *key);
/* Set a field of the struct at dst from text or from a number; on bad input
 * return -1 with *why a static reason. */
int mdl_field_set_text(const mdl_field_t *f, void *dst, const char *value, const char **why);
int mdl_field_set_number(const mdl_field_t *f, void *dst, double v, const char **why);

#endif
