/* tr_cli — `kvsim trace`: stats, gen, convert, validate, reuse. Options are
 * [trace] config keys given as --set trace.KEY=VALUE or, shorter, KEY=VALUE;
 * a CONFIG file may be given with --config. Exit 0 ok, 1 runtime, 2 input. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/file.h"
#include "sim/cli/cli.h"
#include "sim/cli/cli_sub.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim_params.h"
#include "traces/tr.h"
#include "traces/tr_reuse.h"
#include "traces/tr_sess.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: kvsim trace stats FILE [options]     describe a trace\n"
	    "       kvsim trace gen KIND -o OUT [options] write a synthetic trace (native format)\n"
	    "       kvsim trace convert FILE -o OUT [options]  rewrite any trace as native\n"
	    "       kvsim trace validate FILE [options]  read it fully; print speed and memory\n"
	    "       kvsim trace reuse FILE [options]     LRU reuse distances, miss-ratio curves,\n"
	    "                                            hot prefixes, think-time gaps\n"
	    "\n"
	    "FILE formats: mooncake, bailian (JSONL), burstgpt, azure (CSV), native, servegen\n"
	    "(a ServeGen windows CSV, generated from); detected from the first line.\n"
	    "Any of them may be gzip-compressed (FILE.gz), read as it is.\n"
	    "KIND:");
	for (int g = 0; g < TR_GEN_N; g++) { /* TR_GEN_LIST, but a closed loop (made in a run) */
		tr_opts_t o = {.kind = TR_KIND_GEN, .gen = (tr_gen_kind_t)g};
		if (!tr_closed_loop(&o))
			fprintf(f, " %s", tr_gen_name(o.gen));
	}
	fprintf(
	    f,
	    ".\n"
	    "\n"
	    "options:\n"
	    "  --kind K            force the format (trace.kind)\n"
	    "  --json              stats: one JSON object instead of a table\n"
	    "  --no-reuse          stats: skip prefix reuse (constant memory)\n"
	    "  --block-tokens N    simulated block size for block ids (default: the trace's\n"
	    "                      own, else kvcache.block_tokens)\n"
	    "  --seed N            seed for generators and prefix models (experiment.seed)\n"
	    "  -o, --output OUT    output file for gen/convert ('-' = stdout)\n"
	    "  --instances N       reuse: instances for the per-instance curve, requests\n"
	    "                      round-robin (default: the config's cluster)\n"
	    "  --sample R          reuse: SHARDS spatial sampling at rate R in (0, 1]\n"
	    "                      (default 1, exact)\n"
	    "  --h5 OUT.h5         reuse: write the analysis as HDF5\n"
	    "  --png OUT.png       reuse: plot it (needs --h5; analysis/plot_reuse.py)\n"
	    "  --config FILE       read [trace] (and other) keys from an INI file\n"
	    "  --set trace.KEY=V   set any [trace] key; KEY=V alone means the same\n"
	    "\n"
	    "examples:\n"
	    "  kvsim trace stats conversation_trace.jsonl --json\n"
	    "  kvsim trace stats window.jsonl.gz trace_block_tokens=256\n"
	    "  kvsim trace gen gamma rate=20 cv=3 duration_s=600 -o bursty.tsv\n"
	    "  kvsim trace gen fanout fanout_bursts=5 fanout_size=64 -o fan.tsv\n"
	    "  kvsim trace gen crowd crowd_prefix_tokens=32768 crowd_lead_s=5 -o crowd.tsv\n"
	    "  kvsim trace convert BurstGPT_1.csv prefix_shared_prob=0.5 -o burst.tsv\n"
	    "  kvsim trace stats AzureLLMInferenceTrace_conv.csv start_s=600 end_s=1200\n"
	    "  kvsim trace reuse conversation_trace.jsonl --h5 reuse.h5 --png reuse.png\n"
	    "\n"
	    "Every key: kvsim config doc (section [trace]).\n");
	cli_help_end(f);
}

/* A [trace] assignment and the argument it came from, which labels its
 * errors and becomes its origin: "--set", or "KEY=V" as typed. */
typedef struct targ {
	const char *set, *label;
} targ_t;

