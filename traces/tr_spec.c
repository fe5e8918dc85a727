/* tr_spec — client workload specs (tr_spec.h). */
#include "traces/tr_spec.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "sim/base/rng.h"
#include "traces/tr.h"
#include "traces/tr_int.h"

/* Largest count or length a spec may give (own choice: beyond any client
 * profile, and the G x M list and a prompt's blocks stay small). */
#define SPEC_MAX_COUNT 1048576.0
#define SPEC_MAX_TOKENS 16777216.0

/* ---- shared checks -------------------------------------------------------- */

typedef struct spec_ctx {
	const char *path;
	tr_spec_t *s;
	err_t *e;
	int have[5]; /* groups, per_group, system_len, question_len, output_len */
} spec_ctx_t;

static int bad(spec_ctx_t *c, long line, const char *field, const char *fmt, const char *what)
{
	char msg[256];
	snprintf(msg, sizeof msg, fmt, what);
	return err_set(c->e, KS_EINPUT, "%s:%ld: %s: %s", c->path, line, field, msg);
}

/* A whole number in [lo, hi] */
static int want_count(spec_ctx_t *c, long line, const char *field, double v, double lo, double hi,
		      uint32_t *out)
{
	if (!(v >= lo && v <= hi) || v != floor(v)) {
		char r[96];
		snprintf(r, sizeof r, "%g is not a whole number in [%.0f, %.0f]", v, lo, hi);
		return bad(c, line, field, "%s", r);
	}
	*out = (uint32_t)v;
	return 0;
}

static int want_pos(spec_ctx_t *c, long line, const char *field, double v, double hi, double *out)
{
	if (!(v > 0 && v <= hi)) {
		char r[96];
		snprintf(r, sizeof r, "%g must be > 0 and <= %g", v, hi);
		return bad(c, line, field, "%s", r);
	}
	*out = v;
	return 0;
}

/* One shared_prefix field by either of its names; 1 when name is none of them. */
static int sp_field(spec_ctx_t *c, long line, const char *field, const char *name, double v)
{
	static const char *const names[5][2] = {
	    {"num_groups", "num_unique_system_prompts"},
	    {"num_prompts_per_group", "num_users_per_system_prompt"},
	    {"system_prompt_len", NULL},
	    {"question_len", NULL},
	    {"output_len", NULL}};
	tr_spec_t *s = c->s;
	uint32_t *dst[5] = {&s->groups, &s->per_group, &s->system_len, &s->question_len,
			    &s->output_len};
	for (int i = 0; i < 5; i++)
		if (!strcmp(name, names[i][0]) || (names[i][1] && !strcmp(name, names[i][1]))) {
			if (c->have[i])
				return bad(c, line, field, "%s", "given twice (under its two names)");
			c->have[i] = 1;
			double lo = i < 2 ? 1 : (i == 4 ? 1 : 0);
			return want_count(c, line, field, v, lo, i < 2 ? SPEC_MAX_COUNT : SPEC_MAX_TOKENS,
					  dst[i]);
		}
	return 1;
}

static int sp_complete(spec_ctx_t *c, long line, const char *where)
{
	static const char *const need[5] = {"num_groups", "num_prompts_per_group",
					    "system_prompt_len", "question_len", "output_len"};
	for (int i = 0; i < 5; i++)
		if (!c->have[i]) {
			char f[128];
			snprintf(f, sizeof f, "%s.%s", where, need[i]);
			return bad(c, line, f, "%s", "missing");
		}
	if (c->s->system_len + (uint64_t)c->s->question_len == 0)
		return bad(c, line, where, "%s", "system_prompt_len + question_len must be >= 1");
	if ((uint64_t)c->s->groups * c->s->per_group > (uint64_t)SPEC_MAX_COUNT)
		return bad(c, line, where, "%s",
			   "num_groups x num_prompts_per_group is over 1048576 prompts");
	return 0;
}

static int stage_add(spec_ctx_t *c, long line, const char *field, double rate, double dur)
{
	tr_spec_t *s = c->s;
	tr_spec_stage_t g;
	char f[96];
	snprintf(f, sizeof f, "%s.rate", field);
	int rc = want_pos(c, line, f, rate, 1e9, &g.rate);
	snprintf(f, sizeof f, "%s.duration", field);
	if (!rc)
		rc = want_pos(c, line, f, dur, 4e9, &g.duration_s);
	if (rc)
		return rc;
	tr_spec_stage_t *ns = realloc(s->stages, (s->n_stages + 1) * sizeof *ns);
	if (!ns)
		return err_set(c->e, KS_ENOMEM, "out of memory");
	s->stages = ns;
	s->stages[s->n_stages++] = g;
	return 0;
}

