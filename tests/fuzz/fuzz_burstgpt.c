/* libFuzzer target: the burstgpt reader (see tests/fuzz/fuzz_tr.h). */
#include "tests/fuzz/fuzz_tr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(TR_KIND_BURSTGPT, data, size);
	return 0;
}
