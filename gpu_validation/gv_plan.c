/* gv_plan — calibration schedule generator (see gv_plan.h). */
#include "gpu_validation/gv_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl_xfer.h"

void gv_plan_defaults(gv_plan_opts_t *o)
{
	o->min_bytes = 4096;
	o->max_bytes = 1ull << 30;
	o->per_octave = 2;
	o->max_streams = 8;
	o->max_granular_bytes = 256ull << 20;
}

enum { DIR_H2D, DIR_D2H, DIR_G2G, DIR_G2G_REV, N_DIR };

typedef struct builder {
	res_transfer_t *t;
	size_t n, cap;
	int64_t clock;   /* start of the next group */
	int64_t longest; /* longest planned copy of the open group */
	mdl_xfer_t model;
} builder_t;

static int push(builder_t *b, int dir, uint64_t bytes, uint32_t blocks, int granular)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		res_transfer_t *nt = realloc(b->t, cap * sizeof *nt);
		if (!nt)
			return KS_ENOMEM;
		b->t = nt;
		b->cap = cap;
	}
	static const int32_t ends[N_DIR][4] = {
	    {-1, -1, 0, 0}, {0, 0, -1, -1}, {0, 0, 0, 1}, {0, 1, 0, 0}};
	static const int path[N_DIR] = {PATH_PCIE_H2D, PATH_PCIE_D2H, PATH_NVLINK, PATH_NVLINK};
	double ns = mdl_xfer_predict_ns(&b->model, path[dir],
	                                granular ? MDL_SHAPE_GRANULAR : MDL_SHAPE_CONTIG, bytes,
	                                blocks, 1, 0);
	res_transfer_t *t = &b->t[b->n];
	*t = (res_transfer_t){.id = b->n,
	                      .src_instance = ends[dir][0],
	                      .src_gpu = ends[dir][1],
	                      .dst_instance = ends[dir][2],
	                      .dst_gpu = ends[dir][3],
	                      .bytes = bytes,
	                      .blocks = blocks,
	                      .klass = XFER_FOREGROUND,
	                      .path_kind = path[dir],
	                      .granular = granular,
	                      .start_ns = b->clock,
	                      .end_ns = b->clock + (int64_t)ceil(ns)};
	if (t->end_ns - t->start_ns > b->longest)
		b->longest = t->end_ns - t->start_ns;
	b->n++;
	return 0;
}

/* Closes a group: the next one starts after its longest copy plus a gap. */
static void close_group(builder_t *b)
{
	b->clock += b->longest + 100000;
	b->longest = 0;
}

static uint64_t grid_size(uint64_t min_bytes, int per_octave, int i)
{
	double v = (double)min_bytes * pow(2.0, (double)i / per_octave);
	uint64_t r = (uint64_t)llround(v / 256.0) * 256; /* aligned like real buffers */
	return r < 256 ? 256 : r;
}

int gv_plan_build(const gv_plan_opts_t *o, res_transfer_t **out, size_t *n, err_t *e)
{
	*out = NULL;
	*n = 0;
	if (o->min_bytes < 256 || o->max_bytes < o->min_bytes || o->per_octave < 1 ||
	    o->per_octave > 16 || o->max_streams < 1 || o->max_streams > 64)
		return err_set(e, KS_EINPUT,
		               "plan: need 256 <= min-bytes <= max-bytes, "
		               "1 <= per-octave <= 16, 1 <= streams <= 64");
	builder_t b = {0};
	mdl_xfer_default(&b.model);
	int rc = 0;
	int n_sizes = 0;
	while (grid_size(o->min_bytes, o->per_octave, n_sizes) <= o->max_bytes)
		n_sizes++;
	/* 1. one contiguous copy alone, every size, each direction */
	for (int d = DIR_H2D; d <= DIR_G2G && !rc; d++)
		for (int i = 0; i < n_sizes && !rc; i++) {
			uint64_t sz = grid_size(o->min_bytes, o->per_octave, i);
			rc = push(&b, d, sz, 1, 0);
			close_group(&b);
		}
	/* 2. block-granular alone: block sizes x block counts */
	static const uint64_t block_sizes[] = {4096, 16384, 65536, 262144, 1048576};
	static const uint32_t block_counts[] = {2, 8, 32, 128, 512};
	for (int d = DIR_H2D; d <= DIR_G2G && !rc; d++)
		for (size_t bi = 0; bi < 5 && !rc; bi++)
			for (size_t ci = 0; ci < 5 && !rc; ci++) {
				uint64_t sz = block_sizes[bi] * block_counts[ci];
				if (block_sizes[bi] < o->min_bytes || sz > o->max_bytes ||
				    sz > o->max_granular_bytes)
					continue;
				rc = push(&b, d, sz, block_counts[ci], 1);
				close_group(&b);
			}
	/* 3. m concurrent copies, m = 2, 4, 8..: same direction, and half each way */
	for (int m = 2; m <= o->max_streams && !rc; m *= 2)
		for (int i = 0; i < n_sizes && !rc; i += o->per_octave) {
			uint64_t sz = grid_size(o->min_bytes, o->per_octave, i);
			for (int d = DIR_H2D; d <= DIR_G2G && !rc; d++) {
				for (int k = 0; k < m && !rc; k++)
					rc = push(&b, d, sz, 1, 0);
				close_group(&b);
			}
			for (int d = DIR_H2D; d <= DIR_G2G && !rc; d += DIR_G2G - DIR_H2D) {
				int rev = d == DIR_H2D ? DIR_D2H : DIR_G2G_REV;
				for (int k = 0; k < m && !rc; k++)
					rc = push(&b, k % 2 ? rev : d, sz, 1, 0);
				close_group(&b);
			}
		}
	if (rc) {
		free(b.t);
		return err_set(e, KS_ENOMEM, "plan: out of memory");
	}
	*out = b.t;
	*n = b.n;
	return 0;
}
