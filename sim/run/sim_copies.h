/* sim_copies — the state the copy files share and no other piece of the
 * run reads: the copies (sim_copy.c and its pieces, sim_evict.c,
 * sim_fetch.c include this header; the others call the functions sim_int.h
 * declares). The run holds it as sim_ctx_t.cp: sim_net_init makes it,
 * sim_net_free frees it with every copy's blocks. Times ns, sizes bytes.
 */
#ifndef KVSIM_SIM_COPIES_H
#define KVSIM_SIM_COPIES_H

#include "sim/run/sim_int.h"

/* sim_copy_begin's answer when every block is already at the destination */
#define COPY_NOTHING 2

/* Job ids of source-side reads (their end needs no action). */
#define SOURCE_JOB (1ULL << 63)

typedef struct copy_costs {
	int64_t overhead_ns;   /* startup added to the path latency */
	double rate_cap;       /* bytes/s per shard, 0 = none */
	int64_t source_job_ns; /* compute the source spends reading, 0 = none */
	int64_t alone_ns;      /* one shard alone on its path, whole copy */
} copy_costs_t;

/* Costs a transfer engine adds to a copy between instances over the NIC
 * ([kvcache] transfer_engine; figures and sources in sim_copy.c). */
typedef struct xfer_engine {
	const char *name;
	double nic_efficiency;    /* achieved / line rate */
	int64_t per_copy_ns;      /* setup of one transfer (RPC, metadata, submit) */
	int64_t per_block_ns;     /* per block (one work request / chunk each) */
	int source_read;          /* 1: staging read occupies the source's compute */
} xfer_engine_t;

/* What a copy holds of its block j (kcopy_t.held[j]), recorded when taken
 * and released exactly (sim_copy_release, sim_copy_land), never inferred
 * from block state: COPY_HELD_SRC, a pin on the source (kv_pin or
 * kv_pin_any: one kv_unref); COPY_HELD_DST, its INFLIGHT reservation at the
 * destination (kv_ready on landing, kv_drop on cancel). */
enum { COPY_HELD_SRC = 1, COPY_HELD_DST = 2 };

/* One KV copy: a set of blocks between two instances (or from a node's
 * host tier), moved as one flow per tensor-parallel shard. */
typedef struct kcopy {
	uint64_t id;
	place_t src, dst;       /* instance, or a tier below HBM (sim_place.h) */
	uint64_t *blocks;       /* owned: sim_copy_blocks_alloc (held lies in it) */
	uint8_t *held;          /* held[j]: COPY_HELD_* of blocks[j] (NULL: a handoff) */
	uint32_t n;
	int cls;                /* NET_FG / NET_BG */
	int kind;               /* PATH_* (every shard takes the same kind of path) */
	int64_t requested;      /* ns: asked for */
	int64_t started;        /* ns: flows started (== requested unless deferred) */
	int deferred;           /* reserved, flows wait for the source to compute */
	uint32_t pending;       /* ... source blocks not READY yet */
	uint32_t depth0;        /* ... the source's depth of blocks[0] */
	int contig;             /* ... blocks[j] at depth depth0 + j, every j */
	int spec;               /* a speculative replica (policy-issued background) */
	uint32_t flows_left;
	uint64_t flow_ids[64];
	uint32_t n_flows;
	int from_policy;        /* tell the replication policy when it ends */
	sim_req_t *req;         /* a request waiting on this fetch, or NULL */
	int live;
	int mode;               /* how its time is paid: COPY_* (sim_copy_mode.h) */
	ev_handle_t timer;      /* timer mode: its completion event */
	int64_t alone_ns;       /* timer and job modes: duration of each shard */
	uint64_t shard_bytes;
	/* a handoff (sim_disagg.c): its record's index + 1 (0: a block copy;
	 * blocks is then NULL, n the blocks moved), the TP of both ends */
	uint32_t handoff;
	uint32_t tp_src, tp_dst;
} kcopy_t;

typedef struct replica {
	int64_t landed;
	uint32_t blocks_left;   /* speculative blocks still resident */
	int used;
} replica_t;

/* The copies of a run and their rules ([network], [kvcache]). */
struct sim_copies {
	int block_granular;
	int64_t copy_overhead_ns;
	sim_fetch_t fetch_rule;      /* peers */
	sim_fetch_t host_fetch_rule; /* the node's host tier */
	int copy_uncomputed;    /* kvcache.copy_from = uncomputed */
	xfer_engine_t engine;
	int copy_deferred;      /* kvcache.copy_deferred */
	uint32_t *deferred;     /* indices of copies waiting for their source */
	size_t n_deferred, cap_deferred;
	kcopy_t *copies;
	size_t n_copies, cap_copies;
	replica_t *replicas;
	size_t n_replicas, cap_replicas;
	int live_events;        /* copies in flight */
	uint64_t handoff_bytes; /* moved by handoff flows (disagg.handoff_bytes) */
	int memo_on;            /* sim_copy_memo_mode() */
	struct sim_copy_memo *memo; /* refusals remembered, NULL until the first */
};

