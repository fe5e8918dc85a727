/* cli_voice — see cli_voice.h. */
#include "sim/base/cli_voice.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/near.h"

/* The command the process runs: one per process, set by the dispatchers
 * in main's thread before anything is printed. */
static char command[64];

void cli_set_command(const char *cmd)
{
	snprintf(command, sizeof command, "%s", cmd ? cmd : "");
}

const char *cli_command(void)
{
	return command;
}

int cli_is_help(const char *arg)
{
	return arg && (!strcmp(arg, "-h") || !strcmp(arg, "--help"));
}

int cli_fail(const err_t *e)
{
	fprintf(stderr, "kvsim%s%s: %s\n", *command ? " " : "", command, e->msg);
	return err_exit_status(e->code);
}

int cli_usage_error(const char *fmt, ...)
{
	err_t e;
	va_list ap;
	va_start(ap, fmt);
	err_vset(&e, KS_EINPUT, fmt, ap); /* a long argument loses its middle, not the reason */
	va_end(ap);
	fprintf(stderr, "kvsim%s%s: %s\nRun 'kvsim%s%s --help' for usage.\n", *command ? " " : "",
	        command, e.msg, *command ? " " : "", command);
	return 2;
}

void cli_help_end(FILE *f)
{
	fprintf(f, "\n" CLI_EXIT_STATUS);
}


/* Whether the word at p (inside text) starts an option in a help text: a
 * '-' after a blank, '[', ',', '(' or '|' (or the text's start), then a
 * letter or a second '-' and a letter. */
static int option_at(const char *text, const char *p)
{
	if (*p != '-' || (p > text && !strchr(" [,(|\n", p[-1])))
		return 0;
	const char *q = p + 1 + (p[1] == '-');
	return isalpha((unsigned char)*q);
}

const char *cli_option_near(const char *arg, void (*usage)(FILE *), char *buf, size_t n)
{
	char typed[128], *help = NULL;
	size_t len = 0, bd = (size_t)-1;
	snprintf(typed, sizeof typed, "%.*s", (int)strcspn(arg, "="), arg);
	FILE *f = usage ? open_memstream(&help, &len) : NULL;
	if (f) {
		usage(f);
		fclose(f);
	}
	buf[0] = '\0';
	/* a short option is one letter: any other is as near, so none is meant */
	for (const char *p = help && strlen(typed) > 2 ? help : ""; *p; p++) {
		if (!option_at(help, p))
			continue;
		size_t w = strspn(p, "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
		char word[128];
		snprintf(word, sizeof word, "%.*s", (int)w, p);
		size_t d = near_distance(typed, word);
		if (d < bd) {
			bd = d;
			snprintf(buf, n, "%s", word);
		}
		p += w - 1;
	}
	free(help);
	return *buf && near_close(typed, bd) ? buf : NULL;
}

int cli_unknown_option(const char *arg, void (*usage)(FILE *))
{
	char near[128];
	if (cli_option_near(arg, usage, near, sizeof near))
		return cli_usage_error("unknown option '%s' (did you mean '%s'?)", arg, near);
	return cli_usage_error("unknown option '%s'", arg);
}

int cli_unknown_word(const char *what, const char *arg, const char *const *names, size_t n)
{
	near_t nr = NEAR_INIT;
	char list[512] = "";
	size_t used = 0;
	for (size_t i = 0; i < n; i++) {
		near_offer(&nr, arg, names[i]);
		int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
		used = w < 0 || (size_t)w >= sizeof list - used ? sizeof list - 1 : used + (size_t)w;
	}
	const char *hit = near_pick(&nr, arg);
	if (hit)
		return cli_usage_error("unknown %s '%s' (did you mean '%s'?)", what, arg, hit);
	return cli_usage_error("unknown %s '%s' (%s)", what, arg, list);
}

/* The run the process's warnings are about ("" for none); "WHERE: ". */
static char warn_where[132];

void cli_warn_where(const char *where)
{
	snprintf(warn_where, sizeof warn_where, "%.127s%s", where ? where : "",
	         where && *where ? ": " : "");
}

const char *cli_warn_prefix(void)
{
	return warn_where;
}

void cli_warn(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "kvsim%s%s: warning: %s%s\n", *command ? " " : "", command, warn_where,
	        msg);
}
