/* Gzip input: every reader gives the same rows from FILE.gz (written here
 * with zlib) as from the plain FILE, detection sees through the compression,
 * errors name the line of the decompressed text, and a truncated or corrupt
 * stream is an input error before any row is used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <zlib.h>

#include "tests/fixtures/tr_fixture.h"
#include "traces/tr_int.h"

/* Writes text gzip-compressed to a new fixture FILE.EXT.gz. */
static const char *gz_write(const char *ext, const char *text, size_t len)
{
	char gzext[32];
	snprintf(gzext, sizeof gzext, "%s.gz", ext);
	const char *p = tf_write(gzext, "");
	gzFile g = gzopen(p, "wb");
	assert_non_null(g);
	assert_int_equal(gzwrite(g, text, (unsigned)len), (int)len);
	assert_int_equal(gzclose(g), Z_OK);
	return p;
}

static off_t file_size(const char *p)
{
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	return sb.st_size;
}

/* Reads a whole trace into a digest of every field of every row (and the
 * block ids), so two readings compare in one number. */
static uint64_t digest_rows(const tr_opts_t *o, uint32_t S, uint64_t *rows)
{
	tr_reader_t *r;
	err_t e = {0};
	if (tr_open(o, S, 3, &r, &e))
		fail_msg("%s", e.msg);
	uint64_t h = TR_ROOT_ID;
	tr_request_t q;
	int rc;
	*rows = 0;
	while ((rc = tr_next(r, &q, &e)) > 0) {
		(*rows)++;
		h = tr_mix(h, q.id);
		h = tr_mix(h, (uint64_t)q.arrival_ns);
		h = tr_mix(h, (uint64_t)q.input_len << 32 | q.output_len);
		h = tr_mix(h, (uint64_t)(uint32_t)q.status << 32 | q.n_blocks);
		h = tr_mix(h, q.session_id);
		for (uint32_t i = 0; i < q.n_blocks; i++)
			h = tr_mix(h, q.blocks[i]);
	}
	if (rc)
		fail_msg("%s", e.msg);
	tr_close(r);
	return h;
}

/* A Mooncake trace of n rows; row k (1-based line k) shares its first ids
 * with earlier rows. Caller frees. */
static char *mooncake_rows(unsigned n, size_t *len)
{
	size_t cap = (size_t)n * 128 + 1;
	char *t = malloc(cap);
	size_t m = 0;
	for (unsigned k = 0; k < n; k++)
		m += (size_t)snprintf(t + m, cap - m,
		                      "{\"timestamp\": %u, \"input_length\": 1100, "
		                      "\"output_length\": %u, \"hash_ids\": [%u, %u, %u]}\n",
		                      k * 10, 1 + k % 7, k % 3, 100 + k % 11, 1000 + k);
	*len = m;
	return t;
}

/* One fixture per format; the Mooncake one also holds a line longer than
 * the reader's input chunk, so lines crossing chunk boundaries are joined. */
typedef struct fmt_case {
	tr_kind_t kind;
	const char *ext;
	const char *text;
	uint64_t rows;
} fmt_case_t;

