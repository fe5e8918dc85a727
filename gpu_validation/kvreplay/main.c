/* kvreplay — replays a kvsim transfer schedule on GPUs (or host threads) and
 * writes the measured copy times as HDF5 (gpu_validation/gv_meas.h).
 *
 * The driver reads the schedule, builds the replay (gv_replay.h), picks a
 * backend (host: built in; cuda: a shared object loaded with dlopen, so this
 * binary needs no CUDA library), runs each phase warmup + reps times and keeps
 * the median per copy. Exit status: 0 ok, 1 failure, 2 usage, 77 skipped
 * (no usable GPU, driver or CUDA backend: a "SKIP: reason" line on stdout).
 */
#include <dlfcn.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_validation/gv_meas.h"
#include "gpu_validation/gv_replay.h"
#include "gpu_validation/gv_sched.h"
#include "gpu_validation/kvreplay/kvr_backend.h"
#include "models/mdl.h"
#include "models/mdl_xfer.h"
#include "sim/base/size.h"

typedef struct opts {
	const char *schedule, *out, *backend, *cuda_so;
	int n_dev, groups, batch, reps, warmup, compute, quiet, slices;
	uint64_t inner_bytes, read_bytes, limit;
	double span_s;
	const char *model, *gpu;                        /* spec names or files (models/mdl.h) */
	int64_t hidden, ffn, heads, kv_heads, head_dim; /* 0: from the model spec */
	int64_t tokens[16];
	int n_tokens;
	double peak_tflops, peak_gbs;
} opts_t;

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: kvreplay [options] SCHEDULE.h5\n"
	    "       kvreplay --compute [options]\n\n"
	    "Replays the /transfers schedule of a kvsim run (or a calibration plan from\n"
	    "'kvsim calibrate plan') and writes the measured copy times as HDF5.\n\n"
	    "  -o, --out FILE      measurements file (default kvreplay.h5)\n"
	    "  --backend NAME      cuda (default) or host (threads + memcpy)\n"
	    "  --cuda-so FILE      CUDA backend object (default: kvreplay_cuda.so next to\n"
	    "                      this program or in ../lib/kvsim/, or $KVREPLAY_CUDA_SO)\n"
	    "  --devices N         devices to use (cuda: all visible; host: 2 emulated)\n"
	    "  --groups            time each set of equal start times alone (default for plans)\n"
	    "  --no-groups         replay at the schedule's start offsets (default for runs)\n"
	    "  --batch             block-granular copies as one cudaMemcpyBatchAsync per transfer\n"
	    "  --slices N          block-granular transfers: N copies per block (a layer-major\n"
	    "                      paged cache copies one slice per layer; default 1)\n"
	    "  --reps N            timed repetitions, median kept (default 5)\n"
	    "  --warmup N          untimed repetitions first (default 2)\n"
	    "  --inner-bytes N     group mode: repeat small copies up to N bytes between\n"
	    "                      timestamps, at most 64 times (default 1048576)\n"
	    "  --compute           time GEMMs at the model's layer shapes and a read kernel\n"
	    "  --model NAME|FILE   LLM spec for the layer shapes (default Llama-3-8B)\n"
	    "  --hidden N --ffn N --heads N --kv-heads N --head-dim N\n"
	    "                      override the spec's layer shape\n"
	    "  --gpu NAME|FILE     GPU spec for the peaks (default: the built-in spec whose\n"
	    "                      name the device name contains, e.g. H200)\n"
	    "  --tokens LIST       GEMM token counts (default cuda 1,16,128,512,2048,8192;\n"
	    "                      host 1,16)\n"
	    "  --read-bytes N      read kernel size (default cuda 1 GiB, host 64 MiB)\n"
	    "  --peak-tflops X     dense bf16 peak for MFU (default: known GPUs)\n"
	    "  --peak-gbs X        memory bandwidth peak for MBU (default: known GPUs)\n"
	    "  --limit N           replay only the first N transfers (by start time)\n"
	    "  --span-s S          replay only transfers starting within S seconds of the first\n"
	    "  -q, --quiet         no progress on stderr\n\n"
	    "Exit status: 0 ok, 1 failure, 2 usage error, 77 skipped (no usable GPU).\n");
}

