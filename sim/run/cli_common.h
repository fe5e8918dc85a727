/* cli_common — what every config-taking subcommand shares.
 *
 * `kvsim run`, `kvsim config show`, `kvsim sweep`, ... all take
 * `[CONFIG] [--set SECTION.KEY=VALUE]...`. cli_cfg_arg recognises those
 * arguments one at a time inside a subcommand's own option loop;
 * cli_load_config then builds the resolved config: built-in schema defaults,
 * the file, the built-in default experiment when no CONFIG is given or the
 * file sets no key (empty, comments only: a file means what no file means;
 * less the experiment's generated [trace] section when a --set names
 * trace.path), the --set overrides in order, and cfg_finalize. A file whose
 * [experiment] base names the default experiment, or another file (loaded
 * the same way, at most 8 deep), is loaded over it, as if its keys were
 * --set on that base (its own trace.path also drops the generated [trace]). Errors come back as KS_E* codes
 * with the message in e ("file:line: [section] key: reason"); cli_fail prints
 * it as "kvsim: ..." and maps it to an exit status (2 for input errors).
 *
 * Ownership: a cfg_t from cli_load_config owns its schema; release it with
 * cli_config_free (not cfg_free). cli_cfg_args_t points into argv.
 */
#ifndef KVSIM_CLI_COMMON_H
#define KVSIM_CLI_COMMON_H

#include <stdio.h>

#include "sim/base/cfg.h"
#include "sim/base/cli_voice.h"
#include "sim/base/err.h"

typedef struct cli_cfg_args {
	const char *path;  /* positional CONFIG, NULL if none */
	const char **sets; /* "SECTION.KEY=VALUE", room for argc entries */
	int nsets;
} cli_cfg_args_t;

/* Looks at argv[*i]: "--set A", "--set=A", "-s A" append A to a->sets; a
 * word not starting with '-' becomes a->path (a second one is an error).
 * Returns 1 and advances *i past what it used, 0 when argv[*i] is none of
 * these (the caller's own option, or unknown), or KS_EINPUT with e set. */
int cli_cfg_arg(cli_cfg_args_t *a, int argc, char **argv, int *i, err_t *e);

/* Builds the resolved, finalized config (see the header comment). path may
 * be NULL; sets may be NULL when nsets is 0. On error *out is NULL. */
int cli_load_config(const char *path, const char *const *sets, int nsets, cfg_t **out, err_t *e);

/* The same with options: flags CLI_DEFAULT_EXPERIMENT loads the built-in
 * experiment when path is NULL (without it, schema defaults only);
 * CLI_NO_WARNINGS keeps the config's warnings (ignored keys) off stderr;
 * reg, when not NULL, adds its plugins' policy parameters to the schema. */
#define CLI_DEFAULT_EXPERIMENT 1
#define CLI_NO_WARNINGS 2
struct pol_registry;
int cli_load_config_ex(const char *path, const char *const *sets, int nsets, int flags,
		       const struct pol_registry *reg, cfg_t **out, err_t *e);

/* Frees a config made by cli_load_config together with its schema. */
void cli_config_free(cfg_t *c);

/* The error voice (cli_fail, cli_usage_error, ...) is sim/base/cli_voice.h. */

/* The lines describing CONFIG and --set for a subcommand's --help. */
void cli_cfg_help(FILE *f);

/* The progress line of one long run, without "\r" or newline: "kvsim CMD:
 * 12.5 s simulated, 4321 requests done (4400 arrived), 37%, ETA 0:21"; the
 * share and ETA only when p->fraction is known. elapsed_s: wall seconds
 * since the run started. */
struct sim_progress;
void cli_progress_line(char *buf, size_t n, const struct sim_progress *p, double elapsed_s);
/* Whether a progress line goes to stderr: asked (1) or refused (0) on the
 * command line, else (-1) when stderr is a terminal and not quiet. */
int cli_progress_wanted(int asked, int quiet);

#endif
