/* Config keys of the outputs: [output] (see sim/base/cfg.h). The sweep's -o
 * overrides dir; the simulator samples /timeline every timeline_interval_ms. */
#include "sim/run/sim_params.h"

#define AT(kind, member) CFG_AT(kind, sim_out_params_t, member)
const cfg_tkey_t out_cfg_keys[] = {
	{{"output", "dir", CFG_STR, "results", 0, 0, NULL, "",
	 "results directory: HDF5 files under runs/ and the catalog.sqlite", NULL},
	 AT(STR, dir)},
	{{"output", "timeline_interval_ms", CFG_FLOAT, "100", 0.001, 3.6e6, NULL, "ms",
	 "sampling interval of /timeline (queue length, batch, KV used, link use)", NULL},
	 AT(DOUBLE, timeline_interval_ms)},
	{{"output", "compression", CFG_INT, "4", 0, 9, NULL, "",
	 "deflate level of the HDF5 tables (0 = chunked, uncompressed)", NULL},
	 AT(U32, compression)},
	{{"output", "chunk_rows", CFG_INT, "4096", 1, 1e7, NULL, "rows",
	 "rows per HDF5 chunk", NULL},
	 AT(U64, chunk_rows)},
};
#undef AT
const size_t out_cfg_keys_n = sizeof out_cfg_keys / sizeof out_cfg_keys[0];
