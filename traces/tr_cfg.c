/* tr_cfg — the [trace] config keys (see sim/base/cfg.h) and their binding to
 * tr_opts_t. The key table is the single source of defaults: tr_opts_default
 * parses each key's default text, tr_opts_from_cfg reads resolved values. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "traces/tr.h"

#define S "trace"
const cfg_key_t tr_cfg_keys[] = {
    /* what to read */
    {S, "kind", CFG_ENUM, "auto", 0, 0, TR_KIND_CHOICES, "",
     "trace format (auto: detect from the first line; gen: a synthetic generator; "
     "servegen: generate from a ServeGen windows CSV)",
     NULL},
    {S, "path", CFG_STR, "", 0, 0, NULL, "path",
     "trace file (gen = servegen: the windows CSV); relative to the config file, else the "
     "working dir",
     NULL},
    {S, "start_s", CFG_FLOAT, "0", 0, 4e9, NULL, "s",
     "skip requests before this trace time (seconds after the first row)", NULL},
    {S, "end_s", CFG_FLOAT, "0", 0, 4e9, NULL, "s",
     "stop at this trace time (seconds after the first row); 0 = no end", NULL},
    {S, "rate_scale", CFG_FLOAT, "1", 1e-6, 1e6, NULL, "",
     "arrival = (t - start_s) / rate_scale: 2 doubles the request rate", NULL},
    {S, "limit", CFG_INT, "0", 0, 1e15, NULL, "requests",
     "stop after this many requests (after filtering); 0 = all", NULL},
    {S, "trace_block_tokens", CFG_INT, "0", 0, 1048576, NULL, "tokens",
     "block size of the trace's hash ids; 0 = the format's (mooncake 512, bailian 16, "
     "native: its header)",
     NULL},
    {S, "failed", CFG_ENUM, "keep", 0, 0, "keep,drop", "",
     "rows failed in the source trace (BurstGPT zero response tokens): keep with "
     "status 1, or drop",
     NULL},
    {S, "check_blocks", CFG_BOOL, "true", 0, 0, NULL, "",
     "require ceil(input_length / trace_block_tokens) hash ids per JSONL row", NULL},
    {S, "max_tokens", CFG_INT, "16777216", 1, 4294967295.0, NULL, "tokens",
     "longest accepted input or output length; longer is an input error", NULL},
    /* generators */
    {S, "gen", CFG_ENUM, "poisson", 0, 0,
     "poisson,gamma,weibull,mmpp,flash,diurnal,servegen,fanout", "",
     "arrival process when kind = gen", NULL},
    {S, "rate", CFG_FLOAT, "10", 0, 1e9, NULL, "req/s",
     "mean (poisson, gamma, weibull) or base (flash, diurnal) request rate", NULL},
    {S, "cv", CFG_FLOAT, "1", 0.05, 20, NULL, "",
     "inter-arrival coefficient of variation of gamma and weibull gaps (range: own "
     "choice; Weibull shapes 0.19 to 25, and at 20 about 94% of Gamma gaps at 20 req/s "
     "are already under 1 ns)",
     NULL},
    {S, "duration_s", CFG_FLOAT, "60", 0, 4e9, NULL, "s",
     "generate arrivals in [0, duration_s); 0 = until `requests`", NULL},
    {S, "requests", CFG_INT, "0", 0, 1e15, NULL, "requests",
     "stop after this many generated requests; 0 = until duration_s", NULL},
    {S, "mmpp_rate0", CFG_FLOAT, "5", 0, 1e9, NULL, "req/s", "MMPP rate in state 0", NULL},
    {S, "mmpp_rate1", CFG_FLOAT, "50", 0, 1e9, NULL, "req/s", "MMPP rate in state 1", NULL},
    {S, "mmpp_dwell0_s", CFG_FLOAT, "30", 0, 1e9, NULL, "s",
     "MMPP mean sojourn in state 0 (exponential)", NULL},
    {S, "mmpp_dwell1_s", CFG_FLOAT, "5", 0, 1e9, NULL, "s",
     "MMPP mean sojourn in state 1 (exponential)", NULL},
    {S, "flash_start_s", CFG_FLOAT, "30", 0, 4e9, NULL, "s", "flash crowd onset", NULL},
    {S, "flash_duration_s", CFG_FLOAT, "10", 0, 4e9, NULL, "s", "flash crowd length (step shape)",
     NULL},
    {S, "flash_mult", CFG_FLOAT, "10", 0, 1e6, NULL, "",
     "rate multiplier at the flash crowd's peak", NULL},
    {S, "flash_shape", CFG_ENUM, "step", 0, 0, "step,spike", "",
     "step: rate*mult for flash_duration_s; spike: rate*(1+(mult-1)*exp(-(t-start)/tau))", NULL},
    {S, "flash_tau_s", CFG_FLOAT, "5", 0, 1e9, NULL, "s", "spike decay time constant", NULL},
    {S, "diurnal_period_s", CFG_FLOAT, "86400", 0, 1e9, NULL, "s", "diurnal period", NULL},
    {S, "diurnal_amp", CFG_FLOAT, "0.5", 0, 1, NULL, "",
     "diurnal relative amplitude: rate*(1 + amp*sin(2 pi t/period + phase))", NULL},
    {S, "diurnal_phase", CFG_FLOAT, "0", -1000, 1000, NULL, "rad", "diurnal phase", NULL},
    {S, "fanout_bursts", CFG_INT, "10", 0, 1e7, NULL, "",
     "fan-out generator: number of bursts (one per equal slot of duration_s)", NULL},
    {S, "fanout_size", CFG_INT, "32", 0, 1e7, NULL, "requests", "requests per burst", NULL},
    {S, "fanout_prefix_tokens", CFG_INT, "4096", 0, 16777216, NULL, "tokens",
     "prefix shared by a burst's requests (their input = prefix + an input-length draw)", NULL},
    {S, "fanout_window_s", CFG_FLOAT, "2", 0, 1e9, NULL, "s",
     "a burst's requests arrive uniformly within this window", NULL},
    {S, "fanout_bg_rate", CFG_FLOAT, "5", 0, 1e9, NULL, "req/s",
     "Poisson background traffic (prefix model applies)", NULL},
    {S, "fanout_decoys", CFG_INT, "10", 0, 1e7, NULL, "",
     "decoy groups: a prefix shared by only fanout_decoy_size requests", NULL},
    {S, "fanout_decoy_size", CFG_INT, "2", 0, 1e7, NULL, "requests", "requests per decoy", NULL},
    /* length distributions */
    {S, "in_dist", CFG_ENUM, "lognormal", 0, 0, "fixed,uniform,lognormal,zipf,empirical", "",
     "generated input lengths", NULL},
    {S, "in_mean", CFG_FLOAT, "2048", 0, 1e9, NULL, "tokens", "fixed value or lognormal mean",
     NULL},
    {S, "in_sigma", CFG_FLOAT, "1", 0, 10, NULL, "", "lognormal sigma of log(length)", NULL},
    {S, "in_zipf_s", CFG_FLOAT, "1.1", 0, 10, NULL, "", "Zipf exponent over [in_min, in_max]",
     NULL},
    {S, "in_min", CFG_INT, "1", 0, 4294967295.0, NULL, "tokens", "lower clamp", NULL},
    {S, "in_max", CFG_INT, "131072", 0, 4294967295.0, NULL, "tokens",
     "upper clamp (0 = max_tokens)", NULL},
    {S, "in_path", CFG_STR, "", 0, 0, NULL, "path",
     "empirical: a trace file whose input lengths are resampled (relative as path)", NULL},
    {S, "out_dist", CFG_ENUM, "lognormal", 0, 0, "fixed,uniform,lognormal,zipf,empirical", "",
     "generated output lengths", NULL},
    {S, "out_mean", CFG_FLOAT, "256", 0, 1e9, NULL, "tokens", "fixed value or lognormal mean",
     NULL},
    {S, "out_sigma", CFG_FLOAT, "0.8", 0, 10, NULL, "", "lognormal sigma of log(length)", NULL},
    {S, "out_zipf_s", CFG_FLOAT, "1.1", 0, 10, NULL, "", "Zipf exponent over [out_min, out_max]",
     NULL},
    {S, "out_min", CFG_INT, "1", 0, 4294967295.0, NULL, "tokens", "lower clamp", NULL},
    {S, "out_max", CFG_INT, "8192", 0, 4294967295.0, NULL, "tokens", "upper clamp (0 = max_tokens)",
     NULL},
    {S, "out_path", CFG_STR, "", 0, 0, NULL, "path",
     "empirical: a trace file whose output lengths are resampled (relative as path)", NULL},
    /* prefix model (traces without hash ids, generators) */
    {S, "prefix_shared_prob", CFG_FLOAT, "0", 0, 1, NULL, "",
     "share of requests (session first turns) that start with a shared system prompt", NULL},
    {S, "prefix_count", CFG_INT, "100", 1, 4194304, NULL, "",
     "distinct shared prompts, popularity Zipf(prefix_zipf_s)", NULL},
    {S, "prefix_zipf_s", CFG_FLOAT, "1", 0, 10, NULL, "", "Zipf exponent of prompt popularity",
     NULL},
    {S, "prefix_tokens", CFG_FLOAT, "1024", 1, 16777216, NULL, "tokens",
     "mean shared prompt length (capped at the request's input)", NULL},
    {S, "prefix_sigma", CFG_FLOAT, "0", 0, 10, NULL, "",
     "lognormal sigma of prompt lengths (0: every prompt is prefix_tokens long)", NULL},
    {S, "session_mode", CFG_ENUM, "trace", 0, 0, "off,trace,synthetic", "",
     "multi-turn sessions: off; trace (session ids in the trace, e.g. BurstGPT Session ID); "
     "synthetic (session_prob of requests continue an open session)",
     NULL},
    {S, "session_prob", CFG_FLOAT, "0.5", 0, 1, NULL, "",
     "synthetic sessions: share of requests that are a later turn", NULL},
    {S, "session_active", CFG_INT, "1000", 1, 1e7, NULL, "",
     "synthetic sessions: open sessions a later turn picks from uniformly", NULL},
    {S, "group_prob", CFG_FLOAT, "0", 0, 1, NULL, "",
     "probability that a request opens a fan-out group", NULL},
    {S, "group_size", CFG_INT, "16", 0, 1e7, NULL, "requests",
     "requests in a fan-out group, the opener included", NULL},
    {S, "group_window_s", CFG_FLOAT, "2", 0, 1e9, NULL, "s",
     "later requests join the group only within this time of the opener", NULL},
    {S, "group_tokens", CFG_INT, "4096", 0, 16777216, NULL, "tokens",
     "prefix shared by a fan-out group", NULL},
};
#undef S
const size_t tr_cfg_keys_n = sizeof tr_cfg_keys / sizeof tr_cfg_keys[0];

