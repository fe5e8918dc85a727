/* The parsed-trace cache (traces/tr_cache.c): a trace read to its end is
 * served from its entry the next time, with every request identical; an
 * edited trace, other options, a damaged or foreign entry are misses whose
 * results match a fresh parse (and the entry is rewritten); bad input is
 * never cached and keeps its "file:line: field" error; the off switch
 * neither reads nor writes entries. Whole runs are identical with and
 * without the cache. Each test works in its own temporary directory, with
 * KVSIM_CACHE_DIR pointing into it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "traces/tr.h"
#include "traces/tr_int.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

typedef struct fx {
	char dir[64], trace[128], cache[128];
} fx_t;

#define OLD 1600000000 /* September 2020: far from racy */


/* A Mooncake-shaped trace: rows share prefixes of 512-token ids. */
static void put_trace(const char *path, int rows, int salt, time_t when_s)
{
	char *buf = calloc(1, 1 << 16);
	size_t n = 0;
	for (int i = 0; i < rows; i++) {
		int k = 1 + (i * 7 + salt) % 4;
		n += (size_t)snprintf(buf + n, (1 << 16) - n,
				      "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, "
				      "\"hash_ids\": [",
				      100 * i, 512 * k - 30 * (i % 3), 20 + i % 5);
		for (int j = 0; j < k; j++)
			n += (size_t)snprintf(buf + n, (1 << 16) - n, "%s%d", j ? ", " : "",
					      j < 2 ? j : 10 * i + j);
		n += (size_t)snprintf(buf + n, (1 << 16) - n, "]}\n");
	}
	tmp_write_at(path, buf, when_s);
	free(buf);
}

static int setup(void **st)
{
	fx_t *f = calloc(1, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "%s/kvsim-trc-XXXXXX", P_tmpdir);
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->trace, sizeof f->trace, "%s/trace.jsonl", f->dir);
	snprintf(f->cache, sizeof f->cache, "%s/cache", f->dir);
	setenv("KVSIM_CACHE_DIR", f->cache, 1);
	tr_cache_set_enabled(1);
	*st = f;
	return 0;
}

static int teardown(void **st)
{
	fx_t *f = *st;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	int rc = system(cmd);
	unsetenv("KVSIM_CACHE_DIR");
	tr_cache_set_enabled(1);
	tr_cache_set_dir_max(0);
	free(f);
	return rc;
}

/* What one read of a trace gave. */
typedef struct shot {
	char digest[65]; /* every field of every request, ids included */
	uint64_t rows, bytes;
	int cached, rc;
	char err[1100];
} shot_t;

static shot_t read_trace(const char *path, uint64_t limit)
{
	shot_t s = {0};
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = path;
	o.limit = limit;
	tr_reader_t *r;
	err_t e = {0};
	int rc = tr_open(&o, 16, 7, &r, &e);
	if (rc)
		fail_msg("%s", e.msg);
	s.cached = tr_cached(r);
	struct sha256_ctx h;
	sha256_init(&h);
	tr_request_t q;
	while ((rc = tr_next(r, &q, &e)) > 0) {
		uint64_t f[] = {q.id,         (uint64_t)q.arrival_ns, q.input_len,
				q.output_len, q.n_blocks,             q.n_out_blocks,
				q.block_tokens, (uint64_t)q.status,   q.session_id};
		sha256_update(&h, sizeof f, (const uint8_t *)f);
		sha256_update(&h, (q.n_blocks + q.n_out_blocks) * sizeof *q.blocks,
			      (const uint8_t *)q.blocks);
		s.rows++;
	}
	s.rc = rc;
	snprintf(s.err, sizeof s.err, "%s", rc < 0 ? e.msg : "");
	s.bytes = tr_bytes_read(r);
	err_t w = {0};
	if (!rc)
		assert_int_equal(tr_check_nonempty(r, &w), 0);
	tr_close(r);
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&h, sizeof d, d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(s.digest + 2 * i, 3, "%02x", d[i]);
	return s;
}

/* The entries in the cache directory (the last one's path in out). */
static int entries(const fx_t *f, char *out, size_t n)
{
	return tmp_count(f->cache, "trace-", "trace-sha256", out, n);
}

static void assert_same(const shot_t *a, const shot_t *b)
{
	assert_string_equal(a->digest, b->digest);
	assert_int_equal(a->rows, b->rows);
	assert_int_equal(a->bytes, b->bytes);
	assert_int_equal(a->rc, b->rc);
}