typedef struct args {
	const char *cmd, *file, *out, *config, *kind, *h5, *png;
	int json, no_reuse;
	long long block_tokens, seed, instances;
	double sample;
	targ_t *sets;
	int nsets;
} args_t;

static int parse(int argc, char **argv, args_t *a, err_t *e)
{
	a->block_tokens = -1;
	a->seed = -1;
	a->instances = -1;
	a->sample = 1;
	a->sets = calloc((size_t)argc + 4, sizeof *a->sets);
	if (!a->sets)
		return err_set(e, KS_ENOMEM, "out of memory");
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                                                     \
	do {                                                                                       \
		if (!v)                                                                            \
			return err_set(e, KS_EINPUT, "%s needs a value", s);                       \
		i++;                                                                               \
	} while (0)
		if (!strcmp(s, "--json")) {
			a->json = 1;
		} else if (!strcmp(s, "--no-reuse") || !strcmp(s, "--quiet")) {
			a->no_reuse = 1;
		} else if (!strcmp(s, "--kind")) {
			NEED();
			a->kind = v;
		} else if (!strcmp(s, "-o") || !strcmp(s, "--output")) {
			NEED();
			a->out = v;
		} else if (!strcmp(s, "--config")) {
			NEED();
			a->config = v;
		} else if (!strcmp(s, "--h5") || !strcmp(s, "--png")) {
			NEED();
			*(s[2] == 'h' ? &a->h5 : &a->png) = v;
		} else if (!strcmp(s, "--sample")) {
			NEED();
			char *end;
			errno = 0;
			a->sample = strtod(v, &end);
			if (errno || end == v || *end || !(a->sample > 0 && a->sample <= 1))
				return err_set(e, KS_EINPUT, "--sample: '%s' is not a rate in (0, 1]",
				               v);
		} else if (!strcmp(s, "--instances")) {
			NEED();
			int64_t x;
			if (cfg_parse_whole(v, 0, 1, 65536, &x))
				return err_set(e, KS_EINPUT,
				               "--instances: '%s' is not a whole number in [1, 65536]", v);
			a->instances = x;
		} else if (!strcmp(s, "--block-tokens") || !strcmp(s, "--seed")) {
			NEED();
			/* the ranges of kvcache.block_tokens and experiment.seed */
			int blk = s[2] == 'b';
			int64_t x, lo = blk ? 1 : 0, hi = blk ? 65536 : 9200000000000000000LL;
			int r = cfg_parse_whole(v, 0, lo, hi, &x);
			if (r == CFG_NOT_WHOLE)
				return err_set(e, KS_EINPUT, "%s: '%s' is not a whole number",
				               s, v);
			if (r == CFG_OUT_OF_RANGE)
				return err_set(e, KS_EINPUT,
				               "%s: '%s' is out of range [%lld, %lld]", s, v,
				               (long long)lo, (long long)hi);
			*(blk ? &a->block_tokens : &a->seed) = x;
		} else if (!strcmp(s, "--set") || !strcmp(s, "-s")) {
			NEED();
			a->sets[a->nsets++] = (targ_t){v, "--set"};
		} else if (!strncmp(s, "--set=", 6)) {
			a->sets[a->nsets++] = (targ_t){s + 6, "--set"};
		} else if (s[0] == '-' && s[1]) {
			char near[64];
			if (cli_option_near(s, usage, near, sizeof near))
				return err_set(e, KS_EINPUT, "unknown option '%s' (did you mean '%s'?)",
				               s, near);
			return err_set(e, KS_EINPUT, "unknown option '%s'", s);
		} else if (strchr(s, '=')) {
			a->sets[a->nsets++] = (targ_t){s, s};
		} else if (!a->file) {
			a->file = s;
		} else {
			return err_set(e, KS_EINPUT, "unexpected argument '%s'", s);
		}
#undef NEED
	}
	return 0;
}

