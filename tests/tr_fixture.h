/* Helpers shared by the trace tests: fixtures written to a fresh temporary
 * directory, and reader options on them (a whole trace is read with
 * tr_validate). Header-only (static functions). */
#ifndef KVSIM_TR_FIXTURE_H
#define KVSIM_TR_FIXTURE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traces/tr.h"

static char tf_dir[64];
static int tf_seq;
static char tf_paths[512][96];

static void tf_cleanup(void)
{
	char cmd[128];
	if (tf_dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tf_dir);
		if (system(cmd)) {
		}
	}
}

/* Writes text to a new file in the test's temporary directory; returns its
 * path (static; lives until exit). */
__attribute__((unused)) static const char *tf_write(const char *ext, const char *text)
{
	if (!tf_dir[0]) {
		snprintf(tf_dir, sizeof tf_dir, "/tmp/kvsim-trtest-XXXXXX");
		if (!mkdtemp(tf_dir)) {
			perror("mkdtemp");
			exit(1);
		}
		atexit(tf_cleanup);
	}
	if (tf_seq >= 512) {
		fprintf(stderr, "tf_write: too many fixtures\n");
		exit(1);
	}
	char *p = tf_paths[tf_seq];
	snprintf(p, sizeof tf_paths[0], "%s/f%d.%s", tf_dir, tf_seq, ext);
	tf_seq++;
	FILE *f = fopen(p, "wb");
	if (!f) {
		perror(p);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	return p;
}

/* One Mooncake trace row: arrival (ms), prompt and output tokens, and the
 * block ids as the JSON array's inside ("1, 2"). */
typedef struct tf_mc_row {
	int64_t t_ms;
	uint32_t in, out;
	const char *ids;
} tf_mc_row_t;

/* Writes n rows as a Mooncake JSONL fixture; returns its path (as
 * tf_write). */
__attribute__((unused)) static const char *tf_mooncake(const tf_mc_row_t *rows, size_t n)
{
	char text[8192];
	size_t len = 0;
	for (size_t i = 0; i < n && len < sizeof text; i++)
		len +=
		    (size_t)snprintf(text + len, sizeof text - len,
		                     "{\"timestamp\": %lld, \"input_length\": %u, "
		                     "\"output_length\": %u, \"hash_ids\": [%s]}\n",
		                     (long long)rows[i].t_ms, rows[i].in, rows[i].out, rows[i].ids);
	if (len >= sizeof text) {
		fprintf(stderr, "tf_mooncake: fixture too long\n");
		exit(1);
	}
	return tf_write("jsonl", text);
}

/* Default reader options for a trace written from text to a new fixture
 * file ending in ext. */
__attribute__((unused)) static tr_opts_t tf_opts(const char *ext, const char *text)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = tf_write(ext, text);
	return o;
}

#endif
