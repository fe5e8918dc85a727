/* Tests for the study's experiment matrix (analysis/study/): every
 * experiment has a config that loads and a .sweep with tiny, quick and full
 * lines that parse; each tiny line's dry run lists the points its grid
 * implies, every one naming policy.replication.name; the generated E5 sweep
 * is what e5_sweep.py makes of analysis/btb_table.py today; run_study.sh
 * skips an experiment whose trace is absent and records what it ran. Lines
 * whose trace is absent (KVSIM_TRACES, default ../shared/traces from the
 * repository root) are skipped; tests needing kvsim skip without it. E7
 * (e7_staleness) sets the event-built routing index's keys: the checks that
 * run kvsim on it run only where `kvsim config doc` lists
 * policy.routing.event_delay_ms, and elsewhere say so and skip E7 alone. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

#define STUDY_DIR "analysis/study"
#define LINE_MAX_CHARS 8192
#define LINES_MAX 64

static const char *const exps[] = {"a0_load",      "a1_regimes",   "a2_traces",    "a3_capacity",
                                   "e1_breakeven", "e2_traces",    "e3_interference",
                                   "e4_vram",      "e5_lift",      "e6_disagg",
                                   "e7_staleness", "e8_oracle_gap"};
/* The experiment that needs the key below in kvsim's config (E7). */
#define EVENTS_EXP "e7_staleness"
#define EVENTS_KEY "event_delay_ms"
static const char *const sizes[] = {"tiny", "quick", "full"};
#define N_EXPS (sizeof exps / sizeof exps[0])
#define N_SIZES (sizeof sizes / sizeof sizes[0])

typedef struct study_line {
	char size[8];
	char args[LINE_MAX_CHARS]; /* ${KVSIM_TRACES} filled in */
	int lineno;
} study_line_t;

static char tmpdir[256];
static study_line_t lines[LINES_MAX];

static int setup(void **st)
{
	(void)st;
	return tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_study_XXXXXX");
}

static int teardown(void **st)
{
	(void)st;
	return *tmpdir ? tmp_dir_remove(tmpdir) : 0;
}

static const char *traces_dir(void)
{
	const char *t = getenv("KVSIM_TRACES");
	return t && *t ? t : "../shared/traces";
}

/* kvsim to run: $KVSIM (the test runner sets it), else build/kvsim; NULL
 * when neither runs. */
static const char *kvsim(void)
{
	const char *k = getenv("KVSIM");
	if (k && *k)
		return k;
	return access("build/kvsim", X_OK) == 0 ? "build/kvsim" : NULL;
}

/* 1 when kvsim k knows the event-built index's keys (E7 can run). */
static int kvsim_has_events(const char *k)
{
	static int known = -1;
	if (known < 0) {
		char cmd[512];
		snprintf(cmd, sizeof cmd,
		         "%s config doc 2>/dev/null | grep -q " EVENTS_KEY, k);
		known = system(cmd) == 0;
	}
	return known;
}

/* 1 (and a message) when exp is E7 and kvsim k cannot run it yet. */
static int skip_events_exp(const char *k, const char *exp)
{
	if (strcmp(exp, EVENTS_EXP) || kvsim_has_events(k))
		return 0;
	print_message("%s: not run, kvsim lacks policy.routing." EVENTS_KEY "\n", exp);
	return 1;
}

/* s with every ${KVSIM_TRACES} replaced by the trace folder, into out. */
static void fill_traces(const char *s, char *out, size_t cap)
{
	static const char var[] = "${KVSIM_TRACES}";
	const char *dir = traces_dir();
	size_t o = 0;
	while (*s && o + 1 < cap) {
		if (!strncmp(s, var, sizeof var - 1)) {
			o += (size_t)snprintf(out + o, cap - o, "%s", dir);
			s += sizeof var - 1;
		} else {
			out[o++] = *s++;
		}
	}
	assert_true(o + 1 < cap);
	out[o] = '\0';
}

/* Reads STUDY_DIR/exp.sweep into lines; every line that is not blank or a
 * # comment must be "SIZE: ARGS" with a known size and non-empty ARGS.
 * Returns the number of sweep lines. */
