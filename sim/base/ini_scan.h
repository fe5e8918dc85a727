/* ini_scan — the one INI reader under every kvsim INI input: the experiment
 * config (cfg_load.c), and through ini_typed.h the hardware and model specs
 * and the compute and transfer calibrations of models/. It hands each
 * section header and each "key = value" to the caller with its line, and
 * says "did you mean" for an unknown section or key.
 *
 * libinih does the tokenising, fed one line at a time (the distribution's
 * libinih is built without INI_HANDLER_LINENO), by its rules: a section is
 * "[name]" up to the first ']'; a key line splits at its first '=' or ':'
 * with the blanks around both parts stripped; ';' and '#' lines are
 * comments, and so is the rest of a line from a ';' after a blank. Three
 * rules are our own: leading blanks are stripped (any isspace() byte, as
 * inih's lskip), so an indented "key = v" is an ordinary line, never the
 * continuation of the previous value; a line longer than inih's buffer is
 * split here, by the same rules; and a section header is reported when it
 * is read, even when no key follows it. A UTF-8 byte-order mark on line 1
 * is skipped; a key before any header is refused.
 *
 * Errors: the first one found, KS_EINPUT (KS_ENOMEM) with
 * "ORIGIN:LINE: reason". A callback returns 0, or a KS_* code with only
 * the reason in e ("[section] key: ..."): ini_scan adds the place. Nothing
 * here allocates beyond one line; nothing is kept after the call.
 */
#ifndef KVSIM_INI_SCAN_H
#define KVSIM_INI_SCAN_H

#include <stddef.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"
#include "sim/base/file.h"

/* What the reader calls, in line order; either may be NULL. */
typedef struct ini_scan_ops {
	/* "[name]" on line line (name up to 255 bytes; inih keeps 49 of it,
	 * which is what the key calls of that section get). */
	int (*section)(void *user, const char *name, int line, err_t *e);
	/* "name = value" on line line in section (never "": refused before). */
	int (*key)(void *user, const char *section, const char *name, const char *value, int line,
	           err_t *e);
} ini_scan_ops_t;

/* Reads text (NUL-terminated) as INI, origin naming it in messages. */
int ini_scan(const char *origin, const char *text, const ini_scan_ops_t *ops, void *user,
             err_t *e);
/* file_parse (file.h) for INI text: reads path whole and hands its text to
 * parse(obj, path, text, e); a NUL byte in it is refused ("PATH:LINE: NUL
 * byte in a text file"). */
int ini_file_parse(const char *path, file_parse_fn parse, void *obj, err_t *e);

/* ---- did you mean ----------------------------------------------------------
 * The keys a reader knows, as a set: key(set, i) for i < n (near.h decides
 * what is close). */
typedef struct ini_names {
	const void *set;
	size_t n;
	const cfg_key_t *(*key)(const void *set, size_t i);
} ini_names_t;
/* " (did you mean 'S'?)" for unknown section sec, "" when no section of
 * the set is close. */
void ini_suggest_section(const ini_names_t *k, const char *sec, char *out, size_t len);
/* For unknown key name of known section sec: " (did you mean 'K'?)" for
 * the nearest key of sec, else " (did you mean 'NAME' in [S]?)" for the
 * same name in another section, else the key of another section whose
 * section and name together come close ("slo_ttft_ms" for [slo] ttft_ms);
 * "" when none is close. */
void ini_suggest_key(const ini_names_t *k, const char *sec, const char *name, char *out,
                     size_t len);

#endif