uint64_t tr_spec_stage_requests(const tr_spec_stage_t *g)
{
	return (uint64_t)llround(g->rate * g->duration_s);
}

/* ---- YAML (inference-perf profile) --------------------------------------- */

static long y_line(const yaml_node_t *n)
{
	return (long)n->start_mark.line + 1;
}

static const char *y_str(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in mapping m (NULL: absent or m no mapping). */
static yaml_node_t *y_get(yaml_document_t *d, yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = y_str(yaml_document_get_node(d, p->key));
		if (k && !strcmp(k, key))
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

static int y_num(spec_ctx_t *c, const yaml_node_t *n, const char *field, double *v)
{
	const char *t = y_str(n);
	char *end;
	if (!t || !*t)
		return bad(c, y_line(n), field, "%s", "must be a number");
	errno = 0;
	*v = strtod(t, &end);
	if (*end || errno)
		return bad(c, y_line(n), field, "'%s' is not a number", t);
	return 0;
}

static int y_mapping(spec_ctx_t *c, const yaml_node_t *n, const char *field)
{
	return n->type == YAML_MAPPING_NODE ? 0 : bad(c, y_line(n), field, "%s", "must be a mapping");
}

static int yaml_data(spec_ctx_t *c, yaml_document_t *d, yaml_node_t *data)
{
	int rc;
	if ((rc = y_mapping(c, data, "data")))
		return rc;
	yaml_node_t *ty = y_get(d, data, "type");
	if (!ty)
		return bad(c, y_line(data), "data.type", "%s", "missing (shared_prefix)");
	if (!y_str(ty) || strcmp(y_str(ty), "shared_prefix"))
		return bad(c, y_line(ty), "data.type", "'%s' is not supported: shared_prefix only",
			   y_str(ty) ? y_str(ty) : "?");
	yaml_node_t *sp = y_get(d, data, "shared_prefix");
	if (!sp)
		return bad(c, y_line(data), "data.shared_prefix", "%s", "missing");
	if ((rc = y_mapping(c, sp, "data.shared_prefix")))
		return rc;
	for (yaml_node_pair_t *p = sp->data.mapping.pairs.start; p < sp->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(d, p->key), *v = yaml_document_get_node(d, p->value);
		const char *name = y_str(k) ? y_str(k) : "?";
		char field[128];
		snprintf(field, sizeof field, "data.shared_prefix.%s", name);
		if (!strcmp(name, "enable_multi_turn_chat"))
			continue; /* read, not modelled (tr_spec.h) */
		double x = 0;
		int known = 0;
		static const char *const all[] = {"num_groups", "num_unique_system_prompts",
						  "num_prompts_per_group", "num_users_per_system_prompt",
						  "system_prompt_len", "question_len", "output_len"};
		for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
			known |= !strcmp(name, all[i]);
		if (!known)
			return bad(c, y_line(k), field, "%s",
				   "not supported (fixed lengths only: num_groups, num_prompts_per_group, "
				   "system_prompt_len, question_len, output_len)");
		if ((rc = y_num(c, v, field, &x)) || (rc = sp_field(c, y_line(v), field, name, x)) < 0)
			return rc;
	}
	return sp_complete(c, y_line(sp), "data.shared_prefix");
}

static int yaml_load_section(spec_ctx_t *c, yaml_document_t *d, yaml_node_t *load)
{
	int rc;
	tr_spec_t *s = c->s;
	if ((rc = y_mapping(c, load, "load")))
		return rc;
	static const char *const skipped[] = {"num_workers", "worker_max_concurrency",
					      "request_timeout", "circuit_breakers"};
	for (yaml_node_pair_t *p = load->data.mapping.pairs.start; p < load->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(d, p->key), *v = yaml_document_get_node(d, p->value);
		const char *name = y_str(k) ? y_str(k) : "?";
		char field[96];
		snprintf(field, sizeof field, "load.%s", name);
		int skip = 0;
		for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++)
			skip |= !strcmp(name, skipped[i]);
		if (skip)
			continue; /* the client's machinery, not the requests (tr_spec.h) */
		if (!strcmp(name, "type")) {
			const char *t = y_str(v);
			if (t && !strcmp(t, "constant"))
				s->poisson = 0;
			else if (t && !strcmp(t, "poisson"))
				s->poisson = 1;
			else
				return bad(c, y_line(v), field, "'%s' is not supported: constant or poisson",
					   t ? t : "?");
		} else if (!strcmp(name, "interval")) {
			double x;
			if ((rc = y_num(c, v, field, &x)))
				return rc;
			if (!(x >= 0 && x <= 4e9))
				return bad(c, y_line(v), field, "%s", "must be in [0, 4e9] s");
			s->interval_s = x;
		} else if (!strcmp(name, "stages")) {
			if (v->type != YAML_SEQUENCE_NODE)
				return bad(c, y_line(v), field, "%s", "must be a list of {rate, duration}");
			uint32_t i = 0;
			for (yaml_node_item_t *it = v->data.sequence.items.start;
			     it < v->data.sequence.items.top; it++, i++) {
				yaml_node_t *g = yaml_document_get_node(d, *it);
				char gf[64], f2[96];
				snprintf(gf, sizeof gf, "load.stages[%u]", i);
				if ((rc = y_mapping(c, g, gf)))
					return rc;
				double rate = NAN, dur = NAN;
				for (yaml_node_pair_t *q = g->data.mapping.pairs.start;
				     q < g->data.mapping.pairs.top; q++) {
					yaml_node_t *gk = yaml_document_get_node(d, q->key);
					yaml_node_t *gv = yaml_document_get_node(d, q->value);
					const char *gn = y_str(gk) ? y_str(gk) : "?";
					snprintf(f2, sizeof f2, "%s.%s", gf, gn);
					if (!strcmp(gn, "rate"))
						rc = y_num(c, gv, f2, &rate);
					else if (!strcmp(gn, "duration"))
						rc = y_num(c, gv, f2, &dur);
					else
						rc = bad(c, y_line(gk), f2, "%s",
							 "not supported (rate and duration only)");
					if (rc)
						return rc;
				}
				if ((rc = stage_add(c, y_line(g), gf, rate, dur)))
					return rc;
			}
		} else {
			return bad(c, y_line(k), field, "%s",
				   "unknown (type, interval, stages; the client's num_workers, "
				   "worker_max_concurrency, request_timeout and circuit_breakers are skipped)");
		}
	}
	if (!s->n_stages)
		return bad(c, y_line(load), "load.stages", "%s", "missing or empty");
	return 0;
}

static int load_yaml(spec_ctx_t *c, FILE *f)
{
	yaml_parser_t p;
	yaml_document_t d;
	if (!yaml_parser_initialize(&p))
		return err_set(c->e, KS_ENOMEM, "out of memory");
	yaml_parser_set_input_file(&p, f);
	int rc = 0;
	if (!yaml_parser_load(&p, &d)) {
		rc = err_set(c->e, KS_EINPUT, "%s:%ld: yaml: %s", c->path,
			     (long)p.problem_mark.line + 1, p.problem ? p.problem : "cannot parse");
		yaml_parser_delete(&p);
		return rc;
	}
	yaml_node_t *root = yaml_document_get_root_node(&d);
	if (!root || root->type != YAML_MAPPING_NODE)
		rc = err_set(c->e, KS_EINPUT, "%s:%ld: profile: must be a mapping with data and load",
			     c->path, root ? y_line(root) : 1L);
	else {
		yaml_node_t *data = y_get(&d, root, "data"), *load = y_get(&d, root, "load");
		if (!data)
			rc = bad(c, y_line(root), "data", "%s", "missing");
		else if (!(rc = yaml_data(c, &d, data)))
			rc = load ? yaml_load_section(c, &d, load)
				  : bad(c, y_line(root), "load", "%s", "missing");
	}
	yaml_document_delete(&d);
	yaml_parser_delete(&p);
	return rc;
}

/* ---- JSON (experiment records) -------------------------------------------- */

/* The span [*b, *end) of element idx of the top-level "experiments" array
 * in text t, for line numbers (jansson keeps none for values). */
static int json_record_span(const char *t, size_t idx, size_t *b, size_t *end)
{
	int depth = 0, in_str = 0, arr = -1;
	size_t count = 0, n = strlen(t);
	for (size_t i = 0; i < n; i++) {
		char ch = t[i];
		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = 0;
			continue;
		}
		if (ch == '"') {
			if (depth == 1 && arr < 0 && !strncmp(t + i, "\"experiments\"", 13))
				arr = -2; /* the next '[' opens it */
			in_str = 1;
		} else if (ch == '{' || ch == '[') {
			if (ch == '[' && arr == -2 && depth == 1)
				arr = depth + 1;
			else if (ch == '{' && depth == arr && count++ == idx)
				*b = i;
			depth++;
		} else if (ch == '}' || ch == ']') {
			depth--;
			if (ch == '}' && depth == arr && count == idx + 1) {
				*end = i + 1;
				return 1;
			}
		}
	}
	return 0;
}

