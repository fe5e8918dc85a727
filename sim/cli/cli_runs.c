/* kvsim runs — list, filter and compare the runs of a results catalog. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/out/out_catalog.h"
#include "sim/out/out_hdf5.h"

#define DEFAULT_DIR "results"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim runs [DIR] [--where SQL] [--sort [-]COL] [--columns A,B,...] [--csv]\n"
		"       kvsim runs compare A B [DIR]\n"
		"       kvsim runs windows [DIR] [--run ID] [--columns M,...] [--csv]\n"
		"       kvsim runs export ID [DIR] --csv OUTDIR\n\n"
		"Lists the runs in DIR/catalog.sqlite (DIR defaults to '%s'): one row per run\n"
		"with its status, seed, the kvsim revision that made it (git_rev), swept\n"
		"parameters and summary metrics. Every key of every run's resolved config is\n"
		"a column too, by its dotted name, whether a sweep varied it or not\n"
		"(cluster.nodes, policy.routing.name, ...), and so are trace (the workload:\n"
		"a trace file's name, or gen:GENERATOR) and preset.\n\n"
		"  --where SQL        SQLite condition on the columns (dotted parameter and\n"
		"                     config key names may be written bare:\n"
		"                     trace.fanout_size > 24 AND cluster.nodes = 4)\n"
		"  --sort [-]COL      order by a column; a leading '-' sorts descending\n"
		"  --columns A,B,...  columns to show, config keys included; 'all' shows\n"
		"                     every column of table runs but config (keys not)\n"
		"                     (id, status, error, attempts, h5_path, started_at, ...)\n"
		"                     and the ledger: h5_size, h5_sha256 (the run's file),\n"
		"                     git_rev, git_dirty (1: uncommitted changes), stale (1:\n"
		"                     kept by a sweep of another revision, --keep-stale),\n"
		"                     e.g. --where \"git_dirty = 0 AND stale = 0\"\n"
		"  --csv              comma-separated output with full ids and full precision\n"
		"  compare A B        two runs (id prefixes) side by side: parameters, metrics\n"
		"                     with B-A and B/A, and the config keys that differ\n"
		"  windows            per-window summaries (a spec workload's stages, or\n"
		"                     output.windows): one row per run and window with its\n"
		"                     bounds (s of arrival) and metrics; --run ID: one run\n"
		"                     (id prefix); --columns: the metrics to show (any\n"
		"                     /summary name)\n"
		"  export ID --csv OUTDIR\n"
		"                     one run's tables (id prefix) as CSV files in OUTDIR\n"
		"                     (made): requests.csv, transfers.csv, timeline.csv,\n"
		"                     decisions.csv and windows.csv when the run has them,\n"
		"                     summary.csv (metric, unit, value) and config.ini. No\n"
		"                     Parquet: Debian 12 packages no Parquet writer for C\n"
		"                     (pandas' to_parquet needs pyarrow, not packaged either)\n"
		"  -h, --help         this help\n\n"
		"examples (the sweep makes the catalog the others read; ID_A and ID_B stand\n"
		"for ids, or prefixes of them, from the id column):\n"
		"  kvsim sweep --grid policy.replication.name=none,early_rdma --grid trace.fanout_size=24,48 -o results\n"
		"  kvsim runs results --where \"status = 'done' AND trace.fanout_size > 24\" --sort -ttft_p99_ms\n"
		"  kvsim runs results --columns id,policy.replication.name,trace.fanout_size,ttft_p99_ms,hit_rate_tokens\n"
		"  kvsim runs results --where \"cluster.nodes = 4\" --columns id,trace,preset,policy.routing.name,offered_rps\n"
		"  kvsim runs results --columns all --csv\n"
		"  kvsim runs compare ID_A ID_B results\n"
		"  kvsim runs export ID_A results --csv results/csv\n",
		DEFAULT_DIR);
	cli_help_end(f);
}

static int fail(const err_t *e)
{
	return cli_fail(e);
}

/* Table cells: floats with 6 significant digits, ids and digests shortened
 * to 16 hex digits, as in run file names and kvsim sweep --dry-run. */
