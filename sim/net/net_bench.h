/* net_bench — the flow model's cost per flow event (kvsim net bench): random
 * copies on a leaf/spine fabric, timed per start and finish. */
#ifndef KVSIM_NET_BENCH_H
#define KVSIM_NET_BENCH_H

/* The `kvsim net bench` command: 0 ok, 1 failure, 2 usage. */
int net_bench_main(int argc, char **argv);

#endif