/* Long options without a short form. */
enum {
	O_BACKEND = 256,
	O_SO,
	O_DEV,
	O_GROUPS,
	O_NOGROUPS,
	O_BATCH,
	O_REPS,
	O_WARM,
	O_INNER,
	O_COMPUTE,
	O_HIDDEN,
	O_FFN,
	O_HEADS,
	O_KVH,
	O_HD,
	O_TOK,
	O_READ,
	O_PF,
	O_PB,
	O_LIMIT,
	O_SPAN,
	O_MODEL,
	O_GPU,
	O_SLICES
};

static const struct option long_opts[] = {
    {"out", 1, 0, 'o'},           {"backend", 1, 0, O_BACKEND},
    {"cuda-so", 1, 0, O_SO},      {"devices", 1, 0, O_DEV},
    {"groups", 0, 0, O_GROUPS},   {"no-groups", 0, 0, O_NOGROUPS},
    {"batch", 0, 0, O_BATCH},     {"reps", 1, 0, O_REPS},
    {"warmup", 1, 0, O_WARM},     {"inner-bytes", 1, 0, O_INNER},
    {"compute", 0, 0, O_COMPUTE}, {"hidden", 1, 0, O_HIDDEN},
    {"ffn", 1, 0, O_FFN},         {"heads", 1, 0, O_HEADS},
    {"kv-heads", 1, 0, O_KVH},    {"head-dim", 1, 0, O_HD},
    {"tokens", 1, 0, O_TOK},      {"read-bytes", 1, 0, O_READ},
    {"peak-tflops", 1, 0, O_PF},  {"peak-gbs", 1, 0, O_PB},
    {"limit", 1, 0, O_LIMIT},     {"span-s", 1, 0, O_SPAN},
    {"model", 1, 0, O_MODEL},     {"gpu", 1, 0, O_GPU},
    {"slices", 1, 0, O_SLICES},   {"quiet", 0, 0, 'q'},
    {"help", 0, 0, 'h'},          {0, 0, 0, 0}};

/* Where each plain option lands: a string, a flag set to val, a number
 * (atof), or a whole number (parsed below, range-checked unless u64). */
enum { K_STR, K_SET, K_F64, K_U64, K_INT, K_I64 };
static const struct {
	int c, kind, val;
	size_t off;
} opt_dst[] = {
    {'o', K_STR, 0, offsetof(opts_t, out)},
    {O_MODEL, K_STR, 0, offsetof(opts_t, model)},
    {O_GPU, K_STR, 0, offsetof(opts_t, gpu)},
    {O_BACKEND, K_STR, 0, offsetof(opts_t, backend)},
    {O_SO, K_STR, 0, offsetof(opts_t, cuda_so)},
    {'q', K_SET, 1, offsetof(opts_t, quiet)},
    {O_GROUPS, K_SET, 1, offsetof(opts_t, groups)},
    {O_NOGROUPS, K_SET, 0, offsetof(opts_t, groups)},
    {O_BATCH, K_SET, 1, offsetof(opts_t, batch)},
    {O_COMPUTE, K_SET, 1, offsetof(opts_t, compute)},
    {O_PF, K_F64, 0, offsetof(opts_t, peak_tflops)},
    {O_PB, K_F64, 0, offsetof(opts_t, peak_gbs)},
    {O_INNER, K_U64, 0, offsetof(opts_t, inner_bytes)},
    {O_READ, K_U64, 0, offsetof(opts_t, read_bytes)},
    {O_LIMIT, K_U64, 0, offsetof(opts_t, limit)},
    {O_DEV, K_INT, 0, offsetof(opts_t, n_dev)},
    {O_SLICES, K_INT, 0, offsetof(opts_t, slices)},
    {O_REPS, K_INT, 0, offsetof(opts_t, reps)},
    {O_WARM, K_INT, 0, offsetof(opts_t, warmup)},
    {O_HIDDEN, K_I64, 0, offsetof(opts_t, hidden)},
    {O_FFN, K_I64, 0, offsetof(opts_t, ffn)},
    {O_HEADS, K_I64, 0, offsetof(opts_t, heads)},
    {O_KVH, K_I64, 0, offsetof(opts_t, kv_heads)},
    {O_HD, K_I64, 0, offsetof(opts_t, head_dim)},
};

