/* cli — kvsim subcommands. Each takes argv after the subcommand name
 * (argv[0] is the subcommand) and returns a process exit status:
 * 0 ok, 1 runtime failure, 2 usage or input error. Each prints its own
 * --help. Only main() calls exit().
 */
#ifndef KVSIM_CLI_H
#define KVSIM_CLI_H

int cli_run_main(int argc, char **argv);       /* sim/cli/cli_run.c */
int cli_config_main(int argc, char **argv);    /* sim/cli/cli_config.c */
int cli_bench_main(int argc, char **argv);     /* sim/cli/cli_bench.c */
int cli_metrics_main(int argc, char **argv);   /* sim/cli/cli_metrics.c */
int cli_validate_main(int argc, char **argv);  /* sim/cli/cli_validate.c */
int net_cli_main(int argc, char **argv);       /* sim/cli/net_cli.c */
int tr_cli_main(int argc, char **argv);        /* sim/cli/tr_cli.c */
int out_sweep_main(int argc, char **argv);     /* sim/cli/cli_sweep.c */
int out_runs_main(int argc, char **argv);      /* sim/cli/cli_runs.c */
int pol_cli_main(int argc, char **argv);       /* sim/cli/pol_cli.c */
int cal_cli_main(int argc, char **argv);       /* sim/cli/cal_cli.c */
int mdl_cli_main(int argc, char **argv);       /* sim/cli/mdl_cli.c */
int cli_plot_main(int argc, char **argv);      /* sim/cli/cli_plot.c */

#endif
