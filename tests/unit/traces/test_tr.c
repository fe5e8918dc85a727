/* Trace readers: every format on a small valid fixture, each malformed case
 * with its specific message, window/scale/limit, block-id chaining and
 * remapping, the native round trip, and the [trace] config binding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "tests/fixtures/cfg_fixture.h"
#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/fsize_fixture.h"
#include "tests/fixtures/tr_fixture.h"
#include "sim/run/sim_schema.h"

/* Opens `text` as a trace of kind k, reads it all, and expects an input
 * error whose message contains every fragment. */
static void expect_err(tr_kind_t k, const char *ext, const char *text, const char *frag1,
                       const char *frag2)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.kind = k;
	o.path = tf_write(ext, text);
	err_t e = {0};
	uint64_t rows;
	int rc = tr_validate(&o, 512, 1, &rows, &e);
	if (rc != KS_EINPUT || !strstr(e.msg, frag1) || (frag2 && !strstr(e.msg, frag2)) ||
	    !strstr(e.msg, o.path))
		fail_msg("rc %d, message '%s'; wanted '%s' and '%s'", rc, e.msg, frag1,
		         frag2 ? frag2 : "");
}

static tr_request_t *read_vec(tr_opts_t *o, uint32_t S, size_t *n, uint64_t **blocks)
{
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(o, S, 7, &r, &e), 0);
	tr_request_t *v = calloc(64, sizeof *v);
	*blocks = calloc(64 * 256, sizeof **blocks);
	size_t i = 0;
	int rc;
	while ((rc = tr_next(r, &v[i], &e)) > 0) {
		assert_true(i < 64 && v[i].n_blocks <= 256);
		memcpy(*blocks + i * 256, v[i].blocks, v[i].n_blocks * sizeof **blocks);
		v[i].blocks = *blocks + i * 256;
		i++;
	}
	if (rc)
		fail_msg("%s", e.msg);
	tr_close(r);
	*n = i;
	return v;
}

/* ---- Mooncake ----------------------------------------------------------- */

static const char *MC =
    "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 10, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 1000, \"input_length\": 1024, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"
    "\n"
    "{\"timestamp\": 2000, \"input_length\": 600, \"output_length\": 7, \"hash_ids\": [9, 4]}\n"
    "{\"timestamp\": 3000, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [1, 5, "
    "6]}\n";

static void test_mooncake_reads_rows_lengths_and_full_blocks(void **st)
{
	(void)st;
	tr_opts_t o = tf_opts("jsonl", MC);
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 512, &n, &b);
	assert_int_equal(n, 4);
	assert_int_equal(v[0].input_len, 1100);
	assert_int_equal(v[0].n_blocks, 2); /* 1100/512: the partial block is not hashed */
	assert_int_equal(v[1].n_blocks, 2);
	assert_int_equal(v[2].n_blocks, 1);
	assert_int_equal(v[3].n_blocks, 3);
	assert_int_equal(v[1].arrival_ns, 1000000000LL);
	assert_int_equal(v[3].id, 3);
	assert_int_equal(v[3].block_tokens, 512);
	/* chained: equal prefixes give equal ids, a different block 0 changes all */
	assert_true(v[0].blocks[0] == v[1].blocks[0] && v[0].blocks[1] == v[1].blocks[1]);
	assert_true(v[3].blocks[0] == v[0].blocks[0] && v[3].blocks[1] != v[0].blocks[1]);
	assert_true(v[2].blocks[0] != v[0].blocks[0]);
	free(v);
	free(b);
}

static void test_mooncake_detected_automatically(void **st)
{
	(void)st;
	tr_kind_t k;
	err_t e;
	assert_int_equal(tr_detect(tf_write("jsonl", MC), &k, &e), 0);
	assert_int_equal(k, TR_KIND_MOONCAKE);
}

static void test_remap_to_smaller_blocks_splits_trace_blocks(void **st)
{
	(void)st;
	tr_opts_t o =
	    tf_opts("jsonl", "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": "
	                     "1, \"hash_ids\": [7, 8]}\n"
	                     "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": "
	                     "1, \"hash_ids\": [7, 9]}\n");
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 256, &n, &b);
	assert_int_equal(v[0].n_blocks, 4);
	assert_int_equal(v[0].block_tokens, 256);
	assert_true(v[0].blocks[0] == v[1].blocks[0] && v[0].blocks[1] == v[1].blocks[1]);
	assert_true(v[0].blocks[2] != v[1].blocks[2] && v[0].blocks[3] != v[1].blocks[3]);
	assert_true(v[0].blocks[0] != v[0].blocks[1]); /* two halves of block 7 differ */
	free(v);
	free(b);
	/* larger blocks: one 1024-token block needs both trace ids to match */
	v = read_vec(&o, 1024, &n, &b);
	assert_int_equal(v[0].n_blocks, 1);
	assert_true(v[0].blocks[0] != v[1].blocks[0]);
	free(v);
	free(b);
}

static void test_remap_with_explicit_trace_block_tokens(void **st)
{
	(void)st;
	tr_opts_t o;
	tr_opts_default(&o);
	o.trace_block_tokens = 16;
	o.path = tf_write(
	    "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 32, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
	    "{\"timestamp\": 0, \"input_length\": 48, \"output_length\": 1, \"hash_ids\": [1, 2, "
	    "3]}\n");
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 32, &n, &b);
	assert_int_equal(v[0].n_blocks, 1);
	assert_int_equal(v[1].n_blocks, 1);
	assert_true(v[0].blocks[0] == v[1].blocks[0]);
	free(v);
	free(b);
}

