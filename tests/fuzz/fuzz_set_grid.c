/* libFuzzer target for --set and --grid/--zip expressions over the full
 * schema and the built-in default experiment, as `kvsim config show` and
 * `kvsim sweep` read them. Each input line is one argument: "grid SPEC",
 * "zip SPEC", "seeds N", or else a --set assignment.
 *
 * Bad input fails with KS_EINPUT. Whatever is accepted writes a config
 * text that loads back (schema defaults + that text) to the same text and
 * digest: what /config in every HDF5 file promises. Every grid point that
 * builds does so the same way twice (same id, the id of its own text), and
 * its config round-trips too; the point count grows as the axes say (an
 * overflow of size_t is a bug). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/cfg.h"
#include "sim/run/cli_common.h"
#include "sim/out/out_sweep.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64
#define MAX_POINTS 2 /* the first and the last: the others cost time, not cover */

/* c's text loads back into a fresh config of the same schema unchanged (so
 * does its digest, the SHA-256 of that text). */
static void round_trip(const cfg_t *c)
{
	err_t e = {0};
	char *t1 = cfg_text(c);
	cfg_t *d = cfg_new(cfg_schema(c));
	if (!t1 || !d || cfg_load_string(d, "back", t1, &e) || cfg_finalize(d, &e))
		abort();
	char *t2 = cfg_text(d);
	if (!t2 || strcmp(t1, t2))
		abort();
	free(t1);
	free(t2);
	cfg_free(d);
}

static void check_points(const out_grid_t *g, const cfg_t *base)
{
	size_t n = out_grid_points(g);
	for (size_t k = 0; k < n && k < MAX_POINTS; k++) {
		size_t i = k + 1 == MAX_POINTS ? n - 1 : k; /* the last point too */
		out_point_t p, q;
		err_t e = {0};
		int rc = out_point_make(g, base, "experiment.seed", i, &p, &e);
		if (rc) {
			if (rc != KS_EINPUT)
				abort();
			continue;
		}
		if (out_point_make(g, base, "experiment.seed", i, &q, &e) || strcmp(p.id, q.id) ||
		    strcmp(p.digest, q.digest))
			abort();
		char *t = cfg_text(p.cfg), id[65];
		out_point_id(t, p.seed, p.inputs, id);
		if (strcmp(id, p.id))
			abort();
		free(t);
		round_trip(p.cfg);
		out_point_free(&p);
		out_point_free(&q);
	}
}

/* Adding an axis multiplies the points by its length (1 to 100000 values,
 * out_grid.c) and a later --zip axis leaves them as they are: checked on
 * every change, so a count that wraps around size_t shows up at once. */
static void check_growth(size_t before, size_t after, int same)
{
	if (same ? after != before
	         : (!before || after < before || after % before || after / before > 100000))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text)
		return 0;
	const char *sets[MAX_ARGS];
	int nsets = 0, rc = 0, axes = 0, zip = 0;
	unsigned long seeds = 1;
	out_grid_t *g = out_grid_new();
	err_t e = {0};
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l && !rc; l = strtok_r(NULL, "\n", &save)) {
		size_t before = out_grid_points(g);
		if (!strncmp(l, "grid ", 5) || !strncmp(l, "zip ", 4)) {
			int z = l[0] == 'z';
			rc = out_grid_add(g, l + (z ? 4 : 5), z, &e);
			if (!rc) {
				check_growth(before, out_grid_points(g), z && zip);
				zip |= z;
				axes++;
			}
		} else if (!strncmp(l, "seeds ", 6)) {
			unsigned long n = strtoul(l + 6, NULL, 10);
			n = n > 1000000 ? 1000000 : n;
			rc = out_grid_set_seeds(g, (unsigned)n, &e);
			/* --seeds N replaces the seed factor */
			size_t after = out_grid_points(g);
			if (!rc && (after % n || after / n != before / seeds))
				abort();
			if (!rc)
				seeds = n;
		} else if (nsets < MAX_ARGS) {
			sets[nsets++] = l;
		}
	}
	if (rc && rc != KS_EINPUT)
		abort();
	cfg_t *c = NULL;
	if (!rc) {
		rc = cli_load_config_ex(NULL, sets, nsets, CLI_DEFAULT_EXPERIMENT | CLI_NO_WARNINGS,
		                        NULL, &c, &e);
		if (rc && rc != KS_EINPUT)
			abort();
	}
	if (c) {
		round_trip(c);
		if (axes || seeds > 1)
			check_points(g, c);
		cli_config_free(c);
	}
	out_grid_free(g);
	free(text);
	return 0;
}
