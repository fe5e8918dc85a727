/* mdl_spec — strict INI parsing of hardware and LLM specs (their keys,
 * values and files), writing them back, and KV sizes. See mdl.h. The
 * built-in specs are in mdl_builtin.c, the cross-field checks in
 * mdl_spec_check.c, the weight bytes in mdl_weights.c. */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_field.h"
#include "models/mdl_int.h"

#define SPEC_FILE_MAX (1u << 20) /* a spec is a few hundred bytes */

/* The rows' ranges, as the override keys have always had them: a rate or
 * a byte count is a float key, a count an int key within uint32, a latency
 * an int key below 2^53 (doubles hold whole numbers exactly up to there). */
#define ANY_NUMBER 1e30
#define U32_TOP 4294967295.0
#define NS_TOP 9e15
#define FROM_SPEC " (-1: from the spec)"

/* A number row: the override key [sec] nm (type, range [-1, hi], unit,
 * doc), and the member (kind) of type it sets. */
#define NUM_KEY(sec, type, nm, ktype, hi, unit, doc, kind, member, req)                            \
	{{{sec, nm, ktype, "-1", -1, hi, NULL, unit, doc FROM_SPEC, NULL},                         \
	  CFG_AT(DOUBLE, mdl_over_t, v)},                                                          \
	 CFG_AT(kind, type, member),                                                               \
	 req}
#define HW(nm, ktype, hi, unit, doc, kind, member, req)                                            \
	NUM_KEY("gpu", mdl_hw_t, nm, ktype, hi, unit, doc, kind, member, req)
#define LLM(nm, ktype, hi, unit, doc, kind, member, req)                                           \
	NUM_KEY("model", mdl_llm_t, nm, ktype, hi, unit, doc, kind, member, req)
/* The spec's own name: a spec-file key only ([gpu] name and [model] name
 * of a config pick a built-in spec instead, mdl_cfg.c). */
#define NAME_KEY(sec, type)                                                                        \
	{{{sec, "name", CFG_STR, "", 0, 0, NULL, "", "the spec's name", NULL}, CFG_NOWHERE},       \
	 {CFG_F_NONE, offsetof(type, name), NULL, NULL, NULL},                                           \
	 1}

_Static_assert(sizeof(mdl_attn_t) == sizeof(int), "an enum field is an int (cfg.h)");
/* The override's choices; a spec file takes the same names less "spec". */
static const cfg_enum_t attn_over_map[] = {
    {"spec", MDL_OVER_SPEC}, {"gqa", MDL_ATTN_GQA}, {"mla", MDL_ATTN_MLA}, {NULL, 0}};
_Static_assert(sizeof(mdl_layer_t) == sizeof(int), "an enum field is an int (cfg.h)");
static const cfg_enum_t layer_over_map[] = {{"spec", MDL_OVER_SPEC},
                                            {"full", MDL_LAYER_FULL},
                                            {"sliding", MDL_LAYER_SLIDING},
                                            {"state", MDL_LAYER_STATE},
                                            {NULL, 0}};

