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

/* What `kvsim model cost` was asked: the config and its --set lines (a;
 * --gpu, --model and --hf-config become --set lines written into the
 * buffers), the TP (-1: the config's) and the batch (-1: not given). */
typedef struct cost_args {
	cli_cfg_args_t a;
	char gpu_set[MDL_NAME_MAX + 16], model_set[MDL_NAME_MAX + 16], hf_set[4200];
	long tp, prefill, decode, context;
} cost_args_t;

/* The model priced, resolved like a run's. */
typedef struct cost_model {
	mdl_hw_t hw;
	mdl_llm_t llm;
	mdl_compute_params_t p;
	mdl_hf_info_t hf;
	mdl_compute_t c;
	long tp;
} cost_model_t;

/* The options into c (c->a.sets has room for argc + 2 lines): -1 to go on,
 * else the exit status (help printed, or the error reported). */
static int cost_parse(int argc, char **argv, cost_args_t *c)
{
	err_t e = {0};
	int rc = 0;
	for (int i = 1; i < argc && !rc;) {
		const char *o = argv[i];
		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
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
				snprintf(c->gpu_set, sizeof c->gpu_set, "gpu.name=%s", v);
				c->a.sets[c->a.nsets++] = c->gpu_set;
			} else if (!strcmp(o, "--model")) {
				snprintf(c->model_set, sizeof c->model_set, "model.name=%s", v);
				c->a.sets[c->a.nsets++] = c->model_set;
			} else if (!strcmp(o, "--hf-config")) {
				if (strlen(v) > 4096) {
					rc = cli_usage_error("%s: path too long", o);
					continue;
				}
				snprintf(c->hf_set, sizeof c->hf_set, "model.hf_config=%s", v);
				c->a.sets[c->a.nsets++] = c->hf_set;
			} else if (!strcmp(o, "--tp")) {
				rc = whole(o, v, 1, 1024, &c->tp);
			} else if (!strcmp(o, "--prefill")) {
				rc = whole(o, v, 1, 1L << 30, &c->prefill);
			} else if (!strcmp(o, "--decode")) {
				rc = whole(o, v, 1, 1L << 20, &c->decode);
			} else {
				rc = whole(o, v, 0, 1L << 30, &c->context);
			}
			continue;
		}
		int k = cli_cfg_arg(&c->a, argc, argv, &i, &e);
		if (k < 0)
			return cli_fail(&e);
		if (!k)
			rc = cli_unknown_option(o, usage);
	}
	if (!rc && (c->prefill > 0) == (c->decode > 0))
		rc = cli_usage_error("give one of --prefill TOKENS or --decode BATCH");
	if (!rc && c->decode > 0 && c->context < 0)
		rc = cli_usage_error("--decode needs --context LEN");
	return rc ? rc : -1;
}

/* The model as a run resolves it: the config, then the arguments. */
static int cost_load(const cost_args_t *c, cost_model_t *m, err_t *e)
{
	cfg_t *cfg = NULL;
	int rc = cli_load_config_ex(c->a.path, c->a.sets, c->a.nsets,
	                            CLI_DEFAULT_EXPERIMENT | CLI_NO_WARNINGS, NULL, &cfg, e);
	if (!rc)
		rc = mdl_load_cfg_hf(cfg, &m->hw, &m->llm, &m->p, &m->hf, e);
	static sim_params_t sp; /* large */
	if (!rc && !(rc = sim_params_fill(cfg, &sp, e)))
		sim_params_compute(&sp, &m->p);
	m->tp = c->tp;
	if (!rc && m->tp < 0)
		m->tp = (long)sp.tp;
	if (!rc)
		rc = mdl_compute_init(&m->c, &m->hw, &m->llm, (uint32_t)m->tp, &m->p, e);
	cli_config_free(cfg);
	return rc;
}

/* The header, the terms (counted ones sum to the total) and the total of
 * the batch c asked for (cached tokens of context each). */
