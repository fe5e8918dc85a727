/* sim_rdeliver — the KV event channel of the events view (sim_rview.h): each
 * instance's events become messages and are released in the instance's
 * order, after a drawn delay. No engine: the caller asks for the messages
 * due at a time and wakes itself at the times this module names.
 *
 * batch_ns = 0: every event is its own message, sent at its time; else an
 * instance's events are sent together at the end of a window that opens at
 * its first event and lasts batch_ns. A message sent at t is due at
 * max(t + delay, the instance's previous message's due time), so messages of
 * one instance are released in the order sent; delay is delay_ns (FIXED),
 * exponential of mean delay_ns, or lognormal of mean delay_ns and
 * coefficient of variation cv, drawn from the stream seeded by seed (one
 * draw per message). Times ns. Memory: the module owns the windows and the
 * queued messages; a message returned by sim_rd_next is valid until the next
 * call on that instance. Errors: KS_ENOMEM.
 */
#ifndef KVSIM_SIM_RDELIVER_H
#define KVSIM_SIM_RDELIVER_H

#include <stdint.h>

enum { SIM_RD_FIXED, SIM_RD_EXPONENTIAL, SIM_RD_LOGNORMAL };

typedef struct sim_rd_params {
	int64_t delay_ns, batch_ns;
	int dist; /* SIM_RD_* */
	double cv;
	uint64_t seed;
} sim_rd_params_t;

typedef struct sim_rd_ev {
	uint64_t id;
	int stored; /* 1: stored, 0: removed */
} sim_rd_ev_t;

typedef struct sim_rd_msg {
	int64_t sent, due;
	const sim_rd_ev_t *ev;
	uint32_t n;
} sim_rd_msg_t;

typedef struct sim_rd sim_rd_t;

sim_rd_t *sim_rd_new(uint32_t n_inst, const sim_rd_params_t *p); /* NULL on ENOMEM */
void sim_rd_free(sim_rd_t *d);
/* An event of inst at now. *wake: when the caller must call sim_rd_next on
 * inst (a window's end, or the message's due time, possibly now), -1 when no
 * new time is needed. 0 or KS_ENOMEM. */
int sim_rd_publish(sim_rd_t *d, uint32_t inst, uint64_t id, int stored, int64_t now,
		   int64_t *wake);
/* The oldest message of inst due at or before now: 1 with *m, 0 when none
 * is, or KS_ENOMEM. A window ended by now is sent first (at its end); when
 * that makes a message due later, *wake is its due time, else -1. */
int sim_rd_next(sim_rd_t *d, uint32_t inst, int64_t now, sim_rd_msg_t *m, int64_t *wake);

#endif
