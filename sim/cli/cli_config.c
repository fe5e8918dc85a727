/* cli_config — `kvsim config show|doc|digest`: the resolved config as
 * loadable INI, the documentation of every key, or the config digest. */
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "sim/base/cfg.h"
#include "sim/cli/cli.h"
#include "sim/cluster/cluster.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim_params.h"

/* Comments after the config on what its "engine default" and "auto" values
 * resolve to on the configured GPU (as the run resolves them). Nothing is
 * written when the specs cannot be loaded: the run will say why. */
static void show_resolved(const cfg_t *c)
{
	sim_params_t sp;
	mdl_hw_t hw;
	mdl_llm_t llm;
	mdl_compute_params_t cp;
	err_t e = {0};
	if (sim_params_fill(c, &sp, &e) || mdl_load_cfg(c, &hw, &llm, &cp, &e))
		return;
	uint32_t seqs, tokens;
	cluster_engine_defaults(sp.sched_mode, hw.name, hw.hbm_bytes, &seqs, &tokens);
	printf("\n# resolved when the run starts (comments, not part of the config):\n");
	if (!sp.max_num_seqs)
		printf("#   scheduler.max_num_seqs = 0: the engine's default on %s, %u\n", hw.name,
		       seqs);
	if (!sp.max_batched_tokens)
		printf("#   scheduler.max_batched_tokens = 0: the engine's default on %s, %u\n",
		       hw.name, tokens);
	printf("#   compute terms from: %s\n",
	       cp.calibration[0] ? cp.calibration : "the built-in defaults (models/mdl_cost.c)");
	if (cp.allreduce_impl == MDL_AR_AUTO) {
		sim_params_compute(&sp, &cp);
		printf("#   compute.allreduce = auto: %s under scheduler.mode = %s\n",
		       cp.allreduce_impl == MDL_AR_CUSTOM ? "custom" : "nccl",
		       cluster_sched_name(sp.sched_mode));
	}
	if (llm.layer_kind != MDL_LAYER_FULL) /* full-attention models: nothing to add */
		printf("#   KV per GPU at tp=%u: %llu bytes per token paged, %llu bytes fixed per "
		       "sequence (layers: %u full, %u sliding with a %u-token window, %u state; "
		       "models/mdl.h), the fixed part reserved by admission in blocks of the "
		       "paged size\n",
		       sp.tp, (unsigned long long)mdl_kv_paged_bytes_per_token_gpu(&llm, sp.tp),
		       (unsigned long long)mdl_kv_fixed_bytes_per_seq_gpu(&llm, sp.tp),
		       mdl_layers_full(&llm), mdl_layers_sliding(&llm), llm.window,
		       mdl_layers_state(&llm));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kvsim config show [CONFIG] [--set SECTION.KEY=VALUE]...\n"
	           "       kvsim config digest [CONFIG] [--set SECTION.KEY=VALUE]...\n"
	           "       kvsim config doc\n\n"
	           "  show     print the fully resolved config (every key, defaults included)\n"
	           "           as an INI file that 'kvsim run' and 'config show' accept back;\n"
	           "           a value set by [policy] preset has a '# from preset' comment,\n"
	           "           and closing comments say what engine defaults (0) and the\n"
	           "           compute calibration (auto) resolve to on the configured GPU\n"
	           "  digest   print the SHA-256 of the resolved config text (the digest\n"
	           "           recorded with each run)\n"
	           "  doc      print every key: section, name, type, default (and the default\n"
	           "           experiment's value where it differs), range or choices, unit,\n"
	           "           when it acts and a one-line description\n\n"
	           "options:\n");
	cli_cfg_help(f);
	fprintf(f, "  -h, --help                this help\n\n"
	           "Bad input (unknown section or key, wrong type, out of range) is reported\n"
	           "as FILE:LINE: [section] key: reason.\n");
	cli_help_end(f);
}

static int config_doc(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		}
		return cli_usage_error("unexpected argument '%s'", argv[i]);
	}
	/* the default experiment, to name its value where it is not the key's
	 * default (what `kvsim run` without a config uses) */
	cfg_t *c;
	err_t e = {0};
	if (cli_load_config_ex(NULL, NULL, 0, CLI_DEFAULT_EXPERIMENT | CLI_NO_WARNINGS, NULL, &c,
	                       &e))
		return cli_fail(&e);
	int rc = cfg_write_doc_ref(cfg_schema(c), c, "default experiment", stdout);
	cli_config_free(c);
	return rc ? 1 : 0;
}

static int config_show(int argc, char **argv, int digest)
{
	const char **sets = calloc((size_t)argc + 1, sizeof *sets);
	if (!sets)
		return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
	cli_cfg_args_t a = {.sets = sets};
	err_t e = {0};
	int status = 0;
	for (int i = 1; i < argc;) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			goto out;
		}
		int r = cli_cfg_arg(&a, argc, argv, &i, &e);
		if (r < 0) {
			status = cli_fail(&e);
			goto out;
		}
		if (r == 0) {
			status = cli_unknown_option(argv[i], usage);
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
		status = cli_fail(&(err_t){KS_EIO, "write error on standard output"});
	} else {
		show_resolved(c);
	}
	cli_config_free(c);
out:
	free(sets);
	return status;
}

int cli_config_main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("missing subcommand (show, digest, doc)");
	const char *sub = argv[1];
	if (cli_is_help(sub) || !strcmp(sub, "help")) {
		usage(stdout);
		return 0;
	}
	int which = !strcmp(sub, "show")     ? 0
	            : !strcmp(sub, "digest") ? 1
	            : !strcmp(sub, "doc")    ? 2
	                                     : -1;
	static const char *const subs[] = {"show", "digest", "doc"};
	if (which < 0)
		return cli_unknown_word("subcommand", sub, subs, 3);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "config %s", sub);
	cli_set_command(cmd);
	return which == 2 ? config_doc(argc - 1, argv + 1) : config_show(argc - 1, argv + 1, which);
}