/* sim_copy_time.c: paths and costs */
kv_store_t *sim_store_of(sim_ctx_t *s, place_t where);
uint32_t sim_node_of(const sim_ctx_t *s, place_t where);
uint64_t sim_shard_copy_bytes(sim_ctx_t *s, uint32_t k);
int sim_shard_path(sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *links,
		   int *kind);
copy_costs_t sim_copy_costs(sim_ctx_t *s, const uint32_t *links, uint32_t len, int kind,
			    uint32_t k);

/* sim_copy_begin.c: a copy started */
/* Room for n block ids followed by their n hold flags (zero), in one
 * allocation the copy owns once made: *held points at the flags. NULL on
 * ENOMEM. */
uint64_t *sim_copy_blocks_alloc(uint32_t n, uint8_t **held);
/* Releases what held[0..k) records of blocks mv[0..k) between src and dst
 * (a reservation dropped, a pin unreferenced) and clears the flags: 0, or
 * a store hook's first error (everything is released). */
int sim_copy_release(sim_ctx_t *s, place_t src, place_t dst, const uint64_t *mv, uint8_t *held,
		      uint32_t k);
/* A copy not started has no timing mode (COPY_MODE_N); sim_copy_flows_start
 * starts it by its mode. mv comes from sim_copy_blocks_alloc, held its flags
 * (NULL with mv). */
kcopy_t *sim_copy_new(sim_ctx_t *s, place_t src, place_t dst, uint64_t *mv, uint8_t *held,
		      uint32_t k, int cls, int spec, int from_policy, sim_req_t *req);
int sim_copy_flows_start(sim_ctx_t *s, kcopy_t *c);
int sim_copy_holders_note(sim_ctx_t *s, place_t dst, const uint64_t *mv, uint32_t k);
int sim_copy_begin(sim_ctx_t *s, place_t src, place_t dst, const uint64_t *blocks, uint32_t n,
		   int cls, int spec, int from_policy, sim_req_t *req, uint64_t *id);

/* sim_copy_land.c: a copy's rows and its landing, whatever its mode */
/* One shard's /transfers row (rec: its flow record, or one made alike) and
 * its bytes in the summary by class (cancelled ones also apart). */
int sim_copy_shard_row(sim_ctx_t *s, const kcopy_t *k, const net_flow_rec_t *rec);
/* Every shard of copy k has arrived: its blocks exist at the destination. */
int sim_copy_land(sim_ctx_t *s, kcopy_t *k);
void sim_copy_deferred_forget(sim_ctx_t *s, uint32_t idx);

/* sim_copy_defer.c: a copy accepted before its source is READY */
/* Whether a refused copy from src is tried as deferred (sim_copy_start):
 * asked for by a policy, kvcache.copy_deferred on, src an instance. */
int sim_copy_defer_applies(const sim_ctx_t *s, place_t src, int from_policy);
int sim_copy_defer(sim_ctx_t *s, uint32_t src, uint32_t dst, const uint64_t *blocks, uint32_t n,
		   int cls, int spec, sim_req_t *req, uint64_t *id);

/* sim_copy_memo.c: refused copies' retries (see there). _refused: 1 when a
 * block remembered still bars the copy (refused, POL_REFUSED_SOURCE), 2 the
 * same under KVSIM_COPY_MEMO=check (the caller attempts it and compares), 0
 * unknown. _note: after a refusal, *why from a scan of the stores, and the
 * barring block remembered; 0 or KS_ENOMEM. _mode: KVSIM_COPY_MEMO (unset:
 * 1 on; off: 0; check: 2). _wrong: a check failed: says so on stderr,
 * KS_ERUNTIME. */
int sim_copy_memo_refused(sim_ctx_t *s, place_t src, uint32_t dst, const uint64_t *blocks,
			  uint32_t n, int from_policy);
int sim_copy_memo_note(sim_ctx_t *s, place_t src, uint32_t dst, const uint64_t *blocks,
		       uint32_t n, int from_policy, pol_refusal_t *why);
int sim_copy_memo_mode(void);
int sim_copy_memo_wrong(const char *what);
void sim_copy_memo_free(struct sim_copy_memo *m);

/* sim_evict.c: a speculative block left its store */
void sim_spec_block_gone(sim_ctx_t *s, const kv_block_info_t *b, int64_t now);

#endif
