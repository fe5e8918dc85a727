/* res_rows — streamed result tables (results.h: sim_results_stream). */
#include "sim/base/results.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

/* Table t's array: the address of its pointer, its count and capacity. */
typedef struct tab {
	void *pp;
	size_t *n, *cap, size;
} tab_t;

static tab_t tab_of(sim_results_t *r, int t)
{
	switch (t) {
	case RES_T_REQ: return (tab_t){&r->req, &r->n_req, &r->cap_req, sizeof *r->req};
	case RES_T_XFER: return (tab_t){&r->xfer, &r->n_xfer, &r->cap_xfer, sizeof *r->xfer};
	case RES_T_TL: return (tab_t){&r->tl, &r->n_tl, &r->cap_tl, sizeof *r->tl};
	default: return (tab_t){NULL, NULL, NULL, 0};
	}
}

size_t sim_results_row_size(int table)
{
	sim_results_t r;
	return tab_of(&r, table).size;
}

void sim_results_stream(sim_results_t *r, size_t rows)
{
	r->stream_rows = rows;
}

/* A new unlinked file in $TMPDIR: its descriptor, or -1 (errno set). */
static int spill_open(void)
{
	const char *dir = getenv("TMPDIR");
	char path[1024];
	snprintf(path, sizeof path, "%s/kvsim-rows.XXXXXX", dir && dir[0] ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* Writes table t's rows in memory to its spill file and empties the array. */
static int spill(sim_results_t *r, int t, tab_t a)
{
	if (!r->spill_fd_[t]) {
		int fd = spill_open();
		if (fd < 0)
			return KS_EIO;
		r->spill_fd_[t] = fd + 1;
	}
	const char *p;
	memcpy(&p, a.pp, sizeof p);
	size_t left = *a.n * a.size;
	while (left) {
		ssize_t w = write(r->spill_fd_[t] - 1, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return KS_EIO;
		p += w;
		left -= (size_t)w;
	}
	r->spilled[t] += *a.n;
	*a.n = 0;
	return 0;
}

int sim_results_append(sim_results_t *r, int table, const void *row)
{
	tab_t a = tab_of(r, table);
	if (!a.size)
		return KS_EINPUT;
	int rc;
	if (r->stream_rows && *a.n >= r->stream_rows && (rc = spill(r, table, a)))
		return rc;
	size_t first = r->stream_rows && r->stream_rows < 1024 ? r->stream_rows : 1024;
	if (vec_grow_z_(a.pp, a.cap, *a.n + 1, a.size, first))
		return KS_ENOMEM;
	char *p;
	memcpy(&p, a.pp, sizeof p);
	memcpy(p + *a.n * a.size, row, a.size);
	++*a.n;
	return 0;
}

size_t sim_results_count(const sim_results_t *r, int table)
{
	tab_t a = tab_of((sim_results_t *)r, table);
	return a.size ? r->spilled[table] + *a.n : 0;
}

/* The spilled rows of table t, block by block (pread: the file's offset,
 * where appends go, is left alone). */
static int rows_spilled(const sim_results_t *r, int t, size_t size, res_rows_fn fn, void *ctx)
{
	size_t block = r->stream_rows ? r->stream_rows : 4096;
	char *buf = malloc(block * size);
	if (!buf)
		return KS_ENOMEM;
	int rc = 0, fd = r->spill_fd_[t] - 1;
	for (size_t at = 0; at < r->spilled[t] && !rc;) {
		size_t n = r->spilled[t] - at < block ? r->spilled[t] - at : block, got = 0;
		while (got < n * size) {
			ssize_t k = pread(fd, buf + got, n * size - got, (off_t)(at * size + got));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		rc = got == n * size ? fn(ctx, buf, n) : KS_EIO;
		at += n;
	}
	free(buf);
	return rc;
}

int sim_results_rows(const sim_results_t *r, int table, res_rows_fn fn, void *ctx)
{
	tab_t a = tab_of((sim_results_t *)r, table);
	if (!a.size)
		return KS_EINPUT;
	int rc = r->spilled[table] ? rows_spilled(r, table, a.size, fn, ctx) : 0;
	const void *p;
	memcpy(&p, a.pp, sizeof p);
	return rc || !*a.n ? rc : fn(ctx, p, *a.n);
}