const mdl_spec_key_t mdl_hw_keys[] = {
    NAME_KEY("gpu", mdl_hw_t),
    HW("hbm_bytes", CFG_FLOAT, ANY_NUMBER, "bytes", "HBM capacity per GPU", U64, hbm_bytes, 1),
    HW("hbm_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "HBM bandwidth", DOUBLE, hbm_bw, 1),
    HW("flops_bf16", CFG_FLOAT, ANY_NUMBER, "FLOP/s", "dense BF16 tensor throughput", DOUBLE,
       flops_bf16, 1),
    HW("flops_fp8", CFG_FLOAT, ANY_NUMBER, "FLOP/s", "dense FP8 tensor throughput (0: no FP8)",
       DOUBLE, flops_fp8, 0),
    HW("nvlink_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "NVLink per GPU per direction (0: none)",
       DOUBLE, nvlink_bw, 1),
    HW("nvlink_lat_ns", CFG_INT, NS_TOP, "ns", "NVLink copy latency", I64, nvlink_lat_ns, 1),
    HW("pcie_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "PCIe GPU<->host per direction", DOUBLE,
       pcie_bw, 1),
    HW("pcie_lat_ns", CFG_INT, NS_TOP, "ns", "PCIe copy latency", I64, pcie_lat_ns, 1),
    HW("nic_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "NIC per GPU per direction", DOUBLE, nic_bw,
       1),
    HW("nic_lat_ns", CFG_INT, NS_TOP, "ns", "NIC transfer latency", I64, nic_lat_ns, 1),
    HW("host_dram_bytes", CFG_FLOAT, ANY_NUMBER, "bytes", "host DRAM per node", U64,
       host_dram_bytes, 0),
};
const size_t mdl_hw_keys_n = sizeof mdl_hw_keys / sizeof mdl_hw_keys[0];

const mdl_spec_key_t mdl_llm_keys[] = {
    NAME_KEY("model", mdl_llm_t),
    LLM("layers", CFG_INT, U32_TOP, "", "transformer layers", U32, layers, 1),
    LLM("hidden", CFG_INT, U32_TOP, "", "hidden size", U32, hidden, 1),
    LLM("heads", CFG_INT, U32_TOP, "", "attention (query) heads", U32, heads, 1),
    LLM("kv_heads", CFG_INT, U32_TOP, "", "KV heads (GQA)", U32, kv_heads, 1),
    LLM("head_dim", CFG_INT, U32_TOP, "", "head dimension (MLA: v/qk_nope head dim)", U32,
        head_dim, 1),
    LLM("intermediate", CFG_INT, U32_TOP, "", "MLP intermediate size", U32, intermediate, 1),
    LLM("vocab", CFG_INT, U32_TOP, "tokens", "vocabulary size", U32, vocab, 1),
    LLM("dtype_bytes", CFG_INT, U32_TOP, "bytes", "KV cache and activation element size", U32,
        dtype_bytes, 1),
    LLM("weight_bytes", CFG_FLOAT, ANY_NUMBER, "bytes", "bytes per weight (0.5 for 4-bit)",
        DOUBLE, weight_bytes, 0),
    LLM("params_total", CFG_FLOAT, ANY_NUMBER, "", "parameters, all experts", U64, params_total,
        1),
    LLM("params_active", CFG_FLOAT, ANY_NUMBER, "", "parameters used per token", U64,
        params_active, 1),
    {{{"model", "attention", CFG_ENUM, "spec", 0, 0, NULL, "",
       "attention kind (spec: from the spec)", NULL},
      CFG_AT_ENUM(mdl_over_t, choice, attn_over_map)},
     CFG_AT_ENUM(mdl_llm_t, attention, &attn_over_map[1]),
     1},
    LLM("mla_latent", CFG_INT, U32_TOP, "", "MLA KV latent rank (kv_lora_rank)", U32, mla_latent,
        0),
    LLM("mla_rope", CFG_INT, U32_TOP, "", "MLA decoupled rope key dims", U32, mla_rope, 0),
    LLM("experts", CFG_INT, U32_TOP, "", "routed experts per MoE layer (0: dense)", U32, experts,
        0),
    LLM("experts_active", CFG_INT, U32_TOP, "", "routed experts per token", U32, experts_active,
        0),
    LLM("tied_embeddings", CFG_INT, U32_TOP, "", "1 if embedding and LM head share weights", U32,
        tied_embeddings, 0),
    /* Per-component widths and the shared experts (mdl.h): optional, a
     * spec without them stores every weight at weight_bytes. */
    LLM("expert_weight_bytes", CFG_FLOAT, ANY_NUMBER, "bytes",
        "bytes per weight of the routed and shared experts (0: weight_bytes; MoE only)", DOUBLE,
        expert_weight_bytes, 0),
    LLM("embed_weight_bytes", CFG_FLOAT, ANY_NUMBER, "bytes",
        "bytes per weight of the embedding table and LM head (0: weight_bytes)", DOUBLE,
        embed_weight_bytes, 0),
    LLM("shared_intermediate", CFG_INT, U32_TOP, "",
        "summed intermediate size of the shared experts of an MoE layer (MoE only)", U32,
        shared_intermediate, 0),
    LLM("dense_layers", CFG_INT, U32_TOP, "layers",
        "layers with a dense MLP instead of experts (MoE only)", U32, dense_layers, 0),
    /* Per-layer KV kinds: optional, a spec without them is all full
     * attention (each shipped spec cites its model's config.json). */
    {{{"model", "layer_kind", CFG_ENUM, "spec", 0, 0, NULL, "",
       "kind of the layers that are not full attention: full (none), sliding (window), "
       "state (fixed state per sequence); spec: from the spec",
       NULL},
      CFG_AT_ENUM(mdl_over_t, choice, layer_over_map)},
     CFG_AT_ENUM(mdl_llm_t, layer_kind, &layer_over_map[1]),
     0},
    LLM("full_period", CFG_INT, U32_TOP, "layers",
        "layer i is full attention iff i % full_period == full_offset (0: no full layer; "
        "with layer_kind != full)",
        U32, full_period, 0),
    LLM("full_offset", CFG_INT, U32_TOP, "layers", "offset of the full layers (< full_period)", U32,
        full_offset, 0),
    LLM("window", CFG_INT, U32_TOP, "tokens", "sliding-window size (layer_kind = sliding)", U32,
        window, 0),
    LLM("state_conv_dim", CFG_INT, U32_TOP, "", "state layer: conv channels", U32, state_conv_dim,
        0),
    LLM("state_conv_kernel", CFG_INT, U32_TOP, "", "state layer: conv kernel width", U32,
        state_conv_kernel, 0),
    LLM("state_heads", CFG_INT, U32_TOP, "", "state layer: SSM state heads", U32, state_heads, 0),
    LLM("state_head_dim", CFG_INT, U32_TOP, "", "state layer: SSM head dimension", U32,
        state_head_dim, 0),
    LLM("state_dim", CFG_INT, U32_TOP, "", "state layer: SSM state size per head channel", U32,
        state_dim, 0),
    LLM("state_dtype_bytes", CFG_INT, U32_TOP, "bytes", "state layer: SSM state element size", U32,
        state_dtype_bytes, 0),
};
const size_t mdl_llm_keys_n = sizeof mdl_llm_keys / sizeof mdl_llm_keys[0];
_Static_assert(sizeof mdl_hw_keys / sizeof mdl_hw_keys[0] <= MDL_SPEC_KEYS_MAX, "seen[] size");
_Static_assert(sizeof mdl_llm_keys / sizeof mdl_llm_keys[0] <= MDL_SPEC_KEYS_MAX, "seen[] size");
#undef HW
#undef LLM
#undef NUM_KEY
#undef NAME_KEY

/* ---- value parsing ------------------------------------------------------ */

/* Parses a non-negative decimal or exponent number ("80e9", "3.35e12"). */
static int parse_number(const char *s, double *out, const char **why)
{
	if (!*s) {
		*why = "empty value (expected a number)";
		return -1;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end) {
		*why = "not a number";
		return -1;
	}
	/* strtod accepts "nan", "inf" and hex floats; a spec number is neither */
	for (const char *p = s; *p; p++)
		if (isalpha((unsigned char)*p) && *p != 'e' && *p != 'E') {
			*why = "not a number";
			return -1;
		}
	if (errno == ERANGE || !isfinite(v)) {
		*why = "number out of range";
		return -1;
	}
	if (v < 0) {
		*why = "must not be negative";
		return -1;
	}
	*out = v;
	return 0;
}

int mdl_spec_set_number(const mdl_spec_key_t *k, void *dst, double v, const char **why)
{
	char *p = (char *)dst + k->spec.off;
	if (v < 0) {
		*why = "must not be negative";
		return -1;
	}
	if (k->spec.kind != CFG_F_DOUBLE && v != floor(v)) {
		*why = "must be an integer";
		return -1;
	}
	switch (k->spec.kind) {
	case CFG_F_DOUBLE:
		*(double *)p = v;
		return 0;
	case CFG_F_U32:
		if (v > 4294967295.0)
			break;
		*(uint32_t *)p = (uint32_t)v;
		return 0;
	case CFG_F_U64:
		/* doubles are exact integers up to 2^53, far above any spec value */
		if (v > 9007199254740992.0)
			break;
		*(uint64_t *)p = (uint64_t)v;
		return 0;
	case CFG_F_I64:
		if (v > 9007199254740992.0)
			break;
		*(int64_t *)p = (int64_t)v;
		return 0;
	default:
		*why = "not a numeric field";
		return -1;
	}
	*why = "number out of range";
	return -1;
}

/* A name the writer cannot give back: spec_write prints "name = VALUE", and
 * inih reads a ';' after a blank as the start of an inline comment, so
 * "name =;X" (accepted: no blank before the ';') would read back empty.
 * Refused at input rather than quoted, as in sim/base/cfg_val.c: spec files stay
 * plain INI that any reader splits the same way. */
static const char *name_unstorable(const char *v)
{
	return *v == ';' ? "name cannot begin with ';' (written back as 'name = ;...', "
	                   "INI reads a comment)"
	                 : NULL;
}

/* "expected A, B or C" from an enum member's map. Static storage, made
 * once per thread (the maps are constant). */
static const char *map_expected(const cfg_enum_t *map)
{
	static _Thread_local char buf[128];
	size_t n = 0;
	while (map[n].name)
		n++;
	int k = snprintf(buf, sizeof buf, "expected");
	for (size_t i = 0; i < n && k > 0 && (size_t)k < sizeof buf; i++)
		k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s",
		              i == 0 ? " " : i + 1 == n ? " or " : ", ", map[i].name);
	return buf;
}

