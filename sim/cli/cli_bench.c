/* cli_bench — `kvsim bench KIND [options]`: a table of benchmark kinds.
 *
 * A module adds a benchmark by exposing `int <x>_bench_main(int argc,
 * char **argv)` (argv[0] is the kind's name; it prints its own --help and
 * returns an exit status as sim/cli/cli.h describes) and adding one row below.
 */
#include <stdio.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/engine/ev_bench.h"
#include "sim/cli/net_cli.h"

typedef struct bench_kind {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} bench_kind_t;

static const bench_kind_t bench_kinds[] = {
	{"phold", ev_bench_phold_main, "PHOLD on the event engine (committed events/s)"},
	{"hold", ev_bench_hold_main, "classic hold model on the bare event queue (ops/s)"},
	{"net", net_bench_main, "flow-level network: cost per flow start/finish (same as 'kvsim net bench')"},
};
#define N_KINDS (sizeof bench_kinds / sizeof bench_kinds[0])

static void bench_usage(FILE *f)
{
	fprintf(f, "usage: kvsim bench KIND [options]\n\n"
		   "Micro-benchmarks; each prints a rate and, with --json, one JSON line.\n\n"
		   "kinds:\n");
	for (size_t i = 0; i < N_KINDS; i++)
		fprintf(f, "  %-10s %s\n", bench_kinds[i].name, bench_kinds[i].help);
	fprintf(f, "\nRun 'kvsim bench KIND --help' for a kind's options.\n");
	cli_help_end(f);
}

int cli_bench_main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("missing KIND");
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		bench_usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < N_KINDS; i++)
		if (!strcmp(argv[1], bench_kinds[i].name)) {
			char cmd[64];
			snprintf(cmd, sizeof cmd, "bench %s", argv[1]);
			cli_set_command(cmd);
			return bench_kinds[i].fn(argc - 1, argv + 1);
		}
	return cli_usage_error("unknown kind '%s'", argv[1]);
}
