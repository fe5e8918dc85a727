/* Tests for the Makefile's `deps` bootstrap: a non-root user with a missing
 * package gets the one apt-get line to run and a failing status; root with
 * every package present gets silence and success. Nothing is installed: the
 * missing package does not exist, and the root case runs only after the
 * non-root check has shown that nothing is missing. When the tests run as
 * root, the non-root runs use the user 'nobody' (via runuser or setpriv);
 * the Makefile is copied into a private temporary folder 'nobody' can read.
 * The repository root is the current directory (make test runs from it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64];     /* temporary folder holding a copy of the Makefile */
static const char *drop; /* "runuser", "setpriv", or NULL when not root */

static int have_exe(const char *path)
{
	return access(path, X_OK) == 0;
}

/* Runs `make -s --no-print-directory -C dir deps [extra]` as root (as_root)
 * or as the non-root user; stdout and stderr together into *out. */
static int run_deps(int as_root, const char *extra, char **out)
{
	char logp[128];
	snprintf(logp, sizeof logp, "%s/log", dir);
	const char *argv[16];
	int n = 0;
	char reuid[32], regid[32];
	struct passwd *pw = getpwnam("nobody");
	assert_non_null(pw);
	snprintf(reuid, sizeof reuid, "--reuid=%u", (unsigned)pw->pw_uid);
	snprintf(regid, sizeof regid, "--regid=%u", (unsigned)pw->pw_gid);
	if (!as_root && drop && !strcmp(drop, "runuser")) {
		argv[n++] = "/usr/sbin/runuser";
		argv[n++] = "-u";
		argv[n++] = "nobody";
		argv[n++] = "--";
	} else if (!as_root && drop) {
		argv[n++] = "/usr/bin/setpriv";
		argv[n++] = reuid;
		argv[n++] = regid;
		argv[n++] = "--clear-groups";
	}
	argv[n++] = "make";
	argv[n++] = "-s";
	argv[n++] = "--no-print-directory";
	argv[n++] = "-C";
	argv[n++] = dir;
	argv[n++] = "deps";
	if (extra)
		argv[n++] = extra;
	argv[n] = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen(logp, "w", stdout) || dup2(fileno(stdout), 2) < 0)
			_exit(126);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	FILE *f = fopen(logp, "r");
	assert_non_null(f);
	static char buf[65536];
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	buf[len] = '\0';
	fclose(f);
	unlink(logp);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/test_bootstrap.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	chmod(dir, 0755); /* 'nobody' must read the Makefile and write the log */
	char src[4096], dst[128];
	snprintf(dst, sizeof dst, "%s/Makefile", dir);
	FILE *in = fopen("Makefile", "r"), *out = fopen(dst, "w");
	if (!in || !out)
		return -1;
	size_t n;
	while ((n = fread(src, 1, sizeof src, in)) > 0)
		fwrite(src, 1, n, out);
	fclose(in);
	fclose(out);
	chmod(dst, 0644);
	if (geteuid() == 0) {
		/* The child opens the log before dropping privileges. */
		if (have_exe("/usr/sbin/runuser"))
			drop = "runuser";
		else if (have_exe("/usr/bin/setpriv"))
			drop = "setpriv";
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char p[128];
	snprintf(p, sizeof p, "%s/Makefile", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

static void test_deps_as_user_prints_apt_line_and_fails(void **state)
{
	(void)state;
	char *out;
	int st = run_deps(0, "APT_PKGS=kvsim-no-such-package-xyz", &out);
	assert_int_not_equal(st, 0);
	if (!strstr(out, "apt-get install -y --no-install-recommends kvsim-no-such-package-xyz"))
		fail_msg("no apt-get line in:\n%s", out);
	/* It stops: no attempt to install. */
	assert_null(strstr(out, "installing"));
}

static void test_deps_as_root_with_everything_installed_is_silent(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char *out;
	/* First, without privileges, whether anything is missing: if so, a
	 * root run would install it, which a test must not do. */
	int st = run_deps(0, NULL, &out);
	if (st != 0 || *out) {
		fprintf(stderr, "test_bootstrap: packages missing, root case skipped:\n%s", out);
		skip();
	}
	st = run_deps(1, NULL, &out);
	assert_int_equal(st, 0);
	assert_string_equal(out, "");
}

int main(void)
{
	if (access("Makefile", R_OK)) {
		fprintf(stderr, "test_bootstrap: run from the repository root\n");
		return 77;
	}
	if (geteuid() == 0 && (!getpwnam("nobody") ||
	                       (!have_exe("/usr/sbin/runuser") && !have_exe("/usr/bin/setpriv")))) {
		fprintf(stderr, "test_bootstrap: no user 'nobody' or no runuser/setpriv\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deps_as_user_prints_apt_line_and_fails),
	    cmocka_unit_test(test_deps_as_root_with_everything_installed_is_silent),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