static void test_window_rate_scale_and_limit(void **st)
{
	(void)st;
	tr_opts_t o = tf_opts("jsonl", MC);
	o.start_s = 1;
	o.end_s = 3;
	o.rate_scale = 2;
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 512, &n, &b);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].arrival_ns, 0);
	assert_int_equal(v[1].arrival_ns, 500000000LL);
	assert_int_equal(v[0].id, 0);
	assert_int_equal(v[0].input_len, 1024);
	free(v);
	free(b);
	tr_opts_default(&o);
	o.path = tf_write("jsonl", MC);
	o.limit = 3;
	v = read_vec(&o, 512, &n, &b);
	assert_int_equal(n, 3);
	free(v);
	free(b);
}

static void test_mooncake_missing_field(void **st)
{
	(void)st;
	expect_err(TR_KIND_MOONCAKE, "jsonl",
	           "{\"timestamp\": 0, \"input_length\": 10, \"hash_ids\": [1]}\n",
	           ":1: output_length: missing", NULL);
}

static void test_mooncake_non_numeric(void **st)
{
	(void)st;
	expect_err(
	    TR_KIND_MOONCAKE, "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
	    "{\"timestamp\": 0, \"input_length\": \"ten\", \"output_length\": 1, \"hash_ids\": "
	    "[1]}\n",
	    ":2: input_length: not an integer", NULL);
	expect_err(TR_KIND_MOONCAKE, "jsonl",
	           "{\"timestamp\": \"x\", \"input_length\": 10, \"output_length\": 1, "
	           "\"hash_ids\": [1]}\n",
	           ":1: timestamp: not a number", NULL);
	expect_err(TR_KIND_MOONCAKE, "jsonl",
	           "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": "
	           "[\"a\"]}\n",
	           ":1: hash_ids[0]: not a non-negative integer", NULL);
}

static void test_mooncake_negative_length(void **st)
{
	(void)st;
	expect_err(
	    TR_KIND_MOONCAKE, "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": -4, \"hash_ids\": [1]}\n",
	    ":1: output_length: negative length -4", NULL);
}

static void test_mooncake_timestamps_backwards(void **st)
{
	(void)st;
	expect_err(
	    TR_KIND_MOONCAKE, "jsonl",
	    "{\"timestamp\": 5000, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
	    "{\"timestamp\": 4000, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": "
	    "[1]}\n",
	    ":2: timestamp: goes backwards", NULL);
}

/* jansson keeps the last of two equal keys; a trace row that names a field
 * twice is an error naming the line and the key, nested objects included. */
static void test_jsonl_duplicate_key_is_an_error(void **st)
{
	(void)st;
	expect_err(
	    TR_KIND_MOONCAKE, "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
	    "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1], "
	    "\"input_length\": 900}\n",
	    ":2: input_length: duplicate key", NULL);
	expect_err(TR_KIND_BAILIAN, "jsonl",
	           "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0.5, "
	           "\"input_length\": 16, \"output_length\": 1, \"type\": \"text\", \"turn\": 1, "
	           "\"hash_ids\": [1], \"meta\": {\"k\": 1, \"k\": 2}}\n",
	           ":1: k: duplicate key", NULL);
}

static void test_mooncake_truncated_line(void **st)
{
	(void)st;
	expect_err(
	    TR_KIND_MOONCAKE, "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
	    "{\"timestamp\": 10, \"input_len",
	    ":2: line: truncated line (no newline at end of file)", NULL);
}

static void test_mooncake_bad_json_mid_file(void **st)
{
	(void)st;
	expect_err(
	    TR_KIND_MOONCAKE, "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
	    "{\"timestamp\": 10,, }\n"
	    "{\"timestamp\": 20, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n",
	    ":2: json: ", NULL);
}

static void test_empty_files(void **st)
{
	(void)st;
	expect_err(TR_KIND_MOONCAKE, "jsonl", "", "empty trace (no requests)", NULL);
	expect_err(TR_KIND_MOONCAKE, "jsonl", "\n\n", "empty trace (no requests)", NULL);
	expect_err(TR_KIND_BURSTGPT, "csv", "", ":1: header: empty file", NULL);
	expect_err(TR_KIND_BURSTGPT, "csv",
	           "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n",
	           "empty trace (no requests)", NULL);
	expect_err(TR_KIND_AZURE, "csv", "", ":1: header: empty file", NULL);
	expect_err(TR_KIND_NATIVE, "tsv", "", ":1: header: empty file", NULL);
	expect_err(TR_KIND_AUTO, "x", "", ":1: header: empty file", NULL);
}

static void test_mooncake_huge_values(void **st)
{
	(void)st;
	expect_err(TR_KIND_MOONCAKE, "jsonl",
	           "{\"timestamp\": 0, \"input_length\": 99999999999, \"output_length\": 1, "
	           "\"hash_ids\": []}\n",
	           ":1: input_length: 99999999999 out of range [0, 16777216]", NULL);
	expect_err(TR_KIND_MOONCAKE, "jsonl",
	           "{\"timestamp\": 1e300, \"input_length\": 1, \"output_length\": 1, "
	           "\"hash_ids\": [1]}\n",
	           ":1: timestamp: ", "out of range");
	expect_err(
	    TR_KIND_MOONCAKE, "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n"
	    "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": "
	    "[123456789012345678901234567890]}\n",
	    ":2: json: ", NULL);
}

