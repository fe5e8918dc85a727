/* Config keys of the network model, section [network] (see sim/base/cfg.h).
 * Link bandwidths and latencies come from the hardware spec (models/), not
 * from here; these keys shape the fabric and how the classes share links. */
#include "sim/base/cfg.h"
#include "sim/net/net.h"

const cfg_key_t net_cfg_keys[] = {
	{"network", "fabric", CFG_ENUM, "leaf_spine", 0, 0, "single,leaf_spine", "",
	 "inter-node fabric: one non-blocking switch, or two-level leaf/spine", NULL},
	{"network", "oversubscription", CFG_FLOAT, "1", 1, 64, NULL, "",
	 "leaf/spine: leaf downlink bandwidth / uplink bandwidth (2 = 2:1)", NULL},
	{"network", "gpus_per_leaf", CFG_INT, "32", 1, 1048576, NULL, "",
	 "leaf/spine: NICs (= GPUs, rail-optimised) under one leaf switch", NULL},
	{"network", "switch_latency_ns", CFG_INT, "300", 0, 1e9, NULL, "ns",
	 "added per extra switch hop of a cross-leaf path (leaf up, spine down)", NULL},
	{"network", "bg_share", CFG_ENUM, "strict", 0, 0, "strict,weighted", "",
	 "background vs foreground: strict priority (background gets what foreground "
	 "leaves) or weighted max-min with bg_weight", NULL},
	{"network", "bg_weight", CFG_FLOAT, "0.1", NET_BG_WEIGHT_MIN, 1, NULL, "",
	 "weighted mode: a background flow's weight against a foreground flow's 1", NULL},
	{"network", "bg_schedule", CFG_ENUM, "immediate", 0, 0, "immediate,idle_window,rate_cap", "",
	 "default background mechanism (a transfer-scheduling policy may set its own): run "
	 "at once, only while foreground load is under idle_threshold, or capped to "
	 "bg_rate_share of each link", NULL},
	{"network", "idle_threshold", CFG_FLOAT, "0.5", 0.01, 1, NULL, "",
	 "idle_window: background runs only while every link on its path carries "
	 "foreground below this fraction of capacity", NULL},
	{"network", "bg_rate_share", CFG_FLOAT, "0.25", 0.01, 1, NULL, "",
	 "rate_cap: background may use at most this fraction of each link", NULL},
	{"network", "block_granular", CFG_BOOL, "true", 0, 0, NULL, "",
	 "KV copies move one copy per block (each pays copy_overhead_ns); false: one "
	 "contiguous copy per shard", NULL},
	{"network", "copy_overhead_ns", CFG_INT, "0", 0, 1e9, NULL, "ns",
	 "fixed cost per copy, modelled as added startup latency (links stay free "
	 "meanwhile); 0 until a calibration supplies it", NULL},
	{"network", "solve_quantum_ns", CFG_INT, "0", 0, 1e12, NULL, "ns",
	 "0 = exact; > 0: flows join and rates are re-solved only at multiples of "
	 "this (faster; a join may wait one quantum)", NULL},
	{"network", "calibration", CFG_STR, "", 0, 0, NULL, "",
	 "transfer calibration INI written by 'kvsim calibrate fit' (models/calibration/); "
	 "its link bandwidths, latencies and per-block copy overhead replace the spec's", NULL},
	{"network", "contention", CFG_ENUM, "maxmin", 0, 0, "maxmin,none", "",
	 "maxmin: copies share links max-min fairly; none: every copy moves as if alone on its "
	 "path (the original study's assumption; per-link accounting then sees no copy)", NULL},
	{"network", "copy_charge", CFG_ENUM, "network", 0, 0, "network,target_compute", "",
	 "network: a copy is flows on links; target_compute: its time (alone on its path) "
	 "occupies the target instance's compute instead, before its next iteration (the "
	 "original study's model)", NULL},
	{"network", "record_flows", CFG_BOOL, "true", 0, 0, NULL, "",
	 "keep one record per transfer for the /transfers output", NULL},
};
const size_t net_cfg_keys_n = sizeof net_cfg_keys / sizeof net_cfg_keys[0];