/* cfg_set_as on "trace.KEY=V" for "KEY=V" (a dotted key is taken whole). */
static int set_arg(cfg_t *c, const char *key, const char *val, const char *label, err_t *e)
{
	const char *eq = strchr(key, '=');
	const char *dot = strchr(key, '.');
	int qualified = val == NULL && dot && eq && dot < eq;
	size_t n = strlen(key) + (val ? strlen(val) : 0) + 8;
	char *q = malloc(n);
	if (!q)
		return err_set(e, KS_ENOMEM, "out of memory");
	if (val)
		snprintf(q, n, "trace.%s=%s", key, val);
	else
		snprintf(q, n, "%s%s", qualified ? "" : "trace.", key);
	int rc = cfg_set_as(c, q, label, e);
	free(q);
	return rc;
}

/* Schema defaults, not the default experiment (FILE is the trace), then
 * --config, the command's own keys and the arguments in order. */
static int load(args_t *a, cfg_t **cfg, err_t *e)
{
	int rc = cli_load_config_ex(a->config, NULL, 0, 0, NULL, cfg, e);
	if (rc)
		return rc;
	cfg_t *c = *cfg;
	if (!strcmp(a->cmd, "gen")) {
		rc = set_arg(c, "kind", "gen", a->file, e);
		if (!rc)
			rc = set_arg(c, "gen", a->file, a->file, e);
	} else {
		rc = set_arg(c, "path", a->file, a->file, e);
		if (!rc)
			rc = set_arg(c, "kind", a->kind ? a->kind : "auto", "--kind", e);
	}
	for (int i = 0; !rc && i < a->nsets; i++)
		rc = set_arg(c, a->sets[i].set, NULL, a->sets[i].label, e);
	return rc ? rc : cfg_finalize(c, e);
}

static uint32_t block_size(const args_t *a, const sim_params_t *sp, const tr_opts_t *o, err_t *e,
                           int *rc)
{
	*rc = 0;
	if (a->block_tokens > 0)
		return (uint32_t)a->block_tokens;
	uint32_t def = sp->block_tokens;
	if (o->kind == TR_KIND_GEN)
		return def;
	tr_reader_t *r;
	if ((*rc = tr_open(o, def, 0, &r, e)))
		return 0;
	uint32_t t = tr_trace_block_tokens(r);
	tr_close(r);
	return t ? t : def;
}

/* The plot script: $KVSIM_PLOT_REUSE, else analysis/plot_reuse.py beside
 * the binary's build folder, else in the installed share/kvsim. */
static void plot_script(char *out, size_t n)
{
	const char *env = getenv("KVSIM_PLOT_REUSE");
	if (env && *env) {
		snprintf(out, n, "%s", env);
		return;
	}
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[k > 0 ? k : 0] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(out, n, "%s/../analysis/plot_reuse.py", exe);
	if (access(out, R_OK))
		snprintf(out, n, "%s/../share/kvsim/analysis/plot_reuse.py", exe);
}

/* plot_reuse.py H5 PNG, run by its own #! line (Debian's python3, whose
 * h5py and matplotlib the bootstrap installs); 0 when it exits 0. */
