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

#include "tests/fixtures/tmp_fixture.h"

static char dir[64];     /* temporary folder holding a copy of the Makefile */
static const char *drop; /* "runuser", "setpriv", or NULL when not root */

static int have_exe(const char *path)
{
	return access(path, X_OK) == 0;
}

/* Runs argv (PATH set to path unless NULL) with stdout and stderr in
 * dir/log; *out gets the log (static buffer), the return the exit status,
 * or 128 + signal. */
static int run_logged(const char *const *argv, const char *path, char **out)
{
	char logp[128];
	snprintf(logp, sizeof logp, "%s/log", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (path)
			setenv("PATH", path, 1);
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
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
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
	int st = run_logged(argv, NULL, out);
	unlink(logp);
	return st;
}

static int setup(void **state)
{
	(void)state;
	if (tmp_dir_make(dir, sizeof dir, "/tmp/test_bootstrap.XXXXXX"))
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
	return tmp_dir_remove(dir);
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

/* ---- waiting for the apt lock; make install ------------------------------ */

/* Writes an executable fake apt-get into dir/bin that logs its arguments to
 * dir/apt.log and, for its first `locked` calls, fails the way apt-get does
 * when another apt or dpkg holds the lock (`other`: another error). */
static void fake_apt_get(int locked, const char *other)
{
	char bin[128], p[160];
	snprintf(bin, sizeof bin, "%s/bin", dir);
	mkdir(bin, 0755);
	snprintf(p, sizeof p, "%s/apt-get", bin);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f,
	        "#!/bin/sh\n"
	        "echo \"$*\" >> %s/apt.log\n"
	        "n=$(wc -l < %s/apt.log)\n"
	        "%s"
	        "if [ $n -le %d ]; then\n"
	        "  echo 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by "
	        "process 1 (apt-get)' >&2; exit 100; fi\n"
	        "exit 0\n",
	        dir, dir, other ? other : "", locked);
	fclose(f);
	chmod(p, 0755);
	snprintf(p, sizeof p, "%s/apt.log", dir);
	unlink(p);
}

/* Runs `make -s -C dir deps` as root with the fake apt-get first on PATH. */
static int run_deps_fake(const char *const *vars, char **out)
{
	char path[4200];
	const char *sys = getenv("PATH");
	snprintf(path, sizeof path, "%s/bin:%s", dir, sys ? sys : "/usr/bin:/bin");
	const char *argv[16] = {"make",
	                        "-s",
	                        "--no-print-directory",
	                        "-C",
	                        dir,
	                        "deps",
	                        "APT_PKGS=kvsim-no-such-package-xyz"};
	int n = 7;
	for (int i = 0; vars[i] && n < 15; i++)
		argv[n++] = vars[i];
	argv[n] = NULL;
	return run_logged(argv, path, out);
}

static char *apt_log(void)
{
	char p[160];
	snprintf(p, sizeof p, "%s/apt.log", dir);
	FILE *f = fopen(p, "r");
	static char buf[8192];
	size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	buf[len] = '\0';
	if (f)
		fclose(f);
	return buf;
}

/* Another apt-get holding the lock: the bootstrap says so once, waits, and
 * goes on when it is free; apt-get itself is told to wait for the dpkg
 * lock too. */
static void test_deps_waits_while_another_apt_holds_the_lock(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* only root installs */
	fake_apt_get(2, NULL);
	const char *vars[] = {"APT_LOCK_TIMEOUT=60", "APT_LOCK_RETRY_S=0", NULL};
	char *out;
	int st = run_deps_fake(vars, &out);
	const char *msg = "another apt-get or dpkg holds its lock; waiting up to 60 s";
	const char *said = strstr(out, msg);
	if (st != 0 || !said)
		fail_msg("exit %d:\n%s", st, out);
	assert_null(strstr(said + strlen(msg), "waiting")); /* said once */
	assert_string_equal(apt_log(), "-o DPkg::Lock::Timeout=60 update -qq\n"
	                               "-o DPkg::Lock::Timeout=60 update -qq\n"
	                               "-o DPkg::Lock::Timeout=60 update -qq\n"
	                               "-o DPkg::Lock::Timeout=60 install -y -qq "
	                               "--no-install-recommends kvsim-no-such-package-xyz\n");
}

/* It gives up after the timeout; any other apt-get error fails at once. */
static void test_deps_gives_up_after_the_lock_timeout(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	fake_apt_get(1000, NULL);
	const char *vars[] = {"APT_LOCK_TIMEOUT=1", "APT_LOCK_RETRY_S=1", NULL};
	char *out;
	int st = run_deps_fake(vars, &out);
	assert_int_not_equal(st, 0);
	if (!strstr(out, "kvsim: gave up after 1 s waiting for the apt/dpkg lock") ||
	    !strstr(out, "E: Could not get lock"))
		fail_msg("exit %d:\n%s", st, out);
	fake_apt_get(0, "echo 'E: Unable to locate package kvsim-no-such-package-xyz' >&2; "
	                "exit 100\n");
	st = run_deps_fake(vars, &out);
	assert_int_not_equal(st, 0);
	assert_non_null(strstr(out, "E: Unable to locate package"));
	assert_null(strstr(out, "waiting"));
	assert_string_equal(apt_log(), "-o DPkg::Lock::Timeout=1 update -qq\n");
}

/* make install puts each file where the repository has it under
 * share/kvsim: the scripts of analysis/experiments beside their configs. */
static void test_install_puts_files_in_their_folders(void **state)
{
	(void)state;
	const char *b = getenv("BUILD");
	char kvsim[1100];
	snprintf(kvsim, sizeof kvsim, "%s/kvsim", b && *b ? b : "build");
	if (access(kvsim, X_OK))
		skip();
	char dest[128], cmd[600];
	snprintf(dest, sizeof dest, "%s/dest", dir);
	snprintf(cmd, sizeof cmd,
	         "make -s --no-print-directory install-only DESTDIR=%s PREFIX=/usr >%s/log 2>&1",
	         dest, dir);
	assert_int_equal(system(cmd), 0);
	static const char *const want[] = {
	    "bin/kvsim",
	    "share/kvsim/analysis/plot_metric.py",
	    "share/kvsim/analysis/kvsim_results.py",
	    "share/kvsim/analysis/experiments/compare_policies.sh",
	    "share/kvsim/analysis/experiments/mooncake_conversation.ini",
	    "share/kvsim/models/hw/H100-SXM.ini"};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char p[300];
		snprintf(p, sizeof p, "%s/usr/%s", dest, want[i]);
		if (access(p, R_OK))
			fail_msg("%s was not installed", p);
	}
	char p[300];
	snprintf(p, sizeof p, "%s/usr/share/kvsim/analysis/experiments/compare_policies.sh", dest);
	assert_int_equal(access(p, X_OK), 0);
	snprintf(p, sizeof p, "%s/usr/share/kvsim/analysis/compare_policies.sh", dest);
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(tmp_dir_remove(dest), 0);
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
	    cmocka_unit_test(test_deps_waits_while_another_apt_holds_the_lock),
	    cmocka_unit_test(test_deps_gives_up_after_the_lock_timeout),
	    cmocka_unit_test(test_install_puts_files_in_their_folders),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
