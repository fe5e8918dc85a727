/* cli_common — see cli_common.h. */
#include "sim/run/cli_common.h"
#include "policies/pol.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/run/sim.h"
#include "sim/run/sim_schema.h"

int cli_cfg_arg(cli_cfg_args_t *a, int argc, char **argv, int *i, err_t *e)
{
	const char *arg = argv[*i];
	if (!strcmp(arg, "--set") || !strcmp(arg, "-s")) {
		if (*i + 1 >= argc)
			return err_set(e, KS_EINPUT, "%s needs SECTION.KEY=VALUE", arg);
		a->sets[a->nsets++] = argv[*i + 1];
		*i += 2;
		return 1;
	}
	if (!strncmp(arg, "--set=", 6)) {
		a->sets[a->nsets++] = arg + 6;
		*i += 1;
		return 1;
	}
	if (arg[0] != '-' || !strcmp(arg, "-")) {
		if (a->path)
			return err_set(e, KS_EINPUT, "more than one CONFIG given ('%s', '%s')",
			               a->path, arg);
		a->path = arg;
		*i += 1;
		return 1;
	}
	return 0;
}

/* Whether one of sets gives trace.path a non-empty value (spaces around the
 * key and value ignored, as cfg_set does). */
static int sets_trace_path(const char *const *sets, int nsets)
{
	for (int k = 0; k < nsets; k++) {
		const char *a = sets[k] + strspn(sets[k], " \t");
		if (strncmp(a, "trace.path", 10))
			continue;
		a += 10 + strspn(a + 10, " \t");
		if (*a == '=' && a[1 + strspn(a + 1, " \t")])
			return 1;
	}
	return 0;
}

/* Whether any key of c holds a value that was set (not its default). */
static int sets_any_key(const cfg_t *c)
{
	const cfg_schema_t *s = cfg_schema(c);
	for (size_t i = 0; i < cfg_schema_count(s); i++) {
		const cfg_key_t *k = cfg_schema_key(s, i);
		if (strcmp(cfg_origin(c, k->section, k->name), "default"))
			return 1;
	}
	return 0;
}

/* The built-in experiment, or (own_trace) the same without its [trace]
 * section: a trace file given with --set replaces the generated traffic,
 * and none of the generator's or prefix model's keys apply to the file. */
static int load_default_experiment(cfg_t *c, int own_trace, err_t *e)
{
	const char *origin = CFG_ORIGIN_DEFAULT_EXPERIMENT;
	if (!own_trace)
		return cfg_load_string(c, origin, sim_default_experiment, e);
	char *t = malloc(strlen(sim_default_experiment) + 1);
	if (!t)
		return err_set(e, KS_ENOMEM, "out of memory");
	size_t m = 0;
	int skip = 0;
	for (const char *p = sim_default_experiment; *p;) {
		size_t len = strcspn(p, "\n");
		len += p[len] == '\n';
		if (*p == '[')
			skip = !strncmp(p, "[trace]", 7);
		if (!skip) {
			memcpy(t + m, p, len);
			m += len;
		}
		p += len;
	}
	t[m] = '\0';
	int rc = cfg_load_string(c, origin, t, e);
	free(t);
	return rc;
}

/* How many files deep a chain of bases may go (a file naming itself, or two
 * naming each other, stops here). */
#define BASE_DEPTH 8

/* What a config file says about its own loading, read from its lines alone
 * (peek) before anything is loaded under it. By key name, on purpose, and
 * only here: the base decides which config the file's values go over, so it
 * is read before that config, its preset and the schema's checks exist,
 * while cfg_fill reads a finished config; and [experiment] base is a
 * directive to the loader (CFG_LOAD) with no typed field to fill. */
typedef struct file_base {
	const char *name;  /* [experiment] base as written: "" none, "default" or a file */
	char path[4096];   /* that file, resolved beside the config (cfg_path) */
	char origin[4200]; /* "FILE:LINE: [experiment] base", for messages */
	int sets_trace;    /* the file gives [trace] path */
} file_base_t;

static int file_base_read(const cfg_t *peek, file_base_t *b, err_t *e)
{
	int rc = cfg_path(peek, "experiment", "base", b->path, sizeof b->path, e);
	if (rc)
		return rc;
	b->name = cfg_str(peek, "experiment", "base");
	snprintf(b->origin, sizeof b->origin, "%s: [experiment] base",
	         cfg_origin(peek, "experiment", "base"));
	b->sets_trace = *cfg_str(peek, "trace", "path") != '\0';
	return 0;
}

/* Loads the config file at path into c over what its [experiment] base
 * names: the default experiment, or another file loaded the same way
 * first. own_trace: a file above this one or a --set gives trace.path.
 * named_by: the place of the base line that names path (NULL for the
 * command line's CONFIG), which prefixes the errors of reading path. */
