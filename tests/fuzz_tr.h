/* Shared body of the trace-reader fuzz targets: the input becomes a file
 * (memfd, read back through /proc/self/fd) that a reader of one kind reads
 * to the end, at the trace's block size and at an awkward one (remapping).
 * Errors are expected; crashes, leaks and sanitizer reports are bugs. */
#ifndef KVSIM_FUZZ_TR_H
#define KVSIM_FUZZ_TR_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "traces/tr.h"

static void fuzz_read(tr_kind_t kind, const uint8_t *data, size_t size)
{
	int fd = memfd_create("kvsim-fuzz", 0);
	if (fd < 0)
		return;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	static const uint32_t sizes[] = {512, 7};
	for (int k = 0; k < 2; k++) {
		tr_opts_t o;
		tr_opts_default(&o);
		o.kind = kind;
		o.path = path;
		/* generated kinds (servegen) could go on for days, and huge lengths
		 * at a 7-token block only slow the search down */
		o.limit = 1000;
		o.max_tokens = 1u << 16;
		o.in.mean = 100;
		o.out.mean = 10;
		o.prefix_shared_prob = 0.5;
		o.session_mode = k ? TR_SESS_SYNTH : TR_SESS_TRACE;
		o.check_blocks = !k;
		tr_reader_t *r;
		err_t e;
		if (tr_open(&o, sizes[k], 1, &r, &e))
			continue;
		tr_stats_t s;
		tr_stats_compute(r, 1, &s, &e);
		tr_close(r);
	}
	close(fd);
}

#endif
