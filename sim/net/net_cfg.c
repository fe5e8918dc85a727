/* Config keys of the network model, section [network] (see sim/base/cfg.h).
 * Link bandwidths and latencies come from the hardware spec (models/), not
 * from here; these keys shape the fabric and how the classes share links. */
#include "sim/base/cfg.h"
#include "sim/net/net.h"
#include "sim/net/net_topo.h"

static const cfg_enum_t fabric_map[] = {
    {"single", NET_FABRIC_SINGLE}, {"leaf_spine", NET_FABRIC_LEAF_SPINE}, {NULL, 0}};
static const cfg_enum_t share_map[] = {
    {"strict", NET_SHARE_STRICT}, {"weighted", NET_SHARE_WEIGHTED}, {NULL, 0}};
static const cfg_enum_t bg_map[] = {{"immediate", NET_BG_IMMEDIATE},
                                    {"idle_window", NET_BG_IDLE_WINDOW},
                                    {"rate_cap", NET_BG_RATE_CAP},
                                    {NULL, 0}};
static const cfg_enum_t contention_map[] = {{"maxmin", 0}, {"none", 1}, {NULL, 0}};
static const cfg_enum_t charge_map[] = {{"network", 0}, {"target_compute", 1}, {NULL, 0}};

/* When a key acts (cfg_when_t). Leaves hold gpus_per_leaf consecutive GPUs
 * (net_topo.c): with as many as the cluster has, every copy stays under one
 * leaf and never crosses the spine. */
#define CROSS_LEAF                                                                                 \
	"network.fabric = leaf_spine and network.gpus_per_leaf < cluster.nodes*cluster.gpus_per_node"
static const cfg_when_t when_leaf_spine = {"network.fabric = leaf_spine", NULL};
static const cfg_when_t when_cross_leaf = {
    CROSS_LEAF, "lower network.gpus_per_leaf below the cluster's GPUs (e.g. to "
                "cluster.gpus_per_node, a leaf per node) so that copies between leaves cross "
                "the spine"};
#undef CROSS_LEAF
static const cfg_when_t when_weighted = {"network.bg_share = weighted", NULL};
/* A transfer policy other than immediate sets the background mechanism
 * itself (sim_bg_schedule); idle_window's threshold is still this key's. */
static const cfg_when_t when_bg_schedule = {
    "policy.transfer.name != idle_window|rate_cap",
    "set policy.transfer.name = immediate to let this key decide"};
static const cfg_when_t when_idle = {
    "policy.transfer.name = idle_window or policy.transfer.name != rate_cap and "
    "network.bg_schedule = idle_window",
    NULL};
static const cfg_when_t when_rate_cap = {
    "policy.transfer.name != idle_window|rate_cap and network.bg_schedule = rate_cap",
    "set network.bg_schedule = rate_cap, or under policy.transfer.name = rate_cap use "
    "policy.transfer.rate_share"};

