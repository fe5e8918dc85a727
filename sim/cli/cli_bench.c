/* cli_bench — `kvsim bench KIND [options]`: a table of benchmark kinds.
 *
 * A module adds a benchmark by exposing `int <x>_bench_main(int argc,
 * char **argv)` (argv[0] is the kind's name; it prints its own --help and
 * returns an exit status as sim/cli/cli.h describes) and adding one row below.
 */
#include <stdio.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/cli/cli_sub.h"
#include "sim/run/cli_common.h"
#include "sim/engine/ev_bench.h"
#include "sim/cli/net_cli.h"

static const cli_sub_t bench_kinds[] = {
	{"phold", ev_bench_phold_main, "PHOLD on the event engine (committed events/s)"},
	{"hold", ev_bench_hold_main, "classic hold model on the bare event queue (ops/s)"},
	{"net", net_bench_main, "flow-level network: cost per flow start/finish (same as 'kvsim net bench')"},
};
#define N_KINDS (sizeof bench_kinds / sizeof bench_kinds[0])

static void bench_usage(FILE *f)
{
	cli_sub_usage(f,
		      "usage: kvsim bench KIND [options]\n\n"
		      "Micro-benchmarks; each prints a rate and, with --json, one JSON line.\n\n"
		      "kinds:\n",
		      bench_kinds, N_KINDS, "\nRun 'kvsim bench KIND --help' for a kind's options.\n");
}

int cli_bench_main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("missing KIND");
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		bench_usage(stdout);
		return 0;
	}
	const cli_sub_t *k = cli_sub_find(bench_kinds, N_KINDS, argv[1]);
	if (k)
		return cli_sub_run(k, "bench", argc, argv);
	return cli_usage_error("unknown kind '%s'", argv[1]);
}
