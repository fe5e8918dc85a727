/* The README's quick start runs as written. Every `kvsim` command of the
 * fenced `sh` blocks under "## Quick start" (continuation lines joined,
 * comments dropped; other programs, such as the package bootstrap `make`,
 * `export` or `mpirun`, are left out) runs with /bin/sh, in order, in a
 * fresh directory that holds the clone's source folders but no build or
 * results, with the binary under test first on PATH and a trace cache of
 * its own. The `python` blocks run too, with Debian's /usr/bin/python3,
 * where it has h5py, pandas and matplotlib. A command that exits non-zero
 * fails the test, named with its exit status and output. */
#include <dirent.h>
#include <limits.h>
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

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

#define QS_HEADING "## Quick start"
#define QS_MAX 64

typedef enum { QS_SH, QS_PYTHON } qs_kind_t;

typedef struct qs_item {
	qs_kind_t kind;
	char *text; /* one joined command line, or a whole python block */
} qs_item_t;

typedef struct qs_list {
	qs_item_t item[QS_MAX];
	int n;
} qs_list_t;

static void qs_add(qs_list_t *l, qs_kind_t kind, const char *text, size_t len)
{
	assert_true(l->n < QS_MAX);
	l->item[l->n].kind = kind;
	l->item[l->n].text = strndup(text, len);
	assert_non_null(l->item[l->n].text);
	l->n++;
}

static void qs_free(qs_list_t *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->item[i].text);
	l->n = 0;
}

/* The command line cmd (NUL-terminated, changed in place) without its
 * comment: a '#' outside quotes at the start of a word. */
static void qs_strip_comment(char *cmd)
{
	char quote = 0;
	for (char *p = cmd; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
		} else if (*p == '#' && (p == cmd || p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			break;
		}
	}
	size_t n = strlen(cmd);
	while (n && (cmd[n - 1] == ' ' || cmd[n - 1] == '\t'))
		cmd[--n] = '\0';
}

/* 1 when the command's program is kvsim (by that name or a path to it). */
static int qs_is_kvsim(const char *cmd)
{
	cmd += strspn(cmd, " \t");
	size_t w = strcspn(cmd, " \t");
	const char *slash = memrchr(cmd, '/', w);
	const char *name = slash ? slash + 1 : cmd;
	return (size_t)(cmd + w - name) == 5 && !strncmp(name, "kvsim", 5);
}

/* Adds the kvsim commands of one sh block (body: its lines, len bytes). */
static void qs_add_sh_block(qs_list_t *l, const char *body, size_t len)
{
	char *cmd = NULL;
	size_t cap = 0, n = 0;
	const char *end = body + len;
	for (const char *line = body; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t ll = (size_t)((nl ? nl : end) - line);
		int more = ll && line[ll - 1] == '\\';
		if (n + ll + 2 > cap) {
			cap = 2 * (n + ll + 2);
			cmd = realloc(cmd, cap);
			assert_non_null(cmd);
		}
		memcpy(cmd + n, line, ll - (size_t)more);
		n += ll - (size_t)more;
		cmd[n] = '\0';
		line = nl ? nl + 1 : end;
		if (more && line < end) {
			cmd[n++] = ' ';
			continue;
		}
		qs_strip_comment(cmd);
		if (qs_is_kvsim(cmd))
			qs_add(l, QS_SH, cmd, strlen(cmd));
		n = 0;
	}
	free(cmd);
}

/* The runnable items of the quick-start section of the markdown text md,
 * in document order: from its heading up to the next level-2 heading. */