/* The line of the last key of keys found in sequence from b within [b, end). */
static long json_line(const char *t, size_t b, size_t end, const char *const *keys, int n)
{
	size_t at = b;
	for (int k = 0; k < n && keys[k]; k++) {
		char pat[80];
		snprintf(pat, sizeof pat, "\"%s\"", keys[k]);
		const char *hit = strstr(t + at, pat);
		if (!hit || (size_t)(hit - t) >= end)
			break;
		at = (size_t)(hit - t);
	}
	long line = 1;
	for (size_t i = 0; i < at; i++)
		line += t[i] == '\n';
	return line;
}

typedef struct json_at {
	const char *text;
	size_t b, end;
} json_at_t;

#define JLINE(ja, ...)                                                                             \
	json_line((ja)->text, (ja)->b, (ja)->end, (const char *const[]){__VA_ARGS__, NULL},        \
		  (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)))

static int j_num(spec_ctx_t *c, long line, const char *field, json_t *v, double *x)
{
	if (!json_is_number(v))
		return bad(c, line, field, "%s", v ? "must be a number" : "missing");
	*x = json_number_value(v);
	return 0;
}

static int json_record(spec_ctx_t *c, json_t *rec, const json_at_t *ja)
{
	int rc;
	tr_spec_t *s = c->s;
	json_t *w = json_object_get(rec, "workload");
	if (!json_is_object(w))
		return bad(c, JLINE(ja, "workload"), "workload", "%s",
			   w ? "must be an object" : "missing");
	json_t *ty = json_object_get(w, "type");
	if (!json_is_string(ty) || strcmp(json_string_value(ty), "shared_prefix"))
		return bad(c, JLINE(ja, "workload", "type"), "workload.type", "%s",
			   "must be \"shared_prefix\"");
	json_t *lt = json_object_get(w, "load_type");
	if (lt) {
		const char *t = json_is_string(lt) ? json_string_value(lt) : "";
		size_t wlen = strcspn(t, " (");
		if (wlen == 8 && !strncmp(t, "constant", 8))
			s->poisson = 0;
		else if (wlen == 7 && !strncmp(t, "poisson", 7))
			s->poisson = 1;
		else
			return bad(c, JLINE(ja, "workload", "load_type"), "workload.load_type", "%s",
				   "must start with constant or poisson");
	}
	json_t *sp = json_object_get(w, "shared_prefix");
	if (!json_is_object(sp))
		return bad(c, JLINE(ja, "workload"), "workload.shared_prefix", "%s",
			   sp ? "must be an object" : "missing");
	const char *name;
	json_t *v;
	json_object_foreach(sp, name, v)
	{
		char field[128];
		snprintf(field, sizeof field, "workload.shared_prefix.%s", name);
		long line = JLINE(ja, "workload", "shared_prefix", name);
		if (!strcmp(name, "enable_multi_turn_chat"))
			continue; /* read, not modelled (tr_spec.h) */
		double x = 0;
		if ((rc = j_num(c, line, field, v, &x)))
			return rc;
		if ((rc = sp_field(c, line, field, name, x)) < 0)
			return rc;
		if (rc == 1)
			return bad(c, line, field, "%s", "not supported (fixed lengths only)");
	}
	if ((rc = sp_complete(c, JLINE(ja, "workload", "shared_prefix"), "workload.shared_prefix")))
		return rc;
	json_t *st = json_object_get(rec, "stages");
	if (!json_is_array(st) || !json_array_size(st))
		return bad(c, JLINE(ja, "stages"), "stages", "%s", "must be a non-empty list");
	size_t i;
	json_array_foreach(st, i, v)
	{
		char gf[48], f[64];
		snprintf(gf, sizeof gf, "stages[%zu]", i);
		long line = JLINE(ja, "stages");
		double rate = 0, dur = 0;
		snprintf(f, sizeof f, "%s.rate", gf);
		if ((rc = j_num(c, line, f, json_object_get(v, "rate"), &rate)))
			return rc;
		snprintf(f, sizeof f, "%s.duration", gf);
		if ((rc = j_num(c, line, f, json_object_get(v, "duration"), &dur)))
			return rc;
		if ((rc = stage_add(c, line, gf, rate, dur)))
			return rc;
	}
	json_t *nr = json_object_get(w, "num_requests");
	if (nr) {
		double x = 0;
		long line = JLINE(ja, "workload", "num_requests");
		if ((rc = j_num(c, line, "workload.num_requests", nr, &x)))
			return rc;
		uint64_t sent = 0;
		for (uint32_t k = 0; k < s->n_stages; k++)
			sent += tr_spec_stage_requests(&s->stages[k]);
		if (x != (double)sent) {
			char r[128];
			snprintf(r, sizeof r, "%g, but the stages send %llu (rate x duration)", x,
				 (unsigned long long)sent);
			return bad(c, line, "workload.num_requests", "%s", r);
		}
	}
	return 0;
}