typedef enum { B_U32, B_U64, B_F64, B_STR, B_BOOL, B_ENUM } bind_t;

typedef struct binding {
	const char *name;
	bind_t type;
	size_t off;
} binding_t;

#define O(f) offsetof(tr_opts_t, f)
static const binding_t binds[] = {
    {"kind", B_ENUM, O(kind)},
    {"path", B_STR, O(path)},
    {"start_s", B_F64, O(start_s)},
    {"end_s", B_F64, O(end_s)},
    {"rate_scale", B_F64, O(rate_scale)},
    {"limit", B_U64, O(limit)},
    {"trace_block_tokens", B_U32, O(trace_block_tokens)},
    {"failed", B_ENUM, O(drop_failed)},
    {"check_blocks", B_BOOL, O(check_blocks)},
    {"max_tokens", B_U32, O(max_tokens)},
    {"gen", B_ENUM, O(gen)},
    {"rate", B_F64, O(rate)},
    {"cv", B_F64, O(cv)},
    {"duration_s", B_F64, O(duration_s)},
    {"requests", B_U64, O(requests)},
    {"mmpp_rate0", B_F64, O(mmpp_rate[0])},
    {"mmpp_rate1", B_F64, O(mmpp_rate[1])},
    {"mmpp_dwell0_s", B_F64, O(mmpp_dwell_s[0])},
    {"mmpp_dwell1_s", B_F64, O(mmpp_dwell_s[1])},
    {"flash_start_s", B_F64, O(flash_start_s)},
    {"flash_duration_s", B_F64, O(flash_duration_s)},
    {"flash_mult", B_F64, O(flash_mult)},
    {"flash_shape", B_ENUM, O(flash_spike)},
    {"flash_tau_s", B_F64, O(flash_tau_s)},
    {"diurnal_period_s", B_F64, O(diurnal_period_s)},
    {"diurnal_amp", B_F64, O(diurnal_amp)},
    {"diurnal_phase", B_F64, O(diurnal_phase)},
    {"fanout_bursts", B_U32, O(fanout_bursts)},
    {"fanout_size", B_U32, O(fanout_size)},
    {"fanout_prefix_tokens", B_U32, O(fanout_prefix_tokens)},
    {"fanout_window_s", B_F64, O(fanout_window_s)},
    {"fanout_bg_rate", B_F64, O(fanout_bg_rate)},
    {"fanout_decoys", B_U32, O(fanout_decoys)},
    {"fanout_decoy_size", B_U32, O(fanout_decoy_size)},
    {"in_dist", B_ENUM, O(in.kind)},
    {"in_mean", B_F64, O(in.mean)},
    {"in_sigma", B_F64, O(in.sigma)},
    {"in_zipf_s", B_F64, O(in.zipf_s)},
    {"in_min", B_U32, O(in.min)},
    {"in_max", B_U32, O(in.max)},
    {"in_path", B_STR, O(in.path)},
    {"out_dist", B_ENUM, O(out.kind)},
    {"out_mean", B_F64, O(out.mean)},
    {"out_sigma", B_F64, O(out.sigma)},
    {"out_zipf_s", B_F64, O(out.zipf_s)},
    {"out_min", B_U32, O(out.min)},
    {"out_max", B_U32, O(out.max)},
    {"out_path", B_STR, O(out.path)},
    {"prefix_shared_prob", B_F64, O(prefix_shared_prob)},
    {"prefix_count", B_U32, O(prefix_count)},
    {"prefix_zipf_s", B_F64, O(prefix_zipf_s)},
    {"prefix_tokens", B_F64, O(prefix_tokens)},
    {"prefix_sigma", B_F64, O(prefix_sigma)},
    {"session_mode", B_ENUM, O(session_mode)},
    {"session_prob", B_F64, O(session_prob)},
    {"session_active", B_U32, O(session_active)},
    {"group_prob", B_F64, O(group_prob)},
    {"group_size", B_U32, O(group_size)},
    {"group_window_s", B_F64, O(group_window_s)},
    {"group_tokens", B_U32, O(group_tokens)},
};
#undef O
#define N_BINDS (sizeof binds / sizeof binds[0])