static int plot_png(const char *h5, const char *png, err_t *e)
{
	char script[4200];
	plot_script(script, sizeof script);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return err_set(e, KS_EIO, "--png: fork: %s", strerror(errno));
	if (!pid) {
		execl(script, script, h5, png, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return err_set(e, KS_EIO, "--png: %s %s %s failed", script, h5, png);
	return 0;
}

static long peak_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int run(args_t *a, err_t *e)
{
	cfg_t *cfg = NULL;
	int rc;
	tr_reader_t *r = NULL;
	tr_writer_t *w = NULL;
	if ((rc = load(a, &cfg, e)))
		goto out;
	tr_opts_t o;
	tr_paths_t paths;
	sim_params_t sp;
	if ((rc = sim_params_fill(cfg, &sp, e)) || (rc = tr_opts_from_cfg(cfg, &o, e)) ||
	    (rc = tr_opts_paths(cfg, &o, &paths, e)))
		goto out;
	uint64_t seed = a->seed >= 0 ? (uint64_t)a->seed : sp.seed;
	uint32_t S = block_size(a, &sp, &o, e, &rc);
	if (rc)
		goto out;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((rc = tr_open(&o, S, seed, &r, e)))
		goto out;
	if (!strcmp(a->cmd, "reuse")) {
		uint32_t ni = sp.tp ? sp.nodes * sp.gpus_per_node / sp.tp : 1;
		tr_reuse_opts_t ro = {a->instances > 0 ? (uint32_t)a->instances : (ni ? ni : 1),
		                      a->sample};
		tr_reuse_t u;
		if ((rc = tr_reuse_compute(r, &ro, &u, e)))
			goto out;
		tr_reuse_print(&u, tr_source(r), stdout);
		if (a->h5)
			rc = tr_reuse_write_h5(&u, tr_source(r), a->h5, e);
		tr_reuse_free(&u);
		if (!rc && a->png)
			rc = plot_png(a->h5, a->png, e);
	} else if (!strcmp(a->cmd, "stats")) {
		tr_stats_t st;
		if ((rc = tr_stats_compute(r, !a->no_reuse, &st, e)))
			goto out;
		tr_stats_print(&st, tr_source(r), a->json, stdout);
	} else if (!strcmp(a->cmd, "validate")) {
		tr_request_t q;
		uint64_t rows = 0;
		while ((rc = tr_next(r, &q, e)) > 0)
			rows++;
		if (rc < 0)
			goto out;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		double mb = (double)tr_bytes_read(r) / 1e6;
		printf(
		    "%s: %llu rows, %.1f MB in %.3f s: %.0f rows/s, %.1f MB/s, peak RSS %ld KiB\n",
		    tr_source(r), (unsigned long long)rows, mb, s, s > 0 ? rows / s : 0,
		    s > 0 ? mb / s : 0, peak_rss_kb());
	} else {
		if (!a->out) {
			rc = err_set(e, KS_EINPUT, "-o OUT is required");
			goto out;
		}
		/* an output that is one of the inputs would destroy what is read */
		if ((rc = file_out_not_input(a->out, o.path, e)) ||
		    (rc = file_out_not_input(a->out, o.in.path, e)) ||
		    (rc = file_out_not_input(a->out, o.out.path, e)) ||
		    (rc = file_out_not_input(a->out, a->config, e)) ||
		    (rc = tr_writer_open(a->out, S, &w, e)))
			goto out;
		tr_request_t q;
		while ((rc = tr_next(r, &q, e)) > 0)
			if ((rc = tr_writer_put(w, &q, e)))
				goto out;
		if (rc < 0)
			goto out;
		rc = tr_writer_close(w, e);
		w = NULL;
	}
out:
	if (rc && cfg)
		cfg_err_locate(cfg, e); /* "[trace] key: ..." names the argument */
	tr_writer_abort(w);
	tr_close(r);
	if (cfg)
		cli_config_free(cfg);
	return rc;
}

/* Every trace command: argv[0] is its name (stats, gen, convert, validate,
 * reuse). */
static int tr_cmd_main(int argc, char **argv)
{
	args_t a = {.cmd = argv[0]};
	err_t e = {0};
	for (int i = 1; i < argc; i++)
		if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		}
	int rc = parse(argc, argv, &a, &e);
	if (!rc && !a.file)
		rc = err_set(&e, KS_EINPUT, "missing %s", strcmp(a.cmd, "gen") ? "FILE" : "KIND");
	if (!rc && a.png && !a.h5)
		rc = err_set(&e, KS_EINPUT, "--png needs --h5 OUT.h5 (the plot is drawn from it)");
	if (rc) {
		free(a.sets);
		return rc == KS_EINPUT ? cli_usage_error("%s", e.msg) : cli_fail(&e);
	}
	rc = run(&a, &e);
	free(a.sets);
	return rc ? cli_fail(&e) : 0;
}

static const cli_sub_t tr_cmds[] = {
	{"stats", tr_cmd_main, "describe a trace"},
	{"gen", tr_cmd_main, "write a synthetic trace"},
	{"convert", tr_cmd_main, "rewrite any trace as native"},
	{"validate", tr_cmd_main, "read a trace fully; print speed and memory"},
	{"reuse", tr_cmd_main, "reuse distances, miss-ratio curves, hot prefixes, gaps"},
};

int tr_cli_main(int argc, char **argv)
{
	return cli_sub_main("trace", tr_cmds, sizeof tr_cmds / sizeof tr_cmds[0], usage, argc,
			    argv);
}
