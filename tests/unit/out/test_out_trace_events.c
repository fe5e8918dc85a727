/* Trace-event JSON of a run (sim/out/out_trace_events.h): the file parses,
 * every event has the Trace Event Format's fields for its phase, each track
 * is in time order and an instance's events never overlap, the iterations
 * of an instance add up to its busy time, the counters are the /timeline's
 * values, the flows carry the /transfers' bytes, a run is the same with
 * and without the file, and a failed run leaves no file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>
#include <cmocka.h>
#include <jansson.h>

#include "sim/out/out_trace_events.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* The default experiment with speculative copies (links carry flows). */
static const char *const spec_sets[] = {"policy.replication.name=speculative",
					"policy.predictor.name=oracle", "experiment.until_s=60",
					"output.timeline_interval_ms=10"};
#define N_SPEC (int)(sizeof spec_sets / sizeof spec_sets[0])

typedef struct run {
	char dir[64], path[96];
	sim_results_t r;
	json_t *root;
	json_t *ev; /* traceEvents (borrowed from root) */
} run_t;

static void run_cfg(const char *const *sets, int n, const sim_trace_sink_t *sink,
		    sim_results_t *r)
{
	sim_run_opts_t o = {0};
	o.trace = sink;
	*r = sf_run_opts(NULL, sets, n, NULL, &o);
}

/* Runs the sets with a trace file and parses it. */
static void run_traced(run_t *x, const char *const *sets, int n)
{
	memset(x, 0, sizeof *x);
	strcpy(x->dir, "/tmp/test_trace_events.XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	snprintf(x->path, sizeof x->path, "%s/run.json", x->dir);
	out_trace_t *w = NULL;
	err_t e = {0};
	assert_int_equal(out_trace_open(x->path, &w, &e), 0);
	run_cfg(sets, n, out_trace_sink(w), &x->r);
	assert_int_equal(out_trace_close(w, 1, &e), 0);
	json_error_t je;
	x->root = json_load_file(x->path, 0, &je);
	if (!x->root)
		fprintf(stderr, "%s:%d: %s\n", x->path, je.line, je.text);
	assert_non_null(x->root);
	x->ev = json_object_get(x->root, "traceEvents");
	assert_true(json_is_array(x->ev));
}

static void run_done(run_t *x)
{
	json_decref(x->root);
	sim_results_free(&x->r);
	unlink(x->path);
	rmdir(x->dir);
}

static int64_t us_to_ns(const json_t *v)
{
	return (int64_t)llround(json_number_value(v) * 1000.0);
}

/* pid of the "links" process: the largest pid named by a process_name. */
static json_int_t links_pid(const json_t *ev)
{
	json_int_t p = -1;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
		if (!strcmp(json_string_value(json_object_get(e, "name")), "process_name") &&
		    !strcmp(json_string_value(json_object_get(json_object_get(e, "args"), "name")),
			    "links"))
			p = json_integer_value(json_object_get(e, "pid"));
	return p;
}

static void test_every_event_has_the_fields_of_its_phase(void **st)
{
	(void)st;
	run_t x;
	run_traced(&x, spec_sets, N_SPEC);
	assert_string_equal(json_string_value(json_object_get(x.root, "displayTimeUnit")), "ms");
	size_t i, n_ph[4] = {0};
	json_t *e;
	json_array_foreach(x.ev, i, e) {
		assert_true(json_is_object(e));
		assert_true(json_is_string(json_object_get(e, "name")));
		const char *ph = json_string_value(json_object_get(e, "ph"));
		assert_non_null(ph);
		assert_true(json_is_number(json_object_get(e, "ts")));
		assert_true(json_number_value(json_object_get(e, "ts")) >= 0);
		assert_true(json_is_integer(json_object_get(e, "pid")));
		assert_true(json_is_integer(json_object_get(e, "tid")));
		if (!strcmp(ph, "X")) {
			assert_true(json_is_number(json_object_get(e, "dur")));
			assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
			n_ph[0]++;
		} else if (!strcmp(ph, "C")) {
			json_t *a = json_object_get(e, "args");
			assert_true(json_is_object(a) && json_object_size(a) > 0);
			const char *k;
			json_t *v;
			json_object_foreach(a, k, v)
				assert_true(json_is_number(v));
			n_ph[1]++;
		} else {
			assert_string_equal(ph, "M");
			assert_true(json_is_object(json_object_get(e, "args")));
			n_ph[2]++;
		}
	}
	assert_true(n_ph[0] > 100 && n_ph[1] > 100 && n_ph[2] > 8);
	run_done(&x);
}

/* Per track (pid, tid; a counter by its name) timestamps never go back, and
 * the X events of one thread (an instance, a link lane) never overlap. */
static void test_tracks_are_in_time_order_and_do_not_overlap(void **st)
{
	(void)st;
	run_t x;
	run_traced(&x, spec_sets, N_SPEC);
	json_t *last_end = json_object(), *last_ts = json_object();
	size_t i, checked = 0, flows = 0;
	json_int_t lp = links_pid(x.ev);
	assert_true(lp > 1);
	json_t *e;
	json_array_foreach(x.ev, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));
		char key[96];
		int64_t ts = us_to_ns(json_object_get(e, "ts"));
		if (!strcmp(ph, "C")) {
			snprintf(key, sizeof key, "%s", json_string_value(json_object_get(e, "name")));
			json_t *p = json_object_get(last_ts, key);
			if (p)
				assert_true(ts >= json_integer_value(p));
			json_object_set_new(last_ts, key, json_integer(ts));
			continue;
		}
		if (strcmp(ph, "X"))
			continue;
		json_int_t pid = json_integer_value(json_object_get(e, "pid"));
		snprintf(key, sizeof key, "%lld/%lld", (long long)pid,
			 (long long)json_integer_value(json_object_get(e, "tid")));
		json_t *p = json_object_get(last_end, key);
		if (p) {
			assert_true(ts >= json_integer_value(p));
			checked++;
		}
		flows += pid == lp;
		json_object_set_new(last_end, key,
				    json_integer(ts + us_to_ns(json_object_get(e, "dur"))));
	}
	assert_true(checked > 1000);
	assert_true(flows > 10);
	json_decref(last_end);
	json_decref(last_ts);
	run_done(&x);
}

