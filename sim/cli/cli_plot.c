/* kvsim plot — runs one of the analysis scripts (analysis/NAME.py) under a
 * Python that has the modules they need, so a python3 earlier on PATH
 * without them is no bare ModuleNotFoundError: /usr/bin/python3 first
 * (Debian's python3-h5py & co.), then each python3 on PATH, or the list
 * in $KVSIM_PYTHON (colon-separated). None that has them is an error
 * naming what each lacks and how to install it. The scripts are found
 * beside the binary: ../analysis (the build tree), ../share/kvsim/analysis
 * (make install), or $KVSIM_ANALYSIS. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"

static const struct {
	const char *name, *script, *help;
} scripts[] = {
    {"metric", "plot_metric.py", "a metric against a parameter: a line per group, 95% CIs"},
    {"cdf", "plot_ttft_cdf.py", "TTFT CDFs of runs or catalog groups"},
    {"table", "policy_table.py", "mean and 95% CI of metrics per group, with what ran"},
};
#define N_SCRIPTS (sizeof scripts / sizeof scripts[0])

/* The modules every script imports. */
static const char *const modules[] = {"numpy", "pandas", "h5py", "matplotlib"};
#define N_MODULES (sizeof modules / sizeof modules[0])

static void usage(FILE *f)
{
	fprintf(f, "usage: kvsim plot NAME [ARGS...]\n\n"
	           "Runs analysis/NAME.py (or the script NAME stands for) with ARGS under a\n"
	           "Python that has numpy, pandas, h5py and matplotlib: /usr/bin/python3 when\n"
	           "it has them, else the first python3 on PATH that does ($KVSIM_PYTHON, a\n"
	           "colon-separated list of interpreters, replaces that order). 'kvsim plot\n"
	           "NAME --help' shows the script's options.\n\n");
	for (size_t i = 0; i < N_SCRIPTS; i++)
		fprintf(f, "  %-8s %-18s %s\n", scripts[i].name, scripts[i].script,
		        scripts[i].help);
	fprintf(
	    f,
	    "  NAME     NAME.py            any other script in analysis/ (oracle_gap, ...)\n\n"
	    "examples:\n"
	    "  kvsim sweep --grid policy.replication.name=none,full --seeds 3 -o results\n"
	    "  kvsim plot table results --by policy.replication.name --metrics "
	    "ttft_p99_ms,slo_attainment\n"
	    "  kvsim plot metric results --x policy.replication.name --y ttft_p99_ms -o p99.png\n");
	cli_help_end(f);
}

/* The analysis folder into dir (n bytes): the one holding kvsim_results.py
 * among $KVSIM_ANALYSIS and those beside the binary. */
static int find_analysis(char *dir, size_t n)
{
	char exe[PATH_MAX], cand[3][PATH_MAX + 64];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[len > 0 ? len : 0] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	const char *env = getenv("KVSIM_ANALYSIS");
	snprintf(cand[0], sizeof cand[0], "%s", env ? env : "");
	snprintf(cand[1], sizeof cand[1], "%s/../analysis", exe);
	snprintf(cand[2], sizeof cand[2], "%s/../share/kvsim/analysis", exe);
	for (int i = env ? 0 : 1; i < 3; i++) {
		char probe[PATH_MAX + 128];
		snprintf(probe, sizeof probe, "%s/kvsim_results.py", cand[i]);
		char real[PATH_MAX];
		if (access(probe, R_OK) == 0 &&
		    (size_t)snprintf(dir, n, "%s", realpath(cand[i], real) ? real : cand[i]) < n)
			return 0;
	}
	return -1;
}

/* Runs `py -c PROBE MODULES...`: 0 when py has every module, else -1 with
 * the missing ones (or why it did not run) in why (n bytes). */