static int read_sweep(const char *exp)
{
	char path[256], buf[LINE_MAX_CHARS];
	snprintf(path, sizeof path, STUDY_DIR "/%s.sweep", exp);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("%s: cannot open", path);
	int n = 0, no = 0;
	while (fgets(buf, sizeof buf, f)) {
		no++;
		size_t len = strlen(buf);
		if (len == sizeof buf - 1 && buf[len - 1] != '\n')
			fail_msg("%s:%d: line longer than %d characters", path, no, LINE_MAX_CHARS);
		buf[strcspn(buf, "\n")] = '\0';
		if (!buf[strspn(buf, " \t")] || buf[0] == '#')
			continue;
		char *colon = strchr(buf, ':');
		size_t k = 0;
		while (colon && k < N_SIZES &&
		       (strlen(sizes[k]) != (size_t)(colon - buf) ||
		        strncmp(buf, sizes[k], (size_t)(colon - buf))))
			k++;
		if (!colon || k == N_SIZES)
			fail_msg("%s:%d: expected 'tiny:', 'quick:' or 'full:' first", path, no);
		const char *args = colon + 1 + strspn(colon + 1, " \t");
		if (!*args)
			fail_msg("%s:%d: no sweep arguments", path, no);
		if (n == LINES_MAX)
			fail_msg("%s: more than %d sweep lines", path, LINES_MAX);
		snprintf(lines[n].size, sizeof lines[n].size, "%s", sizes[k]);
		fill_traces(args, lines[n].args, sizeof lines[n].args);
		lines[n].lineno = no;
		n++;
	}
	fclose(f);
	return n;
}

/* Points the arguments imply: the product of the --grid value counts, times
 * the common --zip length, times --seeds (default 1). Every --zip must have
 * the same length. */
static size_t expected_points(const char *args, const char *where)
{
	char buf[LINE_MAX_CHARS];
	snprintf(buf, sizeof buf, "%s", args);
	size_t grid = 1, zip = 0, seeds = 1;
	char *save = NULL;
	for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		int is_grid = !strcmp(t, "--grid"), is_zip = !strcmp(t, "--zip");
		if (!is_grid && !is_zip && strcmp(t, "--seeds"))
			continue;
		char *v = strtok_r(NULL, " \t", &save);
		if (!v)
			fail_msg("%s: '%s' without a value", where, t);
		if (!is_grid && !is_zip) {
			seeds = strtoul(v, NULL, 10);
			continue;
		}
		const char *vals = strchr(v, '=');
		if (!vals)
			fail_msg("%s: '%s %s' lacks '='", where, t, v);
		double a, b, step;
		size_t count = 1;
		if (sscanf(vals + 1, "%lf:%lf:%lf", &a, &b, &step) == 3 && step > 0)
			count = (size_t)floor((b - a) / step + 1e-9) + 1; /* START:STOP:STEP */
		else
			for (const char *p = vals + 1; *p; p++)
				count += *p == ',';
		if (is_grid)
			grid *= count;
		else if (zip && zip != count)
			fail_msg("%s: --zip %s has %zu values, an earlier --zip %zu", where, v,
			         count, zip);
		else
			zip = count;
	}
	return grid * (zip ? zip : 1) * seeds;
}

/* The first trace file named in args (a word under the trace folder after
 * '=' or ',') that is absent, into out; 0 when every one is there. */
static int absent_trace(const char *args, char *out, size_t cap)
{
	char buf[LINE_MAX_CHARS];
	const char *dir = traces_dir();
	snprintf(buf, sizeof buf, "%s", args);
	char *save = NULL;
	for (char *t = strtok_r(buf, " \t,=", &save); t; t = strtok_r(NULL, " \t,=", &save))
		if (!strncmp(t, dir, strlen(dir)) && access(t, F_OK) != 0) {
			snprintf(out, cap, "%s", t);
			return 1;
		}
	return 0;
}

static int has_line_of_size(int n, const char *size)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(lines[i].size, size))
			return 1;
	return 0;
}

