/* gv_replay — schedule to replay ops (see gv_replay.h). */
#include "gpu_validation/gv_replay.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_validation/gv_meas.h"
#include "models/mdl_xfer.h"

typedef struct endpoint {
	int32_t inst, gpu;
} endpoint_t;

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int64_t gv_median_i64(int64_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_i64);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

static int cmp_op(const void *a, const void *b)
{
	const gv_op_t *x = a, *y = b;
	if (x->phase != y->phase)
		return x->phase < y->phase ? -1 : 1;
	if (x->offset_ns != y->offset_ns)
		return x->offset_ns < y->offset_ns ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int cmp_start(const void *a, const void *b)
{
	const res_transfer_t *x = *(res_transfer_t *const *)a, *y = *(res_transfer_t *const *)b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Device index of an endpoint: -1 for host, else order of first use mod n_dev. */
static int map_dev(endpoint_t *seen, int *n_seen, int32_t inst, int32_t gpu, int n_dev)
{
	if (inst < 0 || gpu < 0)
		return -1;
	for (int i = 0; i < *n_seen; i++)
		if (seen[i].inst == inst && seen[i].gpu == gpu)
			return i % n_dev;
	if (*n_seen < 4096)
		seen[(*n_seen)++] = (endpoint_t){inst, gpu};
	return (*n_seen - 1) % n_dev;
}

/* Streams inside one phase: a copy takes the lowest stream whose last copy
 * is planned to end by its start (interval colouring, first fit). */
static int assign_streams(gv_op_t *op, size_t n)
{
	int64_t busy[256];
	int n_streams = 0;
	for (size_t i = 0; i < n; i++) {
		int s = 0;
		while (s < n_streams && busy[s] > op[i].offset_ns)
			s++;
		if (s == n_streams) {
			if (n_streams == 256) {
				s = (int)(i % 256); /* more flows than streams: share */
			} else {
				busy[s] = INT64_MIN;
				n_streams++;
			}
		}
		op[i].stream = s;
		int64_t end = op[i].offset_ns + op[i].planned_ns;
		if (end > busy[s])
			busy[s] = end;
	}
	return n_streams;
}

static void count_sharing(gv_op_t *op, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int same = 0, opp = 0;
		int64_t a0 = op[i].offset_ns,
			a1 = a0 + (op[i].planned_ns > 0 ? op[i].planned_ns : 1);
		for (size_t j = 0; j < n; j++) {
			int64_t b0 = op[j].offset_ns,
				b1 = b0 + (op[j].planned_ns > 0 ? op[j].planned_ns : 1);
			if (b0 >= a1 || a0 >= b1)
				continue;
			if (op[j].src_dev == op[i].src_dev && op[j].dst_dev == op[i].dst_dev)
				same++;
			else if (op[j].src_dev == op[i].dst_dev && op[j].dst_dev == op[i].src_dev)
				opp++;
		}
		op[i].m_same = same; /* includes itself */
		op[i].m_opp = opp;
	}
}

/* One transfer (devices sd, dd; -1 for host) as a copy to replay, all but
 * its phase and its offset in it. */
static void op_from_transfer(gv_op_t *op, const res_transfer_t *t, int sd, int dd, int groups,
                             const gv_replay_opts_t *o)
{
	op->id = t->id;
	op->src_dev = sd;
	op->dst_dev = dd;
	op->kind = sd < 0     ? GV_COPY_H2D
	           : dd < 0   ? GV_COPY_D2H
	           : sd == dd ? GV_COPY_D2D
	                      : GV_COPY_P2P;
	op->link = sd < 0     ? MDL_LINK_PCIE_H2D
	           : dd < 0   ? MDL_LINK_PCIE_D2H
	           : sd == dd ? MDL_LINK_LOCAL
	                      : MDL_LINK_NVLINK;
	op->bytes = t->bytes;
	op->blocks = t->blocks ? t->blocks : 1;
	if (op->blocks > op->bytes)
		op->blocks = (uint32_t)op->bytes;
	if (t->granular && o->slices > 1) {
		uint64_t copies = (uint64_t)op->blocks * o->slices;
		if (copies > op->bytes)
			copies = op->bytes;
		op->blocks = (uint32_t)(copies < UINT32_MAX ? copies : UINT32_MAX);
	}
	op->shape = t->granular && op->blocks > 1
	                ? (o->batch ? MDL_SHAPE_BATCH : MDL_SHAPE_GRANULAR)
	                : MDL_SHAPE_CONTIG;
	op->planned_start_ns = t->start_ns;
	op->planned_ns = t->end_ns > t->start_ns ? t->end_ns - t->start_ns : 1;
	op->inner = 1;
	if (groups && o->inner_bytes > op->bytes) {
		uint64_t k = o->inner_bytes / op->bytes;
		op->inner = (uint32_t)(k > 64 ? 64 : k);
	}
}

/* What the backends allocate for op: the largest copy out of and into each
 * device and the host, the devices used, the device pairs copying peer to
 * peer. */
static void note_buffers(gv_replay_t *r, const gv_op_t *op)
{
	int sd = op->src_dev, dd = op->dst_dev;
	uint64_t *src = sd < 0 ? &r->host_src : &r->dev_src[sd];
	uint64_t *dst = dd < 0 ? &r->host_dst : &r->dev_dst[dd];
	if (op->bytes > *src)
		*src = op->bytes;
	if (op->bytes > *dst)
		*dst = op->bytes;
	if (sd > r->n_dev - 1)
		r->n_dev = sd + 1;
	if (dd > r->n_dev - 1)
		r->n_dev = dd + 1;
	if (op->kind == GV_COPY_P2P)
		r->uses_p2p[sd][dd] = 1;
}

/* Sorts the ops by phase and offset, and gives each phase its first op,
 * its streams and its sharing counts. */
static void index_phases(gv_replay_t *r, int groups)
{
	qsort(r->op, r->n_op, sizeof *r->op, cmp_op);
	size_t i = 0;
	for (size_t p = 0; p < r->n_phase; p++) {
		r->phase_first[p] = i;
		size_t j = i;
		while (j < r->n_op && r->op[j].phase == (int)p)
			j++;
		if (groups) /* every copy of a group starts at once: its own stream */
			for (size_t k = i; k < j; k++)
				r->op[k].planned_ns = INT64_MAX / 4;
		int ns = assign_streams(&r->op[i], j - i);
		count_sharing(&r->op[i], j - i);
		if (ns > r->n_streams)
			r->n_streams = ns;
		i = j;
	}
	r->phase_first[r->n_phase] = r->n_op;
}

int gv_replay_build(gv_replay_t *r, const gv_sched_t *s, const gv_replay_opts_t *o, err_t *e)
{
	memset(r, 0, sizeof *r);
	int n_dev = o->n_dev < 1 ? 1 : o->n_dev > GV_MAX_DEV ? GV_MAX_DEV : o->n_dev;
	int groups = o->groups < 0 ? s->is_plan : o->groups;
	const res_transfer_t **by = malloc((s->n ? s->n : 1) * sizeof *by);
	endpoint_t *seen = malloc(4096 * sizeof *seen);
	r->op = calloc(s->n ? s->n : 1, sizeof *r->op);
	r->phase_first = calloc(s->n + 2, sizeof *r->phase_first);
	if (!by || !seen || !r->op || !r->phase_first) {
		free(by);
		free(seen);
		gv_replay_free(r);
		return err_set(e, KS_ENOMEM, "out of memory for %zu transfers", s->n);
	}
	for (size_t i = 0; i < s->n; i++)
		by[i] = &s->xfer[i];
	qsort(by, s->n, sizeof *by, cmp_start); /* device numbering follows time */
	int n_seen = 0, phase = -1;
	int64_t t0 = s->n ? by[0]->start_ns : 0, phase_t0 = t0, last_start = INT64_MIN;
	for (size_t i = 0; i < s->n; i++) {
		const res_transfer_t *t = by[i];
		if ((o->limit && r->n_op >= o->limit) ||
		    (o->span_ns > 0 && t->start_ns - t0 > o->span_ns)) {
			r->skipped_limit++;
			continue;
		}
		if (t->cancelled) {
			r->skipped_cancelled++;
			continue;
		}
		int sd = map_dev(seen, &n_seen, t->src_instance, t->src_gpu, n_dev);
		int dd = map_dev(seen, &n_seen, t->dst_instance, t->dst_gpu, n_dev);
		if ((sd < 0 && dd < 0) || t->bytes == 0) {
			r->skipped_host++;
			continue;
		}
		if (groups ? t->start_ns != last_start : phase < 0) {
			phase++;
			phase_t0 = groups ? t->start_ns : t0;
			last_start = t->start_ns;
		}
		gv_op_t *op = &r->op[r->n_op++];
		op_from_transfer(op, t, sd, dd, groups, o);
		op->phase = phase;
		op->offset_ns = t->start_ns - phase_t0;
		note_buffers(r, op);
	}
	free(by);
	free(seen);
	if (!r->n_op) {
		gv_replay_free(r);
		return err_set(e, KS_EINPUT, "the schedule has no device transfer to replay");
	}
	r->n_phase = (size_t)phase + 1;
	index_phases(r, groups);
	return 0;
}

void gv_replay_free(gv_replay_t *r)
{
	free(r->op);
	free(r->phase_first);
	r->op = NULL;
	r->phase_first = NULL;
	r->n_op = r->n_phase = 0;
}