static const fmt_case_t cases[] = {
    {TR_KIND_BAILIAN, "jsonl",
     "{\"chat_id\": 0, \"parent_chat_id\": -1, \"timestamp\": 0.5, \"input_length\": 40, "
     "\"output_length\": 3, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [1, 2, 3]}\n"
     "{\"chat_id\": 1, \"parent_chat_id\": 0, \"timestamp\": 1.5, \"input_length\": 64, "
     "\"output_length\": 9, \"type\": \"text\", \"turn\": 2, \"hash_ids\": [1, 2, 3, 4]}\n",
     2},
    {TR_KIND_BURSTGPT, "csv",
     "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
     "5,ChatGPT,472,18,490,Conversation log\n"
     "9,GPT-4,1200,0,1200,API log\n"
     "12,ChatGPT,800,40,840,Conversation log\n",
     3},
    {TR_KIND_AZURE, "csv",
     "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
     "2023-11-16 18:15:46.6805900,374,44\r\n"
     "2023-11-16 18:15:50.9951690,1200,3\r\n",
     2},
    {TR_KIND_NATIVE, "tsv",
     "#kvsim-trace 1 block_tokens=16 ids=prefix\n"
     "#arrival_ns\tinput_len\toutput_len\tstatus\tsession_id\tblocks\n"
     "0\t40\t5\t0\t0\t00000000000000aa,00000000000000bb\n"
     "1500000\t8\t2\t1\t7\t-\n",
     2},
    {TR_KIND_SERVEGEN, "csv", "0,4,1.0,Gamma,0.2,0.01\n60,8,2.0,Weibull,0.45,0.02\n", 0},
};

static void expect_same_rows(tr_kind_t kind, const char *plain, const char *gz, uint64_t want)
{
	tr_kind_t kp, kg;
	err_t e = {0};
	assert_int_equal(tr_detect(plain, &kp, &e), 0);
	assert_int_equal(tr_detect(gz, &kg, &e), 0);
	assert_int_equal(kp, kind);
	assert_int_equal(kg, kind);
	tr_opts_t o;
	tr_opts_default(&o);
	o.limit = 500; /* servegen generates for as long as its windows last */
	uint64_t np, ng;
	o.path = plain;
	uint64_t hp = digest_rows(&o, 16, &np);
	o.path = gz;
	uint64_t hg = digest_rows(&o, 16, &ng);
	assert_int_equal(ng, np);
	assert_true(hg == hp);
	if (want)
		assert_int_equal(np, want);
	else
		assert_true(np > 0);
}

static void test_gz_of_every_format_reads_the_rows_of_the_plain_file(void **st)
{
	(void)st;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const fmt_case_t *c = &cases[i];
		expect_same_rows(c->kind, tf_write(c->ext, c->text),
		                 gz_write(c->ext, c->text, strlen(c->text)), c->rows);
	}
	/* Mooncake: 300 rows, then one of 20,000 ids (~150 KB) */
	size_t len;
	char *t = mooncake_rows(300, &len);
	size_t cap = len + 20000 * 8 + 256;
	t = realloc(t, cap);
	len += (size_t)snprintf(t + len, cap - len,
	                        "{\"timestamp\": 5000, \"input_length\": 10240000, "
	                        "\"output_length\": 1, \"hash_ids\": [0");
	for (unsigned i = 1; i < 20000; i++)
		len += (size_t)snprintf(t + len, cap - len, ", %u", i);
	len += (size_t)snprintf(t + len, cap - len, "]}\n");
	assert_true(len > 2 * 65536);
	expect_same_rows(TR_KIND_MOONCAKE, tf_write("jsonl", t), gz_write("jsonl", t, len), 301);
	free(t);
}

/* Opens a trace of kind k and expects an input error naming path:line. */
static void expect_err_cap(tr_kind_t k, const char *path, uint64_t cap, const char *frag)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.kind = k;
	o.path = path;
	if (cap)
		o.max_line_bytes = cap;
	err_t e = {0};
	uint64_t rows;
	int rc = tr_validate(&o, 512, 1, &rows, &e);
	char where[256];
	snprintf(where, sizeof where, "%s%s", path, frag);
	if (rc != KS_EINPUT || !strstr(e.msg, where))
		fail_msg("rc %d, message '%s'; wanted '%s'", rc, e.msg, where);
}

static void expect_gz_err(tr_kind_t k, const char *path, const char *frag)
{
	expect_err_cap(k, path, 0, frag);
}

