/* mdl_cli — `kvsim model cost`: what the compute model predicts for one
 * iteration, and its breakdown into terms (models/mdl_cost.c).
 *
 * The model is resolved like a run's: the built-in experiment (or CONFIG),
 * then --set, then --gpu/--model/--tp, so compute.calibration = auto loads
 * the GPU's shipped calibration exactly as `kvsim run` does.
 *
 * Output: a header (with the model's KV sizes per GPU: bytes per token of
 * the paged layers, and the fixed bytes a sequence holds beyond them in
 * sliding windows and state layers, mdl.h), then one line per term
 *   term NAME MS counted|hidden
 * where the counted terms sum to the total (the side of the roofline that
 * binds, the roofline overlap when the sides combine as a q-norm, fixed
 * kernels, all-reduce, overhead) and hidden terms are the other side, which
 * overlaps; then "total MS".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_cfg.h"
#include "models/mdl_hf.h"
#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim_params.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: kvsim model cost [--gpu NAME] [--model NAME | --hf-config PATH] [--tp N]\n"
	           "                  (--prefill TOKENS [--context N] | --decode BATCH --context LEN)\n"
	           "                  [CONFIG] [--set SECTION.KEY=VALUE]...\n\n"
	           "Prints the compute model's time for one iteration holding one prefill chunk\n"
	           "of TOKENS new tokens after N cached ones, or BATCH decode steps with LEN\n"
	           "tokens of context each, and its terms: GEMMs, attention, weight read, KV\n"
	           "read/write, per-layer fixed kernels, all-reduce, iteration overhead. The\n"
	           "terms marked counted sum to the total; those marked hidden are the other\n"
	           "side of the roofline, overlapped. GPU, model, TP and [compute] come from\n"
	           "the default experiment (or CONFIG and --set) unless given. --hf-config\n"
	           "reads a Hugging Face config.json (as --set model.hf_config=PATH); the\n"
	           "header then names each part of it that is not costed (uncosted ...).\n\n");
	cli_cfg_help(f);
	cli_help_end(f);
}

static int whole(const char *opt, const char *v, long lo, long hi, long *out)
{
	char *end;
	long x = strtol(v, &end, 10);
	if (end == v || *end || x < lo || x > hi)
		return cli_usage_error("%s: bad value '%s' (a whole number %ld..%ld)", opt, v, lo,
		                       hi);
	*out = x;
	return 0;
}

static int cmd_cost(int argc, char **argv)
{
	const char **sets = calloc((size_t)argc + 3, sizeof *sets);
	char gpu_set[MDL_NAME_MAX + 16], model_set[MDL_NAME_MAX + 16], hf_set[4200];
	cli_cfg_args_t a = {NULL, sets, 0};
	long tp = -1, prefill = -1, decode = -1, context = -1;
	err_t e = {0};
	int rc = 0;
	if (!sets)
		return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
	for (int i = 1; i < argc && !rc;) {
		const char *o = argv[i];
		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
			free(sets);
			return 0;
		}
		int is_opt = !strcmp(o, "--gpu") || !strcmp(o, "--model") || !strcmp(o, "--tp") ||
		             !strcmp(o, "--hf-config") ||
		             !strcmp(o, "--prefill") || !strcmp(o, "--decode") ||
		             !strcmp(o, "--context");
		if (is_opt) {
			if (i + 1 >= argc) {
				rc = cli_usage_error("%s: missing value", o);
				break;
			}
			const char *v = argv[i + 1];
			i += 2;
			if (!strcmp(o, "--gpu")) {
				snprintf(gpu_set, sizeof gpu_set, "gpu.name=%s", v);
				sets[a.nsets++] = gpu_set;
			} else if (!strcmp(o, "--model")) {
				snprintf(model_set, sizeof model_set, "model.name=%s", v);
				sets[a.nsets++] = model_set;
			} else if (!strcmp(o, "--hf-config")) {
				if (strlen(v) > 4096) {
					rc = cli_usage_error("%s: path too long", o);
					continue;
				}
				snprintf(hf_set, sizeof hf_set, "model.hf_config=%s", v);
				sets[a.nsets++] = hf_set;
			} else if (!strcmp(o, "--tp")) {
				rc = whole(o, v, 1, 1024, &tp);
			} else if (!strcmp(o, "--prefill")) {
				rc = whole(o, v, 1, 1L << 30, &prefill);
			} else if (!strcmp(o, "--decode")) {
				rc = whole(o, v, 1, 1L << 20, &decode);
			} else {
				rc = whole(o, v, 0, 1L << 30, &context);
			}
			continue;
		}
		int k = cli_cfg_arg(&a, argc, argv, &i, &e);
		if (k < 0) {
			free(sets);
			return cli_fail(&e);
		}
		if (!k)
			rc = cli_unknown_option(o, usage);
	}
	if (!rc && (prefill > 0) == (decode > 0))
		rc = cli_usage_error("give one of --prefill TOKENS or --decode BATCH");
	if (!rc && decode > 0 && context < 0)
		rc = cli_usage_error("--decode needs --context LEN");
	if (rc) {
		free(sets);
		return rc;
	}
	cfg_t *cfg = NULL;
	mdl_hw_t hw;
	mdl_llm_t llm;
	mdl_compute_params_t p;
	mdl_hf_info_t hf;
	static mdl_compute_t c; /* large (profile curves) */
	rc = cli_load_config_ex(a.path, sets, a.nsets, CLI_DEFAULT_EXPERIMENT | CLI_NO_WARNINGS,
	                        NULL, &cfg, &e);
	free(sets);
	if (!rc)
		rc = mdl_load_cfg_hf(cfg, &hw, &llm, &p, &hf, &e);
	static sim_params_t sp; /* large */
	if (!rc && !(rc = sim_params_fill(cfg, &sp, &e)))
		sim_params_compute(&sp, &p);
	if (!rc && tp < 0)
		tp = (long)cfg_int(cfg, "cluster", "tp");
	const char *model = rc ? "" : cfg_str(cfg, "compute", "model");
	char model_name[16];
	snprintf(model_name, sizeof model_name, "%s", model);
	if (!rc)
		rc = mdl_compute_init(&c, &hw, &llm, (uint32_t)tp, &p, &e);
	cli_config_free(cfg);
	if (rc)
		return cli_fail(&e);

	uint32_t n = (uint32_t)(prefill > 0 ? prefill : 0);
	uint32_t cached = (uint32_t)(context > 0 ? context : 0);
	uint32_t *ctx = NULL;
	mdl_batch_t b = {0};
	if (prefill > 0) {
		b = (mdl_batch_t){.n_prefill = 1, .prefill_new = &n, .prefill_cached = &cached};
	} else {
		ctx = malloc((size_t)decode * sizeof *ctx);
		if (!ctx)
			return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
		for (long i = 0; i < decode; i++)
			ctx[i] = cached;
		b = (mdl_batch_t){.n_decode = (size_t)decode, .decode_ctx = ctx};
	}
	mdl_iter_cost_t r;
	mdl_iter_cost(&c, &b, &r);
	free(ctx);

	printf("gpu %s\nmodel %s\ntp %ld\n", hw.name, llm.name, tp);
	/* the parameters and the width each part is stored at (mdl.h) */
	printf("params_total %llu\nparams_active %llu\n", (unsigned long long)llm.params_total,
	       (unsigned long long)llm.params_active);
	printf("weight_bytes attention_and_other %g experts %g embed %g\n", llm.weight_bytes,
	       llm.experts ? mdl_expert_weight_bytes(&llm) : llm.weight_bytes,
	       mdl_embed_weight_bytes(&llm));
	printf("weights_bytes_per_gpu %llu\n",
	       (unsigned long long)mdl_weights_bytes_per_gpu(&llm, (uint32_t)tp));
	for (size_t i = 0; i < hf.n_uncosted; i++)
		printf("uncosted %s\n", hf.uncosted[i]);
	printf("kv_paged_bytes_per_token_gpu %llu\nkv_fixed_bytes_per_seq_gpu %llu\n",
	       (unsigned long long)mdl_kv_paged_bytes_per_token_gpu(&llm, (uint32_t)tp),
	       (unsigned long long)mdl_kv_fixed_bytes_per_seq_gpu(&llm, (uint32_t)tp));
	if (prefill > 0)
		printf("batch prefill %ld tokens after %u cached\n", prefill, cached);
	else
		printf("batch decode %ld sequences, context %u each\n", decode, cached);
	printf("cost_model %s\ncalibration %s\n", model_name,
	       p.model == MDL_MODEL_LINEAR ? "(not used by the linear model)"
	       : p.calibration[0]          ? p.calibration
	                                   : "built-in defaults (models/mdl_cost.c)");
	printf("flops %.6g\nbytes_per_gpu %.6g\n", r.flops, r.bytes);
	int separated = p.model == MDL_MODEL_PROFILE || (p.model == MDL_MODEL_ROOFLINE && p.gemm_mfu > 0);
	double side_c = separated ? r.t_gemm_ns + r.t_attn_ns : r.t_compute_ns;
	double side_m = separated ? r.t_weight_ns + r.t_kv_ns : r.t_memory_ns;
	int mem_binds = side_m > side_c;
	double fixed_etc = r.t_fixed_ns + r.t_comm_ns + r.t_overhead_ns;
	/* what the roofline adds beyond its larger side (q-norm overlap, and the
	 * linear model's sum of both sides); ceil to whole ns in the total */
	double overlap = (double)r.total_ns - fixed_etc - (mem_binds ? side_m : side_c);
	struct {
		const char *name;
		double ns;
		int counted;
	} t[] = {
	    {"gemm", separated ? r.t_gemm_ns : r.t_compute_ns, !mem_binds},
	    {"attention", separated ? r.t_attn_ns : 0, !mem_binds},
	    {"weight_read", separated ? r.t_weight_ns : r.t_memory_ns, mem_binds},
	    {"kv_read_write", separated ? r.t_kv_ns : 0, mem_binds},
	    {"roofline_overlap", overlap, 1},
	    {"per_layer_fixed", r.t_fixed_ns, 1},
	    {"allreduce", r.t_comm_ns, 1},
	    {"iter_overhead", r.t_overhead_ns, 1},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		printf("term %-16s %12.6f %s\n", t[i].name, t[i].ns / 1e6,
		       t[i].counted ? "counted" : "hidden");
	printf("total %.6f\n", (double)r.total_ns / 1e6);
	return 0;
}

int mdl_cli_main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("missing command (cost)");
	if (cli_is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "cost"))
		return cli_usage_error("unknown command '%s' (cost)", argv[1]);
	cli_set_command("model cost");
	return cmd_cost(argc - 1, argv + 1);
}
