/* libFuzzer target for sim/base/cfg.c: any input either loads or fails with
 * KS_EINPUT and a "name:line: " message; whatever loads must write out text
 * that loads back to the same text; the same bytes as a --set assignment
 * either fail with KS_EINPUT or give a config that round-trips too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/cfg.h"
#include "tests/fixtures/cfg_keys.h"
#include "tests/fuzz/fuzz_util.h"

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
		if (cfg_schema_add(s, test_keys, sizeof test_keys / sizeof test_keys[0]))
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