static void qs_extract(const char *md, qs_list_t *l)
{
	l->n = 0;
	const char *sec = strstr(md, "\n" QS_HEADING "\n");
	assert_non_null(sec);
	sec += strlen(QS_HEADING) + 2;
	const char *stop = strstr(sec, "\n## ");
	if (!stop)
		stop = sec + strlen(sec);
	for (const char *p = sec; p < stop;) {
		const char *open = strstr(p, "```");
		if (!open || open >= stop)
			break;
		const char *lang = open + 3, *body = strchr(lang, '\n');
		assert_non_null(body);
		body++;
		const char *close = strstr(body, "\n```");
		assert_non_null(close);
		size_t len = (size_t)(close - body) + 1;
		if (!strncmp(lang, "sh\n", 3))
			qs_add_sh_block(l, body, len);
		else if (!strncmp(lang, "python\n", 7))
			qs_add(l, QS_PYTHON, body, len);
		p = close + 4;
	}
}

/* A scratch tree per run: root/work (the clean tree the commands run in),
 * root/out (their captured output), root/cache (the trace cache). */
typedef struct qs_tree {
	char root[64], work[96], out[96], cache[96];
} qs_tree_t;

/* Makes the tree, with work holding a link to each source folder and
 * top-level document of the clone (the working directory), but no build
 * folders and no results, as a fresh clone has. */
static void qs_tree_make(qs_tree_t *t)
{
	assert_int_equal(tmp_dir_make(t->root, sizeof t->root, "/tmp/test_readme_XXXXXX"), 0);
	snprintf(t->work, sizeof t->work, "%s/work", t->root);
	snprintf(t->out, sizeof t->out, "%s/out", t->root);
	snprintf(t->cache, sizeof t->cache, "%s/cache", t->root);
	assert_int_equal(mkdir(t->work, 0755) | mkdir(t->out, 0755) | mkdir(t->cache, 0755), 0);
	char clone[PATH_MAX];
	assert_non_null(realpath(".", clone));
	DIR *d = opendir(clone);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		const char *n = de->d_name;
		int doc = !strcmp(n, "Makefile") || !strcmp(n, "README.md") ||
		          !strcmp(n, "CONTRIBUTING.md");
		int src = de->d_type == DT_DIR && n[0] != '.' && strncmp(n, "build", 5) &&
		          strcmp(n, "results");
		if (!doc && !src)
			continue;
		char from[PATH_MAX + 256], to[PATH_MAX];
		snprintf(from, sizeof from, "%s/%s", clone, n);
		snprintf(to, sizeof to, "%s/%s", t->work, n);
		assert_int_equal(symlink(from, to), 0);
	}
	closedir(d);
}

/* Runs the items in t->work with the kvsim binary kvsim first on PATH;
 * says on report (NULL: nowhere) what failed and returns how many did.
 * Python items run only when with_python is set. */
