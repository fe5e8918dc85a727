/* net_cli — `kvsim net run FILE` (see net_cli.h).
 *
 * Scenario format: one directive per line, '#' starts a comment, fields are
 * separated by blanks. Numbers are decimal or e-notation (1e9); sizes and
 * times must be whole.
 *   link NAME CAPACITY LATENCY      one direction; bytes/s, ns
 *   flow NAME BYTES START fg|bg [cap=BYTES_PER_S] [copies=N overhead=NS] LINK...
 *   share strict | share weighted WEIGHT
 *   background immediate | idle_window THRESHOLD | rate_cap SHARE
 * Output: "flow NAME start=NS join=NS finish=NS bytes=N mean_rate=B/s" in
 * file order; mean rate is bytes / (finish - join), i.e. after the latency.
 */
#include "sim/base/mem.h"
#include "sim/cli/net_cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/cfg.h"
#include "sim/base/vec.h"
#include "sim/cli/cli.h"
#include "sim/cli/cli_sub.h"
#include "sim/run/cli_common.h"
#include "sim/net/net.h"

#define NAME_MAX_LEN 64
#define T_START 2

typedef struct sc_link {
	char name[NAME_MAX_LEN];
} sc_link_t;

typedef struct sc_flow {
	char name[NAME_MAX_LEN];
	net_flow_spec_t spec;
	uint32_t path[NET_PATH_MAX];
	int64_t start;
	int line;
	net_flow_rec_t rec;
	int done;
} sc_flow_t;

typedef struct scen {
	const char *file;
	sc_link_t *links;
	size_t n_links, cap_links;
	double *link_cap;
	int64_t *link_lat;
	sc_flow_t *flows;
	size_t n_flows, cap_flows;
	net_share_t share;
	double weight;
	net_bg_mode_t mode;
	double param;
	net_t *net;
	err_t *e;
} scen_t;

static int perr(scen_t *s, int line, err_t *e, const char *fmt, const char *arg)
{
	char msg[512];
	snprintf(msg, sizeof msg, fmt, arg);
	return err_set(e, KS_EINPUT, "%s:%d: %s", s->file, line, msg);
}

static int num(const char *t, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(t, &end);
	return end != t && *end == '\0' && errno == 0 && isfinite(*v);
}

/* A whole-number field in [lo, hi]: text that is no whole number and a whole
 * number out of range get different messages. */
static int whole(scen_t *s, int line, err_t *e, const char *what, const char *t, int64_t lo,
		 int64_t hi, const char *unit, int64_t *v)
{
	int r = cfg_parse_whole(t, CFG_WHOLE_ENOTATION, lo, hi, v);
	if (r == CFG_NOT_WHOLE)
		return err_set(e, KS_EINPUT, "%s:%d: %s '%.80s' is not a whole number of %s",
			       s->file, line, what, t, unit);
	if (r == CFG_OUT_OF_RANGE)
		return err_set(e, KS_EINPUT, "%s:%d: %s '%.80s' is out of range [%lld, %lld] %s",
			       s->file, line, what, t, (long long)lo, (long long)hi, unit);
	return 0;
}

static long find_link(const scen_t *s, const char *name)
{
	for (size_t i = 0; i < s->n_links; i++)
		if (!strcmp(s->links[i].name, name))
			return (long)i;
	return -1;
}

static int name_ok(scen_t *s, int line, const char *name, err_t *e)
{
	if (strlen(name) >= NAME_MAX_LEN)
		return perr(s, line, e, "name '%.80s' is longer than 63 characters", name);
	return 0;
}

/* Simulated time is int64 ns: a flow that cannot finish by INT64_MAX even
 * alone on its path (start + latency + overhead + bytes at the path's
 * narrowest capacity or its cap) is an input error on its line, not an
 * overflow during the run. */
static int horizon_check(scen_t *s, const sc_flow_t *f, err_t *e)
{
	double t = (double)f->start, bw = f->spec.rate_cap > 0 ? f->spec.rate_cap : INFINITY;
	for (uint32_t k = 0; k < f->spec.path_len; k++) {
		t += (double)s->link_lat[f->path[k]];
		bw = fmin(bw, s->link_cap[f->path[k]]);
	}
	t += (double)(f->spec.n_copies ? f->spec.n_copies : 1) * (double)f->spec.copy_overhead_ns;
	if (f->spec.bytes)
		t += ceil((double)f->spec.bytes / bw * 1e9);
	if (t < 9223372036854775808.0) /* 2^63 */
		return 0;
	return err_set(e, KS_EINPUT,
		       "%s:%d: flow '%s' cannot finish within simulated time (int64 ns, "
		       "9.22e18 ns): alone on its path it would end at %.3g ns",
		       s->file, f->line, f->name, t);
}