static int load_file_over_base(cfg_t *c, const char *path, const char *named_by, int own_trace,
                               int depth, err_t *e)
{
	cfg_t *peek = cfg_new(cfg_schema(c));
	if (!peek)
		return err_set(e, KS_ENOMEM, "out of memory");
	file_base_t b;
	int rc = cfg_load_file(peek, path, e), own = rc;
	if (!rc)
		rc = own = file_base_read(peek, &b, e);
	if (!rc && *b.name) {
		own_trace |= b.sets_trace;
		if (!strcmp(b.name, "default"))
			rc = load_default_experiment(c, own_trace, e);
		else if (depth + 1 >= BASE_DEPTH)
			rc = err_set(e, KS_EINPUT,
			             "%s: '%s': more than %d files deep (does a base name a file that "
			             "names it back?)",
			             b.origin, b.name, BASE_DEPTH);
		else
			rc = load_file_over_base(c, b.path, b.origin, own_trace, depth + 1, e);
	}
	cfg_free(peek);
	if (!rc)
		rc = own = cfg_load_file(c, path, e);
	if (own && named_by)
		err_prefix(e, "%s", named_by);
	return rc;
}

int cli_load_config(const char *path, const char *const *sets, int nsets, cfg_t **out, err_t *e)
{
	return cli_load_config_ex(path, sets, nsets, CLI_DEFAULT_EXPERIMENT, NULL, out, e);
}

int cli_load_config_ex(const char *path, const char *const *sets, int nsets, int flags,
		       const pol_registry_t *reg, cfg_t **out, err_t *e)
{
	*out = NULL;
	cfg_schema_t *s = cfg_schema_default();
	if (!s)
		return err_set(e, KS_ERUNTIME, "cannot build the config schema");
	if (reg && pol_cfg_register_plugins(s, reg, e)) {
		cfg_schema_free(s);
		return e->code;
	}
	if (flags & CLI_NO_WARNINGS)
		cfg_schema_set_warnings(s, NULL);
	cfg_t *c = cfg_new(s);
	if (!c) {
		cfg_schema_free(s);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	int rc = 0;
	if (path && !strcmp(path, "-")) {
		rc = err_set(e, KS_EINPUT, "reading a config from standard input is not supported");
	} else if (path) {
		rc = load_file_over_base(c, path, NULL, sets_trace_path(sets, nsets), 0, e);
	}
	/* A file that sets no key (empty, or only comments and headers) is no
	 * experiment of its own: it means what no file means. */
	if (!rc && (flags & CLI_DEFAULT_EXPERIMENT) && sim_default_experiment[0] &&
	    (!path || !sets_any_key(c)))
		rc = load_default_experiment(c, sets_trace_path(sets, nsets), e);
	for (int k = 0; !rc && k < nsets; k++)
		rc = cfg_set(c, sets[k], e);
	if (!rc)
		rc = cfg_finalize(c, e);
	if (rc) {
		cfg_free(c);
		cfg_schema_free(s);
		return rc;
	}
	*out = c;
	return 0;
}

void cli_config_free(cfg_t *c)
{
	if (!c)
		return;
	/* The schema was made for this config alone in cli_load_config. */
	cfg_schema_t *s = (cfg_schema_t *)cfg_schema(c);
	cfg_free(c);
	cfg_schema_free(s);
}

void cli_progress_line(char *buf, size_t n, const sim_progress_t *p, double elapsed_s)
{
	int len = snprintf(buf, n, "kvsim%s%s: %.1f s simulated, %llu requests done (%llu arrived)",
	                   *cli_command() ? " " : "", cli_command(), (double)p->now_ns / 1e9,
	                   (unsigned long long)p->finished, (unsigned long long)p->arrived);
	if (len < 0 || (size_t)len >= n || !(p->fraction >= 0))
		return;
	double f = p->fraction > 1 ? 1 : p->fraction;
	len += snprintf(buf + len, n - (size_t)len, ", %.0f%%", 100 * f);
	if ((size_t)len >= n || !(f > 0.001) || !(elapsed_s >= 0))
		return;
	/* the rest at the rate so far */
	long eta = lround(elapsed_s * (1 - f) / f);
	if (eta >= 3600)
		snprintf(buf + len, n - (size_t)len, ", ETA %ld:%02ld:%02ld", eta / 3600,
		         eta / 60 % 60, eta % 60);
	else
		snprintf(buf + len, n - (size_t)len, ", ETA %ld:%02ld", eta / 60, eta % 60);
}

int cli_progress_wanted(int asked, int quiet)
{
	return asked >= 0 ? asked : !quiet && isatty(STDERR_FILENO);
}

void cli_cfg_help(FILE *f)
{
	fprintf(f,
	        "  CONFIG                    experiment INI file (default, and for a file\n"
	        "                            that sets no key: the built-in default\n"
	        "                            experiment); one that says [experiment]\n"
	        "                            base = default changes that experiment as\n"
	        "                            --set would; relative paths in it name files\n"
	        "                            beside it when they are there\n"
	        "  -s, --set SECTION.KEY=VALUE\n"
	        "                            override one key after CONFIG; repeatable,\n"
	        "                            applied in order ('kvsim config doc' lists keys);\n"
	        "                            without CONFIG, --set trace.path=FILE runs the\n"
	        "                            default experiment on FILE instead of its\n"
	        "                            generated traffic\n");
}
