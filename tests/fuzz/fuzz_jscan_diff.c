/* Differential libFuzzer target for the JSONL scanner (traces/tr_jscan.c):
 * the same text read by the Mooncake and the Bailian reader with the scanner
 * (the default) and with every row through jansson (tr_opts_t json_slow)
 * must give the same requests, or the same error: the same status, the same
 * message and the same hash of every field of every request
 * (tests/fuzz/fuzz_tr.h), at the trace's block size and at a remapped one. */
#include "tests/fuzz/fuzz_tr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int read_one(tr_kind_t kind, const char *path, int k, int slow, uint64_t *h, char *msg,
		    size_t cap)
{
	static const uint32_t sizes[] = {512, 7};
	tr_opts_t o;
	fuzz_tr_opts(kind, path, k, &o);
	o.json_slow = slow;
	err_t e = {0};
	*h = 0;
	int rc = fuzz_tr_read(&o, sizes[k], h, &e);
	if (rc && rc != KS_EINPUT) /* input is small: no KS_ENOMEM, no KS_EIO */
		abort();
	snprintf(msg, cap, "%s", rc ? e.msg : "");
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path);
	if (fd < 0)
		return 0;
	static const tr_kind_t kinds[] = {TR_KIND_MOONCAKE, TR_KIND_BAILIAN};
	for (int j = 0; j < 2; j++)
		for (int k = 0; k < 2; k++) {
			uint64_t ha, hb;
			char ma[sizeof(((err_t *)0)->msg)], mb[sizeof ma];
			int ra = read_one(kinds[j], path, k, 0, &ha, ma, sizeof ma);
			int rb = read_one(kinds[j], path, k, 1, &hb, mb, sizeof mb);
			if (ra != rb || ha != hb || strcmp(ma, mb))
				abort();
		}
	close(fd);
	return 0;
}
