/* out_record — files one run made outside a sweep into a results directory
 * (see out_sweep.h): the same file name, row and identity a sweep would use,
 * so `kvsim runs` and the plots see it, and a sweep skips it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/base/mem.h"
#include "sim/out/out_sweep.h"

/* A run's identity (out_point_id) and what makes it: *text its config
 * text, *inputs out_point_inputs' (both malloc'd, NULL on error). */
static int identity(const cfg_t *cfg, uint64_t seed, const char *const *plugins,
		    size_t n_plugins, char **text, char **inputs, char id[65], err_t *e)
{
	*inputs = NULL;
	if (!(*text = cfg_text(cfg)))
		return err_set(e, KS_ENOMEM, "out of memory");
	int rc = out_point_inputs(cfg, plugins, n_plugins, inputs, e);
	if (rc) {
		free(*text);
		*text = NULL;
		return rc;
	}
	out_point_id(*text, seed, *inputs, id);
	return 0;
}

int out_run_id(const cfg_t *cfg, uint64_t seed, const char *const *plugins, size_t n_plugins,
	       char id[65], err_t *e)
{
	char *text, *inputs;
	int rc = identity(cfg, seed, plugins, n_plugins, &text, &inputs, id, e);
	FREE_ALL(text, inputs);
	return rc;
}

int out_runs_lock(const char *runs, int exclusive)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/.write.lock", runs);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return -1;
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0)
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	return fd;
}

void out_runs_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock */
}

static int record(const char *dir, const cfg_t *cfg, const sim_results_t *r,
		  const out_param_t *params, size_t n_params, const char *const *plugins,
		  size_t n_plugins, const out_hdf5_opts_t *h5, char id[65], err_t *e)
{
	char runs[4096], rel[64], path[4200], pid[65], digest[65];
	snprintf(runs, sizeof runs, "%s/runs", dir);
	int rc = out_dir_check(dir, e);
	if (rc)
		return rc;
	if (out_mkdir_p(dir) < 0 || (mkdir(runs, 0777) < 0 && errno != EEXIST))
		return err_set(e, KS_EIO, "%s: cannot create directory: %s", runs, strerror(errno));
	char *text, *inputs;
	if ((rc = identity(cfg, r->seed, plugins, n_plugins, &text, &inputs, pid, e)))
		return rc;
	cfg_digest(cfg, digest);
	snprintf(rel, sizeof rel, "runs/%.16s.h5", pid);
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	out_catalog_t *c;
	rc = out_catalog_open(dir, 0, &c, e);
	if (rc) {
		free(text);
		free(inputs);
		return rc;
	}
	out_run_info_t ri = {pid, digest, r->seed, params, n_params, rel, text, inputs};
	rc = out_catalog_begin(c, &ri, e);
	if (!rc) {
		int lk = out_runs_lock(runs, 0);
		rc = out_hdf5_write(path, r, h5, e);
		out_runs_unlock(lk);
		out_run_file_t f = {0, "", r->git_rev[0] ? r->git_rev : out_build_rev()};
		if (!rc)
			rc = out_file_sha256(path, &f.size, f.sha256, e);
		if (!rc)
			rc = out_catalog_done_file(c, pid, r->metric, r->n_metric, r->wall_s, &f, e);
		if (!rc && r->n_win)
			rc = out_catalog_windows_put(c, pid, r->win, r->n_win, e);
		if (rc) {
			/* no file without its done row, no row left 'running' */
			err_t e2;
			unlink(path);
			out_catalog_failed(c, pid, e->msg, &e2);
		}
	}
	out_catalog_close(c);
	free(text);
	free(inputs);
	if (!rc && id)
		memcpy(id, pid, 65);
	return rc;
}

int out_run_record(const char *dir, const cfg_t *cfg, const sim_results_t *r,
		   const out_param_t *params, size_t n_params, const out_hdf5_opts_t *h5,
		   char id[65], err_t *e)
{
	return record(dir, cfg, r, params, n_params, NULL, 0, h5, id, e);
}

int out_run_record_plugins(const char *dir, const cfg_t *cfg, const sim_results_t *r,
			   const char *const *plugins, size_t n_plugins, const out_hdf5_opts_t *h5,
			   char id[65], err_t *e)
{
	return record(dir, cfg, r, NULL, 0, plugins, n_plugins, h5, id, e);
}

int out_run_lookup(const char *dir, const cfg_t *cfg, uint64_t seed, const char *const *plugins,
		   size_t n_plugins, char id[65], int *verdict, err_t *e)
{
	*verdict = OUT_CHECK_TODO;
	char *text = cfg_text(cfg), *inputs = NULL, cat_path[4200];
	if (!text)
		return err_set(e, KS_ENOMEM, "out of memory");
	int rc = out_point_inputs(cfg, plugins, n_plugins, &inputs, e);
	if (!rc)
		out_point_id(text, seed, inputs, id);
	free(text);
	free(inputs);
	snprintf(cat_path, sizeof cat_path, "%s/%s", dir, OUT_CATALOG_FILE);
	out_catalog_t *c = NULL;
	if (rc || access(cat_path, F_OK) != 0 || (rc = out_catalog_open(dir, 1, &c, e)))
		return rc;
	rc = out_catalog_check(c, id, out_build_rev(), 0, verdict, e);
	out_catalog_close(c);
	return rc;
}