static void cell_text(const out_table_t *t, size_t r, size_t k, char *buf, size_t cap)
{
	const char *v = t->cells[r * t->ncols + k];
	if (!v)
		snprintf(buf, cap, "-");
	else if (t->is_real[k])
		snprintf(buf, cap, "%.6g", strtod(v, NULL));
	else if (!strcmp(t->names[k], "id") || !strcmp(t->names[k], "config_digest") ||
		 !strcmp(t->names[k], "h5_sha256"))
		snprintf(buf, cap, "%.16s", v);
	else
		snprintf(buf, cap, "%s", v);
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

static void print_table(const out_table_t *t, const char *noun)
{
	size_t *w = calloc(t->ncols, sizeof *w);
	char buf[256];
	if (!w)
		return;
	for (size_t k = 0; k < t->ncols; k++) {
		w[k] = strlen(t->names[k]);
		for (size_t r = 0; r < t->nrows; r++) {
			cell_text(t, r, k, buf, sizeof buf);
			if (strlen(buf) > w[k])
				w[k] = strlen(buf);
		}
	}
	for (size_t k = 0; k < t->ncols; k++)
		printf("%s%-*s", k ? "  " : "", (int)w[k], t->names[k]);
	putchar('\n');
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t k = 0; k < t->ncols; k++) {
			cell_text(t, r, k, buf, sizeof buf);
			/* numbers right-aligned, text left-aligned */
			int right = t->is_real[k] || !strcmp(t->names[k], "seed") ||
				    !strcmp(t->kinds[k], "param");
			printf("%s%*s", k ? "  " : "", right ? (int)w[k] : -(int)w[k], buf);
		}
		putchar('\n');
	}
	printf("(%zu %s%s)\n", t->nrows, noun, t->nrows == 1 ? "" : "s");
	free(w);
}

static void print_csv(const out_table_t *t)
{
	for (size_t k = 0; k < t->ncols; k++) {
		if (k)
			putchar(',');
		out_csv_field(stdout, t->names[k]);
	}
	putchar('\n');
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t k = 0; k < t->ncols; k++) {
			if (k)
				putchar(',');
			out_csv_field(stdout, t->cells[r * t->ncols + k]);
		}
		putchar('\n');
	}
}

static const char *col(const out_table_t *t, const char *name)
{
	for (size_t k = 0; k < t->ncols; k++)
		if (!strcmp(t->names[k], name))
			return t->cells[k];
	return NULL;
}

static void config_diff(const char *a, const char *b)
{
	out_kv_t *ka = NULL, *kb = NULL;
	size_t na, nb, shown = 0;
	if (out_config_pairs(a, &ka, &na) || out_config_pairs(b, &kb, &nb)) {
		free(ka);
		return;
	}
	printf("\nconfig keys that differ:\n");
	for (size_t i = 0; i < na; i++) {
		const out_kv_t *m = NULL;
		for (size_t j = 0; j < nb && !m; j++)
			if (!strcmp(ka[i].key, kb[j].key))
				m = &kb[j];
		if (m && m->vlen == ka[i].vlen && !memcmp(m->val, ka[i].val, m->vlen))
			continue;
		printf("  %-40s %.*s  |  %.*s\n", ka[i].key, (int)ka[i].vlen, ka[i].val,
		       m ? (int)m->vlen : 9, m ? m->val : "(absent)");
		shown++;
	}
	for (size_t j = 0; j < nb; j++) {
		int found = 0;
		for (size_t i = 0; i < na && !found; i++)
			found = !strcmp(ka[i].key, kb[j].key);
		if (!found) {
			printf("  %-40s (absent)  |  %.*s\n", kb[j].key, (int)kb[j].vlen, kb[j].val);
			shown++;
		}
	}
	if (!shown)
		printf("  (none)\n");
	free(ka);
	free(kb);
}

