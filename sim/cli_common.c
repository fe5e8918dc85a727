/* cli_common — see cli_common.h. */
#include "sim/cli_common.h"
#include "policies/pol.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

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
		rc = cfg_load_file(c, path, e);
	} else if ((flags & CLI_DEFAULT_EXPERIMENT) && sim_default_experiment[0]) {
		rc = cfg_load_string(c, "<default experiment>", sim_default_experiment, e);
	}
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

int cli_fail(const err_t *e)
{
	fprintf(stderr, "kvsim: %s\n", e->msg);
	return err_exit_status(e->code);
}

void cli_cfg_help(FILE *f)
{
	fprintf(f,
	        "  CONFIG                    experiment INI file (default: the built-in\n"
	        "                            default experiment)\n"
	        "  -s, --set SECTION.KEY=VALUE\n"
	        "                            override one key after CONFIG; repeatable,\n"
	        "                            applied in order ('kvsim config doc' lists keys)\n");
}
