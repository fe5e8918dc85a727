/* Tests for analysis/answer_text.py, which writes the README's answer from a
 * study's answer.csv (tests/system/check_answer_text.py; no kvsim run), and
 * that README.md and analysis/README.md quote the committed quick answer
 * (analysis/figures/answer.csv) word for word. Skipped when /usr/bin/python3
 * lacks pandas. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

static void check(const char *what)
{
	if (!tmp_kvsim_with_python("pandas"))
		skip();
	assert_int_equal(tmp_sh("/usr/bin/python3 tests/system/check_answer_text.py %s", what), 0);
}

/* Each sentence on hand-made rows: verdict counts over the answer's
 * experiments and the headline metric only, the largest gain and loss with
 * their CIs, capacity per workload, the lifted claim; "no condition" said
 * when it wins none. */
static void test_sentences_follow_the_rows(void **st)
{
	(void)st;
	check("sentences");
}

/* The findings block: a row per condition and family of A0-A2 in order,
 * its cells in the header's order; the map's Holm counts; the measured
 * predictor; E3's verdict counts with the range of the losses. */
static void test_findings_follow_the_rows(void **st)
{
	(void)st;
	check("findings");
}

/* --write replaces only the blocks between the markers; --check exits 1 on
 * a stale block; a file without markers or a csv without the columns is an
 * error naming it, and nothing is written. */
static void test_block_is_spliced_between_the_markers(void **st)
{
	(void)st;
	check("splice");
}

/* The READMEs' answer blocks are what the committed quick answer gives. */
static void test_readmes_quote_the_committed_answer(void **st)
{
	(void)st;
	check("readme");
}

TEST_MAIN(cmocka_unit_test(test_sentences_follow_the_rows),
          cmocka_unit_test(test_findings_follow_the_rows),
          cmocka_unit_test(test_block_is_spliced_between_the_markers),
          cmocka_unit_test(test_readmes_quote_the_committed_answer))
