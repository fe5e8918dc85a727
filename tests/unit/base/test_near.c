/* Tests for sim/base/near.c: the distance behind every "did you mean". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/base/near.h"
#include "tests/fixtures/test_main.h"

static void test_distance_counts_edits_case_blind_and_a_swap_as_one(void **state)
{
	(void)state;
	assert_int_equal(near_distance("sweep", "sweep"), 0);
	assert_int_equal(near_distance("swep", "sweep"), 1);    /* one letter left out */
	assert_int_equal(near_distance("--sett", "--set"), 1);  /* one too many */
	assert_int_equal(near_distance("LRU", "lru"), 0);       /* case does not count */
	assert_int_equal(near_distance("shwo", "show"), 1);     /* neighbours swapped */
	assert_int_equal(near_distance("gird", "grid"), 1);
	assert_int_equal(near_distance("abc", "cba"), 2);
	assert_int_equal(near_distance("", "run"), 3);
}

static void test_pick_offers_only_what_is_close(void **state)
{
	(void)state;
	static const char *const cmds[] = {"run", "runs", "sweep", "config", "trace"};
	near_t n = NEAR_INIT;
	for (size_t i = 0; i < 5; i++)
		near_offer(&n, "swepe", cmds[i]);
	assert_string_equal(near_pick(&n, "swepe"), "sweep");
	near_t m = NEAR_INIT;
	for (size_t i = 0; i < 5; i++)
		near_offer(&m, "arc", cmds[i]);
	assert_null(near_pick(&m, "arc")); /* 'arc' is no typo of 'run' */
	near_t t = NEAR_INIT; /* ties keep the first offered */
	near_offer(&t, "rum", "run");
	near_offer(&t, "rum", "rus");
	assert_string_equal(near_pick(&t, "rum"), "run");
}

TEST_MAIN(cmocka_unit_test(test_distance_counts_edits_case_blind_and_a_swap_as_one),
          cmocka_unit_test(test_pick_offers_only_what_is_close))