/* The X events of instance I's thread (tid I + 1) add up to the busy time
 * the cluster counted for it, and their iteration counts to its
 * iterations; under scheduler.decode = step each event is one iteration. */
static void assert_busy_adds_up(run_t *x, int step)
{
	json_t *od = json_object_get(x->root, "otherData");
	json_t *busy = json_object_get(od, "kvsim_busy_ns"),
	       *iters = json_object_get(od, "kvsim_iterations");
	size_t n = json_array_size(busy);
	assert_int_equal(n, 8); /* the default experiment's instances */
	int64_t *sum = calloc(n, sizeof *sum);
	uint64_t *it = calloc(n, sizeof *it), multi = 0;
	json_int_t lp = links_pid(x->ev);
	size_t i;
	json_t *e;
	json_array_foreach(x->ev, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X") ||
		    json_integer_value(json_object_get(e, "pid")) == lp)
			continue;
		json_int_t tid = json_integer_value(json_object_get(e, "tid"));
		assert_true(tid >= 1 && (size_t)tid <= n);
		sum[tid - 1] += us_to_ns(json_object_get(e, "dur"));
		json_int_t k = json_integer_value(
			json_object_get(json_object_get(e, "args"), "iterations"));
		it[tid - 1] += (uint64_t)k;
		multi += k > 1;
	}
	for (size_t k = 0; k < n; k++) {
		assert_true(sum[k] > 0);
		assert_int_equal(sum[k], json_integer_value(json_array_get(busy, k)));
		assert_int_equal(it[k], json_integer_value(json_array_get(iters, k)));
	}
	if (step)
		assert_int_equal(multi, 0);
	else
		assert_true(multi > 0); /* decode segments: one event for a run of iterations */
	free(sum);
	free(it);
}