static void test_gz_malformed_row_names_its_decompressed_line(void **st)
{
	(void)st;
	size_t len;
	char *t = mooncake_rows(10, &len);
	/* line 7 gets a negative input_length */
	char *p = t;
	for (int i = 0; i < 6; i++)
		p = strchr(p, '\n') + 1;
	char *q = strstr(p, "1100");
	memcpy(q, "-110", 4);
	const char *gz = gz_write("jsonl", t, len);
	expect_gz_err(TR_KIND_MOONCAKE, gz, ":7: input_length: negative");
	expect_gz_err(TR_KIND_AUTO, gz, ":7: input_length: negative");
	free(t);
	const char *csv = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
			  "5,ChatGPT,472,18,490,Conversation log\n"
			  "6,ChatGPT,abc,18,490,Conversation log\n";
	expect_gz_err(TR_KIND_BURSTGPT, gz_write("csv", csv, strlen(csv)),
	              ":3: Request tokens: 'abc' is not a number");
}

/* A trace of 20,000 rows (~2 MB of text, several input chunks). */
static const char *big_gz(void)
{
	size_t len;
	char *t = mooncake_rows(20000, &len);
	const char *gz = gz_write("jsonl", t, len);
	free(t);
	return gz;
}

static void test_gz_truncated_or_corrupt_fails_before_any_row(void **st)
{
	(void)st;
	const char *gz = big_gz();
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = gz;
	uint64_t rows;
	digest_rows(&o, 512, &rows);
	assert_int_equal(rows, 20000);

	assert_int_equal(truncate(gz, file_size(gz) / 2), 0);
	tr_reader_t *r = (tr_reader_t *)(uintptr_t)1; /* must come back NULL */
	err_t e = {0};
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), KS_EINPUT);
	assert_null(r);
	assert_non_null(strstr(e.msg, gz));
	assert_non_null(strstr(e.msg, ": gzip: truncated file"));
	/* the line reached is well inside the file */
	unsigned long line = strtoul(e.msg + strlen(gz) + 1, NULL, 10);
	assert_true(line > 1000 && line < 20000);
	assert_int_equal(tr_validate(&o, 512, 1, &rows, &e), KS_EINPUT);
	assert_int_equal(rows, 0);

	/* a flipped byte in the deflate data: bad code or CRC mismatch */
	const char *bad = big_gz();
	FILE *f = fopen(bad, "r+b");
	assert_non_null(f);
	fseek(f, file_size(bad) / 2, SEEK_SET);
	int c = fgetc(f);
	fseek(f, file_size(bad) / 2, SEEK_SET);
	fputc(c ^ 0x5a, f);
	fclose(f);
	o.path = bad;
	assert_int_equal(tr_validate(&o, 512, 1, &rows, &e), KS_EINPUT);
	assert_int_equal(rows, 0);
	assert_non_null(strstr(e.msg, bad));
	assert_non_null(strstr(e.msg, ": gzip: corrupt compressed data ("));
}

/* Bytes after the gzip stream were dropped unseen (zlib ends a file at what
 * is not another member): they are an error at the line after the last;
 * a second member (RFC 1952 2.2) is read on. */
static void test_gz_bytes_after_the_stream_are_refused(void **st)
{
	(void)st;
	size_t len;
	char *t = mooncake_rows(10, &len);
	static const char *const tails[] = {"garbage", "\n", "\0\0\0\0"};
	static const size_t tail_len[] = {7, 1, 4};
	for (int i = 0; i < 3; i++) {
		const char *gz = gz_write("jsonl", t, len);
		FILE *f = fopen(gz, "ab");
		assert_non_null(f);
		assert_int_equal(fwrite(tails[i], 1, tail_len[i], f), tail_len[i]);
		fclose(f);
		char frag[96];
		snprintf(frag, sizeof frag,
		         ":11: gzip: %zu bytes after the end of the compressed stream", tail_len[i]);
		expect_gz_err(TR_KIND_AUTO, gz, frag);
	}
	/* two members: the rows of both */
	const char *two = gz_write("jsonl", t, len);
	gzFile g = gzopen(two, "ab");
	assert_non_null(g);
	assert_int_equal(gzwrite(g, t, (unsigned)len), (int)len);
	assert_int_equal(gzclose(g), Z_OK);
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = two;
	err_t e = {0};
	uint64_t rows;
	int rc = tr_validate(&o, 512, 1, &rows, &e);
	/* the second member's rows go back in time: read, then refused as rows */
	assert_int_equal(rc, KS_EINPUT);
	assert_null(strstr(e.msg, "gzip"));
	assert_non_null(strstr(e.msg, ":11: timestamp: goes backwards"));
	free(t);
}