int mdl_spec_set_text(const mdl_spec_key_t *k, void *dst, const char *value, const char **why)
{
	char *p = (char *)dst + k->spec.off;
	if (k->spec.kind == CFG_F_NONE) { /* the name */
		size_t n = strlen(value);
		if (n == 0) {
			*why = "empty name";
			return -1;
		}
		if ((*why = name_unstorable(value)))
			return -1;
		if (n >= MDL_NAME_MAX) {
			*why = "name too long (max 63 characters)";
			return -1;
		}
		memcpy(p, value, n + 1);
		return 0;
	}
	if (k->spec.kind == CFG_F_ENUM) {
		for (const cfg_enum_t *m = k->spec.map; m->name; m++)
			if (!strcmp(value, m->name)) {
				*(int *)p = m->value;
				return 0;
			}
		*why = map_expected(k->spec.map);
		return -1;
	}
	double v;
	if (parse_number(value, &v, why))
		return -1;
	return mdl_spec_set_number(k, dst, v, why);
}

/* The name of an enum member's value in its map ("?" for none). */
static const char *map_name(const cfg_enum_t *map, int v)
{
	for (; map->name; map++)
		if (map->value == v)
			return map->name;
	return "?";
}

const mdl_spec_key_t *mdl_spec_key_find(const mdl_spec_key_t *keys, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(mdl_spec_key_name(&keys[i]), name))
			return &keys[i];
	return NULL;
}