static void test_mooncake_wrong_block_count(void **st)
{
	(void)st;
	expect_err(TR_KIND_MOONCAKE, "jsonl",
	           "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": "
	           "[1, 2]}\n",
	           ":1: hash_ids: 2 ids for input_length 1100", "ceil(1100/512) = 3");
	/* accepted when the check is off; missing ids make the tail unique */
	tr_opts_t o;
	tr_opts_default(&o);
	o.check_blocks = 0;
	o.path = tf_write(
	    "jsonl",
	    "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [1]}\n"
	    "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": "
	    "[1]}\n");
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 512, &n, &b);
	assert_int_equal(v[0].n_blocks, 2);
	assert_true(v[0].blocks[0] == v[1].blocks[0] && v[0].blocks[1] != v[1].blocks[1]);
	free(v);
	free(b);
}

static void test_bailian_reads_sessions_and_16_token_blocks(void **st)
{
	(void)st;
	tr_opts_t o = tf_opts(
	    "jsonl",
	    "{\"chat_id\": 0, \"parent_chat_id\": -1, \"timestamp\": 0.5, \"input_length\": 40, "
	    "\"output_length\": 3, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [11, 12, 13]}\n"
	    "{\"chat_id\": 1, \"parent_chat_id\": 0, \"timestamp\": 1.75, \"input_length\": 50, "
	    "\"output_length\": 3, \"type\": \"text\", \"turn\": 2, \"hash_ids\": [11, 12, 13, "
	    "14]}\n");
	tr_kind_t k;
	err_t e;
	assert_int_equal(tr_detect(o.path, &k, &e), 0);
	assert_int_equal(k, TR_KIND_BAILIAN);
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 16, &n, &b);
	assert_int_equal(n, 2);
	assert_int_equal(v[1].arrival_ns, 1250000000LL);
	assert_int_equal(v[0].session_id, 1);
	assert_int_equal(v[1].session_id, 1); /* chat 1's parent is chat 0, the root */
	assert_int_equal(v[0].n_blocks, 2);
	assert_int_equal(v[1].n_blocks, 3);
	assert_true(v[0].blocks[1] == v[1].blocks[1]);
	free(v);
	free(b);
	expect_err(
	    TR_KIND_BAILIAN, "jsonl",
	    "{\"timestamp\": 0.5, \"input_length\": 16, \"output_length\": 3, \"hash_ids\": [1]}\n",
	    ":1: chat_id: missing", NULL);
}

/* ---- BurstGPT ------------------------------------------------------------ */

static const char *BG_HEAD =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

static char *cat(const char *a, const char *b)
{
	char *s = malloc(strlen(a) + strlen(b) + 1);
	strcpy(s, a);
	strcat(s, b);
	return s;
}

static void test_burstgpt_reads_and_marks_failures(void **st)
{
	(void)st;
	char *t = cat(BG_HEAD, "5,ChatGPT,472,18,490,Conversation log\n"
	                       "45,\"GPT-4\",1087,0,1087,\"API log, retried\"\n"
	                       "118,GPT-4,417,276,693,Conversation log\n");
	tr_opts_t o = tf_opts("csv", t);
	tr_kind_t k;
	err_t e;
	assert_int_equal(tr_detect(o.path, &k, &e), 0);
	assert_int_equal(k, TR_KIND_BURSTGPT);
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 16, &n, &b);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].arrival_ns, 0); /* relative to the first row */
	assert_int_equal(v[1].arrival_ns, 40000000000LL);
	assert_int_equal(v[1].status, 1);
	assert_int_equal(v[0].status, 0);
	assert_int_equal(v[0].input_len, 472);
	assert_int_equal(v[0].n_blocks, 472 / 16);
	free(v);
	free(b);
	o.drop_failed = 1;
	v = read_vec(&o, 16, &n, &b);
	assert_int_equal(n, 2);
	assert_int_equal(v[1].input_len, 417);
	assert_int_equal(v[1].id, 1);
	free(v);
	free(b);
	free(t);
}

static void test_burstgpt_release3_sessions_share_history(void **st)
{
	(void)st;
	tr_opts_t o =
	    tf_opts("csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log "
	                   "Type,Session ID,Elapsed time\n"
	                   "1,ChatGPT,100,60,160,Conversation log,s1,2.5\n"
	                   "2,ChatGPT,90,10,100,Conversation log,s2,1.0\n"
	                   "3,ChatGPT,200,10,210,Conversation log,s1,3.0\n");
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 16, &n, &b);
	assert_int_equal(n, 3);
	assert_true(v[0].session_id != 0 && v[0].session_id == v[2].session_id);
	assert_true(v[1].session_id != v[0].session_id);
	/* turn 2 of s1 extends turn 1: its first 100/16 = 6 blocks are turn 1's */
	for (int i = 0; i < 6; i++)
		assert_true(v[2].blocks[i] == v[0].blocks[i]);
	assert_true(v[1].blocks[0] != v[0].blocks[0]);
	free(v);
	free(b);
	o.session_mode = TR_SESS_OFF;
	v = read_vec(&o, 16, &n, &b);
	assert_true(v[2].blocks[0] != v[0].blocks[0]);
	free(v);
	free(b);
}