static void test_every_experiment_has_a_config_and_tiny_quick_full_sweeps(void **st)
{
	(void)st;
	char path[256];
	for (size_t x = 0; x < N_EXPS; x++) {
		snprintf(path, sizeof path, STUDY_DIR "/%s.ini", exps[x]);
		if (access(path, R_OK) != 0)
			fail_msg("%s: missing", path);
		int n = read_sweep(exps[x]);
		for (size_t s = 0; s < N_SIZES; s++)
			if (!has_line_of_size(n, sizes[s]))
				fail_msg("%s.sweep: no '%s:' line", exps[x], sizes[s]);
	}
	/* no .sweep without its config, none outside the list */
	FILE *p = popen("ls " STUDY_DIR "/*.sweep " STUDY_DIR "/*.ini", "r");
	assert_non_null(p);
	char name[512];
	while (fgets(name, sizeof name, p)) {
		name[strcspn(name, "\n")] = '\0';
		char *base = strrchr(name, '/') + 1, *dot = strrchr(base, '.');
		*dot = '\0';
		size_t x = 0;
		while (x < N_EXPS && strcmp(exps[x], base))
			x++;
		if (x == N_EXPS)
			fail_msg("%s/%s.%s is no experiment of the study", STUDY_DIR, base,
			         dot + 1);
	}
	assert_int_equal(pclose(p), 0);
}

/* The pairing contract: each line of every size sweeps
 * policy.replication.name, and each experiment has a 'none' baseline. */
static void test_every_sweep_line_varies_replication_with_a_none_baseline(void **st)
{
	(void)st;
	for (size_t x = 0; x < N_EXPS; x++) {
		int n = read_sweep(exps[x]), none = 0;
		for (int i = 0; i < n; i++) {
			const char *a = lines[i].args, *r = strstr(a, " policy.replication.name=");
			size_t at = r ? (size_t)(r - a) : 0;
			if (!r || ((at < 6 || strncmp(r - 6, "--grid", 6)) &&
			           (at < 5 || strncmp(r - 5, "--zip", 5))))
				fail_msg("%s.sweep:%d: policy.replication.name is not swept",
				         exps[x], lines[i].lineno);
			char vals[1024];
			snprintf(vals, sizeof vals, ",%s", r + strlen(" policy.replication.name="));
			vals[strcspn(vals, " ")] = '\0';
			strcat(vals, ",");
			none |= strstr(vals, ",none,") != NULL;
		}
		if (!none)
			fail_msg("%s.sweep: no line runs policy.replication.name=none", exps[x]);
	}
}

static void test_every_config_loads(void **st)
{
	(void)st;
	const char *k = kvsim();
	if (!k)
		skip();
	char cmd[1024];
	for (size_t x = 0; x < N_EXPS; x++) {
		if (skip_events_exp(k, exps[x]))
			continue;
		snprintf(cmd, sizeof cmd, "%s config show " STUDY_DIR "/%s.ini >/dev/null", k,
		         exps[x]);
		if (system(cmd) != 0)
			fail_msg("'%s' failed", cmd);
	}
}

/* `kvsim sweep --dry-run` of each tiny line lists as many points as its
 * grid implies, each naming policy.replication.name. */
static void test_tiny_dry_runs_list_their_points(void **st)
{
	(void)st;
	const char *k = kvsim();
	if (!k)
		skip();
	int ran = 0;
	for (size_t x = 0; x < N_EXPS; x++) {
		if (skip_events_exp(k, exps[x]))
			continue;
		int n = read_sweep(exps[x]);
		for (int i = 0; i < n; i++) {
			char where[128], missing[1024], cmd[LINE_MAX_CHARS + 1024],
			    out[LINE_MAX_CHARS];
			if (strcmp(lines[i].size, "tiny"))
				continue;
			snprintf(where, sizeof where, "%s.sweep:%d", exps[x], lines[i].lineno);
			if (absent_trace(lines[i].args, missing, sizeof missing)) {
				print_message("%s: skipped, %s absent\n", where, missing);
				continue;
			}
			if (strstr(lines[i].args, "--capacity")) {
				/* a capacity search has no dry run (each probe follows
				 * the last): run it, and every search must end */
				snprintf(cmd, sizeof cmd,
				         "%s sweep " STUDY_DIR "/%s.ini %s -j 2 --no-progress -o %s/%s "
				         "2>/dev/null",
				         k, exps[x], lines[i].args, tmpdir, exps[x]);
				FILE *p = popen(cmd, "r");
				assert_non_null(p);
				size_t found = 0; /* the printed table's rows of ended searches */
				while (fgets(out, sizeof out, p))
					found += strstr(out, " bracketed ") || strstr(out, " lo_fails ") ||
					         strstr(out, " hi_passes ");
				if (pclose(p) != 0 || found != expected_points(lines[i].args, where))
					fail_msg("%s: %zu capacity searches ended, the grid makes %zu", where,
					         found, expected_points(lines[i].args, where));
				ran++;
				continue;
			}
			size_t want = expected_points(lines[i].args, where), got = 0;
			snprintf(cmd, sizeof cmd,
			         "%s sweep " STUDY_DIR "/%s.ini %s --dry-run -o %s/%s", k, exps[x],
			         lines[i].args, tmpdir, exps[x]);
			FILE *p = popen(cmd, "r");
			assert_non_null(p);
			while (fgets(out, sizeof out, p)) {
				if (!strstr(out, " policy.replication.name="))
					fail_msg("%s: point without policy.replication.name: %s",
					         where, out);
				got++;
			}
			if (pclose(p) != 0)
				fail_msg("%s: '%s' failed", where, cmd);
			if (got != want)
				fail_msg("%s: dry run listed %zu points, the grid makes %zu", where,
				         got, want);
			ran++;
		}
	}
	assert_true(ran >= 4); /* E1, E3 and E4 need no trace */
}