/* ---- INI parsing with line numbers -------------------------------------- */

/* inih is built without INI_HANDLER_LINENO, so a line-counting reader feeds
 * it; the handler runs right after the reader returned its line. */
typedef struct {
	const char *p;
	int line;
	int too_long; /* line number of an over-long line, 0 if none */
	int stop;
	int indented; /* the current line starts with blank space */
} reader_t;

static char *reader_line(char *buf, int num, void *stream)
{
	reader_t *r = stream;
	if (r->stop || !*r->p)
		return NULL;
	const char *nl = strchr(r->p, '\n');
	size_t len = nl ? (size_t)(nl - r->p) + 1 : strlen(r->p);
	r->line++;
	if (len > (size_t)num - 1) {
		r->too_long = r->line;
		r->stop = 1;
		return NULL;
	}
	r->indented = *r->p == ' ' || *r->p == '\t';
	memcpy(buf, r->p, len);
	buf[len] = '\0';
	r->p += len;
	return buf;
}

typedef struct {
	const char *origin;
	const char *section; /* the one section a spec may have */
	const mdl_spec_key_t *fields;
	size_t n;
	void *dst;
	int seen[MDL_SPEC_KEYS_MAX]; /* line of each key seen, 0 if not */
	int section_line; /* line of the section header, 0 if none seen */
	reader_t *rd;
	err_t *e;
	int failed;
} spec_parse_t;

