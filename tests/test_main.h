/* test_main — the main of a test program that runs its cmocka tests as one
 * group, with no group fixture or with one:
 *
 *     TEST_MAIN(cmocka_unit_test(test_a), cmocka_unit_test(test_b))
 *     TEST_MAIN_FIXTURE(group_setup, group_teardown, cmocka_unit_test(test_a))
 *
 * Programs that decide first whether to run at all write their own main.
 * Header-only; include it after cmocka.h. */
#ifndef KVSIM_TESTS_TEST_MAIN_H
#define KVSIM_TESTS_TEST_MAIN_H

#define TEST_MAIN_FIXTURE(setup, teardown, ...)                                                    \
	int main(void)                                                                             \
	{                                                                                          \
		const struct CMUnitTest tests[] = {__VA_ARGS__};                                   \
		return cmocka_run_group_tests(tests, setup, teardown);                             \
	}

#define TEST_MAIN(...) TEST_MAIN_FIXTURE(NULL, NULL, __VA_ARGS__)

#endif