/* Index of word in a comma-separated list, or -1. */
static int choice_index(const char *choices, const char *word)
{
	size_t n = strlen(word);
	int i = 0;
	for (const char *p = choices; *p; i++) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == n && !strncmp(p, word, n))
			return i;
		if (!c)
			break;
		p = c + 1;
	}
	return -1;
}

static const cfg_key_t *key_named(const char *name)
{
	for (size_t i = 0; i < tr_cfg_keys_n; i++)
		if (!strcmp(tr_cfg_keys[i].name, name))
			return &tr_cfg_keys[i];
	return NULL;
}

static void store(tr_opts_t *o, const binding_t *b, const cfg_key_t *k, const char *text,
                  double num)
{
	char *p = (char *)o + b->off;
	switch (b->type) {
	case B_U32:
		*(uint32_t *)p = (uint32_t)num;
		break;
	case B_U64:
		*(uint64_t *)p = (uint64_t)num;
		break;
	case B_F64:
		*(double *)p = num;
		break;
	case B_STR:
		*(const char **)p = text;
		break;
	case B_BOOL:
		*(int *)p = num != 0;
		break;
	case B_ENUM: {
		/* every enum field is an int-sized C enum whose order follows the choices */
		int v = choice_index(k->choices, text);
		*(int *)p = v < 0 ? 0 : v;
		break;
	}
	}
}