static int spec_fail(spec_parse_t *sp, const char *key, const char *why)
{
	sp->failed = 1;
	sp->rd->stop = 1;
	err_set(sp->e, KS_EINPUT, "%s:%d: %s: %s", sp->origin, sp->rd->line, key, why);
	return 0;
}

static int spec_handler(void *user, const char *section, const char *name, const char *value)
{
	spec_parse_t *sp = user;
	if (sp->failed)
		return 0;
	/* inih reads an indented line after a key as a continuation of its
	 * value; a spec value is one line, so say what happened */
	if (sp->rd->indented)
		return spec_fail(sp, name,
		                 "indented line continues the previous value "
		                 "(spec values are one line; remove the indentation)");
	if (!*section)
		return spec_fail(sp, name, "key outside a section");
	if (strcmp(section, sp->section)) {
		char why[128];
		snprintf(why, sizeof why, "unknown section [%.40s] (a spec has one [%s] section)",
		         section, sp->section);
		return spec_fail(sp, name, why);
	}
	if (!sp->section_line)
		sp->section_line = sp->rd->line;
	const mdl_spec_key_t *f = mdl_spec_key_find(sp->fields, sp->n, name);
	if (!f) {
		char why[640];
		int k = snprintf(why, sizeof why, "unknown key in [%s] (known:", sp->section);
		for (size_t i = 0; i < sp->n && k > 0 && (size_t)k < sizeof why; i++)
			k += snprintf(why + k, sizeof why - (size_t)k, " %s",
		              mdl_spec_key_name(&sp->fields[i]));
		if (k > 0 && (size_t)k < sizeof why - 1)
			snprintf(why + k, sizeof why - (size_t)k, ")");
		return spec_fail(sp, name, why);
	}
	size_t idx = (size_t)(f - sp->fields);
	if (sp->seen[idx])
		return spec_fail(sp, name, "duplicate key");
	sp->seen[idx] = sp->rd->line; /* > 0: the key's line */
	const char *why = NULL;
	if (mdl_spec_set_text(f, sp->dst, value, &why)) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s: '%.80s'", why, value);
		return spec_fail(sp, name, msg);
	}
	return 1;
}

/* lines (may be NULL; n entries) gets each key's line, 0 where absent, and
 * lines[n] the section's. */
static int spec_parse(const char *origin, const char *text, const char *section,
                      const mdl_spec_key_t *fields, size_t n, void *dst, int *lines, err_t *e)
{
	reader_t rd = {.p = text};
	spec_parse_t sp = {.origin = origin,
	                   .section = section,
	                   .fields = fields,
	                   .n = n,
	                   .dst = dst,
	                   .rd = &rd,
	                   .e = e};
	int rc = ini_parse_stream(reader_line, &rd, spec_handler, &sp);
	if (sp.failed)
		return KS_EINPUT;
	if (rd.too_long)
		return err_set(e, KS_EINPUT, "%s:%d: line too long (max %d characters)", origin,
		               rd.too_long, INI_MAX_LINE - 2);
	if (rc > 0)
		return err_set(e, KS_EINPUT,
		               "%s:%d: syntax error (expected [section] or key = value)", origin,
		               rc);
	if (rc < 0)
		return err_set(e, KS_ENOMEM, "%s: out of memory while parsing", origin);
	for (size_t i = 0; i < n; i++)
		if (fields[i].required && !sp.seen[i])
			return err_set(e, KS_EINPUT, "%s:%d: %s: missing required key in [%s]",
			               origin, sp.section_line ? sp.section_line : rd.line,
			               mdl_spec_key_name(&fields[i]), section);
	if (lines) {
		for (size_t i = 0; i < n; i++)
			lines[i] = sp.seen[i];
		lines[n] = sp.section_line;
	}
	return 0;
}

static void hw_defaults(mdl_hw_t *hw)
{
	memset(hw, 0, sizeof *hw);
}

static void llm_defaults(mdl_llm_t *llm)
{
	memset(llm, 0, sizeof *llm);
	llm->weight_bytes = -1; /* resolved to dtype_bytes after parsing */
}