/* --tokens LIST: 0, or 2 (usage error, said on stderr). */
static int parse_tokens(opts_t *o, const char *arg)
{
	char buf[256];
	uint64_t v;
	snprintf(buf, sizeof buf, "%s", arg);
	o->n_tokens = 0;
	for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		if (o->n_tokens == 16 || size_parse(t, UINT64_MAX, &v) || !v || v > 1 << 20) {
			fprintf(stderr, "kvreplay: --tokens: 1..16 counts in 1..1048576\n");
			return 2;
		}
		o->tokens[o->n_tokens++] = (int64_t)v;
	}
	return 0;
}

/* Option c (getopt's return, '?' for one it does not know) with its value
 * into o through opt_dst: 0, or 2 (usage error, said on stderr). */
static int set_option(opts_t *o, int c, const char *arg)
{
	size_t i = 0, nd = sizeof opt_dst / sizeof opt_dst[0];
	uint64_t v;
	while (i < nd && opt_dst[i].c != c)
		i++;
	char *p = i < nd ? (char *)o + opt_dst[i].off : NULL;
	int kind = i < nd ? opt_dst[i].kind : -1;
	if (kind == K_STR) {
		*(const char **)(void *)p = arg;
		return 0;
	}
	if (kind == K_SET) {
		*(int *)(void *)p = opt_dst[i].val;
		return 0;
	}
	if (kind == K_F64) {
		*(double *)(void *)p = atof(arg);
		return 0;
	}
	if (kind < 0 || !arg || size_parse(arg, UINT64_MAX, &v)) {
		if (c != '?')
			fprintf(stderr, "kvreplay: bad number '%s'\n", arg);
		usage(stderr);
		return 2;
	}
	if (kind == K_U64) {
		*(uint64_t *)(void *)p = v;
		return 0;
	}
	if (v > INT_MAX || (c != O_WARM && !v)) {
		fprintf(stderr, "kvreplay: '%s' out of range\n", arg);
		return 2;
	}
	if (kind == K_INT)
		*(int *)(void *)p = (int)v;
	else
		*(int64_t *)(void *)p = (int64_t)v;
	return 0;
}

/* After the options: the schedule, the checks across options, and the
 * backend's defaults for what was not given. 0, or 2 (usage error). */
static int finish_opts(int argc, char **argv, opts_t *o)
{
	if (o->reps > 64) {
		fprintf(stderr, "kvreplay: --reps: at most 64\n");
		return 2;
	}
	if (optind < argc)
		o->schedule = argv[optind++];
	if (optind < argc || (!o->schedule && !o->compute) ||
	    (strcmp(o->backend, "cuda") && strcmp(o->backend, "host"))) {
		usage(stderr);
		return 2;
	}
	int host = !strcmp(o->backend, "host");
	if (!o->n_tokens) {
		static const int64_t gpu_tok[] = {1, 16, 128, 512, 2048, 8192},
				     host_tok[] = {1, 16};
		o->n_tokens = host ? 2 : 6;
		memcpy(o->tokens, host ? host_tok : gpu_tok, (size_t)o->n_tokens * sizeof(int64_t));
	}
	if (!o->read_bytes)
		o->read_bytes = host ? 64ull << 20 : 1ull << 30;
	return 0;
}

