/* kvsim metrics — lists every summary metric a run writes (name, unit,
 * meaning), from the recorder's one list (sim/run/recorder.h), in /summary
 * order. */
#include <stdio.h>

#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/run/recorder.h"

int cli_metrics_main(int argc, char **argv)
{
	if (argc == 2 && cli_is_help(argv[1])) {
		printf("usage: kvsim metrics\n\n"
		       "Lists every summary metric of a run (the /summary dataset of its HDF5\n"
		       "file and the catalog's metric columns), one per line: name, unit\n"
		       "(empty for counts and ratios) and meaning, tab-separated.\n\n" CLI_EXIT_STATUS);
		return 0;
	}
	if (argc > 1)
		return cli_usage_error(argv[1][0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'",
		                       argv[1]);
	rec_metric_list(stdout);
	return 0;
}
