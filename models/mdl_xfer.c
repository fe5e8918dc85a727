/* mdl_xfer — transfer cost model and its calibration file (see mdl_xfer.h). */
#include "models/mdl_xfer.h"

#include "models/mdl.h"
#include "sim/base/ini_scan.h"
#include "sim/base/ini_typed.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *const link_names[MDL_LINK_N] = {"nvlink", "pcie_h2d", "pcie_d2h", "net",
                                                   "local"};

const char *mdl_xfer_link_name(int kind)
{
	return kind >= 0 && kind < MDL_LINK_N ? link_names[kind] : "unknown";
}

int mdl_xfer_link_parse(const char *name)
{
	for (int k = 0; k < MDL_LINK_N; k++)
		if (!strcmp(name, link_names[k]))
			return k;
	return -1;
}

static void link_set(mdl_xfer_link_t *l, double alpha_ns, double bw_gbps, double overhead_ns,
                     double share_same, double share_opp)
{
	memset(l, 0, sizeof *l);
	l->n_pieces = 1;
	l->piece[0] = (mdl_xfer_piece_t){UINT64_MAX, alpha_ns, bw_gbps};
	l->overhead_ns = overhead_ns;
	l->batch_overhead_ns = overhead_ns / 4;
	l->share_same = share_same;
	l->share_opp = share_opp;
}

void mdl_xfer_default(mdl_xfer_t *x)
{
	memset(x, 0, sizeof *x);
	/* Uncalibrated round figures, to be replaced by a calibration file:
	 * NVLink 4: 450 GB/s per direction per GPU (NVIDIA H100/H200 datasheets),
	 *   taken at ~80% achievable. PCIe Gen5 x16: 63 GB/s per direction raw
	 *   (32 GT/s x 16 lanes, 128b/130b; PCI-SIG), ~80% achievable. NET: one
	 *   400 Gb/s NDR port per GPU = 50 GB/s, ~90% achievable. Local copy:
	 *   reads and writes HBM (4.8 TB/s on H200), so ~half of it. Latencies
	 *   and per-copy overheads are order-of-magnitude guesses (a few us per
	 *   cudaMemcpyAsync). Full-duplex links: share_opp 0. */
	link_set(&x->link[MDL_LINK_NVLINK], 3000, 360, 2000, 1.0, 0.0);
	link_set(&x->link[MDL_LINK_PCIE_H2D], 3000, 50, 2000, 1.0, 0.0);
	link_set(&x->link[MDL_LINK_PCIE_D2H], 3000, 50, 2000, 1.0, 0.0);
	link_set(&x->link[MDL_LINK_NET], 10000, 45, 2000, 1.0, 0.0);
	link_set(&x->link[MDL_LINK_LOCAL], 2000, 2000, 2000, 1.0, 1.0);
	x->mfu = NAN;
	x->mbu = NAN;
	snprintf(x->device, sizeof x->device, "uncalibrated defaults");
	snprintf(x->source, sizeof x->source, "defaults");
}

/* ---- loading --------------------------------------------------------------- */

/* One comma-separated list of a link: its numbers, count n. */
typedef struct xfer_list {
	int n;
	double v[MDL_XFER_MAX_PIECES];
} xfer_list_t;

/* What a [link.KIND] section fills: the link's own numbers, and the lists
 * that become its pieces once all are read (xfer_finish). */
typedef struct link_in {
	mdl_xfer_link_t l;
	xfer_list_t edges, alpha, bw;
} link_in_t;

/* The struct the calibration table fills. */
typedef struct xfer_in {
	mdl_xfer_t x;
	link_in_t in[MDL_LINK_N];
} xfer_in_t;

