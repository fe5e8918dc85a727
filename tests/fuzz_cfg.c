/* libFuzzer target for sim/base/cfg.c: any input either loads or fails with
 * KS_EINPUT and a "name:line: " message; whatever loads must write out text
 * that loads back to the same text; the same bytes as a --set assignment
 * either fail with KS_EINPUT or give a config that round-trips too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/cfg.h"
#include "tests/fuzz_util.h"

static const cfg_key_t keys[] = {
    {"cluster", "nodes", CFG_INT, "4", 1, 1024, NULL, "nodes", "number of nodes", NULL},
    {"cluster", "link_gbps", CFG_FLOAT, "100", 0.5, 1e6, NULL, "Gbit/s", "bandwidth", NULL},
    {"cluster", "prefix_cache", CFG_BOOL, "true", 0, 0, NULL, "", "share prefixes", NULL},
    {"cluster", "label", CFG_STR, "", 0, 0, NULL, "", "free text", NULL},
    {"cache", "eviction", CFG_ENUM, "lru", 0, 0, "lru,lfu,fifo", "", "eviction", NULL},
    {"sim", "seed", CFG_INT, "1", 0, 0, NULL, "", "seed", NULL},
    {"sim", "scale", CFG_FLOAT, "1.5", 0, 0, NULL, "", "scale", NULL},
    {"policy.routing", "name", CFG_ENUM, "rr", 0, 0, "rr,least_loaded", "", "routing", NULL},
    {"policy.routing", "alpha", CFG_FLOAT, "0.5", 0, 1, NULL, "", "weight", "least_loaded"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The written text of c loads back and writes the same text. */
static void round_trip(const cfg_schema_t *s, const cfg_t *c)
{
	err_t e = {0};
	char *t1 = cfg_text(c);
	cfg_t *d = cfg_new(s);
	if (cfg_load_string(d, "g", t1, &e) || cfg_finalize(d, &e))
		abort();
	char *t2 = cfg_text(d);
	if (strcmp(t1, t2))
		abort();
	free(t1);
	free(t2);
	cfg_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cfg_schema_t *s;
	if (!s) {
		s = cfg_schema_new();
		if (cfg_schema_add(s, keys, sizeof keys / sizeof keys[0]))
			abort();
	}
	char *text = fuzz_text(data, size);
	if (!text)
		return 0;
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	int rc = cfg_load_string(c, "f", text, &e);
	if (rc && (rc != KS_EINPUT || strncmp(e.msg, "f:", 2)))
		abort();
	if (!rc && !cfg_finalize(c, &e))
		round_trip(s, c);
	rc = cfg_set(c, text, &e);
	if (rc && rc != KS_EINPUT)
		abort();
	if (!rc && !cfg_finalize(c, &e))
		round_trip(s, c);
	cfg_free(c);
	free(text);
	return 0;
}