static int qs_run(const qs_list_t *l, const qs_tree_t *t, const char *kvsim, int with_python,
                  FILE *report)
{
	char bin[PATH_MAX], path[2 * PATH_MAX];
	assert_non_null(realpath(kvsim, bin));
	*strrchr(bin, '/') = '\0';
	const char *old = getenv("PATH");
	snprintf(path, sizeof path, "%s:%s", bin, old ? old : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	setenv("KVSIM_CACHE_DIR", t->cache, 1);
	int failed = 0;
	for (int i = 0; i < l->n; i++) {
		const qs_item_t *it = &l->item[i];
		cli_result_t r;
		if (it->kind == QS_SH) {
			const char *argv[] = {"/bin/sh", "-c", it->text, NULL};
			r = cli_run_argv(argv[0], t->work, t->out, argv);
		} else {
			if (!with_python)
				continue;
			char script[160];
			snprintf(script, sizeof script, "%s/recipe.py", t->out);
			tmp_write(script, it->text);
			const char *argv[] = {"/usr/bin/python3", script, NULL};
			r = cli_run_argv(argv[0], t->work, t->out, argv);
		}
		failed += r.status != 0;
		if (r.status != 0 && report)
			fprintf(
			    report,
			    "README quick start: exit %d from:\n%s\n-- stdout:\n%s-- stderr:\n%s\n",
			    r.status, it->text, r.out, r.err);
		cli_result_free(&r);
	}
	if (old)
		setenv("PATH", old, 1);
	return failed;
}

/* The tree of the test running, removed after it whether it passed or not. */
static qs_tree_t qs_tree;

static int qs_tree_teardown(void **state)
{
	(void)state;
	int rc = *qs_tree.root ? tmp_dir_remove(qs_tree.root) : 0;
	*qs_tree.root = '\0';
	return rc;
}

static int qs_have_python(void)
{
	return access("/usr/bin/python3", X_OK) == 0 &&
	       system("/usr/bin/python3 -c 'import h5py, pandas, matplotlib' >/dev/null 2>&1") == 0;
}

static const char demo_md[] = "# x\n"
			      "```sh\nkvsim run --before-the-section\n```\n"
			      "## Quick start\n"
			      "```sh\n"
			      "make run     # the bootstrap: not run\n"
			      "export PATH=\"$PWD/build:$PATH\"\n"
			      "kvsim run --set a=1 \\\n"
			      "      --set b=2   # a comment\n"
			      "# a whole-line comment\n"
			      "mpirun -n 2 kvsim sweep --grid a=1,2\n"
			      "build/kvsim runs r --where \"k = '#1'\"\n"
			      "```\n"
			      "text\n"
			      "```python\nprint(1)\n```\n"
			      "### A subsection still counts\n"
			      "```sh\nkvsim policies\n```\n"
			      "## Next section\n"
			      "```sh\nkvsim run --after-the-section\n```\n";

static void test_extract_takes_kvsim_lines_of_the_quick_start_only(void **state)
{
	(void)state;
	qs_list_t l;
	qs_extract(demo_md, &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.item[0].kind, QS_SH);
	assert_string_equal(l.item[0].text, "kvsim run --set a=1        --set b=2");
	assert_string_equal(l.item[1].text, "build/kvsim runs r --where \"k = '#1'\"");
	assert_int_equal(l.item[2].kind, QS_PYTHON);
	assert_string_equal(l.item[2].text, "print(1)\n");
	assert_string_equal(l.item[3].text, "kvsim policies");
	qs_free(&l);
}

static void test_a_broken_command_is_reported_as_a_failure(void **state)
{
	(void)state;
	const char *kvsim = cli_kvsim_or_skip();
	qs_list_t l;
	qs_extract("x\n" QS_HEADING "\n```sh\n"
	           "kvsim policies > /dev/null\n"
	           "kvsim run --no-such-option\n"
	           "kvsim runs no-such-results-dir\n```\n",
	           &l);
	assert_int_equal(l.n, 3);
	qs_tree_make(&qs_tree);
	assert_int_equal(qs_run(&l, &qs_tree, kvsim, 0, NULL), 2);
	qs_free(&l);
}

static void test_readme_quick_start_commands_run_as_written(void **state)
{
	(void)state;
	const char *kvsim = cli_kvsim_or_skip();
	char *md = cli_slurp("README.md");
	qs_list_t l;
	qs_extract(md, &l);
	free(md);
	int n_sh = 0;
	for (int i = 0; i < l.n; i++)
		n_sh += l.item[i].kind == QS_SH;
	assert_true(n_sh >= 5); /* a run, the config, a sweep and the catalog */
	qs_tree_make(&qs_tree);
	int py = qs_have_python();
	if (!py)
		fprintf(stderr, "note: no /usr/bin/python3 with h5py, pandas and matplotlib: "
		                "the python recipe is not run\n");
	assert_int_equal(qs_run(&l, &qs_tree, kvsim, py, stderr), 0);
	qs_free(&l);
}

TEST_MAIN(cmocka_unit_test(test_extract_takes_kvsim_lines_of_the_quick_start_only),
          cmocka_unit_test_teardown(test_a_broken_command_is_reported_as_a_failure,
                                    qs_tree_teardown),
          cmocka_unit_test_teardown(test_readme_quick_start_commands_run_as_written,
                                    qs_tree_teardown))
