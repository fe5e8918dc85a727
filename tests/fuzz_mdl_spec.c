/* libFuzzer target: the spec parsers never crash, leak or half-load on any
 * text, and whatever they accept passes the cross-field checks and writes
 * back to text that parses to the same struct. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "tests/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text)
		return 0;
	err_t e;
	mdl_hw_t hw;
	mdl_llm_t m;
	if (mdl_hw_parse("fuzz", text, &hw, &e) == 0) {
		mdl_hw_t back;
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f || mdl_hw_write(&hw, f))
			abort();
		fclose(f);
		if (mdl_hw_check(&hw, "fuzz", &e) || mdl_hw_parse("back", buf, &back, &e) ||
		    memcmp(&hw, &back, sizeof hw))
			abort();
		free(buf);
	}
	if (mdl_llm_parse("fuzz", text, &m, &e) == 0) {
		mdl_llm_t back;
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f || mdl_llm_write(&m, f))
			abort();
		fclose(f);
		if (mdl_llm_check(&m, "fuzz", &e) || mdl_llm_parse("back", buf, &back, &e) ||
		    memcmp(&m, &back, sizeof m))
			abort();
		free(buf);
		(void)mdl_kv_bytes_per_token(&m);
		(void)mdl_weights_bytes_per_gpu(&m, 8);
	}
	free(text);
	return 0;
}
