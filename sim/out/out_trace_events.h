/* out_trace_events — a run's timeline as Chrome/Perfetto trace-event JSON
 * (kvsim run --trace-events FILE, or [output] trace_events = FILE).
 *
 * The file is the JSON object form of the Trace Event Format (Google,
 * "Trace Event Format", docs.google.com/document/d/1CvAClvFfyA5R-
 * PhYUmn5OOQtYMH4h6I0nSsKchNAySU): {"displayTimeUnit": "ms", "traceEvents":
 * [...], "otherData": {...}}, ts and dur in microseconds (written exactly,
 * from int64 ns, with three decimals). Layout:
 *   - a process per node ("node N", pid N + 1), a thread per instance
 *     ("instance I", tid I + 1) holding one complete ("X") event per busy
 *     interval of sim_trace_busy_t: an iteration, a run of decode iterations
 *     applied at once (args.iterations counts them; scheduler.decode = step
 *     gives one event per iteration) or a copy job; batch composition in
 *     args (prefill sequences and tokens, decode sequences and context
 *     tokens, the first SIM_TRACE_IDS request ids);
 *   - counters ("C") per instance, "instance I KV" (bytes in use, cached,
 *     speculative, in flight: sim_trace_state_t) and "instance I queue"
 *     (waiting, running), a sample only where a value changes;
 *   - a process "links" with threads per link class (NVLink, PCIe, NIC and
 *     fabric, NVMe, pool), each class split into lanes ("PCIe 0", "PCIe 1",
 *     ...) so that concurrent flows never overlap on one thread: a flow goes
 *     to the first lane whose last flow ended by its start. One "X" per copy
 *     with bytes, blocks, mean rate (bytes / duration), class and ends;
 *   - otherData.kvsim_busy_ns[I] and kvsim_iterations[I]: instance I's busy
 *     time and iterations as the cluster counts them (the X events of its
 *     thread add up to the first).
 * Writing streams (memory: a few words per instance and per lane) into
 * PATH.tmp, renamed over PATH only by out_trace_close(w, 1, e) after every
 * byte reached the disk: a run's file is there whole or not at all. A FIFO
 * or a device is written in place, never replaced (file_out, file.h).
 * Errors: 0, KS_ENOMEM, KS_EINPUT (a path that cannot be created,
 * err_path_code) or KS_EIO, with e set to "PATH: reason".
 */
#ifndef KVSIM_OUT_TRACE_EVENTS_H
#define KVSIM_OUT_TRACE_EVENTS_H

#include "sim/base/err.h"
#include "sim/run/sim.h"

typedef struct out_trace out_trace_t;

/* Creates PATH.tmp and a writer for it (*out, owned by the caller until
 * out_trace_close). */
int out_trace_open(const char *path, out_trace_t **out, err_t *e);
/* The observer to hand to sim_run_opts_t.trace (valid while w lives). */
const sim_trace_sink_t *out_trace_sink(out_trace_t *w);
/* ok: ends the JSON and renames PATH.tmp to PATH; !ok (the run failed):
 * removes PATH.tmp and returns 0, or KS_EIO with "PATH: write failed:
 * REASON" when a write had failed (EFBIG, ENOSPC, ...): the sink's error
 * that stopped the run. Frees w either way. A write error seen at any
 * point makes an ok close fail (KS_EIO), leaving no file. */
int out_trace_close(out_trace_t *w, int ok, err_t *e);

#endif