/* 0 to run, 1 after --help, 2 on a usage error (said on stderr). */
static int parse_opts(int argc, char **argv, opts_t *o)
{
	*o = (opts_t){.out = "kvreplay.h5",
	              .backend = "cuda",
	              .groups = -1,
	              .reps = 5,
	              .warmup = 2,
	              .inner_bytes = 1 << 20,
	              .model = "Llama-3-8B"};
	optind = 1;
	int c, rc = 0;
	while (!rc && (c = getopt_long(argc, argv, "o:qh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 1;
		case O_SPAN:
			o->span_s = atof(optarg);
			if (!(o->span_s > 0)) {
				fprintf(stderr,
				        "kvreplay: --span-s: a positive number of seconds\n");
				return 2;
			}
			break;
		case O_TOK:
			rc = parse_tokens(o, optarg);
			break;
		default:
			rc = set_option(o, c, optarg);
		}
	}
	return rc ? rc : finish_opts(argc, argv, o);
}

/* Loads the CUDA backend object; on failure the reason goes to e. */
static const kvr_backend_ops_t *load_cuda(const opts_t *o, const char *argv0, void **handle,
                                          err_t *e)
{
	char path[4096];
	const char *env = getenv("KVREPLAY_CUDA_SO");
	if (o->cuda_so)
		snprintf(path, sizeof path, "%s", o->cuda_so);
	else if (env && *env)
		snprintf(path, sizeof path, "%s", env);
	else {
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n <= 0)
			snprintf(self, sizeof self, "%s", argv0);
		else
			self[n] = 0;
		char *slash = strrchr(self, '/');
		int dn = slash ? (int)(slash - self) : 1;
		const char *d = slash ? self : ".";
		/* next to the program (build tree), else where `make install` puts it */
		snprintf(path, sizeof path, "%.*s/kvreplay_cuda.so", dn, d);
		if (access(path, F_OK))
			snprintf(path, sizeof path, "%.*s/../lib/kvsim/kvreplay_cuda.so", dn, d);
	}
	*handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*handle) {
		err_set(e, KVR_SKIP, "CUDA backend not loadable: %s", dlerror());
		return NULL;
	}
	const kvr_backend_ops_t *ops = dlsym(*handle, KVR_CUDA_SYMBOL);
	if (!ops || ops->version != KVR_BACKEND_VERSION) {
		err_set(e, KS_ERUNTIME, "%s: no %s table of version %d", path, KVR_CUDA_SYMBOL,
		        KVR_BACKEND_VERSION);
		dlclose(*handle);
		*handle = NULL;
		return NULL;
	}
	return ops;
}

/* A spec argument is a file when it names one (has a '/' or ends in .ini). */
static int is_file(const char *arg)
{
	size_t n = strlen(arg);
	return strchr(arg, '/') || (n > 4 && !strcmp(arg + n - 4, ".ini"));
}

/* Layer shapes from the LLM spec; explicit options win. MLA models use
 * heads x head_dim for the attention projections (an approximation). */
static int resolve_model(opts_t *o, err_t *e)
{
	mdl_llm_t llm;
	int rc = is_file(o->model) ? mdl_llm_load_file(o->model, &llm, e)
	                           : mdl_llm_builtin(o->model, &llm, e);
	if (rc)
		return rc;
	if (!o->hidden)
		o->hidden = llm.hidden;
	if (!o->ffn)
		o->ffn = llm.intermediate;
	if (!o->heads)
		o->heads = llm.heads;
	if (!o->kv_heads)
		o->kv_heads = llm.kv_heads;
	if (!o->head_dim)
		o->head_dim = llm.head_dim;
	return 0;
}

/* Peak dense bf16 FLOP/s and HBM bandwidth for MFU/MBU: from --gpu, else
 * the built-in spec whose family name ("H200", "H100" of "H100-SXM") the
 * device name contains; unknown (0) otherwise. */
