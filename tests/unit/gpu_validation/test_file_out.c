/* Outputs written whole (file_out, sim/base/file.c), through the commands
 * that write them: a FIFO or a character device given as an output is
 * written through and stays what it was (no PATH.tmp renamed over it), a
 * seekable output (HDF5) is copied into it once complete, and an output that
 * is also an input (the same file under any name) is refused before anything
 * is written. A reader that never sees an end would hang: alarm() catches
 * that (minutes, never a speed bound). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_validation/gv_sched.h"
#include "sim/base/file.h"
#include "tests/fixtures/cli_fixture.h"

static char dir[256], trace[320];

static int setup(void **st)
{
	(void)st;
	snprintf(dir, sizeof dir, "/tmp/kvsim_file_out_XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(trace, sizeof trace, "%s/t.tsv", dir);
	const char *k = cli_kvsim();
	if (!k)
		return 0;
	cli_result_t r = cli_run(k, dir, "trace", "gen", "poisson", "rate=5", "duration_s=10", "-o",
	                         trace, NULL);
	int rc = r.status;
	cli_result_free(&r);
	return rc ? -1 : 0;
}

static int teardown(void **st)
{
	(void)st;
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

/* A child that copies what comes out of fifo into `to`, until the writer
 * closes it. */
static pid_t fifo_reader(const char *fifo, const char *to)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid)
		return pid;
	alarm(300);
	int in = open(fifo, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0)
		_exit(1);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			_exit(1);
	_exit(n < 0);
}

/* Waits for the reader; a writer that never opened the FIFO (it failed)
 * leaves the reader blocked in open: a writer opened here ends it. */