static int parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	while (isspace((unsigned char)*end))
		end++;
	if (end == s || *end || errno || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Comma-separated finite numbers (empty entries skipped) into l, at most
 * max of them, each above lo when above, else at least lo: 0, or -1 with
 * why. */
static int parse_list(const char *s, xfer_list_t *l, int max, double lo, int above, char *why,
                      size_t n)
{
	char buf[1024];
	if (strlen(s) >= sizeof buf)
		return snprintf(why, n, "longer than %zu characters", sizeof buf - 1), -1;
	snprintf(buf, sizeof buf, "%s", s);
	l->n = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		double v;
		if (l->n == max)
			return snprintf(why, n, "more than %d entries", max), -1;
		if (parse_double(tok, &v))
			return snprintf(why, n, "entry %d '%.40s' is not a finite number", l->n + 1, tok),
			       -1;
		if (above ? !(v > lo) : !(v >= lo))
			return snprintf(why, n, "entry %d (%s) must be %s %g", l->n + 1, tok,
			                above ? "above" : "at least", lo),
			       -1;
		l->v[l->n++] = v;
	}
	return 0;
}

/* edges: bytes per copy where the pieces split, ascending; empty: one piece */
static int edges_parse(const char *text, void *field, char *why, size_t n)
{
	xfer_list_t *l = field;
	if (parse_list(text, l, MDL_XFER_MAX_PIECES - 1, 1, 0, why, n))
		return -1;
	for (int i = 1; i < l->n; i++)
		if (l->v[i] <= l->v[i - 1])
			return snprintf(why, n, "entry %d (%g) must be above entry %d (%g)", i + 1,
			                l->v[i], i, l->v[i - 1]),
			       -1;
	return 0;
}

static int at_least_one(const xfer_list_t *l, char *why, size_t n)
{
	if (l->n)
		return 0;
	snprintf(why, n, "expected one number per piece, got none");
	return -1;
}

static int alpha_parse(const char *text, void *field, char *why, size_t n)
{
	return parse_list(text, field, MDL_XFER_MAX_PIECES, -INFINITY, 1, why, n) ||
	               at_least_one(field, why, n)
	           ? -1
	           : 0;
}

static int bw_parse(const char *text, void *field, char *why, size_t n)
{
	return parse_list(text, field, MDL_XFER_MAX_PIECES, 0, 1, why, n) ||
	               at_least_one(field, why, n)
	           ? -1
	           : 0;
}

static int link_param(const char *arg, char *why, size_t n)
{
	int k = mdl_xfer_link_parse(arg);
	if (k < 0)
		snprintf(why, n, "unknown link kind (nvlink, pcie_h2d, pcie_d2h, net, local)");
	return k;
}

static void *link_instance(void *dst, int id, char *why, size_t n)
{
	(void)why;
	(void)n;
	return &((xfer_in_t *)dst)->in[id];
}

enum { X_DEVICE, X_MFU, X_MBU, X_EDGES, X_ALPHA, X_BW, X_OVERHEAD, X_BATCH, X_SAME, X_OPP, X_N };

#define LINK_NUM(nm, member, doc)                                                                  \
	{{{"link.KIND", nm, CFG_FLOAT, "0", 0, 0, NULL, "", doc, NULL},                            \
	  CFG_AT(DOUBLE, link_in_t, l.member)},                                                    \
	 0,                                                                                        \
	 0,                                                                                        \
	 NULL}
#define LINK_LIST(nm, member, unit, doc, fn)                                                       \
	{{{"link.KIND", nm, CFG_STR, "", 0, 0, NULL, unit, doc, NULL},                             \
	  {CFG_F_NONE, offsetof(link_in_t, member), NULL, NULL, NULL}},                            \
	 0,                                                                                        \
	 0,                                                                                        \
	 fn}
#define FRACTION(nm, member, doc)                                                                  \
	{{{"compute", nm, CFG_FLOAT, "0", 0, 1, NULL, "", doc, NULL},                              \
	  CFG_AT(DOUBLE, xfer_in_t, x.member)},                                                    \
	 INI_ABOVE_MIN,                                                                            \
	 0,                                                                                        \
	 NULL}