static int compare(const char *dir, const char *pa, const char *pb)
{
	out_catalog_t *c;
	err_t e = {0};
	if (out_catalog_open(dir, 1, &c, &e))
		return fail(&e);
	char ida[65], idb[65], wa[100], wb[100];
	out_table_t ta = {0}, tb = {0};
	int rc = out_catalog_resolve(c, pa, ida, &e) || out_catalog_resolve(c, pb, idb, &e);
	if (!rc) {
		snprintf(wa, sizeof wa, "id = '%s'", ida);
		snprintf(wb, sizeof wb, "id = '%s'", idb);
		rc = out_catalog_select(c, "all,config", wa, NULL, &ta, &e) ||
		     out_catalog_select(c, "all,config", wb, NULL, &tb, &e);
	}
	if (rc) {
		out_table_free(&ta);
		out_table_free(&tb);
		out_catalog_close(c);
		return fail(&e);
	}
	static const char *const sections[] = {"run", "param", "metric"};
	static const char *const titles[] = {"run", "parameters", "metrics"};
	for (int s = 0; s < 3; s++) {
		printf("%s%-40s %-20s %-20s%s\n", s ? "\n" : "", titles[s], "A", "B",
		       s == 2 ? " B-A                  B/A" : "");
		for (size_t k = 0; k < ta.ncols; k++) {
			if (strcmp(ta.kinds[k], sections[s]) || !strcmp(ta.names[k], "config"))
				continue;
			char a[256], b[256];
			cell_text(&ta, 0, k, a, sizeof a);
			cell_text(&tb, 0, k, b, sizeof b);
			printf("  %-38s %-20s %-20s", ta.names[k], a, b);
			const char *va = ta.cells[k], *vb = tb.cells[k];
			if (s == 2 && va && vb) {
				double x = strtod(va, NULL), y = strtod(vb, NULL);
				printf(" %-20.6g", y - x);
				if (x != 0)
					printf(" %.4f", y / x);
			}
			putchar('\n');
		}
	}
	config_diff(col(&ta, "config"), col(&tb, "config"));
	out_table_free(&ta);
	out_table_free(&tb);
	out_catalog_close(c);
	return 0;
}

/* Prints the runs (windows 0: where, columns, sort) or their windows
 * (windows 1: a run id prefix, metrics) of the catalog in dir. */
static int show(const char *dir, const char *sel, const char *cols, const char *sort, int csv,
		int windows)
{
	out_catalog_t *c;
	err_t e = {0};
	out_table_t t;
	if (out_catalog_open(dir ? dir : DEFAULT_DIR, 1, &c, &e))
		return fail(&e);
	if (windows ? out_catalog_windows(c, sel, cols, &t, &e)
		    : out_catalog_select(c, cols, sel, sort, &t, &e)) {
		out_catalog_close(c);
		return fail(&e);
	}
	if (csv)
		print_csv(&t);
	else
		print_table(&t, windows ? "window" : "run");
	out_table_free(&t);
	out_catalog_close(c);
	return 0;
}

static int windows_main(int argc, char **argv)
{
	const char *dir = NULL, *run = NULL, *cols = NULL;
	int csv = 0;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		if (cli_is_help(o)) {
			usage(stdout);
			return 0;
		} else if (!strcmp(o, "--run") || !strcmp(o, "--columns")) {
			if (i + 1 >= argc)
				return cli_usage_error("%s needs a value", o);
			*(!strcmp(o, "--run") ? &run : &cols) = argv[++i];
		} else if (!strcmp(o, "--csv")) {
			csv = 1;
		} else if (o[0] == '-') {
			return cli_usage_error("unknown option '%s'", o);
		} else if (!dir) {
			dir = o;
		} else {
			return cli_usage_error("unexpected argument '%s'", o);
		}
	}
	return show(dir, run, cols, NULL, csv, 1);
}

