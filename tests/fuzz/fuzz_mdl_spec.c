/* libFuzzer target: the spec parsers never crash, leak or half-load on any
 * text, and whatever they accept passes the cross-field checks and writes
 * back to text that parses to the same struct. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The text the spec x of kind (0: GPU, 1: model) writes; NULL-terminated,
 * the caller frees it. */
static char *spec_text(int kind, const void *x)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f || (kind ? mdl_llm_write(x, f) : mdl_hw_write(x, f)))
		abort();
	fclose(f);
	return buf;
}

/* Parses text as a spec of kind (0: GPU, 1: model) into x. */
static int spec_parse(int kind, const char *origin, const char *text, void *x, err_t *e)
{
	return kind ? mdl_llm_parse(origin, text, x, e) : mdl_hw_parse(origin, text, x, e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text)
		return 0;
	err_t e;
	for (int kind = 0; kind < 2; kind++) {
		union {
			mdl_hw_t hw;
			mdl_llm_t m;
		} x, back;
		size_t n = kind ? sizeof x.m : sizeof x.hw;
		if (spec_parse(kind, "fuzz", text, &x, &e))
			continue;
		char *buf = spec_text(kind, &x);
		if ((kind ? mdl_llm_check(&x.m, "fuzz", &e) : mdl_hw_check(&x.hw, "fuzz", &e)) ||
		    spec_parse(kind, "back", buf, &back, &e) || memcmp(&x, &back, n))
			abort();
		free(buf);
		if (kind) {
			(void)mdl_kv_bytes_per_token(&x.m);
			(void)mdl_kv_seq_bytes_gpu(&x.m, 8, 131072);
			(void)mdl_kv_fixed_bytes_per_seq(&x.m);
			(void)mdl_weights_bytes_per_gpu(&x.m, 8);
		}
	}
	free(text);
	return 0;
}