/* link NAME CAPACITY LATENCY */
static int parse_link(scen_t *s, int line, char **tok, int nt, err_t *e)
{
	if (nt != 4)
		return perr(s, line, e, "%s", "link needs: link NAME CAPACITY LATENCY");
	if (name_ok(s, line, tok[1], e))
		return KS_EINPUT;
	if (find_link(s, tok[1]) >= 0)
		return perr(s, line, e, "link '%s' defined twice", tok[1]);
	double cap;
	int64_t lat;
	if (!num(tok[2], &cap) || !(cap > 0))
		return perr(s, line, e, "link capacity '%s' is not a positive number "
					"of bytes/s", tok[2]);
	if (whole(s, line, e, "link latency", tok[3], 0, INT64_MAX, "ns", &lat))
		return KS_EINPUT;
	if (s->n_links == s->cap_links) {
		/* links, link_cap and link_lat share one capacity */
		size_t c = vec_next_cap(s->cap_links, s->n_links + 1, 16);
		if (!c || VEC_RESIZE(s->links, c) || VEC_RESIZE(s->link_cap, c) ||
		    VEC_RESIZE(s->link_lat, c))
			return err_set(e, KS_ENOMEM, "out of memory");
		s->cap_links = c;
	}
	snprintf(s->links[s->n_links].name, NAME_MAX_LEN, "%s", tok[1]);
	s->link_cap[s->n_links] = cap;
	s->link_lat[s->n_links] = lat;
	s->n_links++;
	return 0;
}

/* flow NAME BYTES START fg|bg [cap=B/s] [copies=N] [overhead=NS] LINK... */
static int parse_flow(scen_t *s, int line, char **tok, int nt, err_t *e)
{
	if (nt < 6)
		return perr(s, line, e, "%s",
			    "flow needs: flow NAME BYTES START fg|bg [options] LINK...");
	if (name_ok(s, line, tok[1], e))
		return KS_EINPUT;
	for (size_t i = 0; i < s->n_flows; i++)
		if (!strcmp(s->flows[i].name, tok[1]))
			return perr(s, line, e, "flow '%s' defined twice", tok[1]);
	if (VEC_GROW(s->flows, s->cap_flows, s->n_flows + 1, 16))
		return err_set(e, KS_ENOMEM, "out of memory");
	sc_flow_t *f = &s->flows[s->n_flows];
	memset(f, 0, sizeof *f);
	snprintf(f->name, NAME_MAX_LEN, "%s", tok[1]);
	int64_t v;
	if (whole(s, line, e, "flow size", tok[2], 0, INT64_MAX, "bytes", &v))
		return KS_EINPUT;
	f->spec.bytes = (uint64_t)v;
	if (whole(s, line, e, "flow start", tok[3], 0, INT64_MAX, "ns", &f->start))
		return KS_EINPUT;
	f->line = line;
	if (!strcmp(tok[4], "fg"))
		f->spec.cls = NET_FG;
	else if (!strcmp(tok[4], "bg"))
		f->spec.cls = NET_BG;
	else
		return perr(s, line, e, "flow class '%s' is not fg or bg", tok[4]);
	int i = 5;
	for (; i < nt && strchr(tok[i], '='); i++) {
		char *eq = strchr(tok[i], '=');
		*eq = '\0';
		const char *k = tok[i], *val = eq + 1;
		double dv;
		if (!strcmp(k, "cap")) {
			if (!num(val, &dv) || !(dv > 0))
				return perr(s, line, e, "cap '%s' is not a positive "
							"number of bytes/s", val);
			f->spec.rate_cap = dv;
		} else if (!strcmp(k, "copies")) {
			if (whole(s, line, e, "copies", val, 1, UINT32_MAX, "copies", &v))
				return KS_EINPUT;
			f->spec.n_copies = (uint32_t)v;
		} else if (!strcmp(k, "overhead")) {
			if (whole(s, line, e, "overhead", val, 0, INT64_MAX, "ns", &v))
				return KS_EINPUT;
			f->spec.copy_overhead_ns = v;
		} else {
			return perr(s, line, e, "unknown flow option '%s' (cap, copies, "
						"overhead)", k);
		}
	}
	if (i >= nt)
		return perr(s, line, e, "flow '%s' crosses no link", f->name);
	if (nt - i > NET_PATH_MAX)
		return perr(s, line, e, "flow '%s' crosses more than 16 links", f->name);
	for (int j = i; j < nt; j++) {
		long l = find_link(s, tok[j]);
		if (l < 0)
			return perr(s, line, e, "unknown link '%s' (define it before the flow)",
				    tok[j]);
		for (int k = i; k < j; k++)
			if (f->path[k - i] == (uint32_t)l)
				return perr(s, line, e, "flow crosses link '%s' twice",
					    tok[j]);
		f->path[j - i] = (uint32_t)l;
	}
	f->spec.path_len = (uint32_t)(nt - i);
	if (horizon_check(s, f, e))
		return KS_EINPUT;
	s->n_flows++;
	return 0;
}