static void test_burstgpt_missing_column(void **st)
{
	(void)st;
	expect_err(TR_KIND_BURSTGPT, "csv",
	           "Timestamp,Model,Request tokens,Total tokens,Log Type\n5,ChatGPT,1,2,x\n",
	           ":1: header: missing column 'Response tokens'", NULL);
	char *t = cat(BG_HEAD, "5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":3: Request tokens: missing column",
	           "row has 2 of 6 fields");
	free(t);
}

static void test_burstgpt_non_numeric_and_negative(void **st)
{
	(void)st;
	char *t = cat(BG_HEAD, "5,ChatGPT,abc,18,490,Conversation log\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":2: Request tokens: 'abc' is not a number", NULL);
	free(t);
	t = cat(BG_HEAD, "5,ChatGPT,12,-3,490,Conversation log\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":2: Response tokens: negative length -3", NULL);
	free(t);
	t = cat(BG_HEAD, "5,ChatGPT,12.5,3,490,Conversation log\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":2: Request tokens: '12.5' is not an integer",
	           NULL);
	free(t);
	t = cat(BG_HEAD, "soon,ChatGPT,12,3,490,Conversation log\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":2: Timestamp: 'soon' is not a number", NULL);
	free(t);
	t = cat(BG_HEAD, "5,\"ChatGPT,12,3,490,Conversation log\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":2: field 2: unterminated quote", NULL);
	free(t);
}

static void test_burstgpt_backwards_truncated_huge(void **st)
{
	(void)st;
	char *t = cat(BG_HEAD, "50,ChatGPT,1,1,2,x\n40,ChatGPT,1,1,2,x\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":3: timestamp: goes backwards", NULL);
	free(t);
	t = cat(BG_HEAD, "50,ChatGPT,1,1,2,x\n60,ChatGPT,1");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":3: Response tokens: missing column",
	           "truncated line at end of file");
	free(t);
	t = cat(BG_HEAD, "50,ChatGPT,4294967296000,1,2,x\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":2: Request tokens: 4294967296000 out of range",
	           NULL);
	free(t);
	t = cat(BG_HEAD, "1e12,ChatGPT,1,1,2,x\n");
	expect_err(TR_KIND_BURSTGPT, "csv", t, ":2: Timestamp: ", "out of range");
	free(t);
}

/* ---- Azure --------------------------------------------------------------- */

static void test_azure_2023_and_2024_timestamps(void **st)
{
	(void)st;
	tr_opts_t o = tf_opts("csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
	                             "2023-11-16 18:15:46.6805900,374,44\r\n"
	                             "2023-11-16 18:15:50.9951690,396,109\r\n"
	                             "2023-11-16 18:16:00.0000000,1,0\r\n");
	tr_kind_t k;
	err_t e;
	assert_int_equal(tr_detect(o.path, &k, &e), 0);
	assert_int_equal(k, TR_KIND_AZURE);
	size_t n;
	uint64_t *b;
	tr_request_t *v = read_vec(&o, 16, &n, &b);
	assert_int_equal(n, 3);
	assert_int_equal(v[1].arrival_ns, 4314579000LL);
	assert_int_equal(v[2].status, 0); /* zero output is not a failure in Azure */
	assert_int_equal(v[1].output_len, 109);
	free(v);
	free(b);
	o.path = tf_write("csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	                         "2024-05-12 00:00:00+00:00,1452,3\n"
	                         "2024-05-12 00:00:00.001163+00:00,584,3\n"
	                         "2024-05-12T01:00:00Z,862,38\n");
	v = read_vec(&o, 16, &n, &b);
	assert_int_equal(n, 3);
	assert_int_equal(v[1].arrival_ns, 1163000LL);
	assert_int_equal(v[2].arrival_ns, 3600000000000LL);
	free(v);
	free(b);
}

static void test_azure_bad_timestamp_and_missing_column(void **st)
{
	(void)st;
	expect_err(TR_KIND_AZURE, "csv",
	           "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:15:46.68,374,44\n",
	           ":2: TIMESTAMP: '2023-13-16 18:15:46.68' is not a date-time", NULL);
	/* days a month does not have were counted on into the next month */
	static const char *const no_day[] = {"2023-02-29 10:00:00", "2100-02-29 10:00:00",
	                                     "2023-04-31 10:00:00", "2023-11-31 00:00:00"};
	for (size_t i = 0; i < sizeof no_day / sizeof no_day[0]; i++) {
		char text[160], want[96];
		snprintf(text, sizeof text, "TIMESTAMP,ContextTokens,GeneratedTokens\n%s,374,44\n",
		         no_day[i]);
		snprintf(want, sizeof want,
		         ":2: TIMESTAMP: '%s' names a day its month does not have", no_day[i]);
		expect_err(TR_KIND_AZURE, "csv", text, want, NULL);
	}
	expect_err(TR_KIND_AZURE, "csv", "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46,374\n",
	           ":1: header: missing column 'GeneratedTokens'", NULL);
	expect_err(TR_KIND_AZURE, "csv",
	           "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,3x,1\n",
	           ":2: ContextTokens: '3x' is not a number", NULL);
}

/* ---- native -------------------------------------------------------------- */

static void test_native_round_trip_keeps_every_field(void **st)
{
	(void)st;
	tr_opts_t o = tf_opts("jsonl", MC);
	size_t n, n2;
	uint64_t *b, *b2;
	tr_request_t *v = read_vec(&o, 512, &n, &b);
	char out[160];
	snprintf(out, sizeof out, "%s/rt.tsv", tf_dir);
	tr_writer_t *w;
	err_t e = {0};
	assert_int_equal(tr_writer_open(out, 512, &w, &e), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tr_writer_put(w, &v[i], &e), 0);
	assert_int_equal(tr_writer_close(w, &e), 0);
	tr_kind_t k;
	assert_int_equal(tr_detect(out, &k, &e), 0);
	assert_int_equal(k, TR_KIND_NATIVE);
	tr_opts_default(&o);
	o.path = out;
	tr_request_t *u = read_vec(&o, 512, &n2, &b2);
	assert_int_equal(n2, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(u[i].arrival_ns, v[i].arrival_ns);
		assert_int_equal(u[i].input_len, v[i].input_len);
		assert_int_equal(u[i].output_len, v[i].output_len);
		assert_int_equal(u[i].n_blocks, v[i].n_blocks);
		assert_memory_equal(u[i].blocks, v[i].blocks, v[i].n_blocks * sizeof(uint64_t));
	}
	free(v);
	free(b);
	free(u);
	free(b2);
}

static void test_native_errors(void **st)
{
	(void)st;
	const char *H = "#kvsim-trace 1 block_tokens=512 ids=prefix\n";
	char *t = cat(H, "0\t1024\t1\t0\t0\t00000000000000aa\n");
	expect_err(TR_KIND_NATIVE, "tsv", t, ":2: blocks: 1 ids for input_len 1024",
	           "floor(1024/512) = 2");
	free(t);
	t = cat(H, "0\t100\t1\t0\t0\t00000000000000aa\n");
	expect_err(TR_KIND_NATIVE, "tsv", t, ":2: blocks: more than floor(input_len/512) = 0",
	           NULL);
	free(t);
	t = cat(H, "0\t100\n");
	expect_err(TR_KIND_NATIVE, "tsv", t, ":2: output_len: missing column", NULL);
	free(t);
	t = cat(H, "10\t100\t1\t0\t0\t-\n5\t100\t1\t0\t0\t-\n");
	expect_err(TR_KIND_NATIVE, "tsv", t, ":3: timestamp: goes backwards", NULL);
	free(t);
	t = cat(H, "0\t600\t1\t0\t0\tzz\n");
	expect_err(TR_KIND_NATIVE, "tsv", t, ":2: blocks[0]: not a 64-bit hex id", NULL);
	free(t);
	expect_err(TR_KIND_NATIVE, "tsv", "#kvsim-trace 2 block_tokens=16 ids=prefix\n",
	           ":1: header: expected", NULL);
	/* numbers past 32 bits were read modulo 2^32: 4294967808 as 512 */
	t = cat("#kvsim-trace 1 block_tokens=4294967808 ids=prefix\n", "0\t100\t1\t0\t0\t-\n");
	expect_err(TR_KIND_NATIVE, "tsv", t,
	           ":1: block_tokens: 4294967808 out of range [1, 1048576]", NULL);
	free(t);
	t = cat("#kvsim-trace 1 block_tokens=0 ids=prefix\n", "0\t100\t1\t0\t0\t-\n");
	expect_err(TR_KIND_NATIVE, "tsv", t, ":1: block_tokens: 0 out of range", NULL);
	free(t);
	t = cat("#kvsim-trace 4294967297 block_tokens=16 ids=prefix\n", "0\t100\t1\t0\t0\t-\n");
	expect_err(TR_KIND_NATIVE, "tsv", t, ":1: header: expected", NULL);
	free(t);
	/* '-' is for rows without a full block: one that has some must list them */
	t = cat(H, "0\t511\t1\t0\t0\t-\n5\t512\t1\t0\t0\t-\n");
	expect_err(TR_KIND_NATIVE, "tsv", t,
	           ":3: blocks: '-' but input_len 512 holds floor(512/512) = 1 full blocks", NULL);
	free(t);
}

/* ---- config -------------------------------------------------------------- */

static void test_cfg_keys_bind_to_options(void **st)
{
	(void)st;
	const char *path = tf_write("jsonl", MC);
	char set[256];
	snprintf(set, sizeof set, "trace.path=%s", path);
	const char *sets[] = {set, "trace.kind=mooncake", "trace.failed=drop", "trace.rate_scale=4",
	                      "trace.in_dist=zipf", "trace.session_mode=synthetic"};
	cfg_schema_t *s;
	cfg_t *c = cf_default_with(&s, sets, sizeof sets / sizeof sets[0]);
	err_t e = {0};
	tr_opts_t o;
	assert_int_equal(tr_opts_from_cfg(c, &o, &e), 0);
	assert_int_equal(o.kind, TR_KIND_MOONCAKE);
	assert_int_equal(o.drop_failed, 1);
	assert_true(o.rate_scale == 4);
	assert_int_equal(o.in.kind, TR_DIST_ZIPF);
	assert_int_equal(o.session_mode, TR_SESS_SYNTH);
	assert_int_equal(o.max_tokens, 16777216);
	tr_reader_t *r;
	assert_int_equal(tr_open_cfg(c, 512, 1, &r, &e), 0);
	assert_string_equal(tr_source(r), path);
	tr_request_t q;
	assert_int_equal(tr_next(r, &q, &e), 1);
	assert_int_equal(tr_next(r, &q, &e), 1);
	assert_int_equal(q.arrival_ns, 250000000LL);
	tr_close(r);
	/* a bad value is the config's input error */
	assert_int_equal(cfg_set(c, "trace.gen=lumpy", &e), KS_EINPUT);
	cfg_free(c);
	cfg_schema_free(s);
}

/* Every kind's trace.kind name reads back as that kind through the config
 * (the enum and the choices come from one list, so their orders agree) and
 * through tr_kind_parse. */
static void test_every_kind_name_reads_back_as_its_kind(void **st)
{
	(void)st;
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	for (int k = TR_KIND_AUTO; k <= TR_KIND_SPEC; k++) {
		const char *name = tr_kind_name((tr_kind_t)k);
		tr_kind_t back;
		assert_int_equal(tr_kind_parse(name, &back), 0);
		assert_int_equal(back, k);
		cfg_t *c = cfg_new(s);
		err_t e = {0};
		char set[64];
		snprintf(set, sizeof set, "trace.kind=%s", name);
		assert_int_equal(cfg_set(c, set, &e), 0);
		assert_int_equal(cfg_finalize(c, &e), 0);
		tr_opts_t o;
		assert_int_equal(tr_opts_from_cfg(c, &o, &e), 0);
		assert_int_equal(o.kind, k);
		cfg_free(c);
	}
	tr_kind_t back;
	assert_int_equal(tr_kind_parse("parquet", &back), KS_EINPUT);
	assert_string_equal(tr_kind_name((tr_kind_t)(TR_KIND_SPEC + 1)), "?");
	cfg_schema_free(s);
}

/* A kind outside the list is refused, not read as a generator. */
static void test_a_kind_outside_the_list_is_an_input_error(void **st)
{
	(void)st;
	tr_opts_t o;
	tr_opts_default(&o);
	o.kind = (tr_kind_t)(TR_KIND_SPEC + 1);
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), KS_EINPUT);
	assert_null(r);
	assert_non_null(strstr(e.msg, "[trace] kind"));
}

static void test_defaults_match_key_table(void **st)
{
	(void)st;
	tr_opts_t o;
	tr_opts_default(&o);
	assert_int_equal(o.kind, TR_KIND_AUTO);
	assert_int_equal(o.gen, TR_GEN_POISSON);
	assert_true(o.rate == 10 && o.duration_s == 60 && o.rate_scale == 1);
	assert_int_equal(o.check_blocks, 1);
	assert_int_equal(o.in.kind, TR_DIST_LOGNORMAL);
	assert_int_equal(o.session_mode, TR_SESS_TRACE);
	assert_int_equal(o.out.max, 8192);
}

/* A path that kind = gen would ignore is refused; servegen reads its path. */
static void test_gen_kind_refuses_a_trace_path(void **st)
{
	(void)st;
	tr_opts_t o;
	tr_opts_default(&o);
	o.kind = TR_KIND_GEN;
	o.gen = TR_GEN_FANOUT;
	o.path = tf_write("jsonl", MC);
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[trace] path: '"));
	assert_non_null(strstr(e.msg, "kind = gen (gen = fanout)"));
	o.path = "";
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), 0);
	tr_close(r);
}