static int load_json(spec_ctx_t *c, const char *text, const char *experiment)
{
	json_error_t je;
	json_t *root = json_loads(text, 0, &je);
	if (!root)
		return err_set(c->e, KS_EINPUT, "%s:%d: json: %s", c->path, je.line, je.text);
	int rc = 0;
	json_t *ex = json_object_get(root, "experiments");
	if (!json_is_array(ex) || !json_array_size(ex)) {
		rc = bad(c, 1, "experiments", "%s", "must be a non-empty list of records");
		goto out;
	}
	size_t pick = json_array_size(ex), i;
	json_t *rec;
	json_array_foreach(ex, i, rec)
	{
		json_t *id = json_object_get(rec, "id");
		if (experiment && *experiment) {
			if (json_is_string(id) && !strcmp(json_string_value(id), experiment)) {
				pick = i;
				break;
			}
		} else if (json_array_size(ex) == 1)
			pick = 0;
	}
	if (pick == json_array_size(ex)) {
		char list[512] = "";
		size_t len = 0;
		json_array_foreach(ex, i, rec)
		{
			json_t *id = json_object_get(rec, "id");
			if (json_is_string(id) && len < sizeof list - 1)
				len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
							len ? ", " : "", json_string_value(id));
		}
		rc = err_set(c->e, KS_EINPUT,
			     "%s:1: experiments: %s (trace.spec_experiment: one of %s)", c->path,
			     experiment && *experiment ? "no record has this id" : "several records",
			     list);
		goto out;
	}
	rec = json_array_get(ex, pick);
	json_at_t ja = {text, 0, strlen(text)};
	json_record_span(text, pick, &ja.b, &ja.end);
	json_t *id = json_object_get(rec, "id");
	snprintf(c->s->experiment, sizeof c->s->experiment, "%s",
		 json_is_string(id) ? json_string_value(id) : "");
	rc = json_record(c, rec, &ja);