/* share strict | share weighted WEIGHT */
static int parse_share(scen_t *s, int line, char **tok, int nt, err_t *e)
{
	if (nt == 2 && !strcmp(tok[1], "strict")) {
		s->share = NET_SHARE_STRICT;
		return 0;
	}
	double w;
	if (nt == 3 && !strcmp(tok[1], "weighted") && num(tok[2], &w) &&
	    w >= NET_BG_WEIGHT_MIN && w <= 1) {
		s->share = NET_SHARE_WEIGHTED;
		s->weight = w;
		return 0;
	}
	return perr(s, line, e, "%s",
		    "share needs: share strict | share weighted W (0.001<=W<=1)");
}

/* background immediate | idle_window THRESHOLD | rate_cap SHARE */
static int parse_background(scen_t *s, int line, char **tok, int nt, err_t *e)
{
	double p;
	if (nt == 2 && !strcmp(tok[1], "immediate")) {
		s->mode = NET_BG_IMMEDIATE;
		return 0;
	}
	int idle = nt == 3 && !strcmp(tok[1], "idle_window");
	if ((idle || (nt == 3 && !strcmp(tok[1], "rate_cap"))) && num(tok[2], &p) && p > 0 &&
	    p <= 1) {
		s->mode = idle ? NET_BG_IDLE_WINDOW : NET_BG_RATE_CAP;
		s->param = p;
		return 0;
	}
	return perr(s, line, e, "%s",
		    "background needs: immediate | idle_window T | rate_cap S (0<T,S<=1)");
}

/* One directive line, split into its nt fields tok. */
static int parse_line(scen_t *s, int line, char **tok, int nt, err_t *e)
{
	const char *d = tok[0];
	if (!strcmp(d, "link"))
		return parse_link(s, line, tok, nt, e);
	if (!strcmp(d, "flow"))
		return parse_flow(s, line, tok, nt, e);
	if (!strcmp(d, "share"))
		return parse_share(s, line, tok, nt, e);
	if (!strcmp(d, "background"))
		return parse_background(s, line, tok, nt, e);
	return perr(s, line, e, "unknown directive '%s' (link, flow, share, background)", d);
}

static int parse(scen_t *s, FILE *f, err_t *e)
{
	char *buf = NULL;
	size_t cap = 0;
	int line = 0, rc = 0;
	while (!rc && getline(&buf, &cap, f) >= 0) {
		line++;
		char *hash = strchr(buf, '#');
		if (hash)
			*hash = '\0';
		char *tok[NET_PATH_MAX + 16];
		int nt = 0;
		char *save = NULL;
		for (char *t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
			if (nt == (int)(sizeof tok / sizeof tok[0])) {
				rc = perr(s, line, e, "%s", "too many fields");
				break;
			}
			tok[nt++] = t;
		}
		if (!rc && nt > 0)
			rc = parse_line(s, line, tok, nt, e);
	}
	if (!rc && ferror(f))
		rc = err_set(e, KS_EIO, "%s: read error", s->file);
	free(buf);
	return rc;
}

static int on_flow_done(void *ctx, net_t *net, const net_flow_rec_t *r)
{
	(void)net;
	scen_t *s = ctx;
	s->flows[r->tag].rec = *r;
	s->flows[r->tag].done = 1;
	return 0;
}

static int on_start(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	scen_t *s = ctx;
	sc_flow_t *f = &s->flows[ev->target];
	f->spec.path = f->path;
	f->spec.tag = ev->target;
	f->spec.done = on_flow_done;
	f->spec.ctx = s;
	int rc = net_flow_start(s->net, &f->spec, NULL, s->e);
	if (rc)
		err_prefix(s->e, "%s:%d: flow '%s'", s->file, f->line, f->name);
	return rc;
}