int mdl_hw_parse(const char *origin, const char *text, mdl_hw_t *hw, err_t *e)
{
	mdl_hw_t tmp;
	hw_defaults(&tmp);
	int rc = spec_parse(origin, text, "gpu", mdl_hw_keys, mdl_hw_keys_n, &tmp, NULL, e);
	if (!rc)
		rc = mdl_hw_check(&tmp, origin, e);
	if (!rc)
		*hw = tmp; /* never half-loaded */
	return rc;
}

int mdl_llm_parse(const char *origin, const char *text, mdl_llm_t *llm, err_t *e)
{
	mdl_llm_t tmp;
	llm_defaults(&tmp);
	int lines[MDL_SPEC_KEYS_MAX + 1];
	int rc = spec_parse(origin, text, "model", mdl_llm_keys, mdl_llm_keys_n, &tmp, lines, e);
	if (rc)
		return rc;
	if (tmp.weight_bytes < 0)
		tmp.weight_bytes = tmp.dtype_bytes;
	/* a layer key at fault is named with its line (a key that is missing:
	 * the line of layer_kind, else of the section) */
	const char *key;
	char why[160];
	if (mdl_layers_fault(&tmp, &key, why, sizeof why)) {
		int line = lines[mdl_llm_keys_n];
		const mdl_spec_key_t *k = mdl_spec_key_find(mdl_llm_keys, mdl_llm_keys_n, key);
		const mdl_spec_key_t *kind =
		    mdl_spec_key_find(mdl_llm_keys, mdl_llm_keys_n, "layer_kind");
		if (lines[k - mdl_llm_keys])
			line = lines[k - mdl_llm_keys];
		else if (lines[kind - mdl_llm_keys])
			line = lines[kind - mdl_llm_keys];
		return err_set(e, KS_EINPUT, "%s:%d: %s: %s", origin, line, key, why);
	}
	rc = mdl_llm_check(&tmp, origin, e);
	if (!rc)
		*llm = tmp;
	return rc;
}

