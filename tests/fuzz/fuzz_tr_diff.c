/* Differential libFuzzer target for the trace readers: the same text read
 * three ways must give the same requests, or the same error:
 *   - as a plain file, format detected (zlib passes it through unchanged);
 *   - gzip-compressed, format detected (zlib inflates it: another path
 *     through the line reader, which must split the same lines);
 *   - as a plain file, with the detected kind given explicitly (detection
 *     and the readers it picks must agree).
 * "Same" means the same status, the same message (both files have one name
 * while read), and the same hash of every field of every request (tests/fuzz/fuzz_tr.h), at the
 * trace's block size and at a remapped one. An input that itself starts with
 * the gzip magic is skipped: it is a different file once compressed. */
#include <zlib.h>

#include "tests/fuzz/fuzz_tr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct outcome {
	int rc;
	uint64_t h;
	char msg[sizeof(((err_t *)0)->msg)];
} outcome_t;

/* gzip (RFC 1952) of data into a new memfd, or -1. */
static int gzip_file(const uint8_t *data, size_t size, char path[64])
{
	z_stream z = {0};
	/* windowBits 15 + 16: a gzip wrapper instead of zlib's (zlib.h) */
	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	uLong cap = deflateBound(&z, (uLong)size);
	uint8_t *out = malloc(cap);
	if (!out) {
		deflateEnd(&z);
		return -1;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)size;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	int ok = deflate(&z, Z_FINISH) == Z_STREAM_END;
	size_t n = z.total_out;
	deflateEnd(&z);
	int fd = ok ? fuzz_file(out, n, path) : -1;
	free(out);
	return fd;
}

/* Both files are read under one name, /proc/self/fd/SHOWN_FD, so their
 * messages can be compared as they are (an input may quote a path). */
#define SHOWN_FD 999

static void read_as(tr_kind_t kind, int fd, int k, uint32_t S, outcome_t *o)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", SHOWN_FD);
	if (dup2(fd, SHOWN_FD) != SHOWN_FD)
		abort();
	tr_opts_t opts;
	fuzz_tr_opts(kind, path, k, &opts);
	err_t e = {0};
	o->h = 0;
	o->rc = fuzz_tr_read(&opts, S, &o->h, &e);
	if (o->rc && o->rc != KS_EINPUT)
		abort();
	snprintf(o->msg, sizeof o->msg, "%s", o->rc ? e.msg : "");
	close(SHOWN_FD);
}

static void same(const outcome_t *a, const outcome_t *b)
{
	if (a->rc != b->rc || a->h != b->h || strcmp(a->msg, b->msg))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b)
		return 0;
	char plain[64], packed[64];
	int fp = fuzz_file(data, size, plain);
	int fg = fp < 0 ? -1 : gzip_file(data, size, packed);
	if (fg < 0) {
		if (fp >= 0)
			close(fp);
		return 0;
	}
	tr_kind_t kind;
	err_t e;
	static const uint32_t sizes[] = {512, 7};
	for (int k = 0; k < 2; k++) {
		outcome_t a, b, c;
		read_as(TR_KIND_AUTO, fp, k, sizes[k], &a);
		read_as(TR_KIND_AUTO, fg, k, sizes[k], &b);
		same(&a, &b);
		/* under the pass's line cap: a header line past it stops detection,
		 * where a named kind fails at its own first line */
		tr_opts_t po;
		fuzz_tr_opts(TR_KIND_AUTO, plain, k, &po);
		if (!tr_detect_max(plain, po.max_line_bytes, &kind, &e)) {
			read_as(kind, fp, k, sizes[k], &c);
			same(&a, &c);
		}
	}
	close(fp);
	close(fg);
	return 0;
}