/* The calibration file's keys (format: models/calibration/README.md). */
static const ini_key_t xfer_keys[X_N] = {
    [X_DEVICE] = {{{"meta", "device", CFG_STR, "", 0, 0, NULL, "",
                    "what the parameters describe", NULL},
                   {CFG_F_NONE, offsetof(xfer_in_t, x.device), NULL, NULL, NULL}},
                  0,
                  sizeof(((mdl_xfer_t *)0)->device),
                  NULL},
    [X_MFU] = FRACTION("mfu", mfu, "compute efficiency: achieved / peak FLOP/s"),
    [X_MBU] = FRACTION("mbu", mbu, "compute efficiency: achieved / peak HBM bandwidth"),
    [X_EDGES] = LINK_LIST("edges", edges, "bytes",
                          "copy sizes where the pieces split, ascending (empty: one piece)",
                          edges_parse),
    [X_ALPHA] = LINK_LIST("alpha_ns", alpha, "ns", "latency of one copy, per piece", alpha_parse),
    [X_BW] = LINK_LIST("bw_gbps", bw, "GB/s", "bandwidth, per piece", bw_parse),
    [X_OVERHEAD] = LINK_NUM("overhead_ns", overhead_ns, "per copy call of a block-granular copy"),
    [X_BATCH] = LINK_NUM("batch_overhead_ns", batch_overhead_ns,
                         "per block when the blocks go in one batched call"),
    [X_SAME] = LINK_NUM("share_same", share_same,
                        "bandwidth stretch per other copy on the same link and direction"),
    [X_OPP] = LINK_NUM("share_opp", share_opp,
                       "bandwidth stretch per copy in the opposite direction"),
};
#undef LINK_NUM
#undef LINK_LIST
#undef FRACTION

/* Each link whose lists were given: as many alpha_ns and bw_gbps entries
 * as edges makes pieces, which replace the link's; then every link back. */
static int xfer_finish(void *dst, const ini_run_t *r, err_t *e)
{
	xfer_in_t *in = dst;
	for (int k = 0; k < MDL_LINK_N; k++) {
		link_in_t *li = &in->in[k];
		mdl_xfer_link_t *l = &li->l;
		int n = li->edges.n + 1;
		if (!li->alpha.n && !li->bw.n && !li->edges.n) {
			in->x.link[k] = *l;
			continue;
		}
		if (li->alpha.n != n || li->bw.n != n) {
			size_t row = li->alpha.n != n ? X_ALPHA : X_BW;
			int line = ini_line(r, row, k);
			return err_set(e, KS_EINPUT,
			               "%s:%d: [link.%s] %s: edges has %d entries, so alpha_ns and "
			               "bw_gbps need %d each (have %d and %d)",
			               ini_origin(r), line ? line : ini_section_line(r, row, k),
			               link_names[k], xfer_keys[row].t.key.name, n - 1, n,
			               li->alpha.n, li->bw.n);
		}
		l->n_pieces = n;
		for (int i = 0; i < n; i++)
			l->piece[i] =
			    (mdl_xfer_piece_t){i < n - 1 ? (uint64_t)li->edges.v[i] : UINT64_MAX,
			                       li->alpha.v[i], li->bw.v[i]};
		in->x.link[k] = *l;
	}
	return 0;
}

static const ini_section_t xfer_sections[] = {
    {"meta", 0, INI_OPEN, NULL, NULL}, /* other keys: notes on the measurement */
    {"compute", 0, INI_OPEN, NULL, NULL}, /* other keys: peaks, per-shape detail */
    {"link.KIND", 5, 0, link_param, link_instance},
};
static const ini_rows_t xfer_rows = {xfer_keys, X_N, 0};
static const ini_table_t xfer_table = {xfer_sections,
                                       sizeof xfer_sections / sizeof xfer_sections[0],
                                       &xfer_rows,
                                       1,
                                       xfer_finish};