/* No two lines of one experiment and size make the same point (a sweep
 * would skip the second as done, and its row would keep the first line's
 * columns, so the report would miss it where it looks). */
static void test_no_two_sweep_lines_share_a_point(void **st)
{
	(void)st;
	const char *k = kvsim();
	if (!k)
		skip();
	enum { IDS_MAX = 65536 };
	static char ids[IDS_MAX][17];
	static int from[IDS_MAX];
	for (size_t x = 0; x < N_EXPS; x++) {
		if (skip_events_exp(k, exps[x]))
			continue;
		int n = read_sweep(exps[x]);
		for (size_t s = 0; s < N_SIZES; s++) {
			size_t n_ids = 0;
			for (int i = 0; i < n; i++) {
				char missing[1024], cmd[LINE_MAX_CHARS + 1024], out[LINE_MAX_CHARS];
				/* a capacity line's probes follow its searches (no dry
				 * run); its experiment.name keeps them apart */
				if (strcmp(lines[i].size, sizes[s]) ||
				    absent_trace(lines[i].args, missing, sizeof missing) ||
				    strstr(lines[i].args, "--capacity"))
					continue;
				snprintf(cmd, sizeof cmd,
				         "%s sweep " STUDY_DIR
				         "/%s.ini %s --dry-run -o %s/%s 2>/dev/null",
				         k, exps[x], lines[i].args, tmpdir, exps[x]);
				FILE *p = popen(cmd, "r");
				assert_non_null(p);
				while (fgets(out, sizeof out, p)) {
					char id[17];
					if (sscanf(out, "%*u %16s", id) != 1)
						fail_msg("%s.sweep:%d: dry run line '%s'", exps[x],
						         lines[i].lineno, out);
					for (size_t j = 0; j < n_ids; j++)
						if (!strcmp(ids[j], id) &&
						    from[j] != lines[i].lineno)
							fail_msg("%s.sweep: lines %d and %d both "
							         "make point %s",
							         exps[x], from[j], lines[i].lineno,
							         id);
					assert_true(n_ids < IDS_MAX);
					memcpy(ids[n_ids], id, sizeof id);
					from[n_ids++] = lines[i].lineno;
				}
				if (pclose(p) != 0)
					fail_msg("%s.sweep:%d: dry run failed", exps[x],
					         lines[i].lineno);
			}
		}
	}
}

/* e5_lift.sweep is what e5_sweep.py writes from analysis/btb_table.py now
 * (skipped when python3 lacks h5py and numpy, which btb_table.py imports). */
static void test_e5_sweep_is_generated_from_btb_table(void **st)
{
	(void)st;
	const char *k = kvsim();
	if (!k || system("/usr/bin/python3 -c 'import h5py, numpy' >/dev/null 2>&1") != 0)
		skip();
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
	         "/usr/bin/python3 " STUDY_DIR "/e5_sweep.py --kvsim %s > %s/e5.sweep && "
	         "cmp -s %s/e5.sweep " STUDY_DIR "/e5_lift.sweep",
	         k, tmpdir, tmpdir);
	if (system(cmd) != 0)
		fail_msg("analysis/study/e5_lift.sweep is stale: rerun analysis/study/e5_sweep.py");
	/* one variant per switch plus the study's and all-off, per size but tiny */
	FILE *p = popen("/usr/bin/python3 -c 'import sys; sys.path.insert(0, \"analysis\"); "
	                "import btb_table; print(len(btb_table.SWITCHES))'",
	                "r");
	assert_non_null(p);
	int switches = 0;
	assert_int_equal(fscanf(p, "%d", &switches), 1);
	pclose(p);
	int n = read_sweep("e5_lift"), quick = 0;
	for (int i = 0; i < n; i++)
		quick += !strcmp(lines[i].size, "quick");
	assert_true(switches > 0);
	assert_int_equal(quick, switches + 2);
}

