/* mdl_xfer — the transfer cost model: how long one KV copy takes on a link.
 *
 * Per link kind (MDL_LINK_*, equal to sim/base/results.h PATH_* for the first four)
 * the model holds a Hockney latency/bandwidth pair per message-size piece,
 *     t(n) = alpha_p + n / beta_p          (Hockney 1994, "The communication
 *                                            challenge for MPP", Parallel Comput.)
 * where piece p is chosen by the size of one copy; a per-copy overhead for
 * block-granular transfers (one copy call per block; a separate, usually
 * smaller, overhead when the blocks go in one batched call); and sharing
 * factors that stretch the bandwidth term when copies run concurrently:
 *     t = alpha_p + ncopies*o + (n/beta_p) * (1 + s_same*(m_same-1) + s_opp*m_opp)
 * with m_same copies (itself included) on the same link and direction and
 * m_opp on the reverse direction. s_same = 1 is a fair share of one link,
 * s_opp = 0 a full-duplex link. Parameters come from a calibration INI file
 * written by `kvsim calibrate fit` (format: models/calibration/README.md) or
 * from mdl_xfer_default(). Units: bytes, nanoseconds, bandwidth in GB/s
 * (1e9 bytes/s, which is bytes per ns). The struct is plain data, no heap:
 * copy it freely. Loaders return 0 or KS_EINPUT/KS_EIO with "file:line:" in e.
 */
#ifndef KVSIM_MDL_XFER_H
#define KVSIM_MDL_XFER_H

#include <stdint.h>
#include <stdio.h>

#include "sim/base/err.h"

enum {
	MDL_LINK_NVLINK = 0,   /* GPU-GPU over NVLink/NVSwitch (PATH_NVLINK) */
	MDL_LINK_PCIE_H2D = 1, /* host memory -> GPU (PATH_PCIE_H2D) */
	MDL_LINK_PCIE_D2H = 2, /* GPU -> host memory (PATH_PCIE_D2H) */
	MDL_LINK_NET = 3,      /* between nodes over the NICs (PATH_NET) */
	MDL_LINK_LOCAL = 4,    /* copy inside one GPU's memory */
	MDL_LINK_N = 5
};
enum { MDL_SHAPE_CONTIG = 0, MDL_SHAPE_GRANULAR = 1, MDL_SHAPE_BATCH = 2 };
#define MDL_XFER_MAX_PIECES 8

typedef struct mdl_xfer_piece {
	uint64_t max_bytes; /* copies of up to this size (last piece: UINT64_MAX) */
	double alpha_ns;    /* latency of one copy */
	double bw_gbps;     /* bandwidth, GB/s == bytes/ns */
} mdl_xfer_piece_t;

typedef struct mdl_xfer_link {
	int n_pieces;
	mdl_xfer_piece_t piece[MDL_XFER_MAX_PIECES];
	double overhead_ns;       /* per copy call of a block-granular transfer */
	double batch_overhead_ns; /* per block when the blocks go in one batch call */
	double share_same, share_opp;
} mdl_xfer_link_t;

typedef struct mdl_xfer {
	mdl_xfer_link_t link[MDL_LINK_N];
	double mfu, mbu;  /* compute efficiency factors; NAN when unknown */
	char device[128]; /* what the parameters describe */
	char source[256]; /* file or "defaults" */
} mdl_xfer_t;

/* Fills x with round datasheet figures for an H100/H200-class node (see the
 * comments in mdl_xfer.c for the sources); used when no calibration exists. */
void mdl_xfer_default(mdl_xfer_t *x);
struct mdl_hw;
/* Seeds one-piece links from a hardware spec (models/mdl.h): NVLink, PCIe
 * (both directions) and NIC bandwidth and latency; local copies at half the
 * HBM bandwidth (a copy reads and writes). Overheads and sharing keep their
 * values. hw may be NULL (no change). */
void mdl_xfer_from_hw(mdl_xfer_t *x, const struct mdl_hw *hw);
/* What a simulation should call: defaults (from hw when non-NULL), then the
 * calibration file at path when path is non-NULL and non-empty. */
int mdl_xfer_init(mdl_xfer_t *x, const struct mdl_hw *hw, const char *path, err_t *e);
/* Loads a calibration file over the current contents of x (keys it lacks
 * keep their values). */
int mdl_xfer_load(mdl_xfer_t *x, const char *path, err_t *e);
int mdl_xfer_load_string(mdl_xfer_t *x, const char *origin, const char *text, err_t *e);
/* Writes x as a calibration file that mdl_xfer_load reads back: the links
 * whose bit (1 << MDL_LINK_*) is set in links (0: all), then [compute] when
 * known. comment (may be NULL) becomes '#' lines at the top. 0 or KS_EIO. */
int mdl_xfer_write(const mdl_xfer_t *x, FILE *f, const char *comment, unsigned links);

/* "nvlink", "pcie_h2d", ... and back (-1 when unknown). */
const char *mdl_xfer_link_name(int kind);
int mdl_xfer_link_parse(const char *name);

/* Piece that a copy of `bytes` falls in. */
const mdl_xfer_piece_t *mdl_xfer_piece(const mdl_xfer_t *x, int kind, uint64_t bytes);
/* Latency (alpha) of one copy of `bytes`. */
double mdl_xfer_latency_ns(const mdl_xfer_t *x, int kind, uint64_t bytes);
/* Bandwidth a lone copy of `bytes` reaches, bytes/ns. */
double mdl_xfer_bw(const mdl_xfer_t *x, int kind, uint64_t bytes);
/* Uncontended contiguous copy: alpha + n/beta, rounded to ns. */
int64_t mdl_xfer_time_ns(const mdl_xfer_t *x, int kind, uint64_t bytes);
/* Extra time a transfer of nblocks blocks pays for its shape: 0 when
 * contiguous, nblocks*overhead (granular) or nblocks*batch_overhead (batch). */
int64_t mdl_xfer_copy_overhead_ns(const mdl_xfer_t *x, int kind, int shape, uint32_t nblocks,
                                  uint64_t block_bytes);
/* Full prediction for one transfer of `bytes` in `nblocks` blocks with the
 * given shape, m_same >= 1 concurrent copies on its link and direction and
 * m_opp on the reverse; the formula in the header comment. */
double mdl_xfer_predict_ns(const mdl_xfer_t *x, int kind, int shape, uint64_t bytes,
                           uint32_t nblocks, int m_same, int m_opp);

#endif
