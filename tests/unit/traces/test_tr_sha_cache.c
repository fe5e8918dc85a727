/* Trace digests once per file (traces/tr_read.c tr_file_sha256_cached): the
 * digest is reused while path, size, mtime and inode stay, from this
 * process and then from the per-user cache file; a changed size or mtime is
 * hashed again; a file written in the last seconds is hashed but not
 * cached; without XDG_CACHE_HOME the file lives under ~/.cache/kvsim. Each
 * test works in its own temporary directory (no real home is touched). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "traces/tr.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

typedef struct fx {
	char dir[64], trace[128], cache[160];
} fx_t;

static int setup(void **st)
{
	fx_t *f = calloc(1, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "%s/kvsim-sha-XXXXXX", P_tmpdir);
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->trace, sizeof f->trace, "%s/trace.jsonl", f->dir);
	snprintf(f->cache, sizeof f->cache, "%s/kvsim/trace-sha256", f->dir);
	setenv("XDG_CACHE_HOME", f->dir, 1);
	unsetenv("KVSIM_CACHE_DIR"); /* it would take precedence */
	tr_sha256_cache_reset();
	*st = f;
	return 0;
}

static int teardown(void **st)
{
	fx_t *f = *st;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	int rc = system(cmd);
	free(f);
	return rc;
}

#define OLD 1600000000 /* September 2020 */

static void digest(const char *path, char hex[65], int cached)
{
	err_t e = {0};
	int rc = cached ? tr_file_sha256_cached(path, hex, &e) : tr_file_sha256(path, hex, &e);
	if (rc)
		fail_msg("%s", e.msg);
}

static int cache_lines(const char *path)
{
	FILE *fp = fopen(path, "r");
	int n = 0, c;
	while (fp && (c = fgetc(fp)) != EOF)
		n += c == '\n';
	if (fp)
		fclose(fp);
	return n;
}

static void test_digest_reused_until_size_or_mtime_changes(void **st)
{
	fx_t *f = *st;
	char h0[65], h[65], want[65];
	tmp_write_at(f->trace, "abc\n", OLD);
	digest(f->trace, want, 0);
	digest(f->trace, h0, 1);
	assert_string_equal(h0, want);
	assert_int_equal(cache_lines(f->cache), 1);
	/* new bytes, same size and mtime: the cached digest (which proves no
	 * second hash ran), from memory and then from the file */
	tmp_write_at(f->trace, "abd\n", OLD);
	digest(f->trace, h, 1);
	assert_string_equal(h, h0);
	tr_sha256_cache_reset();
	digest(f->trace, h, 1);
	assert_string_equal(h, h0);
	/* a new mtime is hashed again */
	tmp_write_at(f->trace, "abd\n", OLD + 60);
	digest(f->trace, want, 0);
	assert_string_not_equal(want, h0);
	digest(f->trace, h, 1);
	assert_string_equal(h, want);
	/* so is a new size under the first mtime */
	tmp_write_at(f->trace, "abcd\n", OLD);
	digest(f->trace, want, 0);
	digest(f->trace, h, 1);
	assert_string_equal(h, want);
	assert_int_equal(cache_lines(f->cache), 3);
}

static void test_fresh_file_hashed_but_not_cached(void **st)
{
	fx_t *f = *st;
	char h[65], want[65];
	tmp_write_at(f->trace, "abc\n", 0); /* mtime now */
	digest(f->trace, want, 0);
	digest(f->trace, h, 1);
	assert_string_equal(h, want);
	assert_int_equal(cache_lines(f->cache), 0);
	/* rewritten in the same instant: still the file's own digest */
	FILE *fp = fopen(f->trace, "w");
	fputs("abd\n", fp);
	fclose(fp);
	digest(f->trace, want, 0);
	digest(f->trace, h, 1);
	assert_string_equal(h, want);
}

static void test_cache_under_home_without_xdg(void **st)
{
	fx_t *f = *st;
	char h[65], path[192];
	const char *old = getenv("HOME");
	char *home = old ? strdup(old) : NULL;
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", f->dir, 1);
	tmp_write_at(f->trace, "abc\n", OLD);
	digest(f->trace, h, 1);
	snprintf(path, sizeof path, "%s/.cache/kvsim/trace-sha256", f->dir);
	assert_int_equal(cache_lines(path), 1);
	if (home)
		setenv("HOME", home, 1);
	free(home);
}

static void test_missing_file_is_an_input_error(void **st)
{
	fx_t *f = *st;
	char h[65], path[160];
	err_t e = {0};
	snprintf(path, sizeof path, "%s/none.jsonl", f->dir);
	assert_int_equal(tr_file_sha256_cached(path, h, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "none.jsonl"));
}

TEST_MAIN(cmocka_unit_test_setup_teardown(test_digest_reused_until_size_or_mtime_changes, setup,
                                          teardown),
          cmocka_unit_test_setup_teardown(test_fresh_file_hashed_but_not_cached, setup, teardown),
          cmocka_unit_test_setup_teardown(test_cache_under_home_without_xdg, setup, teardown),
          cmocka_unit_test_setup_teardown(test_missing_file_is_an_input_error, setup, teardown))