static int resolve_peaks(const opts_t *o, gv_meas_t *m, err_t *e)
{
	mdl_hw_t hw;
	int found = 0;
	if (o->gpu) {
		int rc = is_file(o->gpu) ? mdl_hw_load_file(o->gpu, &hw, e)
		                         : mdl_hw_builtin(o->gpu, &hw, e);
		if (rc)
			return rc;
		found = 1;
	} else {
		const char *name;
		for (size_t i = 0; !found && (name = mdl_builtin_name("hw", i)); i++) {
			char family[MDL_NAME_MAX];
			snprintf(family, sizeof family, "%s", name);
			family[strcspn(family, "-")] = 0;
			found = strstr(m->device, family) && !mdl_hw_builtin(name, &hw, e);
		}
	}
	if (found) {
		m->peak_flops = hw.flops_bf16;
		m->peak_bytes_per_s = hw.hbm_bw;
	}
	if (o->peak_tflops > 0)
		m->peak_flops = o->peak_tflops * 1e12;
	if (o->peak_gbs > 0)
		m->peak_bytes_per_s = o->peak_gbs * 1e9;
	return 0;
}

static int add_row(gv_compute_t *rows, size_t *n, const char *op, int64_t m, int64_t nn, int64_t k)
{
	gv_compute_t *r = &rows[(*n)++];
	memset(r, 0, sizeof *r);
	snprintf(r->op, sizeof r->op, "%s", op);
	r->m = m;
	r->n = nn;
	r->k = k;
	if (!strcmp(op, "read")) {
		r->bytes = (double)m;
	} else {
		r->flops = 2.0 * (double)m * (double)nn * (double)k;
		r->bytes = 2.0 * ((double)nn * k + (double)k * m + (double)nn * m); /* bf16 */
	}
	return 0;
}

static int run_compute(const kvr_backend_ops_t *be, const opts_t *o, gv_meas_t *m, err_t *e)
{
	size_t cap = (size_t)o->n_tokens * 4 + 1, n = 0;
	gv_compute_t *rows = calloc(cap, sizeof *rows);
	if (!rows)
		return err_set(e, KS_ENOMEM, "out of memory");
	int64_t q = o->heads * o->head_dim, kv = o->kv_heads * o->head_dim;
	for (int i = 0; i < o->n_tokens; i++) { /* one decoder layer's GEMMs */
		int64_t t = o->tokens[i];
		add_row(rows, &n, "gemm_qkv", t, q + 2 * kv, o->hidden);
		add_row(rows, &n, "gemm_o", t, o->hidden, q);
		add_row(rows, &n, "gemm_gate_up", t, 2 * o->ffn, o->hidden);
		add_row(rows, &n, "gemm_down", t, o->hidden, o->ffn);
	}
	add_row(rows, &n, "read", (int64_t)o->read_bytes, 0, 0);
	int rc = be->compute(rows, n, o->warmup, o->reps, e);
	if (rc) {
		free(rows);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		double s = rows[i].time_ns > 0 ? rows[i].time_ns * 1e-9 : NAN;
		rows[i].flops_per_s = rows[i].flops / s;
		rows[i].bytes_per_s = rows[i].bytes / s;
		if (!o->quiet)
			fprintf(stderr,
			        "kvreplay: %-13s m=%-6lld n=%-6lld k=%-6lld %10.1f us  %8.2f "
			        "TFLOP/s  %8.1f GB/s\n",
			        rows[i].op, (long long)rows[i].m, (long long)rows[i].n,
			        (long long)rows[i].k, rows[i].time_ns / 1e3,
			        rows[i].flops_per_s / 1e12, rows[i].bytes_per_s / 1e9);
	}
	m->comp = rows;
	m->n_comp = n;
	return 0;
}

