/* cli_fixture — runs the built kvsim binary from a test and captures its
 * exit status, stdout and stderr (files under a scratch directory, so long
 * outputs cannot block a pipe). For tests that include cmocka.h first. */
#ifndef KVSIM_TESTS_CLI_FIXTURE_H
#define KVSIM_TESTS_CLI_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct cli_result {
	int status; /* exit status, or 128 + signal */
	char *out, *err;
} cli_result_t;

/* The binary under test: $KVSIM, else build/kvsim from the repository
 * root; NULL when neither is there (the caller skips). */
__attribute__((unused)) static const char *cli_kvsim(void)
{
	const char *k = getenv("KVSIM");
	if (k && *k)
		return k;
	return access("build/kvsim", X_OK) == 0 ? "build/kvsim" : NULL;
}

/* The same, skipping the test when there is none. */
__attribute__((unused)) static const char *cli_kvsim_or_skip(void)
{
	const char *k = cli_kvsim();
	if (!k)
		skip();
	return k;
}

__attribute__((unused)) static char *cli_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return strdup("");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(m);
	fclose(f);
	return buf;
}

/* Runs prog with argv (argv[0] included, NULL-terminated) in the working
 * directory cwd (NULL: this one); scratch holds the captured output. */
__attribute__((unused)) static cli_result_t
cli_run_argv(const char *prog, const char *cwd, const char *scratch, const char *const *argv)
{
	char outp[512], errp[512];
	snprintf(outp, sizeof outp, "%s/stdout", scratch);
	snprintf(errp, sizeof errp, "%s/stderr", scratch);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen(outp, "w", stdout) || !freopen(errp, "w", stderr))
			_exit(126);
		if (cwd && chdir(cwd))
			_exit(126);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	cli_result_t r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), cli_slurp(outp),
	                  cli_slurp(errp)};
	return r;
}

/* The same with the arguments after prog as a NULL-terminated list. */
__attribute__((unused)) static cli_result_t cli_run(const char *prog, const char *scratch,
                                                    const char *arg0, ...)
{
	const char *argv[64] = {prog};
	int n = 1;
	va_list ap;
	va_start(ap, arg0);
	for (const char *a = arg0; a && n < 63; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return cli_run_argv(prog, NULL, scratch, argv);
}

__attribute__((unused)) static void cli_result_free(cli_result_t *r)
{
	free(r->out);
	free(r->err);
}

#endif
