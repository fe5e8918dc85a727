/* Golden digests: the same config, trace and seed give the same /requests and
 * /summary, byte for byte, across refactors, and with rows kept in memory or
 * streamed (sim_run_opts_t.stream_rows). The digest is SHA-256 over a
 * canonical text of every request row (every field, integers exactly,
 * doubles with 17 significant digits) and every summary metric (name and
 * value); wall-clock figures are not part of it, nor the engine's event
 * count (sim_events), which is a property of how the simulator steps
 * (scheduler.decode = step or segment), not of the simulated system. A
 * change that moves a result on purpose updates the constants below in the same commit and says
 * why; KVSIM_GOLDEN_PRINT=1 prints the digests of the current code. Cases on
 * shared traces skip when ../shared is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"

static void feed(struct sha256_ctx *h, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && n < (int)sizeof buf);
	sha256_update(h, (size_t)n, (const uint8_t *)buf);
}

/* res_rows_fn: each request row's canonical text into the digest ctx. */
static int feed_rows(void *ctx, const void *rows, size_t n)
{
	struct sha256_ctx *hp = ctx;
	for (const res_request_t *q = rows, *end = q + n; q < end; q++) {
		struct sha256_ctx h = *hp;
		feed(&h, "%" PRIu64 " %" PRId64 " %d %d %u %u %" PRId64 " %" PRId64 " %" PRId64
			 " %" PRId64 " %" PRId64 " %" PRId64,
		     q->id, q->arrival_ns, q->instance, q->status, q->input_tokens, q->output_tokens,
		     q->ttft_ns, q->tpot_ns, q->tbt_p90_ns, q->e2e_ns, q->queue_ns, q->fetch_wait_ns);
		feed(&h, " %u %u %u %u %u\n", q->tok_local, q->tok_peer, q->tok_host,
		     q->tok_recomputed, q->tok_spec_hit);
		*hp = h;
	}
	return 0;
}

/* Every request row, spilled ones too, then the summary. */
static void digest(const sim_results_t *r, char out[65])
{
	struct sha256_ctx h;
	sha256_init(&h);
	assert_int_equal(sim_results_rows(r, RES_T_REQ, feed_rows, &h), 0);
	for (size_t i = 0; i < r->n_metric; i++)
		if (strcmp(r->metric[i].name, "sim_events")) /* how the run was stepped */
			feed(&h, "%s=%.17g\n", r->metric[i].name, r->metric[i].value);
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&h, sizeof d, d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

typedef struct golden {
	const char *name, *config, *needs;
	const char *sets[4];
	int nsets;
	const char *want;
} golden_t;

static const golden_t cases[] = {
    {"default experiment", NULL, NULL, {NULL}, 0,
     "aa2ab5ed917ea03c33620cc00b94290a6b8d6fbca2d6a948bc52c68d496acddd"},
    {"mooncake conversation", "analysis/experiments/mooncake_conversation.ini",
     "../shared/traces/mooncake/conversation_trace.jsonl", {NULL}, 0,
     "1ddfb5a0b8d608b386f34da4ec5fd1e1319da2c7733871aa90995c1887e55255"},
    {"bursted-art test_00, preset btb, early_rdma", NULL,
     "../shared/traces/bursted_art/test_00.jsonl.gz",
     {"policy.preset=btb", "trace.path=../shared/traces/bursted_art/test_00.jsonl.gz",
      "policy.replication.name=early_rdma"},
     3, "4da3b6993e407a82b57886d1231474eb4aa1b63ef6a894d5e7f8566cb47766bd"},
};

static void test_results_match_their_golden_digests(void **st)
{
	(void)st;
	int print = getenv("KVSIM_GOLDEN_PRINT") != NULL, ran = 0;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const golden_t *g = &cases[k];
		if (g->needs && access(g->needs, R_OK)) {
			printf("%s: skipped (%s absent)\n", g->name, g->needs);
			continue;
		}
		/* what `kvsim run` gives: the front-end time as configured (the
		 * fixture takes it off first) */
		const char *sets[5] = {"scheduler.frontend_ms=-1"};
		for (int i = 0; i < g->nsets; i++)
			sets[i + 1] = g->sets[i];
		/* kept in memory, then streamed in blocks of 257 rows (spilled,
		 * read back for the summary): the same rows and summary */
		for (size_t block = 0; block <= 257; block += 257) {
			sim_run_opts_t o = {.stream_rows = block};
			sim_results_t r = sf_run_opts(g->config, sets, g->nsets + 1, NULL, &o);
			char got[65];
			digest(&r, got);
			if (block)
				assert_true(r.spilled[RES_T_REQ] > 0 && r.n_req <= block);
			sim_results_free(&r);
			printf("%s%s: %s\n", g->name, block ? " (streamed)" : "", got);
			if (!print)
				assert_string_equal(got, g->want);
		}
		ran++;
	}
	if (!ran)
		skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_results_match_their_golden_digests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
