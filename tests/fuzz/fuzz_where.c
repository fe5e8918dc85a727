/* libFuzzer target for `kvsim runs --where SQL` (out_catalog_select on a
 * catalog made once, with dotted parameter names and metric columns, one
 * of them +inf in one run): any text either selects some of the runs or
 * fails with KS_EINPUT, and the catalog is never changed (same rows after
 * every query).
 *
 * Left out: text with SELECT or WITH (subqueries and recursive CTEs can run
 * for ever, which a user's own query may do), and SQLite's heap is capped
 * at 64 MiB (randomblob(1e9) fails instead of taking a gigabyte); both
 * bound the cost of one input, not what is checked. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sqlite3.h>

#include "sim/out/out_catalog.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RUNS 4

static char dir[64];

static void remove_dir(void)
{
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd)) {
	}
}

static out_catalog_t *catalog(void)
{
	static out_catalog_t *c;
	if (c)
		return c;
	snprintf(dir, sizeof dir, "/tmp/kvsim-fuzz-where-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	atexit(remove_dir);
	out_catalog_t *w;
	err_t e = {0};
	if (out_catalog_open(dir, 0, &w, &e))
		abort();
	static const char *const rates[RUNS] = {"0.5", "4", "16", "x"};
	for (int i = 0; i < RUNS; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%d", i);
		out_param_t p[] = {{"trace.rate", rates[i]},
		                   {"policy.replication.name", i % 2 ? "speculative" : "none"}};
		out_run_info_t ri = {id, "cafe", (uint64_t)i, p, 2, "runs/x.h5", "[trace]\nrate = 1\n",
				     NULL};
		/* r1 shed load: its p99 over offered requests is +inf */
		res_metric_t m[] = {{"ttft_p99_ms", "ms", i == 1 ? INFINITY : 100.0 * (4 - i)},
		                    {"ttft_completed_p99_ms", "ms", 100.0 * (4 - i)},
		                    {"seed", "", 1}};
		if (out_catalog_begin(w, &ri, &e) ||
		    (i != 3 && out_catalog_done(w, id, m, 3, 0.1, &e)) ||
		    (i == 3 && out_catalog_failed(w, id, "it's; a \"failure\"", &e)))
			abort();
	}
	out_catalog_close(w);
	if (out_catalog_open(dir, 1, &c, &e))
		abort();
	sqlite3_hard_heap_limit64(64 << 20);
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	out_catalog_t *c = catalog();
	char *w = fuzz_text(data, size);
	if (!w)
		return 0;
	if (strlen(w) != size || strcasestr(w, "select") || strcasestr(w, "with")) {
		free(w);
		return 0;
	}
	out_table_t t;
	err_t e = {0};
	int rc = out_catalog_select(c, "id,status,trace.rate,ttft_p99_ms", w, "-trace.rate", &t,
	                            &e);
	if (rc && rc != KS_EINPUT)
		abort();
	if (!rc) {
		if (t.nrows > RUNS || t.ncols != 4)
			abort();
		out_table_free(&t);
	}
	if (out_catalog_select(c, "id", NULL, NULL, &t, &e) || t.nrows != RUNS)
		abort();
	out_table_free(&t);
	free(w);
	return 0;
}
