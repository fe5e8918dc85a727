/* out_inputs — the files a run reads, and their digests (see out_inputs.h). */
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/base/vec.h"
#include "sim/out/out_inputs.h"
#include "sim/run/sim_schema.h"
#include "traces/tr.h"

int out_file_sha256(const char *path, uint64_t *size, char hex[65], err_t *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, KS_EIO, "%s: cannot read: %s", path, strerror(errno));
	enum { CHUNK = 1 << 20 };
	uint8_t *buf = malloc(CHUNK), d[SHA256_DIGEST_SIZE];
	if (!buf) {
		close(fd);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	struct sha256_ctx h;
	sha256_init(&h);
	uint64_t total = 0;
	int rc = 0;
	for (;;) {
		ssize_t got = read(fd, buf, CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = err_set(e, KS_EIO, "%s: read failed: %s", path, strerror(errno));
			break;
		}
		if (got == 0)
			break;
		sha256_update(&h, (size_t)got, buf);
		total += (uint64_t)got;
	}
	free(buf);
	close(fd);
	if (rc)
		return rc;
	sha256_digest(&h, sizeof d, d);
	for (int b = 0; b < SHA256_DIGEST_SIZE; b++)
		snprintf(hex + 2 * b, 3, "%02x", d[b]);
	if (size)
		*size = total;
	return 0;
}

/* Values of a path key that name no file: [compute] calibration's
 * keywords (models/mdl_cfg.c). */
static int path_keyword(const char *v)
{
	return !strcmp(v, "auto") || !strcmp(v, "none");
}

int out_cfg_inputs(const cfg_t *cfg, out_input_fn fn, void *ctx, err_t *e)
{
	const cfg_schema_t *s = cfg_schema(cfg);
	int rc = 0;
	for (size_t i = 0; !rc && i < cfg_schema_count(s); i++) {
		const cfg_key_t *k = cfg_schema_key(s, i);
		if (k->type != CFG_STR || !k->unit || strcmp(k->unit, OUT_PATH_UNIT))
			continue;
		const char *v = cfg_str(cfg, k->section, k->name);
		if (!*v || path_keyword(v))
			continue;
		char key[256], path[4096];
		snprintf(key, sizeof key, "%s.%s", k->section, k->name);
		if (strchr(v, ',')) { /* a list (compute.profile): each taken as given */
			for (const char *p = v; !rc && *p;) {
				size_t len = strcspn(p, ",");
				snprintf(path, sizeof path, "%.*s", (int)len, p);
				if (*path)
					rc = fn(key, path, ctx);
				p += len + (p[len] == ',');
			}
		} else if (!(rc = cfg_path(cfg, k->section, k->name, path, sizeof path, e))) {
			rc = fn(key, path, ctx);
		}
	}
	return rc;
}

/* hex of path's content, or "missing" / "not a regular file" /
 * "unreadable: REASON" (the run then fails on it with its own message; the
 * identity still differs from that of any content). A FIFO or a device is
 * never opened: reading it would block or consume it. A regular file's
 * digest comes from the digest cache the traces keep (tr.h,
 * tr_file_sha256_cached: by path, size, mtime, device and inode, in this
 * process and across processes), so a sweep point of an unchanged trace
 * does not read the whole file again to name its inputs. */
static void input_digest(const char *path, char *out, size_t cap)
{
	struct stat sb;
	if (stat(path, &sb) < 0) {
		snprintf(out, cap, errno == ENOENT || errno == ENOTDIR ? "missing" : "unreadable: %s",
			 strerror(errno));
		return;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(out, cap, "not a regular file");
		return;
	}
	char hex[65];
	err_t e = {0};
	if (tr_file_sha256_cached(path, hex, &e)) {
		snprintf(out, cap, "unreadable: %s", e.msg);
		return;
	}
	snprintf(out, cap, "%s", hex);
}

typedef struct inputs_text {
	char *p;
	size_t len, cap;
	int oom;
} inputs_text_t;

static int add_input_line(inputs_text_t *t, const char *key, const char *path,
			  const char *digest)
{
	size_t n = strlen(key) + strlen(path) + strlen(digest) + 4;
	if (VEC_GROW(t->p, t->cap, t->len + n + 1, 256)) {
		t->oom = 1;
		return KS_ENOMEM;
	}
	t->len += (size_t)snprintf(t->p + t->len, t->cap - t->len, "%s %s %s\n", key, path,
				   digest);
	return 0;
}

static int collect_input(const char *key, const char *path, void *ctx)
{
	char digest[1200];
	input_digest(path, digest, sizeof digest);
	return add_input_line(ctx, key, path, digest);
}

int out_point_inputs(const cfg_t *cfg, const char *const *extra, size_t n_extra, char **text,
		     err_t *e)
{
	inputs_text_t t = {0};
	*text = NULL;
	int rc = out_cfg_inputs(cfg, collect_input, &t, e);
	for (size_t i = 0; !rc && i < n_extra; i++)
		rc = collect_input("plugin", extra[i], &t);
	if (!rc && !t.p && !(t.p = strdup("")))
		t.oom = 1;
	if (t.oom) {
		free(t.p);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	if (rc) {
		free(t.p);
		return rc;
	}
	*text = t.p;
	return 0;
}

static int count_input(const char *key, const char *path, void *ctx)
{
	(void)key;
	(void)path;
	++*(size_t *)ctx;
	return 0;
}

int out_config_reads_files(const char *config_text)
{
	if (!config_text || !*config_text)
		return 0; /* the built-in default experiment: generated traffic */
	cfg_schema_t *s = cfg_schema_default();
	cfg_t *c = s ? cfg_new(s) : NULL;
	err_t e = {0};
	size_t n = 0;
	int rc = -1;
	if (c) {
		cfg_schema_set_warnings(s, NULL);
		rc = cfg_load_string(c, "catalog", config_text, &e);
		if (!rc)
			rc = out_cfg_inputs(c, count_input, &n, &e);
	}
	cfg_free(c);
	cfg_schema_free(s);
	return rc ? 1 : n > 0; /* a config that no longer loads cannot be verified */
}

