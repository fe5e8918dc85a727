/* tr_cfg — the [trace] config keys (see sim/base/cfg.h), each declared once
 * with the tr_opts_t field it fills (cfg_tkey_t). The table is the single
 * source of defaults: tr_opts_default parses each key's default text,
 * tr_opts_from_cfg fills resolved values (cfg_fill), tr_opts_check holds
 * hand-built options to the keys' ranges. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "traces/tr.h"
#include "traces/tr_spec.h"

/* The C value of each enum key's names; the choices are these names, in
 * this order (cfg.h). */
#define TR_KIND_MAP(K, name, fmt) {name, TR_KIND_##K},
static const cfg_enum_t kind_map[] = {
    {"auto", TR_KIND_AUTO}, TR_FORMAT_LIST(TR_KIND_MAP){"gen", TR_KIND_GEN}, {"spec", TR_KIND_SPEC}, {NULL, 0}};
static const cfg_enum_t spec_reuse_map[] = {
    {"cycle", TR_SPEC_CYCLE}, {"fresh", TR_SPEC_FRESH}, {NULL, 0}};
#undef TR_KIND_MAP
static const cfg_enum_t failed_map[] = {{"keep", 0}, {"drop", 1}, {NULL, 0}};
#define TR_GEN_MAP(G, name, ops) {name, TR_GEN_##G},
static const cfg_enum_t gen_map[] = {TR_GEN_LIST(TR_GEN_MAP){NULL, 0}};
#undef TR_GEN_MAP
static const cfg_enum_t flash_map[] = {{"step", 0}, {"spike", 1}, {NULL, 0}};
static const cfg_enum_t dist_map[] = {{"fixed", TR_DIST_FIXED},
                                      {"uniform", TR_DIST_UNIFORM},
                                      {"lognormal", TR_DIST_LOGNORMAL},
                                      {"zipf", TR_DIST_ZIPF},
                                      {"empirical", TR_DIST_EMPIRICAL},
                                      {NULL, 0}};
static const cfg_enum_t sess_map[] = {
    {"off", TR_SESS_OFF}, {"trace", TR_SESS_TRACE}, {"synthetic", TR_SESS_SYNTH}, {NULL, 0}};

/* When a generator's keys act (cfg_when_t): only under that generator, so
 * one set for another says so when the config resolves. */
#define GEN_IS(g) "trace.kind = gen and trace.gen = " g
static const cfg_when_t when_rate = {
    GEN_IS("poisson|gamma|weibull|flash|diurnal"),
    "use trace.rate_scale, the load factor every source obeys (a trace file's arrivals, "
    "each generator's rates and fan-out's bursts)"};
static const cfg_when_t when_cv = {GEN_IS("gamma|weibull"), NULL};
static const cfg_when_t when_mmpp = {GEN_IS("mmpp"), NULL};
static const cfg_when_t when_flash = {GEN_IS("flash"), NULL};
static const cfg_when_t when_flash_step = {GEN_IS("flash") " and trace.flash_shape = step", NULL};
static const cfg_when_t when_flash_spike = {GEN_IS("flash") " and trace.flash_shape = spike",
                                            NULL};
static const cfg_when_t when_diurnal = {GEN_IS("diurnal"), NULL};
static const cfg_when_t when_fanout = {GEN_IS("fanout"), NULL};
static const cfg_when_t when_crowd = {GEN_IS("crowd"), NULL};
static const cfg_when_t when_spec = {"trace.kind = spec", NULL};
#undef GEN_IS
/* A length distribution's parameters, each only under its own kind. */
static const cfg_when_t when_in_mean = {"trace.in_dist = fixed|lognormal", NULL};
static const cfg_when_t when_in_sigma = {"trace.in_dist = lognormal", NULL};
static const cfg_when_t when_in_zipf = {"trace.in_dist = zipf", NULL};
static const cfg_when_t when_in_path = {"trace.in_dist = empirical", NULL};
static const cfg_when_t when_out_mean = {"trace.out_dist = fixed|lognormal", NULL};
static const cfg_when_t when_out_sigma = {"trace.out_dist = lognormal", NULL};
static const cfg_when_t when_out_zipf = {"trace.out_dist = zipf", NULL};
static const cfg_when_t when_out_path = {"trace.out_dist = empirical", NULL};