void tr_opts_default(tr_opts_t *o)
{
	memset(o, 0, sizeof *o);
	for (size_t i = 0; i < N_BINDS; i++) {
		const cfg_key_t *k = key_named(binds[i].name);
		const char *d = k->def;
		double num = binds[i].type == B_BOOL ? !strcmp(d, "true") : strtod(d, NULL);
		store(o, &binds[i], k, d, num);
	}
}

int tr_opts_check(const tr_opts_t *o, err_t *e)
{
	for (size_t i = 0; i < N_BINDS; i++) {
		const cfg_key_t *k = key_named(binds[i].name);
		const char *p = (const char *)o + binds[i].off;
		double v;
		switch (binds[i].type) {
		case B_U32:
			v = *(const uint32_t *)p;
			break;
		case B_U64:
			v = (double)*(const uint64_t *)p;
			break;
		case B_F64:
			v = *(const double *)p;
			break;
		default:
			continue;
		}
		if (k->min < k->max && !(v >= k->min && v <= k->max)) {
			const char *u = k->unit && *k->unit ? k->unit : "";
			/* the schema's wording (sim/base/cfg.c), without the origin it lacks */
			return err_set(e, KS_EINPUT, "[trace] %s: %.15g%s%s is out of range [%.15g, %.15g]",
			               k->name, v, *u ? " " : "", u, k->min, k->max);
		}
	}
	return 0;
}