static void test_iterations_add_up_to_each_instance_busy_time(void **st)
{
	(void)st;
	run_t x;
	run_traced(&x, spec_sets, N_SPEC);
	assert_busy_adds_up(&x, 0);
	run_done(&x);
	const char *step[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
			      "experiment.until_s=60", "scheduler.decode=step"};
	run_traced(&x, step, 4);
	assert_busy_adds_up(&x, 1);
	run_done(&x);
}

/* One counter series: (ts, values) in file order. */
typedef struct series {
	int64_t *t;
	double (*v)[4];
	size_t n, cap;
} series_t;

static void series_add(series_t *s, int64_t t, const double v[4])
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->t = realloc(s->t, s->cap * sizeof *s->t);
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		assert_true(s->t && s->v);
	}
	s->t[s->n] = t;
	memcpy(s->v[s->n++], v, sizeof(double[4]));
}

/* Whether the series reads want[col] (sum of cols 0..3 when col < 0) at t:
 * the timeline samples at its tick, between the events at t, so the value
 * is the last sample before t or one of those at t. */
static int series_has(const series_t *s, int64_t t, int col, double want)
{
	size_t k = 0;
	while (k < s->n && s->t[k] < t)
		k++;
	for (size_t j = k ? k - 1 : 0; j < s->n && (j < k || s->t[j] == t); j++) {
		const double *v = s->v[j];
		double got = col < 0 ? v[0] + v[1] + v[2] + v[3] : v[col];
		if (got == want)
			return 1;
	}
	return k == 0 && want == 0; /* before the first sample: empty */
}

static void test_counters_match_the_timeline(void **st)
{
	(void)st;
	run_t x;
	run_traced(&x, spec_sets, N_SPEC);
	enum { NI = 8 };
	series_t kv[NI] = {0}, q[NI] = {0};
	size_t i;
	json_t *e;
	json_array_foreach(x.ev, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "C"))
			continue;
		unsigned inst;
		char what[16];
		assert_int_equal(
			sscanf(json_string_value(json_object_get(e, "name")), "instance %u %15s",
			       &inst, what),
			2);
		assert_true(inst < NI);
		json_t *a = json_object_get(e, "args");
		int64_t t = us_to_ns(json_object_get(e, "ts"));
		if (!strcmp(what, "KV")) {
			double v[4] = {json_number_value(json_object_get(a, "in_use")),
				       json_number_value(json_object_get(a, "cached")),
				       json_number_value(json_object_get(a, "speculative")),
				       json_number_value(json_object_get(a, "in_flight"))};
			series_add(&kv[inst], t, v);
		} else {
			double v[4] = {json_number_value(json_object_get(a, "waiting")),
				       json_number_value(json_object_get(a, "running")), 0, 0};
			series_add(&q[inst], t, v);
		}
	}
	size_t rows = 0, spec_rows = 0;
	for (size_t k = 0; k < x.r.n_tl; k++) {
		const res_sample_t *s = &x.r.tl[k];
		if (s->kind != TL_INSTANCE)
			continue;
		assert_true(s->index < NI);
		assert_true(series_has(&kv[s->index], s->t_ns, -1, s->kv_used_bytes));
		assert_true(series_has(&kv[s->index], s->t_ns, 2, s->spec_kv_bytes));
		assert_true(series_has(&q[s->index], s->t_ns, 0, s->queue_len));
		assert_true(series_has(&q[s->index], s->t_ns, 1, s->batch_size));
		rows++;
		spec_rows += s->spec_kv_bytes > 0;
	}
	assert_true(rows > 100 && spec_rows > 0);
	for (int k = 0; k < NI; k++) {
		free(kv[k].t), free(kv[k].v), free(q[k].t), free(q[k].v);
	}
	run_done(&x);
}

/* The flows on the link threads carry the bytes of the /transfers rows
 * that started. */