static void test_sha256_of_file(void **st)
{
	(void)st;
	char hex[65];
	err_t e;
	assert_int_equal(tr_file_sha256(tf_write("txt", "abc"), hex, &e), 0);
	assert_string_equal(hex,
	                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(tr_file_sha256("/nonexistent/x", hex, &e), KS_EINPUT);
}

static void test_cli_exit_codes(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!k)
		skip();
	char cmd[512];
	const char *bad = tf_write("jsonl", "{\"timestamp\": 0}\n");
	snprintf(cmd, sizeof cmd, "%s trace stats %s >/dev/null 2>&1", k, bad);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
	const char *good = tf_write("jsonl", MC);
	snprintf(cmd, sizeof cmd, "%s trace stats %s --json >/dev/null 2>&1", k, good);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
	snprintf(cmd, sizeof cmd, "%s trace gen poisson rate=-1 -o %s/x.tsv >/dev/null 2>&1", k,
	         tf_dir);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof cmd,
	         "%s trace gen gamma cv=2 requests=100 -o %s/g.tsv >/dev/null 2>&1 && "
	         "%s trace stats %s/g.tsv >/dev/null 2>&1",
	         k, tf_dir, k, tf_dir);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
	/* convert keeps the rows and the reuse; validate counts them */
	snprintf(cmd, sizeof cmd, "%s trace convert %s -o %s/c.tsv >/dev/null 2>&1", k, good,
	         tf_dir);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
	snprintf(cmd, sizeof cmd, "%s trace validate %s/c.tsv", k, tf_dir);
	FILE *p = popen(cmd, "r");
	char line[512] = "";
	assert_non_null(fgets(line, sizeof line, p));
	assert_int_equal(pclose(p), 0);
	assert_non_null(strstr(line, ": 4 rows,"));
	assert_non_null(strstr(line, "peak RSS"));
	snprintf(cmd, sizeof cmd, "%s trace convert %s >/dev/null 2>&1", k, good);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2); /* -o is required */
}

