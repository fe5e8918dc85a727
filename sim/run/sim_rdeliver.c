/* sim_rdeliver — see sim_rdeliver.h. */
#include "sim/run/sim_rdeliver.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

typedef struct rd_msg {
	int64_t sent, due;
	sim_rd_ev_t *ev;
	uint32_t n;
} rd_msg_t;

/* One instance: its open window and its queued messages, oldest first. */
typedef struct rd_pub {
	sim_rd_ev_t *win;
	uint32_t n_win, cap_win;
	int64_t win_end; /* -1: no window open */
	rd_msg_t *q;
	uint32_t head, n, cap;
	int64_t last_due;
	sim_rd_ev_t *out; /* the message last returned */
} rd_pub_t;

struct sim_rd {
	sim_rd_params_t p;
	gsl_rng *rng; /* the delays (mt19937, as every stream of the run) */
	uint32_t n_inst;
	rd_pub_t *pub;
};

sim_rd_t *sim_rd_new(uint32_t n_inst, const sim_rd_params_t *p)
{
	sim_rd_t *d = calloc(1, sizeof *d);
	if (!d || !(d->pub = calloc(n_inst ? n_inst : 1, sizeof *d->pub)) ||
	    !(d->rng = gsl_rng_alloc(gsl_rng_mt19937))) {
		if (d)
			free(d->pub);
		free(d);
		return NULL;
	}
	gsl_rng_set(d->rng, (unsigned long)(p->seed ? p->seed : 1));
	d->p = *p;
	d->n_inst = n_inst;
	for (uint32_t i = 0; i < n_inst; i++)
		d->pub[i].win_end = -1;
	return d;
}

void sim_rd_free(sim_rd_t *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; i < d->n_inst; i++) {
		rd_pub_t *x = &d->pub[i];
		for (uint32_t k = 0; k < x->n; k++)
			free(x->q[(x->head + k) % x->cap].ev);
		free(x->q);
		free(x->win);
		free(x->out);
	}
	free(d->pub);
	gsl_rng_free(d->rng);
	free(d);
}

static int64_t rd_delay(sim_rd_t *d)
{
	double mean = (double)d->p.delay_ns;
	if (mean <= 0 || d->p.dist == SIM_RD_FIXED)
		return d->p.delay_ns;
	if (d->p.dist == SIM_RD_EXPONENTIAL)
		return llround(gsl_ran_exponential(d->rng, mean));
	/* lognormal of mean m and cv c: sigma^2 = ln(1 + c^2), zeta = ln m -
	 * sigma^2 / 2 (the lognormal's moments) */
	double s2 = log1p(d->p.cv * d->p.cv);
	return llround(gsl_ran_lognormal(d->rng, log(mean) - s2 / 2, sqrt(s2)));
}

/* Queues ev[0..n) (copied) sent at t; its due time. */
static int rd_send(sim_rd_t *d, rd_pub_t *x, const sim_rd_ev_t *ev, uint32_t n, int64_t t,
		   int64_t *due)
{
	int64_t at = t + rd_delay(d);
	at = at > x->last_due ? at : x->last_due;
	x->last_due = at;
	if (x->n == x->cap) {
		uint32_t cap = x->cap ? 2 * x->cap : 8;
		rd_msg_t *q = malloc(cap * sizeof *q);
		if (!q)
			return KS_ENOMEM;
		for (uint32_t k = 0; k < x->n; k++)
			q[k] = x->q[(x->head + k) % x->cap];
		free(x->q);
		x->q = q;
		x->cap = cap;
		x->head = 0;
	}
	rd_msg_t m = {t, at, malloc(n * sizeof *ev), n};
	if (!m.ev)
		return KS_ENOMEM;
	memcpy(m.ev, ev, n * sizeof *ev);
	x->q[(x->head + x->n++) % x->cap] = m;
	*due = at;
	return 0;
}

int sim_rd_publish(sim_rd_t *d, uint32_t inst, uint64_t id, int stored, int64_t now,
		   int64_t *wake)
{
	rd_pub_t *x = &d->pub[inst];
	sim_rd_ev_t e = {id, stored};
	*wake = -1;
	if (!d->p.batch_ns)
		return rd_send(d, x, &e, 1, now, wake);
	if (x->win_end < 0)
		*wake = x->win_end = now + d->p.batch_ns;
	if (VEC_GROW(x->win, x->cap_win, x->n_win + 1, 16))
		return KS_ENOMEM;
	x->win[x->n_win++] = e;
	return 0;
}

int sim_rd_next(sim_rd_t *d, uint32_t inst, int64_t now, sim_rd_msg_t *m, int64_t *wake)
{
	rd_pub_t *x = &d->pub[inst];
	*wake = -1;
	if (x->win_end >= 0 && x->win_end <= now) {
		int64_t due;
		int rc = rd_send(d, x, x->win, x->n_win, x->win_end, &due);
		if (rc)
			return rc;
		x->n_win = 0;
		x->win_end = -1;
		*wake = due > now ? due : -1;
	}
	if (!x->n || x->q[x->head].due > now)
		return 0;
	rd_msg_t q = x->q[x->head];
	x->head = (x->head + 1) % x->cap;
	x->n--;
	free(x->out);
	x->out = q.ev;
	*m = (sim_rd_msg_t){q.sent, q.due, q.ev, q.n};
	return 1;
}
