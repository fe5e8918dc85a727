/* cli_voice — how every kvsim command speaks: errors as "kvsim CMD:
 * message", usage errors with a --help hint (exit 2), one help ending.
 * Depends on errors only, so every layer's command entry points use it.
 */
#ifndef KVSIM_CLI_VOICE_H
#define KVSIM_CLI_VOICE_H

#include <stddef.h>
#include <stdio.h>

#include "sim/base/err.h"

/* ---- one voice for every subcommand ----------------------------------
 * Errors go to stderr as "kvsim CMD: MESSAGE", where CMD is the command as
 * typed ("run", "trace gen") and MESSAGE names its place whenever there is
 * one ("FILE:LINE: [section] key: reason"). A usage error adds the line
 * "Run 'kvsim CMD --help' for usage." and exits 2. "-h" and "--help" print
 * the command's help on stdout and exit 0; every help ends with
 * CLI_EXIT_STATUS. main() and each dispatcher set CMD with cli_set_command
 * before handing over, so helpers deep in a subcommand need not know it. */
#define CLI_EXIT_STATUS "Exit status: 0 ok, 1 runtime failure, 2 usage or input error.\n"

/* Sets CMD (copied; at most 63 bytes are kept). NULL or "" goes back to
 * plain "kvsim: ". */
void cli_set_command(const char *cmd);
const char *cli_command(void);
/* Whether arg asks for help: "-h" or "--help". */
int cli_is_help(const char *arg);
/* Prints "kvsim CMD: MESSAGE" to stderr; returns err_exit_status(e->code). */
int cli_fail(const err_t *e);
/* Prints "kvsim CMD: " and the printf-style message, then the --help hint;
 * returns 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last lines of every --help: a blank line and CLI_EXIT_STATUS. */
void cli_help_end(FILE *f);
/* The usage error for an option a command does not know: "unknown option
 * '--sett' (did you mean '--set'?)", the suggestion being the option its
 * help (usage, as the command prints it for --help) names that is nearest
 * to arg without its "=VALUE" (sim/base/near.h); returns 2. */
int cli_unknown_option(const char *arg, void (*usage)(FILE *));
/* The suggestion alone: the option usage's help names nearest to arg, in
 * buf (n bytes), or NULL when none is near (or arg is one letter). */
const char *cli_option_near(const char *arg, void (*usage)(FILE *), char *buf, size_t n);
/* The same for a word that names none of the n words of names (a command's
 * subcommands): "unknown WHAT 'swep' (did you mean 'sweep'?)"; the list of
 * names follows in parentheses when nothing is near. */
int cli_unknown_word(const char *what, const char *arg, const char *const *names, size_t n);

/* ---- runtime warnings ------------------------------------------------
 * A warning about a run names the run: "kvsim CMD: warning: WHERE: MESSAGE"
 * on stderr, WHERE set by the command that runs it ("run 09f17a07ac2b099a
 * (seed 1)", "seed 1"); without one, "kvsim CMD: warning: MESSAGE". A sweep
 * sets none in its workers: it captures their stderr and names each
 * point itself (out_sweep.h). */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sets WHERE (copied; at most 127 bytes kept); NULL or "" clears it. */
void cli_warn_where(const char *where);
/* "WHERE: ", or "" when none is set: for warnings written elsewhere (a
 * config's warning stream). */
const char *cli_warn_prefix(void);

#endif
