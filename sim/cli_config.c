/* cli_config — `kvsim config show|doc|digest`: the resolved config as
 * loadable INI, the documentation of every key, or the config digest. */
#include <stdlib.h>
#include <string.h>

#include "sim/cfg.h"
#include "sim/cli.h"
#include "sim/cli_common.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: kvsim config show [CONFIG] [--set SECTION.KEY=VALUE]...\n"
	           "       kvsim config digest [CONFIG] [--set SECTION.KEY=VALUE]...\n"
	           "       kvsim config doc\n\n"
	           "  show     print the fully resolved config (every key, defaults included)\n"
	           "           as an INI file that 'kvsim run' and 'config show' accept back;\n"
	           "           a value set by [policy] preset has a '# from preset' comment\n"
	           "  digest   print the SHA-256 of the resolved config text (the digest\n"
	           "           recorded with each run)\n"
	           "  doc      print every key: section, name, type, default, range or\n"
	           "           choices, unit and a one-line description\n\n"
	           "options:\n");
	cli_cfg_help(f);
	fprintf(f, "  -h, --help                this help\n\n"
	           "Exit status: 0 ok, 1 runtime failure, 2 usage or input error\n"
	           "(unknown section or key, wrong type, out of range: FILE:LINE: [section] key: "
	           "reason).\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "kvsim: config: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nRun 'kvsim config --help' for usage.\n");
	return 2;
}

static int config_doc(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		return usage_error("doc: unexpected argument '%s'", argv[i]);
	}
	cfg_schema_t *s = cfg_schema_default();
	if (!s) {
		fprintf(stderr, "kvsim: config doc: cannot build the config schema\n");
		return 1;
	}
	int rc = cfg_write_doc(s, stdout);
	cfg_schema_free(s);
	return rc ? 1 : 0;
}

static int config_show(int argc, char **argv, int digest)
{
	const char **sets = calloc((size_t)argc + 1, sizeof *sets);
	if (!sets) {
		fprintf(stderr, "kvsim: out of memory\n");
		return 1;
	}
	cli_cfg_args_t a = {.sets = sets};
	err_t e = {0};
	int status = 0;
	for (int i = 1; i < argc;) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			goto out;
		}
		int r = cli_cfg_arg(&a, argc, argv, &i, &e);
		if (r < 0) {
			status = cli_fail(&e);
			goto out;
		}
		if (r == 0) {
			status = usage_error("unknown option '%s'", argv[i]);
			goto out;
		}
	}
	cfg_t *c;
	int rc = cli_load_config(a.path, a.sets, a.nsets, &c, &e);
	if (rc) {
		status = cli_fail(&e);
		goto out;
	}
	if (digest) {
		char d[65];
		cfg_digest(c, d);
		printf("%s\n", d);
	} else if (cfg_write_ex(c, stdout, CFG_WRITE_ORIGINS)) {
		fprintf(stderr, "kvsim: config show: write error\n");
		status = 1;
	}
	cli_config_free(c);
out:
	free(sets);
	return status;
}

int cli_config_main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(sub, "show"))
		return config_show(argc - 1, argv + 1, 0);
	if (!strcmp(sub, "digest"))
		return config_show(argc - 1, argv + 1, 1);
	if (!strcmp(sub, "doc"))
		return config_doc(argc - 1, argv + 1);
	return usage_error("unknown subcommand '%s' (show, digest, doc)", sub);
}