/* [trace] path set in a config file names a file beside that file (here
 * not in the working directory), as [gpu] file does. */
static void test_trace_path_resolves_beside_its_config_file(void **st)
{
	(void)st;
	const char *trace = tf_write("jsonl", MC);
	const char *slash = strrchr(trace, '/');
	char ini[256];
	snprintf(ini, sizeof ini, "[trace]\nkind = mooncake\npath = %s\n", slash + 1);
	const char *path = tf_write("ini", ini);
	cfg_schema_t *s = cfg_schema_default();
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	assert_int_equal(cfg_load_file(c, path, &e), 0);
	tr_reader_t *r;
	if (tr_open_cfg(c, 512, 1, &r, &e))
		fail_msg("%s", e.msg);
	assert_string_equal(tr_source(r), trace);
	tr_close(r);
	cfg_free(c);
	cfg_schema_free(s);
}

/* tr_open copies the options, strings included: the caller's may go. */
static void test_reader_keeps_its_own_copy_of_the_options(void **st)
{
	(void)st;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", tf_write("jsonl", MC));
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = buf;
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), 0);
	memset(buf, 'x', sizeof buf - 1);
	tr_request_t q;
	int rc, n = 0;
	while ((rc = tr_next(r, &q, &e)) > 0)
		n++;
	assert_int_equal(rc, 0);
	assert_int_equal(n, 4);
	assert_non_null(strstr(tr_source(r), "/f"));
	tr_close(r);
}