/* The uncached truth: the cache switched off for one read. */
static shot_t parsed(const char *path, uint64_t limit)
{
	tr_cache_set_enabled(0);
	shot_t s = read_trace(path, limit);
	tr_cache_set_enabled(1);
	assert_false(s.cached);
	return s;
}

static void test_second_read_is_a_hit_with_the_same_requests(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 40, 0, OLD);
	shot_t a = read_trace(f->trace, 0), b = read_trace(f->trace, 0);
	assert_false(a.cached);
	assert_true(b.cached);
	assert_int_equal(a.rows, 40);
	assert_int_equal(entries(f, NULL, 0), 1);
	assert_same(&a, &b);
	shot_t p = parsed(f->trace, 0);
	assert_same(&p, &b);
	/* another spelling of the same file shares the entry */
	char other[200];
	snprintf(other, sizeof other, "%s/./trace.jsonl", f->dir);
	shot_t c = read_trace(other, 0);
	assert_true(c.cached);
	assert_same(&p, &c);
	assert_int_equal(entries(f, NULL, 0), 1);
}

static void test_trace_edited_in_place_is_a_miss(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 40, 0, OLD);
	shot_t a = read_trace(f->trace, 0);
	assert_true(read_trace(f->trace, 0).cached);
	/* the same inode, a few ids changed, another mtime */
	put_trace(f->trace, 40, 1, OLD + 10);
	shot_t b = read_trace(f->trace, 0);
	assert_false(b.cached);
	assert_string_not_equal(a.digest, b.digest);
	shot_t p = parsed(f->trace, 0);
	assert_same(&p, &b);
	shot_t c = read_trace(f->trace, 0); /* the entry now holds the new version */
	assert_true(c.cached);
	assert_same(&p, &c);
	assert_int_equal(entries(f, NULL, 0), 1);
}

static void test_options_are_part_of_the_key(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 40, 0, OLD);
	(void)read_trace(f->trace, 0);
	shot_t a = read_trace(f->trace, 5);
	assert_false(a.cached);
	assert_int_equal(a.rows, 5);
	shot_t b = read_trace(f->trace, 5);
	assert_true(b.cached);
	assert_same(&a, &b);
	assert_true(read_trace(f->trace, 0).cached); /* each its own entry */
	assert_int_equal(entries(f, NULL, 0), 2);
}

/* Flips one byte at off (from the end when negative), or truncates. */
static void damage(const char *path, long off, int truncate_it)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	if (truncate_it) {
		assert_int_equal(ftruncate(fd, sb.st_size - 8), 0);
	} else {
		off_t at = off < 0 ? sb.st_size + off : off;
		unsigned char c;
		assert_int_equal(pread(fd, &c, 1, at), 1);
		c ^= 0x5a;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
	}
	close(fd);
}

static void test_damaged_entry_is_ignored_and_rewritten(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 40, 0, OLD);
	shot_t p = parsed(f->trace, 0);
	(void)read_trace(f->trace, 0);
	char ent[512];
	assert_int_equal(entries(f, ent, sizeof ent), 1);
	/* a block id near the end, a record near the start (past the 128-byte
	 * header), the format version, a truncated file */
	const long at[] = {-3, 150, 8, 0};
	for (int i = 0; i < 4; i++) {
		damage(ent, at[i], i == 3);
		shot_t b = read_trace(f->trace, 0);
		assert_false(b.cached);
		assert_same(&p, &b);
		shot_t c = read_trace(f->trace, 0);
		assert_true(c.cached);
		assert_same(&p, &c);
	}
}

static void test_off_switch_neither_reads_nor_writes(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 40, 0, OLD);
	tr_cache_set_enabled(0);
	shot_t a = read_trace(f->trace, 0);
	assert_false(a.cached);
	assert_int_equal(entries(f, NULL, 0), 0);
	tr_cache_set_enabled(1);
	(void)read_trace(f->trace, 0);
	assert_int_equal(entries(f, NULL, 0), 1);
	tr_cache_set_enabled(0);
	assert_false(read_trace(f->trace, 0).cached);
}

static void test_fresh_file_is_not_cached(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 40, 0, time(NULL)); /* its mtime cannot yet tell edits apart */
	assert_false(read_trace(f->trace, 0).cached);
	assert_false(read_trace(f->trace, 0).cached);
	assert_int_equal(entries(f, NULL, 0), 0);
}

