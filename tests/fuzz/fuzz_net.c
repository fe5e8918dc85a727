/* libFuzzer target for `kvsim net run FILE` (sim/cli/net_cli.c on sim/net/net.c):
 * any scenario text either runs or fails with KS_EINPUT and "FILE:LINE: "
 * (net_cli.h; nothing printed then). A run prints, in file order, one line
 * per flow "flow NAME start=S join=J finish=F bytes=B mean_rate=R" with
 * S <= J <= F, then one per link. Overflow of the int64 ns clock, a flow that
 * never finishes or a simulation error are bugs. */
#include "sim/cli/net_cli.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks the output of a run: flow lines first, then link lines. */
static void check_output(const char *out)
{
	int links = 0;
	for (const char *l = out; *l;) {
		const char *nl = strchr(l, '\n');
		if (!nl)
			abort(); /* every line ends */
		long long s, j, f;
		unsigned long long b;
		/* a name is any run of bytes but space, tab, CR and LF */
		const char *rest = strncmp(l, "flow ", 5) ? NULL : strpbrk(l + 5, " \t\r\n");
		if (!strncmp(l, "link ", 5)) {
			links = 1;
		} else if (links || !rest ||
		           sscanf(rest, " start=%lld join=%lld finish=%lld bytes=%llu", &s, &j, &f,
		                  &b) != 4 ||
		           s < 0 || j < s || f < j) {
			abort();
		}
		l = nl + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path);
	if (fd < 0)
		return 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (!out)
		abort();
	err_t e = {0};
	int rc = net_scenario_run(path, out, 1, &e);
	fclose(out);
	if (rc) {
		size_t n = strlen(path);
		if (rc != KS_EINPUT || strncmp(e.msg, path, n) || e.msg[n] != ':' || len)
			abort();
	} else {
		check_output(buf);
	}
	free(buf);
	close(fd);
	return 0;
}
