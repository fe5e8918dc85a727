/* Shared body of the trace-reader fuzz targets: the input becomes a file
 * (memfd, read back through /proc/self/fd) that a reader of one kind reads
 * to the end, at the trace's block size and at an awkward one (remapping).
 * Errors are expected; crashes, leaks, sanitizer reports and requests that
 * break tr.h's contract (ids in order, arrivals that never go back, lengths
 * within max_tokens, n_blocks = input_len / block_tokens) are bugs.
 *
 * Speed: the rows are read with tr_next, not tr_stats_compute (whose
 * histograms and id map cost megabytes of zeroed memory per input, a third
 * of the time under ASan), and the options' defaults are built once. */
#ifndef KVSIM_FUZZ_TR_H
#define KVSIM_FUZZ_TR_H

#include "tests/fuzz/fuzz_util.h"
#include "traces/tr.h"

/* Pass 1's [trace] max_line_bytes; own choice: between a short CSV row and
 * a JSONL row of a few ids. */
#define FUZZ_MAX_LINE 160

/* Options for pass k (0: the trace's own sessions, ids checked; 1: synthetic
 * sessions, ids unchecked) of the fuzz targets. */
static void fuzz_tr_opts(tr_kind_t kind, const char *path, int k, tr_opts_t *o)
{
	static tr_opts_t def;
	static int have;
	if (!have) {
		tr_opts_default(&def);
		have = 1;
	}
	*o = def;
	o->kind = kind;
	o->path = path;
	/* generated kinds (servegen) could go on for days, and huge lengths
	 * at a 7-token block only slow the search down */
	o->limit = 1000;
	o->max_tokens = 1u << 16;
	o->in.mean = 100;
	o->out.mean = 10;
	o->prefix_shared_prob = 0.5;
	o->session_mode = k ? TR_SESS_SYNTH : TR_SESS_TRACE;
	o->check_blocks = !k;
	/* pass 1 caps lines where the inputs' rows are (plain or gzip) */
	o->max_line_bytes = k ? FUZZ_MAX_LINE : def.max_line_bytes;
}

/* An error naming [trace] max_line_bytes must be right about its line: in
 * a plain input (gzip ones are checked against their plain text by
 * fuzz_tr_diff), line N of "PATH:N: [trace] max_line_bytes" is longer than
 * the cap. */
__attribute__((unused)) static void fuzz_check_line_cap(const uint8_t *data, size_t size,
                                                        const char *path, const err_t *e)
{
	static const char tag[] = ": [trace] max_line_bytes: ";
	size_t pl = strlen(path);
	if ((size >= 2 && data[0] == 0x1f && data[1] == 0x8b) || strncmp(e->msg, path, pl) ||
	    e->msg[pl] != ':')
		return;
	char *end;
	unsigned long long want = strtoull(e->msg + pl + 1, &end, 10), line = 1;
	if (strncmp(end, tag, sizeof tag - 1))
		return; /* another error */
	size_t start = 0;
	for (size_t i = 0; i < size && line < want; i++)
		if (data[i] == '\n')
			line++, start = i + 1;
	const uint8_t *nl = memchr(data + start, '\n', size - start);
	size_t len = (nl ? (size_t)(nl - data) : size) - start;
	if (line != want || len <= FUZZ_MAX_LINE)
		abort();
}

/* Reads the trace of o at block size S to its end, checking every request
 * against tr.h; returns tr_open's or tr_next's final status (0: clean end)
 * with the message in e, and folds every field of every request into *h. */
static int fuzz_tr_read(const tr_opts_t *o, uint32_t S, uint64_t *h, err_t *e)
{
	tr_reader_t *r;
	int rc = tr_open(o, S, 1, &r, e);
	if (rc)
		return rc;
	tr_request_t q;
	uint64_t n = 0;
	int64_t prev = 0;
	while ((rc = tr_next(r, &q, e)) > 0) {
		if (q.id != n || q.arrival_ns < prev || q.block_tokens != S ||
		    q.n_blocks != q.input_len / S || q.input_len > o->max_tokens ||
		    q.output_len > o->max_tokens || (q.status != 0 && q.status != 1) ||
		    (q.n_blocks && !q.blocks) || (o->limit && n >= o->limit))
			abort();
		prev = q.arrival_ns;
		n++;
		*h = tr_mix(*h, (uint64_t)q.arrival_ns);
		*h = tr_mix(*h, (uint64_t)q.input_len << 32 | q.output_len);
		*h = tr_mix(*h, (uint64_t)q.status << 32 ^ q.session_id);
		for (uint32_t i = 0; i < q.n_blocks; i++)
			*h = tr_mix(*h, q.blocks[i]);
	}
	tr_close(r);
	return rc;
}

__attribute__((unused)) static void fuzz_read(tr_kind_t kind, const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path);
	if (fd < 0)
		return;
	static const uint32_t sizes[] = {512, 7};
	for (int k = 0; k < 2; k++) {
		tr_opts_t o;
		fuzz_tr_opts(kind, path, k, &o);
		err_t e;
		uint64_t h = 0;
		int rc = fuzz_tr_read(&o, sizes[k], &h, &e);
		if (rc && rc != KS_EINPUT) /* input is small: no KS_ENOMEM, no KS_EIO */
			abort();
		if (rc)
			fuzz_check_line_cap(data, size, path, &e);
	}
	close(fd);
}

#endif
