/* pol_cli — `kvsim policies`: lists every policy family, each policy's
 * documentation and parameters (type, default, range, unit, doc), and the
 * serving-framework presets. */
#include <stdio.h>
#include <string.h>

#include "policies/pol.h"
#include "sim/base/cfg.h"
#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: kvsim policies [--plugin FILE.so]... [--presets] [FAMILY [NAME]]\n\n"
	           "Lists the policy families (predictor, replication, routing, eviction,\n"
	           "transfer, admission), every policy with its documentation and its\n"
	           "parameters, set in a config as\n"
	           "  [policy.FAMILY]\n  name = POLICY\n  PARAM = VALUE\n"
	           "or with --set policy.FAMILY.PARAM=VALUE.\n\n"
	           "options:\n"
	           "  --plugin FILE.so  load an external policy plugin first (repeatable)\n"
	           "  --presets         list only the serving-framework presets ([policy]\n"
	           "                    preset = NAME), what each sets and the sources\n"
	           "  -h, --help        this help\n");
	cli_help_end(f);
}

/* Prints text wrapped at 78 columns with the given indent. */
static void wrap(const char *text, int indent)
{
	int col = indent;
	printf("%*s", indent, "");
	const char *p = text;
	while (*p) {
		while (*p == ' ')
			p++;
		size_t w = strcspn(p, " ");
		if (!w)
			break;
		if (col > indent && col + 1 + (int)w > 78) {
			printf("\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			putchar(' ');
			col++;
		}
		printf("%.*s", (int)w, p);
		col += (int)w;
		p += w;
	}
	putchar('\n');
}

static void print_policy(const pol_base_t *o)
{
	printf("  %s\n", o->name);
	wrap(o->doc ? o->doc : "", 6);
	for (size_t i = 0; i < o->n_params; i++) {
		const cfg_key_t *k = &o->params[i].key;
		char choices[512];
		printf("      %s (%s, default %s", k->name, cfg_type_name(k->type), k->def);
		if (k->type == CFG_ENUM)
			printf(", one of %s", cfg_tkey_choices(&o->params[i], choices, sizeof choices));
		else if (k->min < k->max && k->type != CFG_BOOL)
			printf(", %g..%g", k->min, k->max);
		if (k->unit && *k->unit)
			printf(", %s", k->unit);
		printf(")\n");
		wrap(k->doc ? k->doc : "", 10);
	}
}

static void print_presets(void)
{
	printf("[policy] preset = ...  (or --set policy.preset=NAME; default none)\n");
	wrap("A preset sets each key below that the config does not set itself: a key "
	     "given in the file or with --set always wins, in any order.",
	     2);
	size_t n;
	const pol_preset_t *all = pol_presets(&n);
	for (size_t i = 0; i < n; i++) {
		const pol_preset_t *p = &all[i];
		printf("\n  %s\n", p->name);
		wrap(p->doc, 6);
		for (size_t j = 0; j < p->n; j++) {
			printf("      %s = %s\n", p->kv[j].key, p->kv[j].value);
			wrap(p->kv[j].source, 10);
		}
	}
}

int pol_cli_main(int argc, char **argv)
{
	const char *fam = NULL, *name = NULL;
	int presets = 0, rc = 0;
	err_t e = {0};
	pol_registry_t *r = pol_registry_new();
	if (!r)
		return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			goto out;
		} else if (!strcmp(argv[i], "--plugin")) {
			if (i + 1 >= argc) {
				rc = cli_usage_error("--plugin needs a FILE.so");
				goto out;
			}
			if (pol_registry_load(r, argv[++i], &e)) {
				rc = cli_fail(&e);
				goto out;
			}
		} else if (!strcmp(argv[i], "--presets")) {
			presets = 1;
		} else if (argv[i][0] == '-') {
			rc = cli_unknown_option(argv[i], usage);
			goto out;
		} else if (!fam) {
			fam = argv[i];
		} else if (!name) {
			name = argv[i];
		} else {
			rc = cli_usage_error("unexpected argument '%s'", argv[i]);
			goto out;
		}
	}
	if (presets) {
		print_presets();
		goto out;
	}
	pol_family_t only = POL_NFAMILY;
	if (fam && pol_family_parse(fam, &only, &e)) {
		rc = cli_usage_error("%s", e.msg);
		goto out;
	}
	for (int f = 0; f < POL_NFAMILY; f++) {
		if (only != POL_NFAMILY && f != (int)only)
			continue;
		if (name) {
			const pol_base_t *o = pol_find(r, (pol_family_t)f, name);
			if (!o) {
				rc = cli_usage_error("no %s policy '%s'",
				                     pol_family_name((pol_family_t)f), name);
				goto out;
			}
			printf("[%s]\n", pol_family_section((pol_family_t)f));
			print_policy(o);
			continue;
		}
		printf("[%s] name = ...\n", pol_family_section((pol_family_t)f));
		size_t n = pol_count(r, (pol_family_t)f);
		for (size_t i = 0; i < n; i++)
			print_policy(pol_at(r, (pol_family_t)f, i));
		printf("\n");
	}
	if (only == POL_NFAMILY)
		print_presets();
out:
	pol_registry_free(r);
	return rc;
}