#define AT(kind, member) CFG_AT(kind, net_params_t, member)
#define AT_IF(kind, member, w) CFG_AT_WHEN(kind, net_params_t, member, w)
#define AT_ENUM(member, map) CFG_AT_ENUM(net_params_t, member, map)
const cfg_tkey_t net_cfg_keys[] = {
	{{"network", "fabric", CFG_ENUM, "leaf_spine", 0, 0, NULL, "",
	 "inter-node fabric: one non-blocking switch, or two-level leaf/spine", NULL},
     AT_ENUM(fabric, fabric_map)},
	{{"network", "oversubscription", CFG_FLOAT, "1", 1, 64, NULL, "",
	 "leaf/spine: leaf downlink bandwidth / uplink bandwidth (2 = 2:1)", NULL},
     AT_IF(DOUBLE, oversubscription, &when_cross_leaf)},
	{{"network", "gpus_per_leaf", CFG_INT, "32", 1, 1048576, NULL, "",
	 "leaf/spine: NICs (= GPUs, rail-optimised) under one leaf switch", NULL},
     AT_IF(U32, gpus_per_leaf, &when_leaf_spine)},
	{{"network", "switch_latency_ns", CFG_INT, "300", 0, 1e9, NULL, "ns",
	 "added per extra switch hop of a cross-leaf path (leaf up, spine down)", NULL},
     AT_IF(I64, switch_lat_ns, &when_cross_leaf)},
	{{"network", "bg_share", CFG_ENUM, "strict", 0, 0, NULL, "",
	 "background vs foreground: strict priority (background gets what foreground "
	 "leaves) or weighted max-min with bg_weight", NULL},
     AT_ENUM(bg_share, share_map)},
	{{"network", "bg_weight", CFG_FLOAT, "0.1", NET_BG_WEIGHT_MIN, 1, NULL, "",
	 "weighted mode: a background flow's weight against a foreground flow's 1", NULL},
     AT_IF(DOUBLE, bg_weight, &when_weighted)},
	{{"network", "bg_schedule", CFG_ENUM, "immediate", 0, 0, NULL, "",
	 "default background mechanism (a transfer-scheduling policy may set its own): run "
	 "at once, only while foreground load is under idle_threshold, or capped to "
	 "bg_rate_share of each link", NULL},
     CFG_AT_ENUM_WHEN(net_params_t, bg_schedule, bg_map, &when_bg_schedule)},
	{{"network", "idle_threshold", CFG_FLOAT, "0.5", 0.01, 1, NULL, "",
	 "idle_window: background runs only while every link on its path carries "
	 "foreground below this fraction of capacity", NULL},
     AT_IF(DOUBLE, idle_threshold, &when_idle)},
	{{"network", "bg_rate_share", CFG_FLOAT, "0.25", 0.01, 1, NULL, "",
	 "rate_cap: background may use at most this fraction of each link", NULL},
     AT_IF(DOUBLE, bg_rate_share, &when_rate_cap)},
	{{"network", "block_granular", CFG_BOOL, "true", 0, 0, NULL, "",
	 "KV copies move one copy per block (each pays copy_overhead_ns); false: one "
	 "contiguous copy per shard", NULL},
     AT(BOOL, block_granular)},
	{{"network", "copy_overhead_ns", CFG_INT, "0", 0, 1e9, NULL, "ns",
	 "fixed cost per copy, modelled as added startup latency (links stay free "
	 "meanwhile); 0 until a calibration supplies it", NULL},
     AT(I64, copy_overhead_ns)},
	{{"network", "solve_quantum_ns", CFG_INT, "0", 0, 1e12, NULL, "ns",
	 "0 = exact; > 0: flows join and rates are re-solved only at multiples of "
	 "this (faster; a join may wait one quantum)", NULL},
     AT(I64, solve_quantum_ns)},
	{{"network", "calibration", CFG_STR, "", 0, 0, NULL, "path",
	 "transfer calibration INI written by 'kvsim calibrate fit' (models/calibration/); "
	 "its link bandwidths, latencies and per-block copy overhead replace the spec's", NULL},
     AT(STR, calibration)},
	{{"network", "contention", CFG_ENUM, "maxmin", 0, 0, NULL, "",
	 "maxmin: copies share links max-min fairly; none: every copy moves as if alone on its "
	 "path (the original study's assumption; per-link accounting then sees no copy)", NULL},
     AT_ENUM(contention_none, contention_map)},
	{{"network", "copy_charge", CFG_ENUM, "network", 0, 0, NULL, "",
	 "network: a copy is flows on links; target_compute: its time (alone on its path) "
	 "occupies the target instance's compute instead, before its next iteration (the "
	 "original study's model)", NULL},
     AT_ENUM(copy_charge_compute, charge_map)},
};
#undef AT
#undef AT_IF
#undef AT_ENUM
const size_t net_cfg_keys_n = sizeof net_cfg_keys / sizeof net_cfg_keys[0];
