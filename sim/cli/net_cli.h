/* net_cli — `kvsim net run FILE`: a text scenario of links and flows run by
 * the flow model in isolation (format in net_cli.c and sim/net/README.md).
 * net_scenario_run parses FILE, simulates it and prints one line per flow to
 * out (and per link when show_links); errors are KS_EINPUT with
 * "FILE:LINE: reason" (nothing is printed then) or KS_ERUNTIME/KS_ENOMEM.
 */
#ifndef KVSIM_NET_CLI_H
#define KVSIM_NET_CLI_H

#include <stdio.h>

#include "sim/base/err.h"
#include "sim/net/net_bench.h"

int net_scenario_run(const char *path, FILE *out, int show_links, err_t *e);

#endif