/* The writer names the file it was asked for, never its temporary file,
 * says why, and a path that cannot be written is bad input. */
/* Writes 10000 requests of four blocks to the trace file ctx names: far
 * past the child's limit. */
static int write_big_tsv(void *ctx, err_t *e)
{
	tr_writer_t *w;
	int rc = tr_writer_open(ctx, 16, &w, e);
	uint64_t blk[4] = {1, 2, 3, 4};
	tr_request_t q = {
	    .input_len = 64, .output_len = 1, .n_blocks = 4, .blocks = blk, .block_tokens = 16};
	for (int i = 0; !rc && i < 10000; i++)
		rc = tr_writer_put(w, &q, e);
	if (!rc)
		rc = tr_writer_close(w, e);
	else
		tr_writer_abort(w);
	return rc;
}

static void test_writer_errors_name_the_file_and_the_reason(void **st)
{
	(void)st;
	tf_write("txt", ""); /* makes tf_dir */
	tr_writer_t *w;
	err_t e = {0};
	assert_int_equal(tr_writer_open(tf_dir, 16, &w, &e), KS_EINPUT);
	char want[400];
	snprintf(want, sizeof want, "%s: cannot write: Is a directory", tf_dir);
	assert_string_equal(e.msg, want);
	char p[160];
	snprintf(p, sizeof p, "%s/no/such/x.tsv", tf_dir);
	assert_int_equal(tr_writer_open(p, 16, &w, &e), KS_EINPUT);
	snprintf(want, sizeof want, "%s: cannot create: No such file or directory", p);
	assert_string_equal(e.msg, want);
	/* a refused write (RLIMIT_FSIZE: EFBIG, like ENOSPC on a full disk) */
	snprintf(p, sizeof p, "%s/big.tsv", tf_dir);
	char msg[1100];
	fsize_refused_write(4096, write_big_tsv, p, 0, msg, sizeof msg);
	snprintf(want, sizeof want, "%s: write error: %s", p, strerror(EFBIG));
	assert_string_equal(msg, want);
	assert_int_equal(access(p, F_OK), -1);
	char tmp[200];
	snprintf(tmp, sizeof tmp, "%s.tmp", p);
	assert_int_equal(access(tmp, F_OK), -1);
}

/* trace's KEY=V arguments and KIND are named as typed, not as "--set". */
static void test_cli_errors_name_the_argument_given(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!k)
		skip();
	tf_write("txt", "");
	char out[160];
	snprintf(out, sizeof out, "%s/never.tsv", tf_dir);
	cli_result_t r = cli_run(k, tf_dir, "trace", "gen", "gamma", "cv=abc", "-o", out, NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "kvsim trace gen: cv=abc: [trace] cv: expected a number, got "
	                           "'abc'\n");
	cli_result_free(&r);
	r = cli_run(k, tf_dir, "trace", "gen", "gama", "-o", out, NULL);
	assert_int_equal(r.status, 2);
	assert_memory_equal(r.err, "kvsim trace gen: gama: [trace] gen: 'gama' is not one of", 56);
	cli_result_free(&r);
	r = cli_run(k, tf_dir, "trace", "gen", "gamma", "--set", "trace.cv=x", "-o", out, NULL);
	assert_int_equal(r.status, 2);
	assert_memory_equal(r.err, "kvsim trace gen: --set: [trace] cv: ", 36);
	cli_result_free(&r);
	/* a rule checked when the generator starts names the argument too */
	r = cli_run(k, tf_dir, "trace", "gen", "fanout", "duration_s=1", "fanout_window_s=5", "-o",
	            out, NULL);
	assert_int_equal(r.status, 2);
	assert_memory_equal(r.err,
	                    "kvsim trace gen: fanout_window_s=5: [trace] fanout_window_s: ", 61);
	cli_result_free(&r);
	assert_int_equal(access(out, F_OK), -1);
}

/* Reading to the end and getting no request while the source had rows is
 * said, with the key to blame: a start past the end, a window in a gap,
 * every row dropped. A trace that yields requests says nothing. */