/* Runs every phase warmup + reps times; fills m->copy with medians. */
static int run_replay(const kvr_backend_ops_t *be, void *st, const gv_replay_t *r, const opts_t *o,
                      gv_meas_t *m, err_t *e)
{
	size_t max_ops = 0;
	for (size_t p = 0; p < r->n_phase; p++)
		if (r->phase_first[p + 1] - r->phase_first[p] > max_ops)
			max_ops = r->phase_first[p + 1] - r->phase_first[p];
	size_t R = (size_t)o->reps;
	int64_t *st_ns = malloc(max_ops * R * sizeof *st_ns),
		*en_ns = malloc(max_ops * R * sizeof *en_ns);
	int64_t *dur = malloc(R * sizeof *dur);
	m->copy = calloc(r->n_op, sizeof *m->copy);
	if (!st_ns || !en_ns || !dur || !m->copy) {
		free(st_ns);
		free(en_ns);
		free(dur);
		return err_set(e, KS_ENOMEM, "out of memory for %zu copies", r->n_op);
	}
	int rc = 0;
	for (size_t p = 0; p < r->n_phase && !rc; p++) {
		size_t first = r->phase_first[p], n = r->phase_first[p + 1] - first;
		for (int k = -o->warmup; k < o->reps && !rc; k++) {
			size_t slot = k < 0 ? 0 : (size_t)k;
			rc = be->run_phase(st, r, p, st_ns + slot * max_ops, en_ns + slot * max_ops,
			                   e);
		}
		for (size_t i = 0; i < n && !rc; i++) {
			const gv_op_t *op = &r->op[first + i];
			for (size_t k = 0; k < R; k++)
				dur[k] = en_ns[k * max_ops + i] - st_ns[k * max_ops + i];
			int64_t lo = dur[0], hi = dur[0];
			for (size_t k = 1; k < R; k++) {
				lo = dur[k] < lo ? dur[k] : lo;
				hi = dur[k] > hi ? dur[k] : hi;
			}
			/* the start that goes with the median: the rep closest to it */
			int64_t tmp[64], med;
			size_t nk = R < 64 ? R : 64;
			memcpy(tmp, dur, nk * sizeof *tmp);
			med = gv_median_i64(tmp, nk);
			size_t best = 0;
			for (size_t k = 1; k < R; k++)
				if (llabs(dur[k] - med) < llabs(dur[best] - med))
					best = k;
			int64_t base = op->planned_start_ns - op->offset_ns; /* phase origin */
			gv_copy_t *c = &m->copy[m->n_copy++];
			*c = (gv_copy_t){.id = op->id,
			                 .group = op->phase,
			                 .kind = op->kind,
			                 .link = op->link,
			                 .shape = op->shape,
			                 .stream = op->stream,
			                 .src_dev = op->src_dev,
			                 .dst_dev = op->dst_dev,
			                 .bytes = op->bytes,
			                 .blocks = op->blocks,
			                 .inner = op->inner,
			                 .m_same = op->m_same,
			                 .m_opp = op->m_opp,
			                 .reps = o->reps,
			                 .planned_start_ns = op->planned_start_ns,
			                 .start_ns = base + st_ns[best * max_ops + i],
			                 .min_ns = lo,
			                 .max_ns = hi};
			c->end_ns = c->start_ns + med;
		}
		if (!o->quiet && isatty(2) && (p % 16 == 0 || p + 1 == r->n_phase))
			fprintf(stderr, "\rkvreplay: phase %zu/%zu", p + 1, r->n_phase);
	}
	if (!o->quiet && isatty(2))
		fprintf(stderr, "\n");
	free(st_ns);
	free(en_ns);
	free(dur);
	return rc;
}

static void print_peaks(const gv_meas_t *m)
{
	static const char *const names[] = {"h2d", "d2h", "d2d", "p2p"};
	for (int k = 0; k < 4; k++) {
		double best = 0;
		uint64_t at = 0;
		for (size_t i = 0; i < m->n_copy; i++) {
			const gv_copy_t *c = &m->copy[i];
			if (c->kind != k || c->m_same != 1 || c->m_opp ||
			    c->shape != MDL_SHAPE_CONTIG)
				continue;
			double bw = (double)c->bytes / (double)(c->end_ns - c->start_ns);
			if (bw > best)
				best = bw, at = c->bytes;
		}
		if (best > 0)
			printf("peak %s: %.2f GB/s (lone contiguous copy of %llu bytes)\n",
			       names[k], best, (unsigned long long)at);
	}
}

