/* Differential libFuzzer target for sim/base/cfg_load.c's two INI tokenisers: inih
 * splits lines that fit its buffer, cfg_load.c's long_line splits longer ones
 * "the way inih splits". The input's first line is a section header, its
 * second a line L; L as it is (inih) and L followed by a comment long
 * enough to pass inih's buffer (long_line) must load to the same config,
 * or both fail on line 2 the same way (an error of the same kind: a
 * malformed line is worded differently by the two paths).
 *
 * Left out: an L that is itself a section header, which the long path
 * refuses by design (inih, handed an empty line instead, could not switch
 * to the new section), and an L of 150 characters or more. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/cfg.h"
#include "tests/fuzz/fuzz_util.h"
#include "sim/run/sim_schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads text into a fresh config: 0 and its text in *out, or the error. */
static int load(const cfg_schema_t *s, const char *text, char **out, err_t *e)
{
	cfg_t *c = cfg_new(s);
	if (!c)
		abort();
	int rc = cfg_load_string(c, "t", text, e);
	if (!rc)
		rc = cfg_finalize(c, e);
	*out = rc ? NULL : cfg_text(c);
	cfg_free(c);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cfg_schema_t *s;
	if (!s) {
		s = cfg_schema_default();
		cfg_schema_set_warnings(s, NULL);
	}
	char *in = fuzz_text(data, size);
	if (!in)
		return 0;
	char *nl = strchr(in, '\n');
	char *l = nl ? nl + 1 : NULL, *first = l;
	while (first && *first && isspace((unsigned char)*first))
		first++;
	if (!l || strchr(l, '\n') || strlen(in) >= 150 || strlen(l) >= 150 || *first == '[') {
		free(in);
		return 0;
	}
	*nl = '\0';
	char pad[260];
	memset(pad, 'x', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	size_t n = 2 * strlen(in) + 2 * strlen(l) + sizeof pad + 16;
	char *a = malloc(n), *b = malloc(n);
	snprintf(a, n, "%s\n%s\n", in, l);
	snprintf(b, n, "%s\n%s ;%s\n", in, l, pad);
	err_t ea = {0}, eb = {0};
	char *ta, *tb;
	int ra = load(s, a, &ta, &ea), rb = load(s, b, &tb, &eb);
	if (ra != rb || (ta && strcmp(ta, tb)))
		abort();
	/* same line, same kind of error ("[section] key: ..." is worded alike) */
	if (ra && (strncmp(ea.msg, eb.msg, 4) ||
	           (strstr(ea.msg, "malformed") == NULL) != (strstr(eb.msg, "malformed") == NULL) ||
	           (!strstr(ea.msg, "malformed") && strcmp(ea.msg, eb.msg))))
		abort();
	free(ta);
	free(tb);
	free(a);
	free(b);
	free(in);
	return 0;
}
