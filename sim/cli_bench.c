/* placeholder until this subcommand lands; replaced by its module. */
#include <stdio.h>

#include "sim/cli.h"

int cli_bench_main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "kvsim %s: not implemented yet\n", argv[0]);
	return 1;
}