/* kvsim runs export ID [DIR] --csv OUTDIR: the run's HDF5 file as CSV. */
static int export_main(int argc, char **argv)
{
	const char *id = NULL, *dir = NULL, *csv = NULL;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		if (cli_is_help(o)) {
			usage(stdout);
			return 0;
		} else if (!strcmp(o, "--csv")) {
			if (i + 1 >= argc)
				return cli_usage_error("--csv needs an output directory");
			csv = argv[++i];
		} else if (!strcmp(o, "--parquet")) {
			return cli_usage_error("--parquet: no Parquet writer: Debian packages none for "
					       "C; export --csv and convert the files");
		} else if (o[0] == '-') {
			return cli_usage_error("unknown option '%s'", o);
		} else if (!id) {
			id = o;
		} else if (!dir) {
			dir = o;
		} else {
			return cli_usage_error("unexpected argument '%s'", o);
		}
	}
	if (!id || !csv)
		return cli_usage_error("expected a run id and --csv OUTDIR");
	dir = dir ? dir : DEFAULT_DIR;
	out_catalog_t *c;
	err_t e = {0};
	char full[65], where[100], h5[8300];
	out_table_t t = {0};
	if (out_catalog_open(dir, 1, &c, &e))
		return fail(&e);
	int rc = out_catalog_resolve(c, id, full, &e);
	if (!rc) {
		snprintf(where, sizeof where, "id = '%s'", full);
		rc = out_catalog_select(c, "status,h5_path", where, NULL, &t, &e);
	}
	out_catalog_close(c);
	if (!rc && (!t.cells[0] || strcmp(t.cells[0], "done") || !t.cells[1]))
		rc = err_set(&e, KS_EINPUT, "run %.16s is %s, not done: no results to export", full,
			     t.cells[0] ? t.cells[0] : "without a status");
	if (!rc)
		snprintf(h5, sizeof h5, "%s/%s", dir, t.cells[1]);
	out_table_free(&t);
	if (rc)
		return fail(&e);
	sim_results_t r;
	if (out_hdf5_read(h5, &r, &e))
		return fail(&e);
	if (out_mkdir_p(csv) < 0)
		rc = err_set(&e, KS_EIO, "%s: cannot create directory: %s", csv, strerror(errno));
	else
		rc = out_csv_write(&r, csv, &e);
	if (!rc)
		printf("run %.16s: requests.csv (%zu rows), transfers.csv (%zu), timeline.csv (%zu)%s, "
		       "summary.csv (%zu metrics)%s, config.ini in %s\n",
		       full, r.n_req, r.n_xfer, r.n_tl, r.decisions ? ", decisions.csv" : "",
		       r.n_metric, r.n_win ? ", windows.csv" : "", csv);
	sim_results_free(&r);
	return rc ? fail(&e) : 0;
}

int out_runs_main(int argc, char **argv)
{
	const char *dir = NULL, *where = NULL, *sort = NULL, *cols = NULL;
	int csv = 0;
	if (argc >= 2 && !strcmp(argv[1], "compare")) {
		cli_set_command("runs compare");
		for (int i = 2; i < argc; i++)
			if (cli_is_help(argv[i])) {
				usage(stdout);
				return 0;
			}
		for (int i = 2; i < argc; i++)
			if (argv[i][0] == '-' && argv[i][1])
				return cli_usage_error("unknown option '%s'", argv[i]);
		if (argc != 4 && argc != 5)
			return cli_usage_error("expected two run ids and an optional DIR");
		return compare(argc == 5 ? argv[4] : DEFAULT_DIR, argv[2], argv[3]);
	}
	if (argc >= 2 && !strcmp(argv[1], "export")) {
		cli_set_command("runs export");
		return export_main(argc, argv);
	}
	if (argc >= 2 && !strcmp(argv[1], "windows")) {
		cli_set_command("runs windows");
		return windows_main(argc, argv);
	}
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char **dst = !strcmp(o, "--where") ? &where
				   : !strcmp(o, "--sort") ? &sort
				   : !strcmp(o, "--columns") ? &cols : NULL;
		if (cli_is_help(o)) {
			usage(stdout);
			return 0;
		} else if (dst) {
			if (i + 1 >= argc)
				return cli_usage_error("%s needs a value", o);
			*dst = argv[++i];
		} else if (!strcmp(o, "--csv")) {
			csv = 1;
		} else if (o[0] != '-' && !dir) {
			dir = o;
		} else if (o[0] == '-') {
			return cli_usage_error("unknown option '%s'", o);
		} else {
			return cli_usage_error("unexpected argument '%s'", o);
		}
	}
	return show(dir, where, cols, sort, csv, 0);
}
