/* tr_native — writer of the native trace format (see tr.h). Writes through
 * file_out (sim/base/file.h): "PATH.tmp" renamed on close, so a failed
 * conversion leaves no file that looks complete; a FIFO or a device is
 * written in place. PATH "-" writes to standard output. Errors name PATH,
 * the name the user gave (the temporary file is ours), with the errno text;
 * a PATH that cannot be written (a directory, a missing folder, no
 * permission) is KS_EINPUT. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/base/file.h"
#include "traces/tr_int.h"

struct tr_writer {
	FILE *f;
	file_out_t *fo; /* NULL for standard output */
	uint32_t block_tokens;
	int64_t last;
	uint64_t rows;
};

int tr_writer_open(const char *path, uint32_t block_tokens, tr_writer_t **out, err_t *e)
{
	*out = NULL;
	if (!block_tokens)
		return err_set(e, KS_EINPUT, "native writer: block_tokens must be > 0");
	tr_writer_t *w = calloc(1, sizeof *w);
	if (!w)
		return err_set(e, KS_ENOMEM, "out of memory");
	w->block_tokens = block_tokens;
	if (!strcmp(path, "-")) {
		w->f = stdout;
	} else {
		int rc;
		if (!(w->fo = malloc(sizeof *w->fo))) {
			free(w);
			return err_set(e, KS_ENOMEM, "out of memory");
		}
		if ((rc = file_out_begin(w->fo, path, FILE_OUT_STREAM, e))) {
			free(w->fo);
			free(w);
			return rc;
		}
		w->f = fopen(w->fo->tmp, "w");
		if (!w->f) {
			rc = err_set(e, err_path_code(errno), "%s: cannot create: %s", path,
			             strerror(errno));
			tr_writer_abort(w);
			return rc;
		}
	}
	fprintf(w->f,
	        "#kvsim-trace 1 block_tokens=%u ids=prefix\n"
	        "#arrival_ns\tinput_len\toutput_len\tstatus\tsession_id\tblocks\n",
	        block_tokens);
	*out = w;
	return 0;
}

int tr_writer_put(tr_writer_t *w, const tr_request_t *r, err_t *e)
{
	if (r->block_tokens != w->block_tokens || r->n_blocks != r->input_len / w->block_tokens)
		return err_set(e, KS_ERUNTIME,
		               "native writer: request %" PRIu64
		               " has %u blocks of %u tokens (file uses %u)",
		               r->id, r->n_blocks, r->block_tokens, w->block_tokens);
	if (w->rows && r->arrival_ns < w->last)
		return err_set(e, KS_ERUNTIME,
		               "native writer: request %" PRIu64 " goes back in time", r->id);
	w->last = r->arrival_ns;
	w->rows++;
	fprintf(w->f, "%" PRId64 "\t%u\t%u\t%d\t%" PRIu64 "\t", r->arrival_ns, r->input_len,
	        r->output_len, r->status ? 1 : 0, r->session_id);
	if (r->n_blocks == 0)
		fputc('-', w->f);
	for (uint32_t i = 0; i < r->n_blocks; i++)
		fprintf(w->f, i ? ",%016" PRIx64 : "%016" PRIx64, r->blocks[i]);
	if (fputc('\n', w->f) == EOF || ferror(w->f))
		return err_set(e, KS_EIO, "%s: write error: %s", w->fo ? w->fo->path : "stdout",
		               strerror(errno));
	return 0;
}

int tr_writer_close(tr_writer_t *w, err_t *e)
{
	int rc = 0;
	if (w->f == stdout) {
		if (fflush(stdout))
			rc = err_set(e, KS_EIO, "stdout: write error: %s", strerror(errno));
		w->f = NULL;
	} else {
		/* keep the first errno: a full disk must say so */
		int en = 0;
		errno = 0;
		if (fflush(w->f) || ferror(w->f))
			en = errno ? errno : EIO;
		if (fclose(w->f) && !en)
			en = errno ? errno : EIO;
		w->f = NULL;
		if (en)
			rc = err_set(e, KS_EIO, "%s: write error: %s", w->fo->path, strerror(en));
		else
			rc = file_out_commit(w->fo, 0, e);
	}
	if (rc)
		tr_writer_abort(w);
	else {
		free(w->fo);
		free(w);
	}
	return rc;
}

void tr_writer_abort(tr_writer_t *w)
{
	if (!w)
		return;
	if (w->f && w->f != stdout)
		fclose(w->f);
	if (w->fo)
		file_out_abort(w->fo);
	free(w->fo);
	free(w);
}