int tr_opts_from_cfg(const cfg_t *cfg, tr_opts_t *o, err_t *e)
{
	(void)e;
	tr_opts_default(o);
	for (size_t i = 0; i < N_BINDS; i++) {
		const cfg_key_t *k = key_named(binds[i].name);
		double num = 0;
		const char *text = NULL;
		switch (k->type) {
		case CFG_INT:
			num = (double)cfg_int(cfg, "trace", k->name);
			break;
		case CFG_FLOAT:
			num = cfg_float(cfg, "trace", k->name);
			break;
		case CFG_BOOL:
			num = cfg_bool(cfg, "trace", k->name);
			break;
		case CFG_STR:
		case CFG_ENUM:
			text = cfg_str(cfg, "trace", k->name);
			break;
		}
		store(o, &binds[i], k, text, num);
	}
	return 0;
}

int tr_opts_paths(const cfg_t *cfg, tr_opts_t *o, tr_paths_t *p, err_t *e)
{
	int rc = cfg_path(cfg, "trace", "path", p->path, sizeof p->path, e);
	if (!rc)
		rc = cfg_path(cfg, "trace", "in_path", p->in, sizeof p->in, e);
	if (!rc)
		rc = cfg_path(cfg, "trace", "out_path", p->out, sizeof p->out, e);
	if (rc)
		return rc;
	o->path = p->path;
	o->in.path = p->in;
	o->out.path = p->out;
	return 0;
}

