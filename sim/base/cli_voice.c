/* cli_voice — see cli_voice.h. */
#include "sim/base/cli_voice.h"

#include <stdarg.h>
#include <string.h>

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