#define S "trace"
const cfg_tkey_t tr_cfg_keys[] = {
    /* what to read */
    {{S, "kind", CFG_ENUM, "auto", 0, 0, NULL, "",
     "trace format (auto: detect from the first line; gen: a synthetic generator; "
     "servegen: generate from a ServeGen windows CSV; spec: a client's workload spec at "
     "path, an inference-perf profile (YAML) or experiment records (JSON), sent by "
     "open-loop clients stage after drained stage, traces/tr_spec.h)",
     NULL},
     CFG_AT_ENUM(tr_opts_t, kind, kind_map)},
    {{S, "path", CFG_STR, "", 0, 0, NULL, "path",
     "trace file (gen = servegen: the windows CSV); relative to the config file, else the "
     "working dir; a regular file (it is read more than once: a FIFO or a device is refused)",
     NULL},
     CFG_AT(STR, tr_opts_t, path)},
    {{S, "start_s", CFG_FLOAT, "0", 0, 4e9, NULL, "s",
     "skip requests before this trace time (seconds after the first row)", NULL},
     CFG_AT(DOUBLE, tr_opts_t, start_s)},
    {{S, "end_s", CFG_FLOAT, "0", 0, 4e9, NULL, "s",
     "stop at this trace time (seconds after the first row); 0 = no end", NULL},
     CFG_AT(DOUBLE, tr_opts_t, end_s)},
    {{S, "rate_scale", CFG_FLOAT, "1", 1e-6, 1e6, NULL, "",
     "load multiplier, acting on every source: 2 doubles the requests offered per second. "
     "A trace file: arrival = (t - start_s) / rate_scale (time compressed, same requests). "
     "A generator: its rates times rate_scale over the same duration_s, every other time "
     "scale kept: rate (poisson, gamma, weibull, flash, diurnal), mmpp_rate0 and "
     "mmpp_rate1, each servegen window's rate; fanout: fanout_bursts and fanout_decoys "
     "times rate_scale (rounded half up, each of unchanged size) and fanout_bg_rate", NULL},
     CFG_AT(DOUBLE, tr_opts_t, rate_scale)},
    {{S, "limit", CFG_INT, "0", 0, 1e15, NULL, "requests",
     "stop after this many requests (after filtering); 0 = all", NULL},
     CFG_AT(U64, tr_opts_t, limit)},
    {{S, "trace_block_tokens", CFG_INT, "0", 0, 1048576, NULL, "tokens",
     "block size of the trace's hash ids; 0 = the format's (mooncake 512, bailian 16, "
     "native: its header)",
     NULL},
     CFG_AT(U32, tr_opts_t, trace_block_tokens)},
    {{S, "failed", CFG_ENUM, "keep", 0, 0, NULL, "",
     "rows failed in the source trace (BurstGPT zero response tokens): keep with "
     "status 1, or drop",
     NULL},
     CFG_AT_ENUM(tr_opts_t, drop_failed, failed_map)},
    {{S, "check_blocks", CFG_BOOL, "true", 0, 0, NULL, "",
     "require ceil(input_length / trace_block_tokens) hash ids per JSONL row", NULL},
     CFG_AT(BOOL, tr_opts_t, check_blocks)},
    {{S, "max_tokens", CFG_INT, "16777216", 1, 4294967295.0, NULL, "tokens",
     "longest accepted input or output length; longer is an input error", NULL},
     CFG_AT(U32, tr_opts_t, max_tokens)},
    {{S, "max_line_bytes", CFG_INT, "67108864", 1, 1e12, NULL, "bytes",
     "longest accepted line of a trace file (decompressed, without its newline), in every "
     "format: a longer one is an input error on its line, found before it is buffered "
     "whole (a file without newlines would otherwise be read into memory at once). 64 MiB "
     "is own choice: far above a row of lengths, times and hash ids, and what one line may "
     "cost in memory",
     NULL},
     CFG_AT(U64, tr_opts_t, max_line_bytes)},
    /* generators */
    {{S, "gen", CFG_ENUM, "poisson", 0, 0,
     NULL, "",
     "arrival process when kind = gen (sessions: closed-loop users running agent/RAG "
     "sessions over shared documents, made as the run goes; keys in tr_gen_session.c)",
     NULL},
     CFG_AT_ENUM(tr_opts_t, gen, gen_map)},
    {{S, "rate", CFG_FLOAT, "10", 0, 1e9, NULL, "req/s",
     "mean (poisson, gamma, weibull) or base (flash, diurnal) request rate; a trace file "
     "and the other generators ignore it (set there: a warning naming trace.rate_scale, "
     "the load key every source obeys)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, rate, &when_rate)},
    {{S, "cv", CFG_FLOAT, "1", 0.05, 20, NULL, "",
     "inter-arrival coefficient of variation of gamma and weibull gaps (range: own "
     "choice; Weibull shapes 0.19 to 25, and at 20 about 94% of Gamma gaps at 20 req/s "
     "are already under 1 ns)",
     NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, cv, &when_cv)},
    {{S, "duration_s", CFG_FLOAT, "60", 0, 4e9, NULL, "s",
     "generate arrivals in [0, duration_s); 0 = until `requests`", NULL},
     CFG_AT(DOUBLE, tr_opts_t, duration_s)},
    {{S, "requests", CFG_INT, "0", 0, 1e15, NULL, "requests",
     "stop after this many generated requests; 0 = until duration_s", NULL},
     CFG_AT(U64, tr_opts_t, requests)},
    {{S, "max_generated", CFG_INT, "1000000000", 1, 1e15, NULL, "requests",
     "most requests a generator may make: one expected to make more (rate x duration_s, "
     "or a ServeGen window's rate x length) is refused before it runs for hours; 1e9 is "
     "own choice, 100x a 10M-request trace",
     NULL},
     CFG_AT(U64, tr_opts_t, max_generated)},
    {{S, "mmpp_rate0", CFG_FLOAT, "5", 0, 1e9, NULL, "req/s", "MMPP rate in state 0", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, mmpp_rate[0], &when_mmpp)},
    {{S, "mmpp_rate1", CFG_FLOAT, "50", 0, 1e9, NULL, "req/s", "MMPP rate in state 1", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, mmpp_rate[1], &when_mmpp)},
    {{S, "mmpp_dwell0_s", CFG_FLOAT, "30", 0, 1e9, NULL, "s",
     "MMPP mean sojourn in state 0 (exponential)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, mmpp_dwell_s[0], &when_mmpp)},
    {{S, "mmpp_dwell1_s", CFG_FLOAT, "5", 0, 1e9, NULL, "s",
     "MMPP mean sojourn in state 1 (exponential)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, mmpp_dwell_s[1], &when_mmpp)},
    {{S, "flash_start_s", CFG_FLOAT, "30", 0, 4e9, NULL, "s", "flash crowd onset", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, flash_start_s, &when_flash)},
    {{S, "flash_duration_s", CFG_FLOAT, "10", 0, 4e9, NULL, "s", "flash crowd length (step shape)",
     NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, flash_duration_s, &when_flash_step)},
    {{S, "flash_mult", CFG_FLOAT, "10", 0, 1e6, NULL, "",
     "rate multiplier at the flash crowd's peak", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, flash_mult, &when_flash)},
    {{S, "flash_shape", CFG_ENUM, "step", 0, 0, NULL, "",
     "step: rate*mult for flash_duration_s; spike: rate*(1+(mult-1)*exp(-(t-start)/tau))", NULL},
     CFG_AT_ENUM_WHEN(tr_opts_t, flash_spike, flash_map, &when_flash)},
    {{S, "flash_tau_s", CFG_FLOAT, "5", 0, 1e9, NULL, "s", "spike decay time constant", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, flash_tau_s, &when_flash_spike)},
    {{S, "diurnal_period_s", CFG_FLOAT, "86400", 0, 1e9, NULL, "s", "diurnal period", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, diurnal_period_s, &when_diurnal)},
    {{S, "diurnal_amp", CFG_FLOAT, "0.5", 0, 1, NULL, "",
     "diurnal relative amplitude: rate*(1 + amp*sin(2 pi t/period + phase))", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, diurnal_amp, &when_diurnal)},
    {{S, "diurnal_phase", CFG_FLOAT, "0", -1000, 1000, NULL, "rad", "diurnal phase", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, diurnal_phase, &when_diurnal)},
    {{S, "fanout_bursts", CFG_INT, "10", 0, 1e7, NULL, "",
     "fan-out generator: number of bursts (one per equal slot of duration_s)", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, fanout_bursts, &when_fanout)},
    {{S, "fanout_size", CFG_INT, "32", 0, 1e7, NULL, "requests", "requests per burst", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, fanout_size, &when_fanout)},
    {{S, "fanout_prefix_tokens", CFG_INT, "4096", 0, 16777216, NULL, "tokens",
     "prefix shared by a burst's requests (their input = prefix + an input-length draw)", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, fanout_prefix_tokens, &when_fanout)},
    {{S, "fanout_window_s", CFG_FLOAT, "2", 0, 1e9, NULL, "s",
     "a burst's requests arrive uniformly within this window", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, fanout_window_s, &when_fanout)},
    {{S, "fanout_bg_rate", CFG_FLOAT, "5", 0, 1e9, NULL, "req/s",
     "Poisson background traffic (prefix model applies)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, fanout_bg_rate, &when_fanout)},
    {{S, "fanout_decoys", CFG_INT, "10", 0, 1e7, NULL, "",
     "decoy groups: a prefix shared by only fanout_decoy_size requests", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, fanout_decoys, &when_fanout)},
    {{S, "fanout_decoy_size", CFG_INT, "2", 0, 1e7, NULL, "requests", "requests per decoy", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, fanout_decoy_size, &when_fanout)},
    /* crowd (traces/tr_gen_crowd.c): defaults are own choices, sized so that
     * a crowd lands while its prefix is computed somewhere and a copy of it
     * (16K tokens) has time to cross a 400 Gb/s NIC before the crowd */
    {{S, "crowd_count", CFG_INT, "4", 0, 1e7, NULL, "",
     "crowd generator: flash-crowd events, one per equal slot of duration_s (own choice: "
     "4 in the default 60 s leaves each a 15 s slot, room for the default lead and window)",
     NULL},
     CFG_AT_WHEN(U32, tr_opts_t, crowd_count, &when_crowd)},
    {{S, "crowd_size", CFG_INT, "32", 0, 1e7, NULL, "requests",
     "requests in an event's crowd, all sharing its prefix (own choice: fanout_size's "
     "default, more than one instance's batch can absorb at once)", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, crowd_size, &when_crowd)},
    {{S, "crowd_warm_requests", CFG_INT, "2", 0, 1e7, NULL, "requests",
     "requests with the event's prefix at its start t0, before the crowd: they compute the "
     "prefix on the instances they reach (own choice: 2, so a few instances hold it and the "
     "rest are copy targets)", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, crowd_warm_requests, &when_crowd)},
    {{S, "crowd_prefix_tokens", CFG_INT, "16384", 8192, 65536, NULL, "tokens",
     "prefix an event's requests share (input = prefix + an input-length draw); 8K-64K "
     "(own choice: 16K, a long document or agent context whose prefill takes seconds, "
     "so a copy beats recomputing it)", NULL},
     CFG_AT_WHEN(U32, tr_opts_t, crowd_prefix_tokens, &when_crowd)},
    {{S, "crowd_lead_s", CFG_FLOAT, "10", 0, 1e9, NULL, "s",
     "time from the warm-up requests to the crowd's first possible arrival (own choice: "
     "10 s, ample to compute a 16K prefix and copy it, short enough that it stays cached); "
     "crowd_lead_s + crowd_window_s must fit a slot", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, crowd_lead_s, &when_crowd)},
    {{S, "crowd_window_s", CFG_FLOAT, "2", 0, 1e9, NULL, "s",
     "the crowd's requests arrive uniformly within this window after the lead (own "
     "choice: fanout_window_s's default)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, crowd_window_s, &when_crowd)},
    {{S, "crowd_repeat", CFG_INT, "0", 0, 1e7, NULL, "",
     "of crowd_count events, the last crowd_repeat reuse the prefix of an earlier event "
     "drawn uniformly (a returning crowd); 0 (default): every event's prefix is its own",
     NULL},
     CFG_AT_WHEN(U32, tr_opts_t, crowd_repeat, &when_crowd)},
    {{S, "crowd_bg_rate", CFG_FLOAT, "5", 0, 1e9, NULL, "req/s",
     "Poisson background at t = 0 (prefix model applies; own choice: fanout_bg_rate's "
     "default)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, crowd_bg_rate, &when_crowd)},
    {{S, "crowd_bg_rate_end", CFG_FLOAT, "-1", -1, 1e9, NULL, "req/s",
     "background rate at duration_s, linear in between (a load ramp, e.g. to pair with "
     "cluster.join_at_s); -1 (default): crowd_bg_rate throughout", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, crowd_bg_rate_end, &when_crowd)},
    /* length distributions */
    {{S, "in_dist", CFG_ENUM, "lognormal", 0, 0, NULL, "",
     "generated input lengths", NULL},
     CFG_AT_ENUM(tr_opts_t, in.kind, dist_map)},
    {{S, "in_mean", CFG_FLOAT, "2048", 0, 1e9, NULL, "tokens", "fixed value or lognormal mean",
     NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, in.mean, &when_in_mean)},
    {{S, "in_sigma", CFG_FLOAT, "1", 0, 10, NULL, "", "lognormal sigma of log(length)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, in.sigma, &when_in_sigma)},
    {{S, "in_zipf_s", CFG_FLOAT, "1.1", 0, 10, NULL, "", "Zipf exponent over [in_min, in_max]",
     NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, in.zipf_s, &when_in_zipf)},
    {{S, "in_min", CFG_INT, "1", 0, 4294967295.0, NULL, "tokens", "lower clamp", NULL},
     CFG_AT(U32, tr_opts_t, in.min)},
    {{S, "in_max", CFG_INT, "131072", 0, 4294967295.0, NULL, "tokens",
     "upper clamp (0 = max_tokens)", NULL},
     CFG_AT(U32, tr_opts_t, in.max)},
    {{S, "in_path", CFG_STR, "", 0, 0, NULL, "path",
     "empirical: a trace file whose input lengths are resampled (relative as path)", NULL},
     CFG_AT_WHEN(STR, tr_opts_t, in.path, &when_in_path)},
    {{S, "out_dist", CFG_ENUM, "lognormal", 0, 0, NULL, "",
     "generated output lengths", NULL},
     CFG_AT_ENUM(tr_opts_t, out.kind, dist_map)},
    {{S, "out_mean", CFG_FLOAT, "256", 0, 1e9, NULL, "tokens", "fixed value or lognormal mean",
     NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, out.mean, &when_out_mean)},
    {{S, "out_sigma", CFG_FLOAT, "0.8", 0, 10, NULL, "", "lognormal sigma of log(length)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, out.sigma, &when_out_sigma)},
    {{S, "out_zipf_s", CFG_FLOAT, "1.1", 0, 10, NULL, "", "Zipf exponent over [out_min, out_max]",
     NULL},
     CFG_AT_WHEN(DOUBLE, tr_opts_t, out.zipf_s, &when_out_zipf)},
    {{S, "out_min", CFG_INT, "1", 0, 4294967295.0, NULL, "tokens", "lower clamp", NULL},
     CFG_AT(U32, tr_opts_t, out.min)},
    {{S, "out_max", CFG_INT, "8192", 0, 4294967295.0, NULL, "tokens", "upper clamp (0 = max_tokens)",
     NULL},
     CFG_AT(U32, tr_opts_t, out.max)},
    {{S, "out_path", CFG_STR, "", 0, 0, NULL, "path",
     "empirical: a trace file whose output lengths are resampled (relative as path)", NULL},
     CFG_AT_WHEN(STR, tr_opts_t, out.path, &when_out_path)},
    /* prefix model (traces without hash ids, generators) */
    {{S, "prefix_shared_prob", CFG_FLOAT, "0", 0, 1, NULL, "",
     "share of requests (session first turns) that start with a shared system prompt", NULL},
     CFG_AT(DOUBLE, tr_opts_t, prefix_shared_prob)},
    {{S, "prefix_count", CFG_INT, "100", 1, 4194304, NULL, "",
     "distinct shared prompts, popularity Zipf(prefix_zipf_s)", NULL},
     CFG_AT(U32, tr_opts_t, prefix_count)},
    {{S, "prefix_zipf_s", CFG_FLOAT, "1", 0, 10, NULL, "", "Zipf exponent of prompt popularity",
     NULL},
     CFG_AT(DOUBLE, tr_opts_t, prefix_zipf_s)},
    {{S, "prefix_tokens", CFG_FLOAT, "1024", 1, 16777216, NULL, "tokens",
     "mean shared prompt length (capped at the request's input)", NULL},
     CFG_AT(DOUBLE, tr_opts_t, prefix_tokens)},
    {{S, "prefix_sigma", CFG_FLOAT, "0", 0, 10, NULL, "",
     "lognormal sigma of prompt lengths (0: every prompt is prefix_tokens long)", NULL},
     CFG_AT(DOUBLE, tr_opts_t, prefix_sigma)},
    {{S, "session_mode", CFG_ENUM, "trace", 0, 0, NULL, "",
     "multi-turn sessions: off; trace (session ids in the trace, e.g. BurstGPT Session ID); "
     "synthetic (session_prob of requests continue an open session)",
     NULL},
     CFG_AT_ENUM(tr_opts_t, session_mode, sess_map)},
    {{S, "session_prob", CFG_FLOAT, "0.5", 0, 1, NULL, "",
     "synthetic sessions: share of requests that are a later turn", NULL},
     CFG_AT(DOUBLE, tr_opts_t, session_prob)},
    {{S, "session_active", CFG_INT, "1000", 1, 1e7, NULL, "",
     "synthetic sessions: open sessions a later turn picks from uniformly", NULL},
     CFG_AT(U32, tr_opts_t, session_active)},
    {{S, "group_prob", CFG_FLOAT, "0", 0, 1, NULL, "",
     "probability that a request opens a fan-out group", NULL},
     CFG_AT(DOUBLE, tr_opts_t, group_prob)},
    {{S, "group_size", CFG_INT, "16", 0, 1e7, NULL, "requests",
     "requests in a fan-out group, the opener included", NULL},
     CFG_AT(U32, tr_opts_t, group_size)},
    {{S, "group_window_s", CFG_FLOAT, "2", 0, 1e9, NULL, "s",
     "later requests join the group only within this time of the opener", NULL},
     CFG_AT(DOUBLE, tr_opts_t, group_window_s)},
    {{S, "group_tokens", CFG_INT, "4096", 0, 16777216, NULL, "tokens",
     "prefix shared by a fan-out group", NULL},
     CFG_AT(U32, tr_opts_t, group_tokens)},
    /* kind = spec (traces/tr_spec.h) */
    {{S, "spec_experiment", CFG_STR, "", 0, 0, NULL, "",
     "kind = spec with JSON records: the id of the record to run (\"\": the file's only one)",
     NULL},
     CFG_AT_WHEN(STR, tr_opts_t, spec_experiment, &when_spec)},
    {{S, "spec_reuse", CFG_ENUM, "cycle", 0, 0, NULL, "",
     "kind = spec: cycle (request k takes prompt k mod G x M of a fixed shuffled list, so "
     "repeats hit the prefix cache: what the inference-perf client's code does, hence the "
     "default) or fresh (a new question per request, only the system prompt shared: "
     "another simulator's reading)",
     NULL},
     CFG_AT_ENUM_WHEN(tr_opts_t, spec_reuse, spec_reuse_map, &when_spec)},
};
#undef S
const size_t tr_cfg_keys_n = sizeof tr_cfg_keys / sizeof tr_cfg_keys[0];

void tr_opts_default(tr_opts_t *o)
{
	memset(o, 0, sizeof *o);
	/* the defaults passed the schema (a table that does not fit tr_opts_t
	 * fails every test that reads a trace) */
	(void)cfg_fill_defaults(tr_cfg_keys, tr_cfg_keys_n, o, NULL);
}

int tr_opts_check(const tr_opts_t *o, err_t *e)
{
	return cfg_fields_check(tr_cfg_keys, tr_cfg_keys_n, o, e);
}

int tr_opts_from_cfg(const cfg_t *cfg, tr_opts_t *o, err_t *e)
{
	tr_opts_default(o);
	/* a key the selected source ignores (trace.rate on a file) was said when
	 * the config resolved: its condition is in the table */
	return cfg_fill(cfg, tr_cfg_keys, tr_cfg_keys_n, o, e);
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