static void test_bad_row_keeps_its_error_and_is_not_cached(void **st)
{
	fx_t *f = *st;
	tmp_write_at(f->trace,
	    "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"
	    "{\"timestamp\": 10, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"
	    "{\"timestamp\": 20, \"input_length\": -4, \"output_length\": 5, \"hash_ids\": [1, 2]}\n",
	    OLD);
	shot_t a = read_trace(f->trace, 0), b = read_trace(f->trace, 0);
	assert_true(a.rc < 0);
	assert_false(b.cached);
	assert_string_equal(a.err, b.err);
	char want[256];
	snprintf(want, sizeof want, "%s:3: input_length", f->trace);
	assert_non_null(strstr(a.err, want));
	assert_int_equal(entries(f, NULL, 0), 0);
}

static off_t size_of(const char *path)
{
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	return sb.st_size;
}

static void test_oldest_entries_go_past_the_size_bound(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 40, 0, OLD);
	(void)read_trace(f->trace, 0);
	char first[512];
	assert_int_equal(entries(f, first, sizeof first), 1);
	/* room for the first entry and a 5-row one, not for a third */
	tr_cache_set_dir_max((uint64_t)size_of(first) + (uint64_t)size_of(first) / 5);
	struct timespec t[2] = {{OLD, 0}, {OLD, 0}};
	assert_int_equal(utimensat(AT_FDCWD, first, t, 0), 0); /* written long ago */
	(void)read_trace(f->trace, 5);
	assert_int_equal(entries(f, NULL, 0), 2);
	(void)read_trace(f->trace, 6);
	assert_int_equal(entries(f, NULL, 0), 2);
	assert_int_equal(access(first, F_OK), -1); /* the oldest went */
	assert_false(read_trace(f->trace, 0).cached);
	assert_true(read_trace(f->trace, 6).cached);
}

/* A whole run: every request and metric the same with and without. */
static void test_runs_are_identical_with_and_without_the_cache(void **st)
{
	fx_t *f = *st;
	put_trace(f->trace, 200, 0, OLD);
	char set[200];
	snprintf(set, sizeof set, "trace.path=%s", f->trace);
	const char *sets[] = {set, "cluster.nodes=2"};
	tr_cache_set_enabled(0);
	sim_results_t a = sf_run(NULL, sets, 2);
	tr_cache_set_enabled(1);
	sim_results_t b = sf_run(NULL, sets, 2); /* writes the entry */
	sim_results_t c = sf_run(NULL, sets, 2); /* served from it */
	assert_int_equal(entries(f, NULL, 0), 1);
	const sim_results_t *x[] = {&b, &c};
	for (int k = 0; k < 2; k++) {
		assert_int_equal(a.n_req, x[k]->n_req);
		assert_int_equal(a.n_metric, x[k]->n_metric);
		for (size_t i = 0; i < a.n_req; i++) {
			const res_request_t *p = &a.req[i], *q = &x[k]->req[i];
			assert_int_equal(p->id, q->id);
			assert_int_equal(p->instance, q->instance);
			assert_int_equal(p->status, q->status);
			assert_int_equal(p->ttft_ns, q->ttft_ns);
			assert_int_equal(p->e2e_ns, q->e2e_ns);
			assert_int_equal(p->tok_local, q->tok_local);
		}
		for (size_t i = 0; i < a.n_metric; i++) {
			assert_string_equal(a.metric[i].name, x[k]->metric[i].name);
			if (strcmp(a.metric[i].name, "sim_events"))
				assert_memory_equal(&a.metric[i].value, &x[k]->metric[i].value,
						    sizeof(double));
		}
		assert_string_equal(a.trace_sha256, x[k]->trace_sha256);
	}
	sim_results_free(&a);
	sim_results_free(&b);
	sim_results_free(&c);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
TEST_MAIN(T(test_second_read_is_a_hit_with_the_same_requests),
	  T(test_trace_edited_in_place_is_a_miss), T(test_options_are_part_of_the_key),
	  T(test_damaged_entry_is_ignored_and_rewritten),
	  T(test_off_switch_neither_reads_nor_writes), T(test_fresh_file_is_not_cached),
	  T(test_bad_row_keeps_its_error_and_is_not_cached),
	  T(test_oldest_entries_go_past_the_size_bound),
	  T(test_runs_are_identical_with_and_without_the_cache))