/* The first cap - 1 bytes of the file at path, into buf. */
static void slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("%s: cannot open", path);
	buf[fread(buf, 1, cap - 1, f)] = '\0';
	fclose(f);
}

/* run_study.sh with no trace folder: the experiments that need a trace are
 * skipped, each with one line naming it, the others run, and study.json
 * records the size, the revision and each command that ran. */
static void test_run_study_skips_experiments_whose_trace_is_absent(void **st)
{
	(void)st;
	const char *k = kvsim();
	if (!k)
		skip();
	char cwd[1024], cmd[4096], log[300], json[300], buf[65536];
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(log, sizeof log, "%s/run.log", tmpdir);
	snprintf(cmd, sizeof cmd,
	         "KVSIM=%s%s%s KVSIM_TRACES=%s/no_traces sh " STUDY_DIR
	         "/run_study.sh tiny %s/out -j 2 %s --no-report > %s 2>&1",
	         k[0] == '/' ? "" : cwd, k[0] == '/' ? "" : "/", k, tmpdir, tmpdir,
	         kvsim_has_events(k) ? "" : "--skip " EVENTS_EXP, log);
	if (system(cmd) != 0)
		fail_msg("'%s' failed", cmd);
	slurp(log, buf, sizeof buf);
	assert_non_null(strstr(buf, "study: e2_traces skipped: trace "));
	assert_non_null(strstr(buf, "study: e5_lift skipped: trace "));
	assert_null(strstr(buf, "e1_breakeven skipped"));
	assert_null(strstr(buf, "e6_disagg skipped")); /* its tiny line needs no trace */
	assert_non_null(strstr(buf, "study: e6_disagg (tiny)"));
	assert_non_null(strstr(buf, "study: e8_oracle_gap skipped: trace "));
	/* E7 needs no trace: it runs, or is skipped only as asked */
	assert_non_null(strstr(buf, kvsim_has_events(k) ? "study: " EVENTS_EXP " (tiny)"
	                                                 : "study: " EVENTS_EXP " skipped: --skip"));
	snprintf(json, sizeof json, "%s/out/study.json", tmpdir);
	slurp(json, buf, sizeof buf);
	assert_non_null(strstr(buf, "\"size\": \"tiny\""));
	assert_non_null(strstr(buf, "\"revision\": \""));
	assert_non_null(strstr(buf, " sweep analysis/study/e1_breakeven.ini --grid "));
	/* the file is JSON, and the runs it names are in the catalogs */
	snprintf(cmd, sizeof cmd,
	         "/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); "
	         "e=j[\"experiments\"]; sys.exit(not (e[\"e2_traces\"][\"skipped\"] and "
	         "e[\"e4_vram\"][\"skipped\"] is None and len(e[\"e1_breakeven\"][\"sweeps\"]) >= "
	         "1))' %s",
	         json);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd,
	         "%s runs %s/out/e1_breakeven --where \"status = 'done'\" --csv "
	         "--columns id | tail -n +2 | wc -l",
	         k, tmpdir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int runs = 0;
	assert_int_equal(fscanf(p, "%d", &runs), 1);
	pclose(p);
	int n = read_sweep("e1_breakeven");
	size_t want = 0;
	for (int i = 0; i < n; i++)
		if (!strcmp(lines[i].size, "tiny"))
			want += expected_points(lines[i].args, "e1_breakeven.sweep");
	assert_int_equal((size_t)runs, want);
}

TEST_MAIN_FIXTURE(setup, teardown,
                  cmocka_unit_test(test_every_experiment_has_a_config_and_tiny_quick_full_sweeps),
                  cmocka_unit_test(test_every_sweep_line_varies_replication_with_a_none_baseline),
                  cmocka_unit_test(test_every_config_loads),
                  cmocka_unit_test(test_tiny_dry_runs_list_their_points),
                  cmocka_unit_test(test_no_two_sweep_lines_share_a_point),
                  cmocka_unit_test(test_e5_sweep_is_generated_from_btb_table),
                  cmocka_unit_test(test_run_study_skips_experiments_whose_trace_is_absent))
