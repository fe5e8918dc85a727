/* cluster_sched — the schedulers' dispatch (cluster.h CLUSTER_SCHED_LIST):
 * each mode's table, name and flags, and the engine defaults through its
 * table. The only place that looks a mode up; everything else reads the
 * table (c->sched) or the flags. */
#include "sim/cluster/cluster_int.h"

#include <stdio.h>
#include <string.h>

#define CL_SCHED_ENTRY(M, name, ops) [SCHED_##M] = &ops,
static const cl_sched_ops_t *const scheds[SCHED_N] = {CLUSTER_SCHED_LIST(CL_SCHED_ENTRY)};
#undef CL_SCHED_ENTRY
#define CL_SCHED_NAME(M, name, ops) [SCHED_##M] = name,
static const char *const names[SCHED_N] = {CLUSTER_SCHED_LIST(CL_SCHED_NAME)};
#undef CL_SCHED_NAME

const cl_sched_ops_t *cl_sched(int mode)
{
	return mode >= 0 && mode < SCHED_N ? scheds[mode] : NULL;
}

const char *cluster_sched_name(int mode)
{
	return cl_sched(mode) ? names[mode] : "?";
}

unsigned cluster_sched_flags(int mode)
{
	return cl_sched(mode) ? cl_sched(mode)->flags : 0;
}

const char *cluster_sched_names(unsigned flags, char *buf, size_t n)
{
	buf[0] = '\0';
	for (int m = 0; m < SCHED_N; m++) {
		size_t len = strlen(buf);
		if ((scheds[m]->flags & flags) == flags)
			snprintf(buf + len, n - len, "%s%s", len ? " or " : "", names[m]);
	}
	return buf;
}

void cluster_engine_defaults(int sched_mode, const char *gpu, uint64_t hbm_bytes,
			     uint32_t *max_num_seqs, uint32_t *max_batched_tokens)
{
	const cl_sched_ops_t *s = cl_sched(sched_mode);
	*max_num_seqs = *max_batched_tokens = 0;
	if (s)
		s->defaults(gpu, hbm_bytes, max_num_seqs, max_batched_tokens);
}
