/* sim_rss — [experiment] max_rss_gb: this process's resident memory, read
 * from the kernel, and the checks that hold a run to the limit while it is
 * built, after its events (sim_core.c after_event) and outside it. */
#include "sim/run/sim_int.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* Resident memory of this process in bytes (0 when unknown): the second
 * field of /proc/self/statm, in pages (proc(5)); peak RSS where there is
 * no /proc. */
static uint64_t rss_bytes(void)
{
	unsigned long long pages[2];
	FILE *f = fopen("/proc/self/statm", "r");
	int n = f ? fscanf(f, "%llu %llu", &pages[0], &pages[1]) : 0;
	if (f)
		fclose(f);
	if (n == 2)
		return pages[1] * (uint64_t)sysconf(_SC_PAGESIZE);
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) ? 0 : (uint64_t)ru.ru_maxrss * 1024;
}

/* The peak resident memory since sim_rss_peak_reset (VmHWM, proc(5)), so a
 * check sees what was freed since, or the current one where the kernel
 * gives no peak. */
uint64_t sim_rss_peak_bytes(void)
{
	char line[128];
	unsigned long long kb = 0;
	int have = 0;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && !have && fgets(line, sizeof line, f))
		have = sscanf(line, "VmHWM: %llu kB", &kb) == 1;
	if (f)
		fclose(f);
	uint64_t now = rss_bytes();
	return have && kb * 1024 > now ? kb * 1024 : now;
}

int sim_rss_peak_reset(void)
{
	/* "5": the peak becomes the current resident size (proc(5), Linux 4.0) */
	FILE *f = fopen("/proc/self/clear_refs", "w");
	int ok = f && fputs("5", f) >= 0;
	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/* [experiment] max_rss_gb in bytes; 0 asks for half of the memory this
 * process may use: physical memory, or a cgroup v2 memory.max below it (a
 * container's limit, cgroup-v2.rst "memory.max"). */
static uint64_t rss_limit_of(double gb, int *is_auto)
{
	*is_auto = !(gb > 0);
	if (!*is_auto)
		return (uint64_t)(gb * 1e9);
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t mem = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
	unsigned long long cg;
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r"); /* "max" when unlimited */
	if (f && fscanf(f, "%llu", &cg) == 1 && cg > 0 && (!mem || cg < mem))
		mem = cg;
	if (f)
		fclose(f);
	return mem / 2;
}

void sim_rss_limit_set(sim_ctx_t *s, double gb)
{
	s->rss_limit = rss_limit_of(gb, &s->rss_auto);
}

/* [experiment] max_rss_gb while the run is built: refuses a step whose
 * allocation (need bytes, estimated before it is made) would take resident
 * memory past the limit, and names what took it there once it has (need 0,
 * a milestone). The events' check cannot see setup: 8,192 instances' KV
 * stores are allocated before the first event. */
static int rss_room_at(uint64_t limit, int is_auto, err_t *e, const char *what, uint64_t need,
		       const char *fix)
{
	if (!limit)
		return 0;
	uint64_t peak = sim_rss_peak_bytes(), rss = rss_bytes();
	const char *lim = is_auto ? " (half of the memory available)" : "";
	if (peak > limit)
		return err_set(e, KS_ERUNTIME,
			       "[experiment] max_rss_gb: resident memory %.3g GB passed the limit "
			       "of %.3g GB%s while %s; nothing was written. Raise max_rss_gb, or %s",
			       (double)peak / 1e9, (double)limit / 1e9, lim, what, fix);
	if (need > limit - rss)
		return err_set(e, KS_ERUNTIME,
			       "[experiment] max_rss_gb: %s needs %.3g GB on top of the %.3g GB "
			       "resident, %.3g GB in all, over the limit of %.3g GB%s; nothing was "
			       "allocated or written. Raise max_rss_gb, or %s",
			       what, (double)need / 1e9, (double)rss / 1e9,
			       (double)(rss + need) / 1e9, (double)limit / 1e9, lim, fix);
	return 0;
}

int sim_rss_room(sim_ctx_t *s, const char *what, uint64_t need, const char *fix)
{
	return rss_room_at(s->rss_limit, s->rss_auto, s->err, what, need, fix);
}

int sim_rss_check(double max_rss_gb, const char *what, const char *fix, err_t *e)
{
	int is_auto;
	uint64_t limit = rss_limit_of(max_rss_gb, &is_auto);
	return rss_room_at(limit, is_auto, e, what, 0, fix);
}
