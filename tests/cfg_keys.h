/* cfg_keys — a small config schema over every key type (int with a range,
 * float with a range and unit, bool, string, enum, a policy-owned key, a
 * preset key), shared by the config tests and the config fuzz target so the
 * two exercise the same schema. Header-only (a static table). */
#ifndef KVSIM_TESTS_CFG_KEYS_H
#define KVSIM_TESTS_CFG_KEYS_H

#include "sim/base/cfg.h"

static const cfg_key_t test_keys[] = {
    {"cluster", "nodes", CFG_INT, "4", 1, 1024, NULL, "nodes", "number of nodes", NULL},
    {"cluster", "link_gbps", CFG_FLOAT, "100", 0.5, 1e6, NULL, "Gbit/s", "link bandwidth", NULL},
    {"cluster", "prefix_cache", CFG_BOOL, "true", 0, 0, NULL, "", "share prefixes", NULL},
    {"cluster", "label", CFG_STR, "", 0, 0, NULL, "", "free text", NULL},
    {"cache", "eviction", CFG_ENUM, "lru", 0, 0, "lru,lfu,fifo", "", "eviction policy", NULL},
    {"sim", "seed", CFG_INT, "1", 0, 0, NULL, "", "master seed", NULL},
    {"sim", "scale", CFG_FLOAT, "1.5", 0, 0, NULL, "", "unbounded float", NULL},
    {"policy.routing", "name", CFG_ENUM, "round_robin", 0, 0, "round_robin,least_loaded", "",
     "routing policy", NULL},
    {"policy.routing", "alpha", CFG_FLOAT, "0.5", 0, 1, NULL, "", "load weight", "least_loaded"},
    {"policy", "preset", CFG_ENUM, "none", 0, 0, "none", "", "preset", NULL},
};

#endif