int main(int argc, char **argv)
{
	opts_t o;
	gv_meas_t m = {0};
	size_t len = 0; /* the command line as typed (getopt reorders argv) */
	for (int i = 0; i < argc; i++)
		len += (size_t)snprintf(m.cmdline + len,
		                        len < sizeof m.cmdline ? sizeof m.cmdline - len : 0, "%s%s",
		                        i ? " " : "", argv[i]);
	int prc = parse_opts(argc, argv, &o);
	if (prc)
		return prc == 1 ? 0 : 2;
	err_t e = {0};
	gv_sched_t s = {0};
	gv_replay_t r = {0};
	void *handle = NULL, *st = NULL;
	int rc = 0, n_dev = 0;
	const kvr_backend_ops_t *be = &kvr_backend_host;
	if (o.compute && (rc = resolve_model(&o, &e))) {
		fprintf(stderr, "kvreplay: --model: %s\n", e.msg);
		return 2;
	}

	if (!strcmp(o.backend, "cuda") && !(be = load_cuda(&o, argv[0], &handle, &e))) {
		rc = e.code;
		goto out;
	}
	snprintf(m.backend, sizeof m.backend, "%s", be->name);
	if ((rc = be->probe(&n_dev, &m, &e)))
		goto out;
	if (o.n_dev) {
		if (o.n_dev > n_dev && strcmp(be->name, "host")) {
			rc =
			    err_set(&e, KS_EINPUT, "--devices %d: only %d visible", o.n_dev, n_dev);
			goto out;
		}
		n_dev = o.n_dev;
	}
	if ((rc = resolve_peaks(&o, &m, &e)))
		goto out;
	if (!o.quiet)
		fprintf(stderr, "kvreplay: backend %s, %d device(s), %s; driver %s, runtime %s\n",
		        be->name, n_dev, m.device, m.driver, m.runtime);
	if (o.schedule) {
		snprintf(m.schedule, sizeof m.schedule, "%s", o.schedule);
		if ((rc = gv_sched_read(&s, o.schedule, &e)))
			goto out;
		gv_replay_opts_t ro = {.n_dev = n_dev,
		                       .groups = o.groups,
		                       .batch = o.batch,
		                       .inner_bytes = o.inner_bytes,
		                       .slices = (uint32_t)o.slices,
		                       .limit = o.limit,
		                       .span_ns = (int64_t)(o.span_s * 1e9)};
		if ((rc = gv_replay_build(&r, &s, &ro, &e))) {
			err_prefix(&e, "%s", o.schedule);
			goto out;
		}
		if (!o.quiet)
			fprintf(stderr,
			        "kvreplay: %zu copies in %zu %s, up to %d streams; skipped %zu "
			        "cancelled, %zu host-to-host and %zu past --limit/--span-s\n",
			        r.n_op, r.n_phase, r.n_phase > 1 ? "isolated groups" : "phase",
			        r.n_streams, r.skipped_cancelled, r.skipped_host, r.skipped_limit);
		if ((rc = be->open(&st, &r, &m, &e)))
			goto out;
		if (!o.quiet && m.peer[0])
			fprintf(stderr, "kvreplay: peer access: %s\n", m.peer);
		if ((rc = run_replay(be, st, &r, &o, &m, &e)))
			goto out;
	}
	if (o.compute && (rc = run_compute(be, &o, &m, &e)))
		goto out;
	if ((rc = gv_meas_write(o.out, &m, &e)))
		goto out;
	print_peaks(&m);
	printf("wrote %s: %zu copies, %zu compute rows\n", o.out, m.n_copy, m.n_comp);
out:
	if (st)
		be->close(st);
	if (rc == KVR_SKIP) {
		printf("SKIP: %s\n", e.msg);
		fflush(stdout);
	} else if (rc) {
		fprintf(stderr, "kvreplay: %s\n", e.msg);
	}
	gv_replay_free(&r);
	gv_sched_free(&s);
	gv_meas_free(&m);
	/* The CUDA object is left loaded: its runtime tears down at exit. */
	(void)handle;
	return rc == KVR_SKIP ? 77 : rc ? err_exit_status(rc) : 0;
}
