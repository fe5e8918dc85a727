/* out_trace_events — see out_trace_events.h. */
#include "sim/out/out_trace_events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/file.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

/* Link classes, by the path kinds of sim/base/results.h. */
enum { OT_NVLINK, OT_PCIE, OT_NET, OT_NVME, OT_POOL, OT_N_CLASS };
static const char *const class_name[OT_N_CLASS] = {"NVLink", "PCIe", "NIC+fabric", "NVMe",
						   "pool"};
static const char *const path_name[] = {"nvlink",     "pcie_h2d",  "pcie_d2h", "net",
					"nvme_read",  "nvme_write", "pool_get", "pool_put"};
static const char *const klass_name[] = {"foreground copy", "background copy", "handoff"};
/* tids of a class's lanes start at 1 + class * OT_LANE_TIDS */
#define OT_LANE_TIDS 100000u

struct out_trace {
	FILE *f;
	file_out_t fo;
	int err;               /* first write error (errno), 0: none */
	uint64_t n_ev;         /* events written (a comma before every one after the first) */
	sim_trace_sink_t sink;
	uint32_t n_inst, links_pid;
	uint32_t *node;        /* per instance */
	sim_trace_state_t *last; /* per instance: the last sample written */
	uint8_t *have;         /* per instance: last is set */
	int64_t *busy_ns;      /* per instance (end), -1: not reported */
	uint64_t *iters;
	int64_t *lane_end[OT_N_CLASS]; /* per lane: end of its last flow, ns */
	uint32_t n_lane[OT_N_CLASS], cap_lane[OT_N_CLASS];
};

/* ---- JSON pieces ------------------------------------------------------------ */