static int probe_python(const char *py, char *why, size_t n)
{
	static const char probe[] = "import importlib.util as u, sys\n"
				    "m = [x for x in sys.argv[1:] if u.find_spec(x) is None]\n"
				    "print('no module ' + ', '.join(m) if m else '')\n"
				    "sys.exit(1 if m else 0)\n";
	int fd[2];
	if (access(py, X_OK) != 0) {
		snprintf(why, n, "not there");
		return -1;
	}
	if (pipe(fd) < 0) {
		snprintf(why, n, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		if (!freopen("/dev/null", "w", stderr))
			_exit(126);
		const char *argv[4 + N_MODULES] = {py, "-c", probe};
		for (size_t i = 0; i < N_MODULES; i++)
			argv[3 + i] = modules[i];
		execv(py, (char *const *)argv);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t r;
	why[0] = '\0';
	while (pid > 0 && got + 1 < n && (r = read(fd[0], why + got, n - 1 - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		got += (size_t)r;
	}
	why[got] = '\0';
	why[strcspn(why, "\n")] = '\0';
	close(fd[0]);
	int st = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (!why[0])
		snprintf(why, n, "%s", pid < 0 ? "cannot fork" : "does not run as Python");
	return -1;
}

/* The interpreter to use into py (n bytes); 0, or -1 with e saying what
 * each candidate lacks and the fix. */
static int find_python(char *py, size_t n, err_t *e)
{
	const char *env = getenv("KVSIM_PYTHON"), *path = getenv("PATH");
	char list[8192];
	if (env && *env)
		snprintf(list, sizeof list, "%s", env);
	else
		snprintf(list, sizeof list, "/usr/bin/python3%s%s", path ? ":" : "",
		         path ? path : "");
	char tried[1800] = "";
	int first = 1;
	for (char *save = NULL, *p = strtok_r(list, ":", &save); p;
	     p = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX], why[200];
		/* a PATH entry is a folder; the default's first entry and
		 * $KVSIM_PYTHON's are interpreters */
		int is_dir = !(env && *env) && !first;
		first = 0;
		if ((size_t)snprintf(cand, sizeof cand, is_dir ? "%s/python3" : "%s", p) >=
		    sizeof cand)
			continue;
		if (is_dir && (access(cand, X_OK) != 0 || !strcmp(cand, "/usr/bin/python3")))
			continue;
		if (!probe_python(cand, why, sizeof why)) {
			snprintf(py, n, "%s", cand);
			return 0;
		}
		size_t l = strlen(tried);
		if (l + 8 < sizeof tried)
			snprintf(tried + l, sizeof tried - l, "\n  %.400s: %.180s", cand, why);
	}
	return err_set(e, KS_ERUNTIME,
	               "no Python here has the modules the analysis needs (numpy, pandas, h5py, "
	               "matplotlib):%s\nInstall them: apt-get install python3-numpy python3-pandas "
	               "python3-h5py python3-matplotlib (Debian), or PYTHON -m pip install numpy "
	               "pandas h5py matplotlib; KVSIM_PYTHON=PYTHON names the interpreter to use",
	               tried[0] ? tried : "\n  (no python3 found)");
}

int cli_plot_main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("missing script name (metric, cdf, table or NAME)");
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "--list")) {
		usage(stdout);
		return 0;
	}
	const char *name = argv[1], *script = NULL;
	for (size_t i = 0; i < N_SCRIPTS && !script; i++)
		if (!strcmp(name, scripts[i].name) || !strcmp(name, scripts[i].script))
			script = scripts[i].script;
	char dir[PATH_MAX], file[PATH_MAX + 300], py[PATH_MAX];
	err_t e = {0};
	if (find_analysis(dir, sizeof dir))
		return cli_fail(&(err_t){
		    KS_ERUNTIME, "cannot find the analysis scripts beside this kvsim (../analysis, "
				 "../share/kvsim/analysis); set KVSIM_ANALYSIS to their folder"});
	if (script)
		snprintf(file, sizeof file, "%s/%s", dir, script);
	else
		snprintf(file, sizeof file, "%s/%s%s", dir, name,
		         strlen(name) > 3 && !strcmp(name + strlen(name) - 3, ".py") ? "" : ".py");
	if (strchr(name, '/') || access(file, R_OK) != 0)
		return cli_usage_error(
		    "no analysis script '%s' (metric, cdf, table, or a NAME.py in %s)", name, dir);
	if (find_python(py, sizeof py, &e))
		return cli_fail(&e);
	const char **av = calloc((size_t)argc + 2, sizeof *av);
	if (!av)
		return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
	av[0] = py;
	av[1] = file;
	for (int i = 2; i < argc; i++)
		av[i] = argv[i];
	fflush(stdout);
	fflush(stderr);
	execv(py, (char *const *)av);
	err_set(&e, KS_ERUNTIME, "%s: cannot run: %s", py, strerror(errno));
	free(av);
	return cli_fail(&e);
}