out:
	json_decref(root);
	return rc;
}

/* ---- loading -------------------------------------------------------------- */

void tr_spec_free(tr_spec_t *s)
{
	if (!s)
		return;
	free(s->stages);
	memset(s, 0, sizeof *s);
}

int tr_spec_load(const char *path, const char *experiment, tr_spec_t *s, err_t *e)
{
	memset(s, 0, sizeof *s);
	if (!path || !*path)
		return err_set(e, KS_EINPUT, "[trace] path: a workload spec (YAML or JSON) is needed");
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_set(e, KS_EIO, "%s: %s", path, strerror(errno));
	char *text = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nt = realloc(text, cap = 2 * cap + 8192);
			if (!nt) {
				rc = err_set(e, KS_ENOMEM, "out of memory");
				break;
			}
			text = nt;
		}
		size_t got = fread(text + len, 1, cap - len - 1, f);
		len += got;
		if (!got)
			break;
	}
	if (!rc && ferror(f))
		rc = err_set(e, KS_EIO, "%s: read error", path);
	if (rc) {
		fclose(f);
		free(text);
		return rc;
	}
	text[len] = 0;
	spec_ctx_t c = {path, s, e, {0}};
	size_t lead = strspn(text, " \t\r\n");
	if (text[lead] == '{')
		rc = load_json(&c, text, experiment);
	else if (experiment && *experiment)
		rc = err_set(e, KS_EINPUT,
			     "%s:1: trace.spec_experiment: '%s' names a JSON record, but this file is "
			     "a YAML profile", path, experiment);
	else {
		rewind(f);
		rc = load_yaml(&c, f);
	}
	fclose(f);
	free(text);
	if (rc)
		tr_spec_free(s);
	return rc;
}

