/* fsize_fixture — runs a write in a child process whose files may not grow
 * past a limit (RLIMIT_FSIZE: the refused write fails with EFBIG, as one on
 * a full disk fails with ENOSPC), and brings back the error message the
 * writer gave. Header-only (static); for tests that include cmocka.h first. */
#ifndef KVSIM_TESTS_FSIZE_FIXTURE_H
#define KVSIM_TESTS_FSIZE_FIXTURE_H

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/base/err.h"

/* Runs write_fn(ctx, e) in a child limited to limit bytes per file and
 * copies the message it left in e into msg (n bytes). The test fails
 * unless write_fn returned KS_EIO and left a message. With at_exit the
 * child ends by exit() (its atexit handlers run: a library's exit-time
 * cleanup is under test too), else by _exit() (the parent's handlers, such
 * as removing a scratch folder, must not run twice). */
__attribute__((unused)) static void fsize_refused_write(rlim_t limit,
                                                        int (*write_fn)(void *ctx, err_t *e),
                                                        void *ctx, int at_exit, char *msg,
                                                        size_t n)
{
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		signal(SIGXFSZ, SIG_IGN);
		signal(SIGSEGV, SIG_DFL); /* a crash is the child's, not cmocka's to catch */
		struct rlimit rl = {limit, limit};
		setrlimit(RLIMIT_FSIZE, &rl);
		err_t e = {0};
		int rc = write_fn(ctx, &e);
		if (write(pfd[1], e.msg, strlen(e.msg) + 1) < 0)
			_exit(4);
		if (at_exit)
			exit(rc == KS_EIO ? 0 : 5);
		_exit(rc == KS_EIO ? 0 : 5);
	}
	close(pfd[1]);
	msg[0] = '\0';
	ssize_t got = read(pfd[0], msg, n - 1);
	close(pfd[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(got > 0);
	msg[got] = '\0';
}

#endif