int mdl_read_small_file(const char *path, size_t max, const char *what, char **out, size_t *len,
                        err_t *e)
{
	FILE *f = err_fopen_in(path, e);
	if (!f)
		return e->code;
	char *buf = malloc(max + 1);
	if (!buf) {
		fclose(f);
		return err_set(e, KS_ENOMEM, "%s: out of memory", path);
	}
	size_t n = fread(buf, 1, max + 1, f);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return err_set(e, KS_EIO, "%s: read error", path);
	}
	if (n > max) {
		free(buf);
		return err_set(e, KS_EINPUT, "%s: larger than %zu bytes, not a %s", path, max, what);
	}
	if (memchr(buf, '\0', n)) {
		free(buf);
		return err_set(e, KS_EINPUT, "%s: contains a NUL byte, not a text %s", path, what);
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

/* Parses the spec file at path into hw when hw is given, else into llm. */
static int spec_load_file(const char *path, mdl_hw_t *hw, mdl_llm_t *llm, err_t *e)
{
	char *text;
	int rc = mdl_read_small_file(path, SPEC_FILE_MAX, "spec file", &text, NULL, e);
	if (rc)
		return rc;
	rc = hw ? mdl_hw_parse(path, text, hw, e) : mdl_llm_parse(path, text, llm, e);
	free(text);
	return rc;
}

int mdl_hw_load_file(const char *path, mdl_hw_t *hw, err_t *e)
{
	return spec_load_file(path, hw, NULL, e);
}

int mdl_llm_load_file(const char *path, mdl_llm_t *llm, err_t *e)
{
	return spec_load_file(path, NULL, llm, e);
}

/* ---- writing ------------------------------------------------------------ */

static int spec_write(const char *section, const mdl_spec_key_t *fields, size_t n, const void *src,
                      FILE *f)
{
	const char *p0 = src;
	for (size_t i = 0; i < n; i++)
		if (fields[i].spec.kind == CFG_F_NONE && name_unstorable(p0 + fields[i].spec.off))
			return KS_EINPUT;
	fprintf(f, "[%s]\n", section);
	for (size_t i = 0; i < n; i++) {
		const char *p = p0 + fields[i].spec.off;
		fprintf(f, "%s = ", mdl_spec_key_name(&fields[i]));
		switch (fields[i].spec.kind) {
		case CFG_F_NONE:
			fprintf(f, "%s\n", p);
			break;
		case CFG_F_U32:
			fprintf(f, "%u\n", *(const uint32_t *)p);
			break;
		case CFG_F_U64:
			fprintf(f, "%llu\n", (unsigned long long)*(const uint64_t *)p);
			break;
		case CFG_F_I64:
			fprintf(f, "%lld\n", (long long)*(const int64_t *)p);
			break;
		case CFG_F_DOUBLE:
			fprintf(f, "%.17g\n", *(const double *)p);
			break;
		case CFG_F_ENUM:
			fprintf(f, "%s\n", map_name(fields[i].spec.map, *(const int *)p));
			break;
		default: /* no other kind in the tables */
			break;
		}
	}
	return ferror(f) ? KS_EIO : 0;
}

int mdl_hw_write(const mdl_hw_t *hw, FILE *f)
{
	return spec_write("gpu", mdl_hw_keys, mdl_hw_keys_n, hw, f);
}

int mdl_llm_write(const mdl_llm_t *llm, FILE *f)
{
	return spec_write("model", mdl_llm_keys, mdl_llm_keys_n, llm, f);
}

/* ---- sizes ---------------------------------------------------------------- */

uint32_t mdl_layers_full(const mdl_llm_t *m)
{
	if (m->layer_kind == MDL_LAYER_FULL)
		return m->layers;
	if (!m->full_period)
		return 0;
	/* layers full_offset, full_offset + period, ...: Gemma 2 (is_sliding =
	 * not layer_idx % 2) has period 2 offset 1, Gemma 3 ((i+1) % 6 != 0 is
	 * sliding) 6 and 5, Jamba (attn_layer_period/offset) 8 and 4 */
	uint32_t p = m->full_period;
	return m->layers / p + (m->layers % p > m->full_offset);
}

uint32_t mdl_layers_sliding(const mdl_llm_t *m)
{
	return m->layer_kind == MDL_LAYER_SLIDING ? m->layers - mdl_layers_full(m) : 0;
}

uint32_t mdl_layers_state(const mdl_llm_t *m)
{
	return m->layer_kind == MDL_LAYER_STATE ? m->layers - mdl_layers_full(m) : 0;
}

/* KV bytes of one token in one attention layer on one GPU of tp. */
static uint64_t layer_token_bytes_gpu(const mdl_llm_t *m, uint32_t tp)
{
	/* DeepSeek-V2 (arXiv:2405.04434) sec. 2.1: MLA caches c_KV and k_R, on every rank */
	if (m->attention == MDL_ATTN_MLA)
		return ((uint64_t)m->mla_latent + m->mla_rope) * m->dtype_bytes;
	/* vLLM/Megatron shard KV heads over TP ranks; with tp > kv_heads each rank
	 * holds one (replicated) head */
	uint64_t heads = tp <= 1 ? m->kv_heads : (m->kv_heads + tp - 1) / tp;
	return 2ull * heads * m->head_dim * m->dtype_bytes; /* K and V */
}

static uint64_t ceil_div(uint64_t a, uint32_t tp)
{
	return tp <= 1 ? a : (a + tp - 1) / tp;
}

/* One state layer's state on one GPU of tp. vLLM's MambaStateShapeCalculator
 * (vllm/model_executor/layers/mamba/mamba_utils.py): conv state
 * (conv_kernel - 1, conv_dim / tp), temporal (SSM) state (heads / tp,
 * head_dim, state) -- mamba1 with heads = intermediate, head_dim 1 and
 * state = d_state; mamba2 with conv_dim = intermediate + 2 * n_groups *
 * d_state; Gated DeltaNet with conv_dim = 2 * k_heads * k_dim + v_heads *
 * v_dim and state (v_heads / tp, k_dim, v_dim). The conv state is kept in the
 * activation dtype, the SSM state in its own (vLLM mamba_ssm_cache_dtype). */
static uint64_t layer_state_bytes_gpu(const mdl_llm_t *m, uint32_t tp)
{
	if (m->layer_kind != MDL_LAYER_STATE)
		return 0;
	uint64_t conv =
	    ceil_div(m->state_conv_dim, tp) * (m->state_conv_kernel - 1) * m->dtype_bytes;
	uint64_t ssm =
	    ceil_div(m->state_heads, tp) * m->state_head_dim * m->state_dim * m->state_dtype_bytes;
	return conv + ssm;
}

uint64_t mdl_kv_bytes_per_token_gpu(const mdl_llm_t *m, uint32_t tp)
{
	return (uint64_t)(mdl_layers_full(m) + mdl_layers_sliding(m)) *
	       layer_token_bytes_gpu(m, tp);
}

uint64_t mdl_kv_bytes_per_token(const mdl_llm_t *m)
{
	return mdl_kv_bytes_per_token_gpu(m, 1);
}

uint64_t mdl_kv_paged_bytes_per_token_gpu(const mdl_llm_t *m, uint32_t tp)
{
	uint32_t full = mdl_layers_full(m);
	return (uint64_t)(full ? full : mdl_layers_sliding(m)) * layer_token_bytes_gpu(m, tp);
}

uint64_t mdl_kv_paged_bytes_per_token(const mdl_llm_t *m)
{
	return mdl_kv_paged_bytes_per_token_gpu(m, 1);
}

uint64_t mdl_kv_state_bytes_per_seq_gpu(const mdl_llm_t *m, uint32_t tp)
{
	return (uint64_t)mdl_layers_state(m) * layer_state_bytes_gpu(m, tp);
}

uint64_t mdl_kv_state_bytes_per_seq(const mdl_llm_t *m)
{
	return mdl_kv_state_bytes_per_seq_gpu(m, 1);
}

uint64_t mdl_kv_fixed_bytes_per_seq_gpu(const mdl_llm_t *m, uint32_t tp)
{
	/* without full layers the sliding ones are paged (no window part) */
	uint64_t win = mdl_layers_full(m) ? (uint64_t)mdl_layers_sliding(m) * m->window *
	                                        layer_token_bytes_gpu(m, tp)
	                                  : 0;
	return win + mdl_kv_state_bytes_per_seq_gpu(m, tp);
}

uint64_t mdl_kv_fixed_bytes_per_seq(const mdl_llm_t *m)
{
	return mdl_kv_fixed_bytes_per_seq_gpu(m, 1);
}

uint64_t mdl_kv_prefix_bytes_gpu(const mdl_llm_t *m, uint32_t tp, uint64_t n, int with_state)
{
	uint64_t tok = layer_token_bytes_gpu(m, tp);
	uint64_t win = n < m->window ? n : m->window;
	return (uint64_t)mdl_layers_full(m) * n * tok +
	       (uint64_t)mdl_layers_sliding(m) * win * tok +
	       (with_state ? mdl_kv_state_bytes_per_seq_gpu(m, tp) : 0);
}

uint64_t mdl_kv_prefix_bytes(const mdl_llm_t *m, uint64_t n, int with_state)
{
	return mdl_kv_prefix_bytes_gpu(m, 1, n, with_state);
}

uint64_t mdl_kv_seq_bytes_gpu(const mdl_llm_t *m, uint32_t tp, uint64_t n)
{
	return mdl_kv_prefix_bytes_gpu(m, tp, n, 1); /* a sequence holds its state */
}

uint64_t mdl_kv_seq_bytes(const mdl_llm_t *m, uint64_t n)
{
	return mdl_kv_seq_bytes_gpu(m, 1, n);
}

uint64_t mdl_kv_tokens_per_instance(const mdl_hw_t *hw, const mdl_llm_t *m, uint32_t tp,
                                    double reserve_fraction)
{
	double free_b = (double)hw->hbm_bytes * (1 - reserve_fraction) -
	                (double)mdl_weights_bytes_per_gpu(m, tp);
	uint64_t kv = mdl_kv_paged_bytes_per_token_gpu(m, tp);
	if (!(free_b > 0) || kv == 0)
		return 0;
	return (uint64_t)floor(free_b / (double)kv);
}