/* ---- content -------------------------------------------------------------- */

struct tr_spec_gen {
	tr_spec_t s;         /* stages not kept */
	int reuse;
	uint32_t S, n;       /* block size; n = G x M */
	uint64_t seed;
	uint32_t *perm;      /* the shuffled list: slot -> prompt */
	uint64_t *blocks;
};

int tr_spec_gen_new(const tr_spec_t *s, int reuse, uint32_t S, uint64_t seed,
		    tr_spec_gen_t **out, err_t *e)
{
	*out = NULL;
	if (!S)
		return err_set(e, KS_EINPUT, "spec: block size must be >= 1");
	tr_spec_gen_t *g = calloc(1, sizeof *g);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	g->s = *s;
	g->s.stages = NULL;
	g->s.n_stages = 0;
	g->reuse = reuse;
	g->S = S;
	g->seed = seed;
	g->n = s->groups * s->per_group;
	uint64_t in = (uint64_t)s->system_len + s->question_len;
	g->perm = malloc((g->n ? g->n : 1) * sizeof *g->perm);
	g->blocks = malloc((in / S + 1) * sizeof *g->blocks);
	if (!g->perm || !g->blocks) {
		tr_spec_gen_free(g);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	/* Fisher-Yates from a hash of (seed, i): the client shuffles its list once */
	for (uint32_t i = 0; i < g->n; i++)
		g->perm[i] = i;
	for (uint32_t i = g->n; i > 1; i--) {
		uint64_t h = rng_fmix64(seed ^ rng_fmix64(0x73687566666c65ULL + i));
		uint32_t j = (uint32_t)(h % i);
		uint32_t t = g->perm[i - 1];
		g->perm[i - 1] = g->perm[j];
		g->perm[j] = t;
	}
	*out = g;
	return 0;
}

void tr_spec_gen_request(tr_spec_gen_t *g, uint64_t k, tr_spec_req_t *out)
{
	uint32_t p = g->perm[k % g->n];
	uint32_t grp = p / g->s.per_group;
	/* the two pieces of the prompt: the group's system prompt, the question
	 * (the prompt's own under cycle, the request's own under fresh) */
	uint64_t key_sys = tr_mix(tr_mix(g->seed, 0x737973ULL), grp);
	uint64_t key_q = g->reuse == TR_SPEC_CYCLE ? tr_mix(tr_mix(g->seed, 0x71ULL), p)
						   : tr_mix(tr_mix(g->seed, 0x7172ULL), k);
	const uint32_t len[2] = {g->s.system_len, g->s.question_len};
	const uint64_t key[2] = {key_sys, key_q};
	uint32_t in = len[0] + len[1], n = in / g->S;
	uint64_t h = TR_ROOT_ID;
	uint32_t piece = 0, off = 0;
	for (uint32_t j = 0; j < n; j++) {
		for (uint32_t left = g->S; left && piece < 2;) {
			if (off >= len[piece]) {
				piece++;
				off = 0;
				continue;
			}
			uint32_t take = len[piece] - off < left ? len[piece] - off : left;
			h = tr_mix(tr_mix(h, key[piece]), (uint64_t)off << 32 | take);
			off += take;
			left -= take;
		}
		g->blocks[j] = h;
	}
	*out = (tr_spec_req_t){.group = grp,
			       .prompt = p,
			       .input_len = in,
			       .output_len = g->s.output_len,
			       .n_blocks = n,
			       .blocks = g->blocks};
}

void tr_spec_gen_free(tr_spec_gen_t *g)
{
	if (!g)
		return;
	free(g->perm);
	free(g->blocks);
	free(g);
}