int net_scenario_run(const char *path, FILE *out, int show_links, err_t *e)
{
	scen_t s = {.file = path, .share = NET_SHARE_STRICT, .mode = NET_BG_IMMEDIATE, .e = e};
	FILE *f = err_fopen_in(path, e);
	if (!f)
		return e->code;
	int rc = parse(&s, f, e);
	fclose(f);
	ev_engine_t *eng = NULL;
	if (rc)
		goto out;
	eng = ev_engine_new(2 * s.n_flows + 16);
	if (!eng || !(s.net = net_new(eng, e)) ||
	    ev_engine_register(eng, T_START, on_start, &s)) {
		rc = err_set(e, KS_ENOMEM, "cannot set up the engine");
		goto out;
	}
	for (size_t i = 0; i < s.n_links; i++)
		if ((rc = net_link_add(s.net, s.link_cap[i], s.link_lat[i], NULL, e)))
			goto out;
	if ((rc = net_set_share(s.net, s.share, s.weight, e)) ||
	    (rc = net_set_bg_mode(s.net, s.mode, s.param, e)))
		goto out;
	for (size_t i = 0; i < s.n_flows; i++)
		if (ev_engine_at(eng, s.flows[i].start, T_START, (uint32_t)i, 0) == EV_NONE) {
			rc = err_set(e, KS_ENOMEM, "cannot schedule flow starts");
			goto out;
		}
	if ((rc = ev_engine_run(eng, INT64_MAX))) {
		if (!e || e->code != rc || !e->msg[0])
			err_set(e, rc, "%s: simulation failed (%s)", path, err_name(rc));
		goto out;
	}
	/* the run ends when no event is left: a flow not done then had a finish
	 * past INT64_MAX ns (net.h: such times saturate to never) */
	for (size_t i = 0; i < s.n_flows; i++)
		if (!s.flows[i].done) {
			rc = err_set(e, KS_EINPUT,
				     "%s:%d: flow '%s' cannot finish within simulated time (int64 "
				     "ns, 9.22e18 ns) at the bandwidth its links leave it",
				     path, s.flows[i].line, s.flows[i].name);
			goto out;
		}
	for (size_t i = 0; i < s.n_flows; i++) {
		const net_flow_rec_t *r = &s.flows[i].rec;
		int64_t dt = r->end_ns - r->join_ns;
		double rate = dt > 0 ? (double)r->bytes * 1e9 / (double)dt : 0;
		fprintf(out, "flow %s start=%lld join=%lld finish=%lld bytes=%llu mean_rate=%.6g\n",
			s.flows[i].name, (long long)r->start_ns, (long long)r->join_ns,
			(long long)r->end_ns, (unsigned long long)r->bytes, rate);
	}
	for (size_t i = 0; show_links && i < s.n_links; i++) {
		net_link_stats_t ls;
		net_link_stats(s.net, (uint32_t)i, &ls);
		fprintf(out, "link %s bytes_fg=%.0f bytes_bg=%.0f busy_fg=%lld busy_bg=%lld\n",
			s.links[i].name, ls.bytes[0], ls.bytes[1], (long long)ls.busy_ns[0],
			(long long)ls.busy_ns[1]);
	}
out:
	net_free(s.net);
	ev_engine_free(eng);
	FREE_ALL(s.links, s.link_cap, s.link_lat, s.flows);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kvsim net run [--links] FILE\n"
		   "       kvsim net bench [--quick] [--cpu]\n\n"
		   "run: simulates a scenario of links and flows with the flow model alone and\n"
		   "prints each flow's start, join (latency paid), finish (ns), bytes and mean\n"
		   "rate (bytes/s after the latency); --links adds per-link bytes and busy time.\n"
		   "Scenario lines ('#' comments):\n"
		   "  link NAME CAPACITY_BYTES_PER_S LATENCY_NS      (one direction)\n"
		   "  flow NAME BYTES START_NS fg|bg [cap=B/S] [copies=N overhead=NS] LINK...\n"
		   "  share strict | share weighted W\n"
		   "  background immediate | idle_window T | rate_cap S\n"
		   "bench: flow-event cost on a leaf/spine cluster and the scaling table\n"
		   "('kvsim net bench --help').\n\n"
		   "options:\n"
		   "  --links      run: also print per-link bytes and busy time\n"
		   "  -h, --help   this help\n");
	cli_help_end(f);
}

/* kvsim net run [--links] FILE (argv[0] is "run"). */
static int net_run_main(int argc, char **argv)
{
	int links = 0;
	const char *file = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--links"))
			links = 1;
		else if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1])
			return cli_unknown_option(argv[i], usage);
		else if (file)
			return cli_usage_error("unexpected argument '%s' (one FILE)", argv[i]);
		else
			file = argv[i];
	}
	if (!file)
		return cli_usage_error("missing FILE");
	err_t e = {0};
	int rc = net_scenario_run(file, stdout, links, &e);
	return rc ? cli_fail(&e) : 0;
}

static const cli_sub_t net_cmds[] = {
	{"run", net_run_main, "simulate a scenario file"},
	{"bench", net_bench_main, "flow-event cost and the scaling table"},
};

int net_cli_main(int argc, char **argv)
{
	return cli_sub_main("net", net_cmds, sizeof net_cmds / sizeof net_cmds[0], usage, argc,
			    argv);
}
