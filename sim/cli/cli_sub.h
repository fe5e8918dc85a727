/* cli_sub — a command's table of subcommands, its listing and its dispatch.
 *
 * main, `kvsim bench`, `kvsim net` and `kvsim trace` each keep one array of
 * cli_sub_t; the help listing and the name lookup are derived from it, so a
 * subcommand is added by one row. Functions follow sim/cli/cli.h: argv[0] is
 * the subcommand's name, the return value is a process exit status (0 ok,
 * 1 runtime failure, 2 usage or input error). The tables are static and
 * owned by their command; nothing here allocates.
 */
#ifndef KVSIM_CLI_SUB_H
#define KVSIM_CLI_SUB_H

#include <stddef.h>
#include <stdio.h>

typedef struct cli_sub {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help; /* one line for the listing */
} cli_sub_t;

/* head, then "  NAME       help" per row, then tail and the exit-status line. */
void cli_sub_usage(FILE *f, const char *head, const cli_sub_t *subs, size_t n, const char *tail);
/* The row named name, or NULL. */
const cli_sub_t *cli_sub_find(const cli_sub_t *subs, size_t n, const char *name);
/* Runs row s on argv[1..]: sets the CLI voice's command to "parent NAME"
 * (NAME alone when parent is NULL) and returns s->fn(argc - 1, argv + 1). */
int cli_sub_run(const cli_sub_t *s, const char *parent, int argc, char **argv);
/* The whole dispatch of a command whose argv[1] is a subcommand: none given
 * or an unknown one is a usage error naming the rows ("missing command
 * (run, bench)"), -h/--help prints usage on stdout and returns 0. */
int cli_sub_main(const char *parent, const cli_sub_t *subs, size_t n, void (*usage)(FILE *),
                 int argc, char **argv);

#endif