/* A JSON string (RFC 8259 sec. 7): quote, backslash and control bytes escaped. */
static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* ns as microseconds, exactly (t >= 0). */
static void put_us(FILE *f, int64_t ns)
{
	fprintf(f, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

/* The fields every event has: name, ph, ts, pid, tid (then the caller's). */
static void ev_open(out_trace_t *w, const char *name, char ph, int64_t ts, uint32_t pid,
		    uint32_t tid)
{
	fputs(w->n_ev++ ? ",\n{\"name\":" : "\n{\"name\":", w->f);
	put_str(w->f, name);
	fprintf(w->f, ",\"ph\":\"%c\",\"ts\":", ph);
	put_us(w->f, ts);
	fprintf(w->f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, pid, tid);
}

/* A process_name or thread_name metadata event, with its sort index. */
static void put_name(out_trace_t *w, const char *what, uint32_t pid, uint32_t tid,
		     const char *name, uint32_t sort)
{
	char key[32];
	ev_open(w, what, 'M', 0, pid, tid);
	fputs(",\"args\":{\"name\":", w->f);
	put_str(w->f, name);
	fputs("}}", w->f);
	snprintf(key, sizeof key, "%s_sort_index", !strcmp(what, "process_name") ? "process" : "thread");
	ev_open(w, key, 'M', 0, pid, tid);
	fprintf(w->f, ",\"args\":{\"sort_index\":%" PRIu32 "}}", sort);
}

static int werr(out_trace_t *w)
{
	if (!w->err && ferror(w->f))
		w->err = errno ? errno : EIO;
	return w->err ? KS_EIO : 0;
}

/* ---- the observer ------------------------------------------------------------- */

static int ot_begin(void *ctx, uint32_t n_inst, const uint32_t *inst_node)
{
	out_trace_t *w = ctx;
	w->n_inst = n_inst;
	size_t n = n_inst ? n_inst : 1;
	w->node = malloc(n * sizeof *w->node);
	w->last = calloc(n, sizeof *w->last);
	w->have = calloc(n, 1);
	w->busy_ns = malloc(n * sizeof *w->busy_ns);
	w->iters = calloc(n, sizeof *w->iters);
	if (!w->node || !w->last || !w->have || !w->busy_ns || !w->iters)
		return KS_ENOMEM;
	uint32_t max_node = 0;
	char name[64];
	for (uint32_t i = 0; i < n_inst; i++) {
		w->node[i] = inst_node[i];
		w->busy_ns[i] = -1;
		int seen = 0; /* one process_name per node */
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = inst_node[j] == inst_node[i];
		if (!seen) {
			snprintf(name, sizeof name, "node %" PRIu32, inst_node[i]);
			put_name(w, "process_name", inst_node[i] + 1, 0, name, inst_node[i]);
		}
		if (inst_node[i] > max_node)
			max_node = inst_node[i];
		snprintf(name, sizeof name, "instance %" PRIu32, i);
		put_name(w, "thread_name", inst_node[i] + 1, i + 1, name, i);
	}
	w->links_pid = max_node + 2;
	put_name(w, "process_name", w->links_pid, 0, "links", max_node + 1);
	return werr(w);
}

static int ot_busy(void *ctx, const sim_trace_busy_t *b)
{
	out_trace_t *w = ctx;
	const char *name = !b->iterations ? "copy job"
			   : b->n_prefill && b->n_decode ? "prefill+decode"
			   : b->n_prefill ? "prefill" : "decode";
	ev_open(w, name, 'X', b->t0_ns, w->node[b->inst] + 1, b->inst + 1);
	fputs(",\"dur\":", w->f);
	put_us(w->f, b->t1_ns - b->t0_ns);
	if (!b->iterations) {
		fprintf(w->f, ",\"cat\":\"job\",\"args\":{\"job\":%" PRIu64 "}}", b->job);
		return werr(w);
	}
	fprintf(w->f,
		",\"cat\":\"iteration\",\"args\":{\"iterations\":%" PRIu32
		",\"prefill_seqs\":%" PRIu32 ",\"prefill_tokens\":%" PRIu64
		",\"decode_seqs\":%" PRIu32 ",\"decode_ctx_tokens\":%" PRIu64 ",\"requests\":[",
		b->iterations, b->n_prefill, b->prefill_tokens, b->n_decode, b->decode_ctx_tokens);
	for (uint32_t k = 0; k < b->n_ids; k++)
		fprintf(w->f, "%s%" PRIu64, k ? "," : "", b->ids[k]);
	/* the ids are capped: say how many the batch had */
	fprintf(w->f, "],\"requests_total\":%" PRIu32 "}}", b->n_prefill + b->n_decode);
	return werr(w);
}

static int path_class(int32_t kind)
{
	switch (kind) {
	case PATH_NVLINK: return OT_NVLINK;
	case PATH_PCIE_H2D: case PATH_PCIE_D2H: return OT_PCIE;
	case PATH_NET: return OT_NET;
	case PATH_NVME_READ: case PATH_NVME_WRITE: return OT_NVME;
	default: return OT_POOL;
	}
}

static int ot_flow(void *ctx, const res_transfer_t *t)
{
	out_trace_t *w = ctx;
	if (t->start_ns < 0 || t->end_ns < t->start_ns)
		return 0; /* cancelled before it started: nothing moved */
	int c = path_class(t->path_kind);
	uint32_t lane = 0;
	while (lane < w->n_lane[c] && w->lane_end[c][lane] > t->start_ns)
		lane++;
	if (lane == w->n_lane[c]) {
		if (lane + 1 >= OT_LANE_TIDS ||
		    VEC_GROW(w->lane_end[c], w->cap_lane[c], lane + 1, 8))
			return KS_ENOMEM;
		w->n_lane[c]++;
		char name[48];
		snprintf(name, sizeof name, "%s %" PRIu32, class_name[c], lane);
		put_name(w, "thread_name", w->links_pid, 1 + c * OT_LANE_TIDS + lane, name,
			 c * OT_LANE_TIDS + lane);
	}
	w->lane_end[c][lane] = t->end_ns;
	int64_t dur = t->end_ns - t->start_ns;
	int k = t->klass >= 0 && t->klass <= XFER_HANDOFF ? t->klass : 0;
	ev_open(w, klass_name[k], 'X', t->start_ns, w->links_pid, 1 + c * OT_LANE_TIDS + lane);
	fputs(",\"dur\":", w->f);
	put_us(w->f, dur);
	fprintf(w->f,
		",\"cat\":\"flow\",\"args\":{\"id\":%" PRIu64 ",\"bytes\":%" PRIu64
		",\"blocks\":%" PRIu32 ",\"path\":\"%s\",\"src_instance\":%" PRId32
		",\"dst_instance\":%" PRId32 ",\"cancelled\":%" PRId32,
		t->id, t->bytes, t->blocks,
		t->path_kind >= 0 && t->path_kind <= PATH_POOL_PUT ? path_name[t->path_kind] : "?",
		t->src_instance, t->dst_instance, t->cancelled);
	if (dur > 0) /* the mean over the flow: max-min shares change while it runs */
		fprintf(w->f, ",\"rate_bytes_per_s\":%.6g", (double)t->bytes * 1e9 / (double)dur);
	fputs("}}", w->f);
	return werr(w);
}

static int ot_state(void *ctx, int64_t t_ns, uint32_t inst, const sim_trace_state_t *v)
{
	out_trace_t *w = ctx;
	sim_trace_state_t *l = &w->last[inst];
	char name[48];
	uint32_t pid = w->node[inst] + 1, tid = inst + 1;
	int first = !w->have[inst];
	if (first || v->kv_in_use != l->kv_in_use || v->kv_cached != l->kv_cached ||
	    v->kv_spec != l->kv_spec || v->kv_inflight != l->kv_inflight) {
		snprintf(name, sizeof name, "instance %" PRIu32 " KV", inst);
		ev_open(w, name, 'C', t_ns, pid, tid);
		fprintf(w->f,
			",\"args\":{\"in_use\":%.17g,\"cached\":%.17g,\"speculative\":%.17g,"
			"\"in_flight\":%.17g}}",
			v->kv_in_use, v->kv_cached, v->kv_spec, v->kv_inflight);
	}
	if (first || v->waiting != l->waiting || v->running != l->running) {
		snprintf(name, sizeof name, "instance %" PRIu32 " queue", inst);
		ev_open(w, name, 'C', t_ns, pid, tid);
		fprintf(w->f, ",\"args\":{\"waiting\":%" PRIu32 ",\"running\":%" PRIu32 "}}",
			v->waiting, v->running);
	}
	*l = *v;
	w->have[inst] = 1;
	return werr(w);
}

static int ot_end(void *ctx, uint32_t inst, int64_t busy_ns, uint64_t iterations)
{
	out_trace_t *w = ctx;
	w->busy_ns[inst] = busy_ns;
	w->iters[inst] = iterations;
	return 0;
}

/* ---- open, close ------------------------------------------------------------- */

static void ot_free(out_trace_t *w)
{
	for (int c = 0; c < OT_N_CLASS; c++)
		free(w->lane_end[c]);
	FREE_ALL(w->node, w->last, w->have, w->busy_ns, w->iters, w);
}

int out_trace_open(const char *path, out_trace_t **out, err_t *e)
{
	*out = NULL;
	out_trace_t *w = calloc(1, sizeof *w);
	if (!w)
		return err_set(e, KS_ENOMEM, "%s: out of memory", path);
	int rc = file_out_begin(&w->fo, path, FILE_OUT_STREAM, e);
	if (rc) {
		ot_free(w);
		return rc;
	}
	if (!(w->f = fopen(w->fo.tmp, "w"))) {
		int en = errno;
		/* the message names the file asked for, not the temporary (sim/README.md) */
		rc = err_set(e, err_path_code(en), "%s: cannot create: %s", path, strerror(en));
		ot_free(w);
		return rc;
	}
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", w->f);
	w->sink = (sim_trace_sink_t){w, ot_begin, ot_busy, ot_flow, ot_state, ot_end};
	*out = w;
	return 0;
}

const sim_trace_sink_t *out_trace_sink(out_trace_t *w)
{
	return &w->sink;
}

int out_trace_close(out_trace_t *w, int ok, err_t *e)
{
	int rc = 0, run_err = w->err; /* a write refused while the run went on */
	if (ok) {
		fputs("\n],\"otherData\":{\"generator\":\"kvsim\",\"kvsim_busy_ns\":[", w->f);
		for (uint32_t i = 0; i < w->n_inst; i++)
			fprintf(w->f, "%s%" PRId64, i ? "," : "", w->busy_ns[i]);
		fputs("],\"kvsim_iterations\":[", w->f);
		for (uint32_t i = 0; i < w->n_inst; i++)
			fprintf(w->f, "%s%" PRIu64, i ? "," : "", w->iters[i]);
		fputs("]}}\n", w->f);
		fflush(w->f);
		(void)werr(w);
	}
	if (fclose(w->f) && !w->err)
		w->err = errno ? errno : EIO;
	if (ok && w->err)
		rc = err_set(e, KS_EIO, "%s: write failed: %s", w->fo.path, strerror(w->err));
	else if (run_err) /* what stopped the run: name it, not "simulation failed" */
		rc = err_set(e, KS_EIO,
			     "%s: write failed: %s (the run stopped there; nothing was written)",
			     w->fo.path, strerror(run_err));
	else if (ok)
		rc = file_out_commit(&w->fo, 0, e);
	if (!ok || rc)
		file_out_abort(&w->fo);
	ot_free(w);
	return rc;
}
