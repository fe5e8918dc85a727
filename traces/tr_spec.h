/* tr_spec — client workload specs (trace.kind = spec): a benchmark client's
 * shared-prefix profile, read from its own files, and the content of its
 * requests.
 *
 * Two forms of the same spec are read (told apart by content: a first
 * non-blank '{' is JSON):
 *
 *  - an inference-perf profile (YAML), under its own names:
 *      data.type: shared_prefix
 *      data.shared_prefix: num_groups, num_prompts_per_group,
 *          system_prompt_len, question_len, output_len,
 *          enable_multi_turn_chat (read, not modelled: see below)
 *      load.type: constant | poisson
 *      load.stages: [{rate (req/s), duration (s)}, ...]
 *      load.interval: s between a drained stage and the next (0 when absent)
 *    inference-perf's config model also accepts num_unique_system_prompts
 *    and num_users_per_system_prompt as aliases of num_groups and
 *    num_prompts_per_group; so does this reader. Sections that only concern
 *    the client's machinery (api, server, tokenizer, report, storage,
 *    metrics, load.num_workers, load.worker_max_concurrency,
 *    load.request_timeout, load.circuit_breakers) are skipped. Keys that
 *    would change the requests and are not modelled (length distributions,
 *    a stage's concurrency_level or num_requests, another data.type) are
 *    refused, never ignored.
 *  - a JSON file of experiment records ({"experiments": [{...}]}, as in a
 *    sim-to-real reference set): the record whose "id" is the experiment
 *    asked for (the only one when none is asked), its "workload" under
 *    another simulator's names (type, shared_prefix.num_unique_system_prompts,
 *    num_users_per_system_prompt, system_prompt_len, question_len,
 *    output_len; num_requests, when present, must equal what the stages
 *    send) and its "stages" [{rate, duration}]. Arrivals are constant-rate:
 *    the records' load_type says so.
 *
 * enable_multi_turn_chat: the measured latencies of the reference runs show
 * prompts that do not grow turn by turn, so every request is a single turn
 * of system prompt + question.
 *
 * Content. Group g's system prompt is system_prompt_len tokens shared by its
 * num_prompts_per_group prompts; a prompt is that system prompt followed by
 * a question_len-token question; output_len is the request's output. As in
 * the client, the G x M prompts are listed once and shuffled (a seeded
 * permutation here); request k takes prompt perm[k mod G*M], so its group
 * is perm[k mod G*M] / M. Under reuse TR_SPEC_CYCLE the question is the
 * prompt's own, so request k + G*M repeats request k token for token (the
 * client's code cycles that list); under TR_SPEC_FRESH each request gets a
 * question of its own and only the system prompt is shared (another
 * simulator's reading of the same spec). Block ids chain over that content
 * as tr.h says: a group's system prompt's full blocks are the same ids in
 * every request of the group.
 *
 * Errors: KS_EINPUT "file:line: field: reason", KS_ENOMEM, KS_EIO. Times s,
 * rates req/s, lengths tokens.
 */
#ifndef KVSIM_TR_SPEC_H
#define KVSIM_TR_SPEC_H

#include <stdint.h>

#include "sim/base/err.h"

enum { TR_SPEC_CYCLE = 0, TR_SPEC_FRESH = 1 };

typedef struct tr_spec_stage {
	double rate;       /* req/s, > 0 */
	double duration_s; /* > 0 */
} tr_spec_stage_t;

typedef struct tr_spec {
	uint32_t groups, per_group;          /* G system prompts, M prompts each */
	uint32_t system_len, question_len, output_len;
	int poisson;                         /* load.type: 0 constant, 1 poisson */
	double interval_s;                   /* pause after a drained stage */
	tr_spec_stage_t *stages;             /* malloc'd */
	uint32_t n_stages;
	char experiment[256];                /* the JSON record's id; "" for YAML */
} tr_spec_t;

/* Reads the spec at path (experiment: the JSON record's id; NULL or "":
 * the file's only record; YAML takes none). */
int tr_spec_load(const char *path, const char *experiment, tr_spec_t *s, err_t *e);
void tr_spec_free(tr_spec_t *s);
/* Requests stage k sends under constant load: round(rate * duration). */
uint64_t tr_spec_stage_requests(const tr_spec_stage_t *g);

typedef struct tr_spec_req {
	uint32_t group, prompt;      /* prompt: the index in the G x M list (group * M + m) */
	uint32_t input_len, output_len, n_blocks;
	const uint64_t *blocks;      /* valid until the next call */
} tr_spec_req_t;

typedef struct tr_spec_gen tr_spec_gen_t;
/* Content of s's requests at simulated block size S (tokens), reuse
 * TR_SPEC_*, shuffle and questions from seed. */
int tr_spec_gen_new(const tr_spec_t *s, int reuse, uint32_t S, uint64_t seed,
		    tr_spec_gen_t **out, err_t *e);
/* Request k's content (k = 0, 1, ... in sending order; any order works). */
void tr_spec_gen_request(tr_spec_gen_t *g, uint64_t k, tr_spec_req_t *out);
void tr_spec_gen_free(tr_spec_gen_t *g);

#endif