/* The streaming check behind the up-front one (a file that changes while it
 * is read): complete lines come out, then the error at the line reached. */
static void test_gz_line_reader_stops_at_the_truncation(void **st)
{
	(void)st;
	const char *gz = big_gz();
	assert_int_equal(truncate(gz, file_size(gz) / 2), 0);
	tr_lines_t l;
	err_t e = {0};
	assert_int_equal(tr_lines_open(&l, gz, &e), 0);
	int rc;
	uint64_t n = 0;
	while ((rc = tr_lines_next(&l, &e)) > 0)
		n++;
	assert_int_equal(rc, KS_EINPUT);
	assert_true(n > 1000 && n < 20000);
	char where[256];
	snprintf(where, sizeof where, "%s:%llu: gzip: truncated file", gz,
	         (unsigned long long)n + 1);
	assert_non_null(strstr(e.msg, where));
	tr_lines_close(&l);
	assert_int_equal(tr_lines_verify(gz, 0, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, where));
}

/* Every line of l into a digest of (text, line number), with the bytes. */
static uint64_t digest_lines(tr_lines_t *l, uint64_t *n, uint64_t *bytes)
{
	err_t e = {0};
	uint64_t h = TR_ROOT_ID;
	int rc;
	*n = 0;
	while ((rc = tr_lines_next(l, &e)) > 0) {
		(*n)++;
		h = tr_mix(h, l->line);
		for (size_t i = 0; i < l->len; i++)
			h = tr_mix(h, (unsigned char)l->buf[i]);
	}
	if (rc)
		fail_msg("%s", e.msg);
	*bytes = l->bytes;
	return h;
}

/* A verified gzip file is read from the text the verify kept, giving the
 * lines an inflating reader gives; the text outlives the keeper slot while
 * a reader holds it; a file changed since, or a text past the cap, is
 * inflated again. */
static void test_gz_verified_text_is_inflated_once(void **st)
{
	(void)st;
	const char *gz = big_gz();
	err_t e = {0};
	tr_lines_t l;
	uint64_t n0, b0, n1, b1;
	assert_int_equal(tr_lines_open(&l, gz, &e), 0); /* nothing kept yet */
	assert_non_null(l.gz);
	uint64_t h0 = digest_lines(&l, &n0, &b0);
	tr_lines_close(&l);
	assert_int_equal(n0, 20000);

	assert_int_equal(tr_lines_verify(gz, 0, &e), 0);
	assert_int_equal(tr_lines_open(&l, gz, &e), 0);
	assert_null(l.gz);
	assert_non_null(l.kept);
	tr_lines_keep_drop(); /* the reader's own reference keeps the text */
	uint64_t h1 = digest_lines(&l, &n1, &b1);
	tr_lines_close(&l);
	assert_int_equal(n1, n0);
	assert_int_equal(b1, b0);
	assert_true(h1 == h0);
	assert_int_equal(tr_lines_open(&l, gz, &e), 0); /* dropped: inflated again */
	assert_non_null(l.gz);
	tr_lines_close(&l);

	/* a new version of the file at the same path is not served the old text */
	assert_int_equal(tr_lines_verify(gz, 0, &e), 0);
	size_t len;
	char *t = mooncake_rows(300, &len);
	gzFile g = gzopen(gz, "wb");
	assert_non_null(g);
	assert_int_equal(gzwrite(g, t, (unsigned)len), (int)len);
	assert_int_equal(gzclose(g), Z_OK);
	free(t);
	assert_int_equal(tr_lines_open(&l, gz, &e), 0);
	assert_non_null(l.gz);
	digest_lines(&l, &n1, &b1);
	tr_lines_close(&l);
	assert_int_equal(n1, 300);
	tr_lines_keep_drop();

	/* past the cap nothing is kept, and the file still verifies */
	gz = big_gz();
	tr_lines_set_kept_max(1u << 17);
	assert_int_equal(tr_lines_verify(gz, 0, &e), 0);
	tr_lines_set_kept_max(0);
	assert_int_equal(tr_lines_open(&l, gz, &e), 0);
	assert_non_null(l.gz);
	assert_true(digest_lines(&l, &n1, &b1) == h0);
	tr_lines_close(&l);
	tr_lines_keep_drop();
}

