/* mdl_xfer — transfer cost model and its calibration file (see mdl_xfer.h). */
#include "models/mdl_xfer.h"

#include "models/mdl.h"
#include "sim/base/file.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
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

typedef struct load_ctx {
	mdl_xfer_t *x;
	const char *origin;
	err_t *e;
	int failed;
	char msg[512];
	/* per link: the lists seen, checked for equal lengths after parsing */
	int n_edges[MDL_LINK_N], n_alpha[MDL_LINK_N], n_bw[MDL_LINK_N];
	uint64_t edges[MDL_LINK_N][MDL_XFER_MAX_PIECES];
	double alpha[MDL_LINK_N][MDL_XFER_MAX_PIECES], bw[MDL_LINK_N][MDL_XFER_MAX_PIECES];
} load_ctx_t;

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

/* Comma-separated numbers; returns the count or -1. */
static int parse_list(const char *s, double *out, int max)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", s);
	int n = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (n == max || parse_double(tok, &out[n]))
			return -1;
		n++;
	}
	return n;
}

/* inih reports the line of the first key a handler rejected; the handler
 * keeps the reason and finish composes "origin:line: reason". */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
	load_ctx_t *c = user;
	if (c->failed)
		return 0;
	double v, list[MDL_XFER_MAX_PIECES];
	if (!strcmp(section, "meta")) {
		if (!strcmp(name, "device"))
			snprintf(c->x->device, sizeof c->x->device, "%s", value);
		return 1; /* other meta keys are informational */
	}
	if (!strcmp(section, "compute")) {
		if (strcmp(name, "mfu") && strcmp(name, "mbu"))
			return 1; /* peaks and per-shape detail are informational */
		if (parse_double(value, &v) || v <= 0 || v > 1)
			goto bad;
		*(strcmp(name, "mfu") ? &c->x->mbu : &c->x->mfu) = v;
		return 1;
	}
	if (strncmp(section, "link.", 5)) {
		snprintf(c->msg, sizeof c->msg, "[%s]: unknown section", section);
		c->failed = 1;
		return 0;
	}
	int k = mdl_xfer_link_parse(section + 5);
	if (k < 0) {
		snprintf(c->msg, sizeof c->msg,
		         "[%s]: unknown link kind (nvlink, pcie_h2d, pcie_d2h, net, local)",
		         section);
		c->failed = 1;
		return 0;
	}
	mdl_xfer_link_t *l = &c->x->link[k];
	if (!strcmp(name, "edges")) {
		int n = *value ? parse_list(value, list, MDL_XFER_MAX_PIECES - 1) : 0;
		if (n < 0)
			goto bad;
		for (int i = 0; i < n; i++) {
			if (list[i] < 1 || (i && list[i] <= list[i - 1]))
				goto bad;
			c->edges[k][i] = (uint64_t)list[i];
		}
		c->n_edges[k] = n;
	} else if (!strcmp(name, "alpha_ns") || !strcmp(name, "bw_gbps")) {
		int isbw = name[0] == 'b';
		int n = parse_list(value, list, MDL_XFER_MAX_PIECES);
		if (n <= 0)
			goto bad;
		for (int i = 0; i < n; i++) {
			if (isbw && list[i] <= 0)
				goto bad;
			(isbw ? c->bw[k] : c->alpha[k])[i] = list[i];
		}
		*(isbw ? &c->n_bw[k] : &c->n_alpha[k]) = n;
	} else {
		double *dst = !strcmp(name, "overhead_ns")         ? &l->overhead_ns
		              : !strcmp(name, "batch_overhead_ns") ? &l->batch_overhead_ns
		              : !strcmp(name, "share_same")        ? &l->share_same
		              : !strcmp(name, "share_opp")         ? &l->share_opp
		                                                   : NULL;
		if (!dst) {
			snprintf(c->msg, sizeof c->msg, "[%s] %s: unknown key", section, name);
			c->failed = 1;
			return 0;
		}
		if (parse_double(value, &v))
			goto bad;
		*dst = v;
	}
	return 1;
bad:
	snprintf(c->msg, sizeof c->msg, "[%s] %s: bad value '%.200s'", section, name, value);
	c->failed = 1;
	return 0;
}

static int finish_load(load_ctx_t *c)
{
	for (int k = 0; k < MDL_LINK_N; k++) {
		if (!c->n_alpha[k] && !c->n_bw[k] && !c->n_edges[k])
			continue;
		int n = c->n_edges[k] + 1;
		if (c->n_alpha[k] != n || c->n_bw[k] != n)
			return err_set(c->e, KS_EINPUT,
			               "%s: [link.%s]: edges has %d entries, so alpha_ns and "
			               "bw_gbps need %d each (have %d and %d)",
			               c->origin, link_names[k], n - 1, n, c->n_alpha[k],
			               c->n_bw[k]);
		mdl_xfer_link_t *l = &c->x->link[k];
		l->n_pieces = n;
		for (int i = 0; i < n; i++)
			l->piece[i] = (mdl_xfer_piece_t){i < n - 1 ? c->edges[k][i] : UINT64_MAX,
			                                 c->alpha[k][i], c->bw[k][i]};
	}
	return 0;
}

int mdl_xfer_load_string(mdl_xfer_t *x, const char *origin, const char *text, err_t *e)
{
	load_ctx_t *c = calloc(1, sizeof *c);
	if (!c)
		return err_set(e, KS_ENOMEM, "out of memory");
	mdl_xfer_t tmp = *x; /* never half-load */
	c->x = &tmp;
	c->origin = origin;
	c->e = e;
	int rc = ini_parse_string(text, on_key, c);
	if (c->failed)
		rc = err_set(e, KS_EINPUT, "%s:%d: %s", origin, rc, c->msg);
	else if (rc > 0)
		rc = err_set(e, KS_EINPUT, "%s:%d: syntax error", origin, rc);
	else if (rc < 0)
		rc = err_set(e, KS_ENOMEM, "%s: out of memory while parsing", origin);
	else
		rc = finish_load(c);
	free(c);
	if (!rc) {
		snprintf(tmp.source, sizeof tmp.source, "%s", origin);
		*x = tmp;
	}
	return rc;
}

static int xfer_parse(void *x, const char *origin, const char *text, err_t *e)
{
	return mdl_xfer_load_string(x, origin, text, e);
}

int mdl_xfer_load(mdl_xfer_t *x, const char *path, err_t *e)
{
	return file_parse(path, xfer_parse, x, e);
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