static void test_reader_says_when_no_row_came_out(void **st)
{
	(void)st;
	static const struct {
		double start, end;
		int drop;
		const char *text, *want;
	} cases[] = {
	    {0, 0, 0, NULL, NULL},
	    {3.5, 0, 0, NULL,
	     "[trace] start_s: 3.5 s is past the end of the trace (%s: 4 rows from 0 to 3 s): no "
	     "request to simulate"},
	    {1.5, 1.6, 0, NULL,
	     "[trace] end_s: the window [1.5 s, 1.6 s) holds no row of %s: no request to "
	     "simulate"},
	    {0, 0, 1,
	     "#kvsim-trace 1 block_tokens=512 ids=prefix\n0\t10\t1\t1\t0\t-\n5\t10\t1\t1\t0\t-\n",
	     "[trace] failed: drop left none of the 2 rows of %s: no request to simulate"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tr_opts_t o;
		tr_opts_default(&o);
		o.path =
		    tf_write(cases[i].text ? "tsv" : "jsonl", cases[i].text ? cases[i].text : MC);
		o.start_s = cases[i].start;
		o.end_s = cases[i].end;
		o.drop_failed = cases[i].drop;
		tr_reader_t *r;
		err_t e = {0};
		assert_int_equal(tr_open(&o, 512, 1, &r, &e), 0);
		tr_request_t q;
		assert_int_equal(tr_check_nonempty(r, &e), 0); /* not before the end */
		while (tr_next(r, &q, &e) > 0)
			;
		if (!cases[i].want) {
			assert_int_equal(tr_check_nonempty(r, &e), 0);
		} else {
			char want[512];
			snprintf(want, sizeof want, cases[i].want, o.path);
			assert_int_equal(tr_check_nonempty(r, &e), KS_EINPUT);
			assert_string_equal(e.msg, want);
		}
		tr_close(r);
	}
}

/* A FIFO as trace.path blocked forever (it was opened for detection, the
 * digest and the reading): a trace that is not a regular file is refused
 * before anything opens it, naming the key. alarm() catches a hang only. */
static void test_trace_that_is_not_a_regular_file_is_refused(void **st)
{
	(void)st;
	char fifo[128];
	snprintf(fifo, sizeof fifo, "%s.fifo", tf_write("tsv", "x"));
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(300);
	const char *paths[] = {fifo, "/dev/null"};
	for (int i = 0; i < 4; i++) {
		tr_opts_t o;
		tr_opts_default(&o);
		if (i < 2) {
			o.path = paths[i];
		} else { /* a generator's length files */
			o.kind = TR_KIND_GEN;
			*(i == 2 ? &o.in.path : &o.out.path) = fifo;
		}
		tr_reader_t *r = NULL;
		err_t e = {0};
		assert_int_equal(tr_open(&o, 16, 1, &r, &e), KS_EINPUT);
		assert_null(r);
		const char *key = i < 2    ? "[trace] path: "
		                  : i == 2 ? "[trace] in_path: "
		                           : "[trace] out_path: ";
		assert_non_null(strstr(e.msg, key));
		assert_non_null(strstr(e.msg, paths[i < 2 ? i : 0]));
		assert_non_null(strstr(e.msg, "not a regular file"));
	}
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mooncake_reads_rows_lengths_and_full_blocks),
	    cmocka_unit_test(test_mooncake_detected_automatically),
	    cmocka_unit_test(test_remap_to_smaller_blocks_splits_trace_blocks),
	    cmocka_unit_test(test_remap_with_explicit_trace_block_tokens),
	    cmocka_unit_test(test_window_rate_scale_and_limit),
	    cmocka_unit_test(test_mooncake_missing_field),
	    cmocka_unit_test(test_mooncake_non_numeric),
	    cmocka_unit_test(test_mooncake_negative_length),
	    cmocka_unit_test(test_mooncake_timestamps_backwards),
	    cmocka_unit_test(test_mooncake_truncated_line),
	    cmocka_unit_test(test_jsonl_duplicate_key_is_an_error),
	    cmocka_unit_test(test_mooncake_bad_json_mid_file),
	    cmocka_unit_test(test_empty_files),
	    cmocka_unit_test(test_mooncake_huge_values),
	    cmocka_unit_test(test_mooncake_wrong_block_count),
	    cmocka_unit_test(test_bailian_reads_sessions_and_16_token_blocks),
	    cmocka_unit_test(test_burstgpt_reads_and_marks_failures),
	    cmocka_unit_test(test_burstgpt_release3_sessions_share_history),
	    cmocka_unit_test(test_burstgpt_missing_column),
	    cmocka_unit_test(test_burstgpt_non_numeric_and_negative),
	    cmocka_unit_test(test_burstgpt_backwards_truncated_huge),
	    cmocka_unit_test(test_azure_2023_and_2024_timestamps),
	    cmocka_unit_test(test_azure_bad_timestamp_and_missing_column),
	    cmocka_unit_test(test_native_round_trip_keeps_every_field),
	    cmocka_unit_test(test_native_errors),
	    cmocka_unit_test(test_cfg_keys_bind_to_options),
	    cmocka_unit_test(test_defaults_match_key_table),
	    cmocka_unit_test(test_gen_kind_refuses_a_trace_path),
	    cmocka_unit_test(test_sha256_of_file),
	    cmocka_unit_test(test_cli_exit_codes),
	    cmocka_unit_test(test_trace_path_resolves_beside_its_config_file),
	    cmocka_unit_test(test_reader_keeps_its_own_copy_of_the_options),
	    cmocka_unit_test(test_writer_errors_name_the_file_and_the_reason),
	    cmocka_unit_test(test_cli_errors_name_the_argument_given),
	    cmocka_unit_test(test_reader_says_when_no_row_came_out),
	    cmocka_unit_test(test_every_kind_name_reads_back_as_its_kind),
	    cmocka_unit_test(test_a_kind_outside_the_list_is_an_input_error),
	    cmocka_unit_test(test_trace_that_is_not_a_regular_file_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