static void cost_print(const cost_args_t *c, uint32_t cached, const cost_model_t *m,
                       const mdl_iter_cost_t *r)
{
	const mdl_llm_t *llm = &m->llm;
	const mdl_compute_params_t *p = &m->p;
	printf("gpu %s\nmodel %s\ntp %ld\n", m->hw.name, llm->name, m->tp);
	/* the parameters and the width each part is stored at (mdl.h) */
	printf("params_total %llu\nparams_active %llu\n", (unsigned long long)llm->params_total,
	       (unsigned long long)llm->params_active);
	printf("weight_bytes attention_and_other %g experts %g embed %g\n", llm->weight_bytes,
	       llm->experts ? mdl_expert_weight_bytes(llm) : llm->weight_bytes,
	       mdl_embed_weight_bytes(llm));
	printf("weights_bytes_per_gpu %llu\n",
	       (unsigned long long)mdl_weights_bytes_per_gpu(llm, (uint32_t)m->tp));
	for (size_t i = 0; i < m->hf.n_uncosted; i++)
		printf("uncosted %s\n", m->hf.uncosted[i]);
	printf("kv_paged_bytes_per_token_gpu %llu\nkv_fixed_bytes_per_seq_gpu %llu\n",
	       (unsigned long long)mdl_kv_paged_bytes_per_token_gpu(llm, (uint32_t)m->tp),
	       (unsigned long long)mdl_kv_fixed_bytes_per_seq_gpu(llm, (uint32_t)m->tp));
	if (c->prefill > 0)
		printf("batch prefill %ld tokens after %u cached\n", c->prefill, cached);
	else
		printf("batch decode %ld sequences, context %u each\n", c->decode, cached);
	printf("cost_model %s\ncalibration %s\n", mdl_compute_model_name(p->model),
	       p->model == MDL_MODEL_LINEAR ? "(not used by the linear model)"
	       : p->calibration[0]          ? p->calibration
	                                    : "built-in defaults (models/mdl_cost.c)");
	printf("flops %.6g\nbytes_per_gpu %.6g\n", r->flops, r->bytes);
	int separated = p->model == MDL_MODEL_PROFILE || (p->model == MDL_MODEL_ROOFLINE && p->gemm_mfu > 0);
	double side_c = separated ? r->t_gemm_ns + r->t_attn_ns : r->t_compute_ns;
	double side_m = separated ? r->t_weight_ns + r->t_kv_ns : r->t_memory_ns;
	int mem_binds = side_m > side_c;
	double fixed_etc = r->t_fixed_ns + r->t_comm_ns + r->t_overhead_ns;
	/* what the roofline adds beyond its larger side (q-norm overlap, and the
	 * linear model's sum of both sides); ceil to whole ns in the total */
	double overlap = (double)r->total_ns - fixed_etc - (mem_binds ? side_m : side_c);
	struct {
		const char *name;
		double ns;
		int counted;
	} t[] = {
	    {"gemm", separated ? r->t_gemm_ns : r->t_compute_ns, !mem_binds},
	    {"attention", separated ? r->t_attn_ns : 0, !mem_binds},
	    {"weight_read", separated ? r->t_weight_ns : r->t_memory_ns, mem_binds},
	    {"kv_read_write", separated ? r->t_kv_ns : 0, mem_binds},
	    {"roofline_overlap", overlap, 1},
	    {"per_layer_fixed", r->t_fixed_ns, 1},
	    {"allreduce", r->t_comm_ns, 1},
	    {"iter_overhead", r->t_overhead_ns, 1},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		printf("term %-16s %12.6f %s\n", t[i].name, t[i].ns / 1e6,
		       t[i].counted ? "counted" : "hidden");
	printf("total %.6f\n", (double)r->total_ns / 1e6);
}

static int cmd_cost(int argc, char **argv)
{
	cost_args_t c = {.a = {NULL, calloc((size_t)argc + 3, sizeof(char *)), 0},
	                 .tp = -1, .prefill = -1, .decode = -1, .context = -1};
	static cost_model_t m; /* large (profile curves) */
	err_t e = {0};
	if (!c.a.sets)
		return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
	int rc = cost_parse(argc, argv, &c);
	if (rc >= 0) {
		free(c.a.sets);
		return rc;
	}
	rc = cost_load(&c, &m, &e);
	free(c.a.sets);
	if (rc)
		return cli_fail(&e);

	uint32_t n = (uint32_t)(c.prefill > 0 ? c.prefill : 0);
	uint32_t cached = (uint32_t)(c.context > 0 ? c.context : 0);
	uint32_t *ctx = NULL;
	mdl_batch_t b = {0};
	if (c.prefill > 0) {
		b = (mdl_batch_t){.n_prefill = 1, .prefill_new = &n, .prefill_cached = &cached};
	} else {
		ctx = malloc((size_t)c.decode * sizeof *ctx);
		if (!ctx)
			return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
		for (long i = 0; i < c.decode; i++)
			ctx[i] = cached;
		b = (mdl_batch_t){.n_decode = (size_t)c.decode, .decode_ctx = ctx};
	}
	mdl_iter_cost_t r;
	mdl_iter_cost(&m.c, &b, &r);
	free(ctx);
	cost_print(&c, cached, &m, &r);
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
