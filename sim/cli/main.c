/* kvsim — command-line entry point: dispatches to subcommands (sim/cli/cli.h). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/cli/cli_sub.h"
#include "sim/run/cli_common.h"

static const cli_sub_t subcommands[] = {
	{"run", cli_run_main, "run one experiment and print its summary"},
	{"config", cli_config_main, "show the resolved config or document every key"},
	{"trace", tr_cli_main, "read, generate, convert and describe traces"},
	{"net", net_cli_main, "simulate a network scenario file in isolation"},
	{"policies", pol_cli_main, "list policy families, policies and parameters"},
	{"sweep", out_sweep_main, "run a parameter grid into a results directory"},
	{"runs", out_runs_main, "query and compare runs in a results catalog"},
	{"plot", cli_plot_main, "plots and tables of a catalog, under a Python that has their modules"},
	{"metrics", cli_metrics_main, "list every summary metric: name, unit, meaning"},
	{"calibrate", cal_cli_main, "plan, fit and check transfer-cost calibration"},
	{"model", mdl_cli_main, "what the compute model predicts for one iteration, by term"},
	{"validate", cli_validate_main, "run measured serving experiments and print kvsim's error"},
	{"bench", cli_bench_main, "engine and model micro-benchmarks (phold, ...)"},
};
#define N_SUB (sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *f)
{
	cli_sub_usage(f,
		      "usage: kvsim [--version] [--help] COMMAND [ARGS]\n\n"
		      "kvsim is a discrete-event simulator of LLM serving clusters for\n"
		      "comparing KV-cache replication, placement and routing policies.\n\n"
		      "commands:\n",
		      subcommands, N_SUB, "\nRun 'kvsim COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	/* A file past the shell's size limit (ulimit -f) fails its write with
	 * EFBIG, which the writers report with the file's name, instead of the
	 * signal killing kvsim and leaving PATH.tmp behind. */
	signal(SIGXFSZ, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("kvsim %s (git %s)\n", KVSIM_VERSION, KVSIM_GITREV);
		return 0;
	}
	const cli_sub_t *s = cli_sub_find(subcommands, N_SUB, argv[1]);
	if (s)
		return cli_sub_run(s, NULL, argc, argv);
	if (argv[1][0] == '-')
		return cli_unknown_option(argv[1], usage);
	const char *names[N_SUB];
	for (size_t i = 0; i < N_SUB; i++)
		names[i] = subcommands[i].name;
	return cli_unknown_word("command", argv[1], names, N_SUB);
}
