/* test_main — the main of a test program that runs its cmocka tests as one
 * group with no group setup or teardown:
 *
 *     TEST_MAIN(cmocka_unit_test(test_a), cmocka_unit_test(test_b))
 *
 * Programs with a group fixture write their own main. Header-only; include
 * it after cmocka.h. */
#ifndef KVSIM_TESTS_TEST_MAIN_H
#define KVSIM_TESTS_TEST_MAIN_H

#define TEST_MAIN(...)                                                                             \
	int main(void)                                                                             \
	{                                                                                          \
		const struct CMUnitTest tests[] = {__VA_ARGS__};                                   \
		return cmocka_run_group_tests(tests, NULL, NULL);                                  \
	}

#endif