/* Reads path as kind k with [trace] max_line_bytes = cap; expects the cap's
 * error on line `line`. */
static void expect_line_cap(tr_kind_t k, const char *path, uint64_t cap, unsigned line)
{
	char frag[128];
	snprintf(frag, sizeof frag, ":%u: [trace] max_line_bytes: line longer than %llu bytes",
	         line, (unsigned long long)cap);
	expect_err_cap(k, path, cap, frag);
}

/* [trace] max_line_bytes: every reader (each format, detected or named,
 * plain or gzip) refuses a line past the cap on that line, after the rows
 * before it; a first line past it fails detection the same way. */
static void test_every_reader_refuses_a_line_past_max_line_bytes(void **st)
{
	(void)st;
	char longl[2002];
	memset(longl, 'x', 2000);
	strcpy(longl + 2000, "\n");
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const fmt_case_t *c = &cases[i];
		size_t n = strlen(c->text);
		char *t = malloc(n + sizeof longl);
		memcpy(t, c->text, n);
		memcpy(t + n, longl, sizeof longl);
		unsigned line = 1;
		for (size_t j = 0; j < n; j++)
			line += c->text[j] == '\n';
		const char *plain = tf_write(c->ext, t), *gz = gz_write(c->ext, t, strlen(t));
		expect_line_cap(c->kind, plain, 1000, line);
		expect_line_cap(c->kind, gz, 1000, line);
		expect_line_cap(TR_KIND_AUTO, gz, 1000, line);
		free(t);
	}
	expect_line_cap(TR_KIND_AUTO, tf_write("jsonl", longl), 1999, 1);
	expect_line_cap(TR_KIND_AUTO, gz_write("jsonl", longl, 2000), 1999, 1);
}

/* A file without newlines: the reader holds about the cap, not the file;
 * a gzip one's verify keeps none of its text (it passes the cap), and its
 * reader then refuses the line as a plain file's does. */
static void test_line_past_the_cap_is_not_buffered_whole(void **st)
{
	(void)st;
	size_t n = 1u << 20;
	char *t = malloc(n + 1);
	memset(t, 'a', n);
	t[n] = '\0';
	const char *plain = tf_write("jsonl", t), *gz = gz_write("jsonl", t, n);
	free(t);
	err_t e = {0};
	tr_lines_t l;
	assert_int_equal(tr_lines_open(&l, plain, &e), 0);
	l.max_line = 1000;
	assert_int_equal(tr_lines_next(&l, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, ":1: [trace] max_line_bytes: line longer than 1000 bytes"));
	assert_true(l.cap <= 2048);
	tr_lines_close(&l);
	assert_int_equal(tr_lines_verify(gz, 1000, &e), 0);
	assert_int_equal(tr_lines_open(&l, gz, &e), 0);
	assert_null(l.kept);
	l.max_line = 1000;
	assert_int_equal(tr_lines_next(&l, &e), KS_EINPUT);
	assert_true(l.cap <= 2048);
	tr_lines_close(&l);
	/* under a cap above it, the same text is kept and read whole */
	assert_int_equal(tr_lines_verify(gz, n, &e), 0);
	assert_int_equal(tr_lines_open(&l, gz, &e), 0);
	assert_non_null(l.kept);
	l.max_line = n;
	assert_int_equal(tr_lines_next(&l, &e), 1);
	assert_int_equal(l.len, n);
	tr_lines_close(&l);
	tr_lines_keep_drop();
}