static void test_flows_carry_the_transfers_bytes(void **st)
{
	(void)st;
	run_t x;
	run_traced(&x, spec_sets, N_SPEC);
	json_int_t lp = links_pid(x.ev);
	uint64_t got = 0, want = 0;
	size_t i, n = 0, m = 0;
	json_t *e;
	json_array_foreach(x.ev, i, e)
		if (json_integer_value(json_object_get(e, "pid")) == lp &&
		    !strcmp(json_string_value(json_object_get(e, "ph")), "X")) {
			got += (uint64_t)json_integer_value(
				json_object_get(json_object_get(e, "args"), "bytes"));
			n++;
		}
	for (size_t k = 0; k < x.r.n_xfer; k++)
		if (x.r.xfer[k].start_ns >= 0 && x.r.xfer[k].end_ns >= x.r.xfer[k].start_ns) {
			want += x.r.xfer[k].bytes;
			m++;
		}
	assert_true(n > 0);
	assert_int_equal(n, m);
	assert_int_equal(got, want);
	run_done(&x);
}

/* Writing the file changes nothing the run produces. */
static void test_results_are_the_same_with_and_without_the_file(void **st)
{
	(void)st;
	run_t x;
	run_traced(&x, spec_sets, N_SPEC);
	sim_results_t r;
	run_cfg(spec_sets, N_SPEC, NULL, &r);
	assert_int_equal(r.n_req, x.r.n_req);
	assert_memory_equal(r.req, x.r.req, r.n_req * sizeof *r.req);
	assert_int_equal(r.n_xfer, x.r.n_xfer);
	assert_memory_equal(r.xfer, x.r.xfer, r.n_xfer * sizeof *r.xfer);
	assert_int_equal(r.n_tl, x.r.n_tl);
	assert_memory_equal(r.tl, x.r.tl, r.n_tl * sizeof *r.tl);
	assert_int_equal(r.n_metric, x.r.n_metric);
	for (size_t k = 0; k < r.n_metric; k++) {
		assert_string_equal(r.metric[k].name, x.r.metric[k].name);
		if (!(isnan(r.metric[k].value) && isnan(x.r.metric[k].value)))
			assert_true(r.metric[k].value == x.r.metric[k].value);
	}
	assert_int_equal(r.events, x.r.events);
	sim_results_free(&r);
	run_done(&x);
}

/* A run that failed leaves neither the file nor its temporary; an ok close
 * leaves the file and no temporary. */
static void test_failed_run_leaves_no_file(void **st)
{
	(void)st;
	char dir[] = "/tmp/test_trace_events_fail.XXXXXX", path[96], tmp[112];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/run.json", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	out_trace_t *w = NULL;
	err_t e = {0};
	assert_int_equal(out_trace_open(path, &w, &e), 0);
	assert_int_equal(access(tmp, F_OK), 0); /* written beside it meanwhile */
	uint32_t node[2] = {0, 0};
	const sim_trace_sink_t *s = out_trace_sink(w);
	assert_int_equal(s->begin(s->ctx, 2, node), 0);
	assert_int_equal(out_trace_close(w, 0, &e), 0);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_not_equal(access(tmp, F_OK), 0);
	assert_int_equal(out_trace_open(path, &w, &e), 0);
	assert_int_equal(out_trace_close(w, 1, &e), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_not_equal(access(tmp, F_OK), 0);
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je); /* an empty run is still a valid file */
	assert_non_null(root);
	assert_int_equal(json_array_size(json_object_get(root, "traceEvents")), 0);
	json_decref(root);
	unlink(path);
	/* a path whose folder does not exist: an input error naming it, not the
	 * temporary */
	snprintf(path, sizeof path, "%s/no/such/run.json", dir);
	assert_int_equal(out_trace_open(path, &w, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "no/such/run.json: cannot create"));
	assert_null(w);
	rmdir(dir);
}

TEST_MAIN(cmocka_unit_test(test_every_event_has_the_fields_of_its_phase),
	  cmocka_unit_test(test_tracks_are_in_time_order_and_do_not_overlap),
	  cmocka_unit_test(test_iterations_add_up_to_each_instance_busy_time),
	  cmocka_unit_test(test_counters_match_the_timeline),
	  cmocka_unit_test(test_flows_carry_the_transfers_bytes),
	  cmocka_unit_test(test_results_are_the_same_with_and_without_the_file),
	  cmocka_unit_test(test_failed_run_leaves_no_file))
