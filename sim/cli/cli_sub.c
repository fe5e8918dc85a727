/* cli_sub — see cli_sub.h. */
#include "sim/cli/cli_sub.h"

#include <string.h>

#include "sim/base/cli_voice.h"

void cli_sub_usage(FILE *f, const char *head, const cli_sub_t *subs, size_t n, const char *tail)
{
	fputs(head, f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-10s %s\n", subs[i].name, subs[i].help);
	fputs(tail, f);
	cli_help_end(f);
}

const cli_sub_t *cli_sub_find(const cli_sub_t *subs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, subs[i].name))
			return &subs[i];
	return NULL;
}

int cli_sub_run(const cli_sub_t *s, const char *parent, int argc, char **argv)
{
	char cmd[64];
	if (parent)
		snprintf(cmd, sizeof cmd, "%s %s", parent, s->name);
	else
		snprintf(cmd, sizeof cmd, "%s", s->name);
	cli_set_command(cmd);
	return s->fn(argc - 1, argv + 1);
}

/* "run, bench": the rows' names for a usage error; cut at the buffer's end. */
static const char *sub_names(const cli_sub_t *subs, size_t n, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && k < len; i++) {
		int w = snprintf(buf + k, len - k, "%s%s", i ? ", " : "", subs[i].name);
		k += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

int cli_sub_main(const char *parent, const cli_sub_t *subs, size_t n, void (*usage)(FILE *),
                 int argc, char **argv)
{
	char names[256];
	if (argc < 2)
		return cli_usage_error("missing command (%s)",
		                       sub_names(subs, n, names, sizeof names));
	if (cli_is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	const cli_sub_t *s = cli_sub_find(subs, n, argv[1]);
	if (!s) {
		const char *words[64];
		size_t k = n < 64 ? n : 64;
		for (size_t i = 0; i < k; i++)
			words[i] = subs[i].name;
		return cli_unknown_word("command", argv[1], words, k);
	}
	return cli_sub_run(s, parent, argc, argv);
}
