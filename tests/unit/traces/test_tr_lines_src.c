/* Tests of traces/tr_csv.c: tr_lines_src_new, the shared first step of the
 * file sources (allocate the source, open its line reader). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/fixtures/tmp_fixture.h"
#include "traces/tr_int.h"

typedef struct toy_src {
	tr_src_t base;
	int tag;
	tr_lines_t l; /* not first: the offset is what places it */
} toy_src_t;

static void test_source_is_zeroed_and_its_reader_reads_the_file(void **st)
{
	(void)st;
	char path[128];
	snprintf(path, sizeof path, "%s/a.txt", tmp_dir);
	tmp_write(path, "first\nsecond\n");
	int rc = 1;
	err_t e = {0};
	toy_src_t *s = tr_lines_src_new(sizeof *s, offsetof(toy_src_t, l), path, &rc, &e);
	assert_non_null(s);
	assert_int_equal(rc, 0);
	assert_null(s->base.next);
	assert_int_equal(s->tag, 0);
	assert_int_equal(tr_lines_next(&s->l, &e), 1);
	assert_string_equal(s->l.buf, "first");
	assert_int_equal(tr_lines_next(&s->l, &e), 1);
	assert_string_equal(s->l.buf, "second");
	assert_int_equal(tr_lines_next(&s->l, &e), 0);
	tr_lines_close(&s->l);
	free(s);
}

static void test_missing_file_gives_no_source_and_the_open_error(void **st)
{
	(void)st;
	char path[128];
	snprintf(path, sizeof path, "%s/none.txt", tmp_dir);
	int rc = 0;
	err_t e = {0};
	assert_null(tr_lines_src_new(sizeof(toy_src_t), offsetof(toy_src_t, l), path, &rc, &e));
	assert_true(rc < 0);
	assert_int_equal(rc, e.code);
	assert_non_null(strstr(e.msg, "none.txt"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_source_is_zeroed_and_its_reader_reads_the_file),
		cmocka_unit_test(test_missing_file_gives_no_source_and_the_open_error),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}
