/* Tests for sim/base/size.c: the byte counts `kvsim calibrate` and kvreplay
 * take on their command lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/base/size.h"
#include "tests/fixtures/test_main.h"

/* text's value under max, or -1 with the status when it is refused */
static int64_t parsed(const char *text, uint64_t max, int *status)
{
	uint64_t v = 12345;
	*status = size_parse(text, max, &v);
	return *status ? -1 : (int64_t)v;
}

static void test_numbers_with_and_without_binary_suffixes(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int64_t want;
	} ok[] = {
	    {"0", 0},
	    {"4096", 4096},
	    {"1e6", 1000000},
	    {"4K", 4096},
	    {"4k", 4096},
	    {"1.5K", 1536},
	    {"0.5K", 512},
	    {"2M", 2097152},
	    {"1G", 1073741824},
	    {"1.5", 2}, /* rounded to the nearest whole number */
	    {"2.4", 2},
	    {"1e18", 1000000000000000000},
	    {"-0", 0}, /* not negative */
	};
	int st;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		assert_int_equal(parsed(ok[i].text, UINT64_MAX, &st), ok[i].want);
		assert_int_equal(st, 0);
	}
	uint64_t v = 0; /* the top of the range: the largest double below 2^64 */
	assert_int_equal(size_parse("18446744073709549568", UINT64_MAX, &v), 0);
	assert_true(v == 18446744073709549568u);
	assert_int_equal(size_parse("16G", UINT64_MAX, &v), 0);
	assert_true(v == 16ull << 30);
}

static void test_junk_and_empty_are_no_size(void **state)
{
	(void)state;
	static const char *const bad[] = {"",   "K",   "x",  "4KB", "4T",   "4 K", "4K ",
	                                   "4m", "4g",  "1e", "nan", "12x",  "1,5", "--1"};
	int st;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(parsed(bad[i], UINT64_MAX, &st), -1);
		assert_int_equal(st, SIZE_NOT_SIZE);
	}
	uint64_t v = 7; /* a refused text leaves *out alone */
	assert_int_equal(size_parse("4KB", UINT64_MAX, &v), SIZE_NOT_SIZE);
	assert_true(v == 7);
}

static void test_negative_and_overflow_are_out_of_range(void **state)
{
	(void)state;
	static const char *const far[] = {"-1",   "-1K",   "-0.6", "2e19", "18446744073709551616",
	                                  "17179869184G", "1e400", "inf", "-inf"};
	int st;
	for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
		assert_int_equal(parsed(far[i], UINT64_MAX, &st), -1);
		assert_int_equal(st, SIZE_OUT_OF_RANGE);
	}
	/* max is inclusive, and counts after rounding */
	assert_int_equal(parsed("1000", 1000, &st), 1000);
	assert_int_equal(parsed("1000.4", 1000, &st), 1000);
	assert_int_equal(parsed("1000.5", 1000, &st), -1);
	assert_int_equal(st, SIZE_OUT_OF_RANGE);
	assert_int_equal(parsed("1K", 1000, &st), -1);
	assert_int_equal(st, SIZE_OUT_OF_RANGE);
}

TEST_MAIN(cmocka_unit_test(test_numbers_with_and_without_binary_suffixes),
          cmocka_unit_test(test_junk_and_empty_are_no_size),
          cmocka_unit_test(test_negative_and_overflow_are_out_of_range))