static void fifo_reader_wait(pid_t pid, const char *fifo)
{
	int fd = open(fifo, O_WRONLY | O_NONBLOCK);
	if (fd >= 0)
		close(fd);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void assert_mode(const char *path, mode_t type)
{
	struct stat sb;
	assert_int_equal(lstat(path, &sb), 0);
	assert_int_equal(sb.st_mode & S_IFMT, type);
	char tmp[400];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	assert_int_not_equal(access(tmp, F_OK), 0);
}

static void assert_starts(const char *path, const char *head, size_t n)
{
	char *got = cli_slurp(path);
	if (strlen(got) < n || memcmp(got, head, n))
		fail_msg("%s starts with '%.40s', not '%.*s'", path, got, (int)n, head);
	free(got);
}

/* gen, convert and --trace-events each into node (a FIFO read by a child
 * or a character device), and the transfer plan (HDF5) copied into it. */
static void write_each_output_into(const char *node, int is_fifo)
{
	const char *k = cli_kvsim();
	char got[400], set[400];
	snprintf(got, sizeof got, "%s/got", dir);
	snprintf(set, sizeof set, "trace.path=%s", trace);
	for (int i = 0; i < 4; i++) {
		pid_t rd = is_fifo ? fifo_reader(node, got) : 0;
		cli_result_t r = {0};
		if (i == 0)
			r = cli_run(k, dir, "trace", "gen", "poisson", "rate=5", "duration_s=2",
			            "-o", node, NULL);
		else if (i == 1)
			r = cli_run(k, dir, "trace", "convert", trace, "-o", node, NULL);
		else if (i == 2)
			r = cli_run(k, dir, "run", "-q", "--set", set, "--trace-events", node,
			            NULL);
		else {
			res_transfer_t t = {0};
			t.bytes = 4096;
			t.end_ns = 10;
			err_t e = {0};
			if (gv_sched_write(node, &t, 1, 1, &e))
				fail_msg("%s", e.msg);
		}
		if (i < 3 && r.status)
			fail_msg("command %d: exit %d: %s", i, r.status, r.err);
		cli_result_free(&r);
		if (is_fifo) {
			fifo_reader_wait(rd, node);
			if (i < 2)
				assert_starts(got, "#kvsim-trace 1", 14);
			else if (i == 2)
				assert_starts(got, "{\"displayTimeUnit\"", 18);
			else
				assert_starts(got, "\x89HDF\r\n\x1a\n", 8);
		}
		assert_mode(node, is_fifo ? S_IFIFO : S_IFCHR);
	}
}

static void test_outputs_write_through_a_fifo_and_leave_it_a_fifo(void **st)
{
	(void)st;
	cli_kvsim_or_skip();
	alarm(600); /* a hang only */
	char fifo[400];
	snprintf(fifo, sizeof fifo, "%s/out.fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	write_each_output_into(fifo, 1);
	alarm(0);
}

/* /dev/null as an output was replaced by a regular file (as root): a null
 * device node of our own stands for it. */
static void test_outputs_leave_a_character_device_a_device(void **st)
{
	(void)st;
	cli_kvsim_or_skip();
	char node[400];
	snprintf(node, sizeof node, "%s/null", dir);
	if (geteuid() != 0 || mknod(node, S_IFCHR | 0666, makedev(1, 3)))
		skip(); /* device nodes need root (and a file system that allows them) */
	write_each_output_into(node, 0);
}

static void test_an_output_that_is_an_input_is_refused_and_left_intact(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	char *before = cli_slurp(trace), alias[400], hard[400], set[400];
	snprintf(alias, sizeof alias, "%s/alias.tsv", dir);
	snprintf(hard, sizeof hard, "%s/hard.tsv", dir);
	assert_int_equal(symlink(trace, alias), 0);
	assert_int_equal(link(trace, hard), 0);
	const char *outs[] = {trace, alias, hard};
	for (int i = 0; i < 3; i++) {
		cli_result_t r = cli_run(k, dir, "trace", "convert", trace, "-o", outs[i], NULL);
		assert_int_equal(r.status, 2);
		assert_non_null(strstr(r.err, "is also the input"));
		cli_result_free(&r);
		snprintf(set, sizeof set, "trace.path=%s", outs[i]);
		r = cli_run(k, dir, "run", "-q", "--set", set, "--trace-events", trace, NULL);
		assert_int_equal(r.status, 2);
		assert_non_null(strstr(r.err, "is also the input"));
		cli_result_free(&r);
		char *after = cli_slurp(trace);
		assert_string_equal(after, before);
		free(after);
		assert_mode(trace, S_IFREG);
	}
	free(before);
	/* another name is written as before */
	char other[400];
	snprintf(other, sizeof other, "%s/other.tsv", dir);
	cli_result_t r = cli_run(k, dir, "trace", "convert", trace, "-o", other, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	assert_mode(other, S_IFREG);
}

static void test_file_out_refuses_a_directory_and_renames_a_regular_file(void **st)
{
	(void)st;
	file_out_t o;
	err_t e = {0};
	assert_int_equal(file_out_begin(&o, dir, FILE_OUT_STREAM, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "Is a directory"));
	char p[400];
	snprintf(p, sizeof p, "%s/plain.txt", dir);
	assert_int_equal(file_out_begin(&o, p, FILE_OUT_STREAM, &e), 0);
	assert_int_equal(o.how, FILE_OUT_RENAME);
	FILE *f = fopen(o.tmp, "w");
	assert_non_null(f);
	fputs("x\n", f);
	fclose(f);
	assert_int_not_equal(access(p, F_OK), 0); /* nothing at PATH until commit */
	assert_int_equal(file_out_commit(&o, 1, &e), 0);
	assert_mode(p, S_IFREG);
	/* an aborted rewrite leaves the old file and no temporary */
	assert_int_equal(file_out_begin(&o, p, FILE_OUT_STREAM, &e), 0);
	f = fopen(o.tmp, "w");
	fputs("half", f);
	fclose(f);
	file_out_abort(&o);
	assert_starts(p, "x\n", 2);
	assert_mode(p, S_IFREG);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_outputs_write_through_a_fifo_and_leave_it_a_fifo),
	    cmocka_unit_test(test_outputs_leave_a_character_device_a_device),
	    cmocka_unit_test(test_an_output_that_is_an_input_is_refused_and_left_intact),
	    cmocka_unit_test(test_file_out_refuses_a_directory_and_renames_a_regular_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
