/* sim_clients — closed-loop clients: a source of arrivals (sim.h
 * sim_source_t) that the run feeds back with every request's row.
 *
 * N users, each with at most one request in flight. A user starts by
 * thinking; when its think time ends it sends the next request of its
 * script; when that request's row comes back (completed, rejected, or
 * unfinished at the end) it thinks again: exponential think times with
 * mean think_s, or exactly think_s. So user u's request k+1 arrives at
 * (the time request k's row came back) + think, never earlier. What a user
 * sends is its script's business (a per-user generator: sessions of
 * agent/RAG turns, a benchmark's fixed prompts); the clients own timing
 * only. Nothing is read ahead: a request exists from the moment its think
 * time starts, and the run sees it when no other user can still send an
 * earlier one (sim.h SIM_SRC_WAIT).
 *
 * Requests are numbered 0, 1, ... in arrival order; sim_clients_user maps
 * an id back to its user. Sending stops at duration_s (no arrival at or
 * after it) or after max_requests; the run then ends when the last request
 * in flight does. Think times come from a hash of (seed, user, k), so they
 * do not depend on the order in which the run asks.
 *
 * Times ns. Ownership: the clients own their source and the script's
 * context is the caller's. Errors: KS_EINPUT "[trace] key: reason",
 * KS_ENOMEM, or the script's.
 */
#ifndef KVSIM_SIM_CLIENTS_H
#define KVSIM_SIM_CLIENTS_H

#include <stdint.h>

#include "sim/base/cfg.h"
#include "sim/run/sim.h"

/* One user's next request: fills a (all but id and arrival_ns, which are
 * the clients'); its arrays stay valid until the next call. 1, 0 when this
 * user sends nothing more, < 0 on error. */
typedef struct sim_script {
	int (*next)(void *ctx, uint32_t user, sim_arrival_t *a, err_t *e);
	void *ctx;
} sim_script_t;

/* A load stage, as client benchmarks run them (N users for a while, then
 * M): from start_s on, users 0 .. users-1 send and the others do not. A
 * user whose think time ends while it is not among them sleeps until the
 * next stage that has it, and starts that stage by thinking, as every user
 * starts the run; a request in flight when its stage ends still completes. */
typedef struct sim_clients_stage {
	double start_s;
	uint32_t users;
} sim_clients_stage_t;

/* An open-loop stage, as a load generator runs them (inference-perf's
 * load.stages): requests at `rate` req/s for duration_s, whether earlier
 * ones have come back or not. Constant load: round(rate x duration_s)
 * requests at start + i / rate; poisson: exponential gaps of mean 1 / rate
 * from a hash of (seed, stage, i), while before start + duration_s. Stages
 * run one after the other, each drained before the next: stage k + 1
 * starts at max(stage k's start + duration_s, the time the last row of a
 * request sent so far came back) + gap_s, so its first arrival comes after
 * every earlier request finished. The script is asked with user = the
 * stage's index. */
typedef struct sim_clients_open {
	double rate, duration_s;
} sim_clients_open_t;

typedef struct sim_clients_opts {
	uint32_t users;
	double think_s;
	int think_fixed;       /* 1: always think_s; 0: exponential with mean think_s */
	double duration_s;     /* no arrival at or after it; 0: none */
	uint64_t max_requests; /* 0: none */
	uint64_t seed;
	const char *name;      /* the source's name ("gen:sessions") */
	/* stages[0 .. n_stages), start_s increasing from 0, users <= users
	 * (copied); NULL: every user for the whole run */
	const sim_clients_stage_t *stages;
	uint32_t n_stages;
	/* open[0 .. n_open) (copied): open-loop stages instead of users (users,
	 * think times and stages are then not used); n_open 0: closed loop */
	const sim_clients_open_t *open;
	uint32_t n_open;
	int poisson;  /* open stages: 1 exponential gaps, 0 constant */
	double gap_s; /* open stages: pause after a drained stage */
} sim_clients_opts_t;

typedef struct sim_clients sim_clients_t;

int sim_clients_new(const sim_clients_opts_t *o, const sim_script_t *script,
		    sim_clients_t **out, err_t *e);
/* The source to run and the feedback it needs (sim_run_opts_t.feedback);
 * both owned by c. */
sim_source_t *sim_clients_source(sim_clients_t *c);
const sim_feedback_t *sim_clients_feedback(sim_clients_t *c);
/* The user that sent request id (open stages: its stage); UINT32_MAX when
 * none did. */
uint32_t sim_clients_user(const sim_clients_t *c, uint64_t id);
/* Open stages: the arrival window of stage k once the run has ended,
 * [*t0, *t1) in ns: its start and the next stage's start (the last stage
 * that started: its drain time, INT64_MAX when the run stopped before it
 * drained), so it holds exactly the stage's arrivals. 0 when the stage
 * never started (the run stopped first), else 1. */
int sim_clients_open_window(const sim_clients_t *c, uint32_t k, int64_t *t0, int64_t *t1);
/* Share of the run sent, 0..1 (duration or request count); -1 unknown. */
double sim_clients_fraction(void *c);
void sim_clients_free(sim_clients_t *c);

/* ---- trace.gen = sessions: the clients over agent/RAG sessions ----------- */

typedef struct sim_sessions sim_sessions_t;
/* Builds the sessions of the [trace] section (traces/tr_sess.h) at block
 * size S with seed, and their clients; 0 with *out NULL when the section is
 * no closed loop. */
int sim_sessions_open(const cfg_t *cfg, uint32_t S, uint64_t seed, sim_sessions_t **out,
		      err_t *e);
sim_clients_t *sim_sessions_clients(sim_sessions_t *ss);
/* The session and turn of request id (0 when none). */
int sim_sessions_of(const sim_sessions_t *ss, uint64_t id, uint64_t *session, uint32_t *turn);
void sim_sessions_free(sim_sessions_t *ss);

/* ---- trace.kind = spec: a client's workload spec (traces/tr_spec.h) ------ */

typedef struct sim_spec sim_spec_t;
/* Loads the spec of the [trace] section and its open-loop clients at block
 * size S with seed; 0 with *out NULL when trace.kind is not spec. */
int sim_spec_open(const cfg_t *cfg, uint32_t S, uint64_t seed, sim_spec_t **out, err_t *e);
sim_clients_t *sim_spec_clients(sim_spec_t *sp);
/* The stages' windows after the run (sim_run_opts_t.windows). */
size_t sim_spec_windows(void *sp, int64_t *edges, size_t cap);
void sim_spec_free(sim_spec_t *sp);

#endif