/* Plain files are passed through unchanged, including one whose first
 * bytes only resemble the gzip magic (0x1f 0x8b). */
static void test_plain_files_still_read(void **st)
{
	(void)st;
	tr_opts_t o;
	tr_opts_default(&o);
	o.kind = TR_KIND_BURSTGPT;
	o.path = tf_write("csv", "\x1f,Timestamp,Request tokens,Response tokens\n"
	                         "0,1,100,5\n"
	                         "0,2,200,6\n");
	uint64_t rows;
	digest_rows(&o, 16, &rows);
	assert_int_equal(rows, 2);
	err_t e = {0};
	assert_int_equal(tr_lines_verify(o.path, 0, &e), 0);
}

/* Every `kvsim trace` command on a .gz: stats equal the plain file's, a
 * truncated one exits 2 and convert leaves no output behind. */
static void test_cli_reads_gz_and_rejects_a_truncated_one(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!k)
		skip();
	size_t len;
	char *t = mooncake_rows(3000, &len);
	const char *plain = tf_write("jsonl", t);
	const char *gz = gz_write("jsonl", t, len);
	free(t);
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
	         "%s trace stats %s --json | sed 's#%s#X#' > %s/p.json && "
	         "%s trace stats %s --json | sed 's#%s#X#' > %s/g.json && "
	         "cmp -s %s/p.json %s/g.json",
	         k, plain, plain, tf_dir, k, gz, gz, tf_dir, tf_dir, tf_dir);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
	snprintf(cmd, sizeof cmd,
	         "%s trace validate %s | grep -q ': 3000 rows' && "
	         "%s trace convert %s -o %s/c.tsv >/dev/null && "
	         "%s trace validate %s/c.tsv | grep -q ': 3000 rows'",
	         k, gz, k, gz, tf_dir, k, tf_dir);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
	assert_int_equal(truncate(gz, file_size(gz) * 2 / 3), 0);
	snprintf(cmd, sizeof cmd, "%s trace convert %s -o %s/t.tsv 2>%s/err.txt", k, gz, tf_dir,
	         tf_dir);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
	char out[256];
	snprintf(out, sizeof out, "%s/t.tsv", tf_dir);
	assert_int_equal(access(out, F_OK), -1);
	snprintf(cmd, sizeof cmd, "grep -q '%s:[0-9]*: gzip: truncated file' %s/err.txt", gz,
	         tf_dir);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
	snprintf(cmd, sizeof cmd, "%s trace stats %s 2>/dev/null | wc -c | grep -qx 0", k, gz);
	assert_int_equal(WEXITSTATUS(system(cmd)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gz_of_every_format_reads_the_rows_of_the_plain_file),
	    cmocka_unit_test(test_gz_malformed_row_names_its_decompressed_line),
	    cmocka_unit_test(test_gz_truncated_or_corrupt_fails_before_any_row),
	    cmocka_unit_test(test_gz_bytes_after_the_stream_are_refused),
	    cmocka_unit_test(test_gz_line_reader_stops_at_the_truncation),
	    cmocka_unit_test(test_gz_verified_text_is_inflated_once),
	    cmocka_unit_test(test_every_reader_refuses_a_line_past_max_line_bytes),
	    cmocka_unit_test(test_line_past_the_cap_is_not_buffered_whole),
	    cmocka_unit_test(test_plain_files_still_read),
	    cmocka_unit_test(test_cli_reads_gz_and_rejects_a_truncated_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
