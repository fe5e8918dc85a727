/* tmp_fixture — a scratch directory per test group: made from a mkdtemp
 * template in setup, removed with everything in it in teardown. Both return
 * 0 or -1, which is what cmocka's group setup/teardown expect. Header-only
 * (static); for tests that include cmocka.h first. */
#ifndef KVSIM_TESTS_TMP_FIXTURE_H
#define KVSIM_TESTS_TMP_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Copies the template tmpl ("/tmp/name_XXXXXX") into dir (size bytes) and
 * creates it there. */
__attribute__((unused)) static int tmp_dir_make(char *dir, size_t size, const char *tmpl)
{
	snprintf(dir, size, "%s", tmpl);
	return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and everything below it. */
__attribute__((unused)) static int tmp_dir_remove(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to path (created or truncated); the test fails when it
 * cannot. */
__attribute__((unused)) static void tmp_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Runs the shell command made from fmt (printf-style, at most 2 kB);
 * returns its exit status, -1 when it did not exit or did not fit. */
__attribute__((unused, format(printf, 1, 2))) static int tmp_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof cmd)
		return -1;
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* tmp_write over path in place (the same inode), then, when when_s is not
 * 0, its mtime set to that many seconds after the epoch (a fixed instant,
 * so two writes can share an mtime to the nanosecond). */
__attribute__((unused)) static void tmp_write_at(const char *path, const char *text, time_t when_s)
{
	tmp_write(path, text);
	struct timespec t[2] = {{when_s, 0}, {when_s, 0}};
	if (when_s)
		assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* How many names in dir begin with prefix, other than skip (may be NULL);
 * the last one's path goes to last (may be NULL, n bytes). */
__attribute__((unused)) static int tmp_count(const char *dir, const char *prefix, const char *skip,
					     char *last, size_t n)
{
	DIR *d = opendir(dir);
	int k = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)) &&
		    !(skip && !strcmp(de->d_name, skip))) {
			k++;
			if (last)
				snprintf(last, n, "%s/%s", dir, de->d_name);
		}
	if (d)
		closedir(d);
	return k;
}

/* The group's scratch directory when the group runs under tmp_group_setup
 * and tmp_group_teardown: /tmp/<test program>_XXXXXX. */
__attribute__((unused)) static char tmp_dir[64];

__attribute__((unused)) static int tmp_group_setup(void **state)
{
	(void)state;
	char tmpl[64];
	snprintf(tmpl, sizeof tmpl, "/tmp/%s_XXXXXX", program_invocation_short_name);
	return tmp_dir_make(tmp_dir, sizeof tmp_dir, tmpl);
}

__attribute__((unused)) static int tmp_group_teardown(void **state)
{
	(void)state;
	return tmp_dir_remove(tmp_dir);
}


/* The kvsim binary ($KVSIM, else build/kvsim) when it and Debian's
 * /usr/bin/python3 with the modules `mods` ("h5py, pandas") are there, for
 * tests that run analysis scripts; NULL: those tests skip. */
__attribute__((unused)) static const char *tmp_kvsim_with_python(const char *mods)
{
	const char *k = getenv("KVSIM");
	if (!k || !*k)
		k = "build/kvsim";
	char cmd[256];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import %s' >/dev/null 2>&1", mods);
	if (access(k, X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0 || system(cmd) != 0)
		return NULL;
	return k;
}

/* Writes text to dir/name and returns that path (a static buffer, valid
 * until the next call). */
__attribute__((unused)) static const char *tmp_put(const char *dir, const char *name,
						   const char *text)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	tmp_write(path, text);
	return path;
}

#endif