int mdl_xfer_load_string(mdl_xfer_t *x, const char *origin, const char *text, err_t *e)
{
	xfer_in_t *in = calloc(1, sizeof *in);
	if (!in)
		return err_set(e, KS_ENOMEM, "out of memory");
	in->x = *x; /* never half-load: x changes only on success */
	for (int k = 0; k < MDL_LINK_N; k++)
		in->in[k].l = x->link[k];
	int rc = ini_read(&xfer_table, origin, text, in, e);
	if (!rc) {
		snprintf(in->x.source, sizeof in->x.source, "%s", origin);
		*x = in->x;
	}
	free(in);
	return rc;
}

static int xfer_parse(void *x, const char *origin, const char *text, err_t *e)
{
	return mdl_xfer_load_string(x, origin, text, e);
}

int mdl_xfer_load(mdl_xfer_t *x, const char *path, err_t *e)
{
	return ini_file_parse(path, xfer_parse, x, e);
}

static void link_from_spec(mdl_xfer_link_t *l, double bw_bytes_per_s, int64_t lat_ns)
{
	if (bw_bytes_per_s <= 0)
		return; /* the spec has no such link: keep the default */
	l->n_pieces = 1;
	l->piece[0] = (mdl_xfer_piece_t){UINT64_MAX, (double)lat_ns, bw_bytes_per_s / 1e9};
}

void mdl_xfer_from_hw(mdl_xfer_t *x, const struct mdl_hw *hw)
{
	if (!hw)
		return;
	link_from_spec(&x->link[MDL_LINK_NVLINK], hw->nvlink_bw, hw->nvlink_lat_ns);
	link_from_spec(&x->link[MDL_LINK_PCIE_H2D], hw->pcie_bw, hw->pcie_lat_ns);
	link_from_spec(&x->link[MDL_LINK_PCIE_D2H], hw->pcie_bw, hw->pcie_lat_ns);
	link_from_spec(&x->link[MDL_LINK_NET], hw->nic_bw, hw->nic_lat_ns);
	link_from_spec(&x->link[MDL_LINK_LOCAL], hw->hbm_bw / 2,
	               (int64_t)x->link[MDL_LINK_LOCAL].piece[0].alpha_ns);
	snprintf(x->device, sizeof x->device, "%.80s (spec, uncalibrated)", hw->name);
	snprintf(x->source, sizeof x->source, "spec");
}

int mdl_xfer_init(mdl_xfer_t *x, const struct mdl_hw *hw, const char *path, err_t *e)
{
	mdl_xfer_default(x);
	mdl_xfer_from_hw(x, hw);
	return path && *path ? mdl_xfer_load(x, path, e) : 0;
}

int mdl_xfer_write(const mdl_xfer_t *x, FILE *f, const char *comment, unsigned links)
{
	if (comment) {
		const char *p = comment;
		while (*p) {
			const char *nl = strchr(p, '\n');
			int n = nl ? (int)(nl - p) : (int)strlen(p);
			fprintf(f, "# %.*s\n", n, p);
			p += n + (nl != NULL);
		}
	}
	fprintf(f, "[meta]\ndevice = %s\n", x->device);
	for (int k = 0; k < MDL_LINK_N; k++) {
		const mdl_xfer_link_t *l = &x->link[k];
		if (links && !(links & (1u << k)))
			continue;
		fprintf(f, "\n[link.%s]\nedges = ", link_names[k]);
		for (int i = 0; i + 1 < l->n_pieces; i++)
			fprintf(f, "%s%llu", i ? ", " : "",
			        (unsigned long long)l->piece[i].max_bytes);
		fprintf(f, "\nalpha_ns = ");
		for (int i = 0; i < l->n_pieces; i++)
			fprintf(f, "%s%.6g", i ? ", " : "", l->piece[i].alpha_ns);
		fprintf(f, "\nbw_gbps = ");
		for (int i = 0; i < l->n_pieces; i++)
			fprintf(f, "%s%.6g", i ? ", " : "", l->piece[i].bw_gbps);
		fprintf(f, "\noverhead_ns = %.6g\nbatch_overhead_ns = %.6g\n", l->overhead_ns,
		        l->batch_overhead_ns);
		fprintf(f, "share_same = %.6g\nshare_opp = %.6g\n", l->share_same, l->share_opp);
	}
	if (isfinite(x->mfu) || isfinite(x->mbu)) {
		fprintf(f, "\n[compute]\n");
		if (isfinite(x->mfu))
			fprintf(f, "mfu = %.6g\n", x->mfu);
		if (isfinite(x->mbu))
			fprintf(f, "mbu = %.6g\n", x->mbu);
	}
	return ferror(f) ? KS_EIO : 0;
}

/* ---- evaluation ------------------------------------------------------------ */

const mdl_xfer_piece_t *mdl_xfer_piece(const mdl_xfer_t *x, int kind, uint64_t bytes)
{
	if (kind < 0 || kind >= MDL_LINK_N)
		kind = MDL_LINK_NET;
	const mdl_xfer_link_t *l = &x->link[kind];
	int i = 0;
	while (i + 1 < l->n_pieces && bytes > l->piece[i].max_bytes)
		i++;
	return &l->piece[i];
}

double mdl_xfer_latency_ns(const mdl_xfer_t *x, int kind, uint64_t bytes)
{
	return mdl_xfer_piece(x, kind, bytes)->alpha_ns;
}

double mdl_xfer_bw(const mdl_xfer_t *x, int kind, uint64_t bytes)
{
	return mdl_xfer_piece(x, kind, bytes)->bw_gbps;
}

int64_t mdl_xfer_time_ns(const mdl_xfer_t *x, int kind, uint64_t bytes)
{
	return llround(mdl_xfer_predict_ns(x, kind, MDL_SHAPE_CONTIG, bytes, 1, 1, 0));
}

int64_t mdl_xfer_copy_overhead_ns(const mdl_xfer_t *x, int kind, int shape, uint32_t nblocks,
                                  uint64_t block_bytes)
{
	(void)block_bytes; /* the overhead is per call, whatever the block size */
	if (kind < 0 || kind >= MDL_LINK_N || shape == MDL_SHAPE_CONTIG)
		return 0;
	const mdl_xfer_link_t *l = &x->link[kind];
	double o = shape == MDL_SHAPE_BATCH ? l->batch_overhead_ns : l->overhead_ns;
	return llround(o * nblocks);
}

double mdl_xfer_predict_ns(const mdl_xfer_t *x, int kind, int shape, uint64_t bytes,
                           uint32_t nblocks, int m_same, int m_opp)
{
	if (kind < 0 || kind >= MDL_LINK_N)
		kind = MDL_LINK_NET;
	const mdl_xfer_link_t *l = &x->link[kind];
	if (nblocks < 1)
		nblocks = 1;
	if (m_same < 1)
		m_same = 1;
	if (m_opp < 0)
		m_opp = 0;
	/* Each block is its own copy in the granular shapes, so its size picks the piece. */
	uint64_t copy_bytes = shape == MDL_SHAPE_CONTIG ? bytes : bytes / nblocks;
	const mdl_xfer_piece_t *p = mdl_xfer_piece(x, kind, copy_bytes);
	double over = 0;
	if (shape == MDL_SHAPE_GRANULAR)
		over = l->overhead_ns * nblocks;
	else if (shape == MDL_SHAPE_BATCH)
		over = l->batch_overhead_ns * nblocks;
	double stretch = 1 + l->share_same * (m_same - 1) + l->share_opp * m_opp;
	return p->alpha_ns + over + (double)bytes / p->bw_gbps * stretch;
}
