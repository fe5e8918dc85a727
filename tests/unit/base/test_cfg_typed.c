/* Tests for the typed keys of sim/base/cfg.c: cfg_fill into a struct for
 * every field kind, enum maps as the source of a key's choices, range and
 * load errors with their place, aliases, removed keys, and reads of a const
 * config that leave it as it was. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/base/cfg.h"
#include "sim/run/sim_schema.h"

typedef enum { SHAPE_STEP = 7, SHAPE_SPIKE = 3, SHAPE_RAMP = 11 } shape_t;

typedef struct typed {
	int64_t lat_ns;
	uint32_t nodes;
	uint64_t limit;
	double share, blocks_f;
	int on;
	const char *label;
	char *path;
	int shape;
} typed_t;

static const cfg_enum_t shape_map[] = {
    {"step", SHAPE_STEP}, {"spike", SHAPE_SPIKE}, {"ramp", SHAPE_RAMP}, {NULL, 0}};

#define T(f) CFG_AT(f, typed_t
static const cfg_tkey_t typed_keys[] = {
    {{"t", "lat_ns", CFG_INT, "-5", -1e9, 1e9, NULL, "ns", "a latency", NULL}, T(I64), lat_ns)},
    {{"t", "nodes", CFG_INT, "4", 1, 10, NULL, "", "nodes", NULL}, T(U32), nodes)},
    {{"t", "limit", CFG_INT, "0", 0, 1e15, NULL, "", "a count", NULL}, T(U64), limit)},
    {{"t", "share", CFG_FLOAT, "0.5", 0, 1, NULL, "", "a share", NULL}, T(DOUBLE), share)},
    {{"t", "blocks", CFG_INT, "16", 0, 100, NULL, "", "an int read as double", NULL},
     T(DOUBLE), blocks_f)},
    {{"t", "on", CFG_BOOL, "false", 0, 0, NULL, "", "a switch", NULL}, T(BOOL), on)},
    {{"t", "label", CFG_STR, "x", 0, 0, NULL, "", "borrowed text", NULL}, T(STR), label)},
    {{"t", "path", CFG_STR, "", 0, 0, NULL, "", "owned text", NULL}, T(STRDUP), path)},
    {{"t", "shape", CFG_ENUM, "spike", 0, 0, NULL, "", "an enum", NULL},
     CFG_AT_ENUM(typed_t, shape, shape_map)},
    {{"t", "read_by_name", CFG_INT, "1", 0, 9, NULL, "", "fills nothing", NULL}, CFG_NOWHERE},
    CFG_ALIAS("t", "old_nodes", "t.nodes", "old name of [t] nodes"),
};
#undef T
#define N_TYPED (sizeof typed_keys / sizeof typed_keys[0])

/* A config over typed_keys and the struct the tests fill from it (its
 * owned strings freed at the end). */
typedef struct fx {
	cfg_schema_t *s;
	cfg_t *c;
	typed_t t;
	err_t e;
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof *f);
	if (!f || !(f->s = cfg_schema_new()) ||
	    cfg_schema_add_typed(f->s, typed_keys, N_TYPED) || !(f->c = cfg_new(f->s)))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	cfg_fill_free(typed_keys, N_TYPED, &f->t);
	cfg_free(f->c);
	cfg_schema_free(f->s);
	free(f);
	return 0;
}

static void test_fill_every_kind_from_loaded_values(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_load_string(f->c, "a.ini",
	                                 "[t]\nlat_ns = -300\nnodes = 9\nlimit = 123456789012\n"
	                                 "share = 0.25\nblocks = 42\non = yes\nlabel = hello\n"
	                                 "path = /x/y\nshape = ramp\n",
	                                 &f->e),
	                 0);
	typed_t t = {0};
	assert_int_equal(cfg_fill(f->c, typed_keys, N_TYPED, &t, &f->e), 0);
	assert_int_equal(t.lat_ns, -300);
	assert_int_equal(t.nodes, 9);
	assert_true(t.limit == 123456789012ull);
	assert_true(t.share == 0.25);
	assert_true(t.blocks_f == 42.0);
	assert_int_equal(t.on, 1);
	assert_string_equal(t.label, "hello");
	assert_ptr_equal(t.label, cfg_str(f->c, "t", "label")); /* borrowed */
	assert_string_equal(t.path, "/x/y");
	assert_ptr_not_equal(t.path, cfg_str(f->c, "t", "path")); /* owned */
	assert_int_equal(t.shape, SHAPE_RAMP);
	cfg_fill_free(typed_keys, N_TYPED, &t);
	assert_null(t.path);
}

static void test_fill_defaults_without_a_config(void **state)
{
	(void)state;
	typed_t t = {0};
	err_t e = {0};
	assert_int_equal(cfg_fill_defaults(typed_keys, N_TYPED, &t, &e), 0);
	assert_int_equal(t.lat_ns, -5);
	assert_int_equal(t.nodes, 4);
	assert_true(t.share == 0.5 && t.blocks_f == 16.0);
	assert_int_equal(t.on, 0);
	assert_string_equal(t.label, "x");
	assert_string_equal(t.path, "");
	assert_int_equal(t.shape, SHAPE_SPIKE); /* the map's value, not its position */
	cfg_fill_free(typed_keys, N_TYPED, &t);
}

static void test_enum_choices_come_from_the_map(void **state)
{
	fx_t *f = *state;
	char buf[64];
	assert_string_equal(cfg_schema_choices(f->s, "t", "shape"), "step,spike,ramp");
	assert_string_equal(cfg_tkey_choices(&typed_keys[8], buf, sizeof buf), "step,spike,ramp");
	assert_int_equal(cfg_load_string(f->c, "b.ini", "[t]\nshape = rampp\n", &f->e), KS_EINPUT);
	assert_string_equal(f->e.msg, "b.ini:2: [t] shape: 'rampp' is not one of: step,spike,ramp "
	                              "(did you mean 'ramp'?)");
}

/* A filled enum field back to its text through the map (not the config):
 * values in any order and with gaps, "" for one the map lacks. */
static void test_enum_name_is_the_maps_name_of_a_value(void **state)
{
	(void)state;
	assert_string_equal(cfg_enum_name(shape_map, SHAPE_RAMP), "ramp");
	assert_string_equal(cfg_enum_name(shape_map, SHAPE_STEP), "step");
	assert_string_equal(cfg_enum_name(shape_map, SHAPE_SPIKE), "spike");
	assert_string_equal(cfg_enum_name(shape_map, 5), "");
	assert_string_equal(cfg_enum_name(NULL, SHAPE_RAMP), "");
	typed_t t = {.shape = SHAPE_STEP};
	assert_string_equal(cfg_field_text(&typed_keys[8], &t), "step");
}

static void test_map_and_choices_together_are_refused(void **state)
{
	(void)state;
	static const cfg_tkey_t both[] = {
	    {{"t", "shape", CFG_ENUM, "step", 0, 0, "step,spike", "", "both", NULL},
	     CFG_AT_ENUM(typed_t, shape, shape_map)},
	};
	static const cfg_tkey_t unranged_u32[] = {
	    {{"t", "nodes", CFG_INT, "4", 0, 0, NULL, "", "no range", NULL},
	     CFG_AT(U32, typed_t, nodes)},
	};
	cfg_schema_t *s = cfg_schema_new();
	FILE *old = stderr;
	stderr = fopen("/dev/null", "w"); /* schema_bad names the key there */
	assert_int_equal(cfg_schema_add_typed(s, both, 1), KS_EINPUT);
	assert_int_equal(cfg_schema_add_typed(s, unranged_u32, 1), KS_EINPUT);
	fclose(stderr);
	stderr = old;
	assert_int_equal(cfg_schema_count(s), 0);
	cfg_schema_free(s);
}

static void test_range_errors_name_file_and_line(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_load_string(f->c, "c.ini", "[t]\non = 1\nnodes = 11\n", &f->e),
	                 KS_EINPUT);
	assert_string_equal(f->e.msg, "c.ini:3: [t] nodes: 11 is out of range [1, 10]");
	/* nothing of the failed load was kept */
	assert_string_equal(cfg_str(f->c, "t", "on"), "false");
	/* a struct changed by code is checked in the same words */
	typed_t t = {0};
	assert_int_equal(cfg_fill(f->c, typed_keys, N_TYPED, &t, &f->e), 0);
	t.share = 1.5;
	assert_int_equal(cfg_fields_check(typed_keys, N_TYPED, &t, &f->e), KS_EINPUT);
	assert_string_equal(f->e.msg, "[t] share: 1.5 is out of range [0, 1]");
	/* an override, as policies get them */
	assert_int_equal(cfg_field_set(&typed_keys[0], &t, "2e9", &f->e), KS_EINPUT);
	assert_string_equal(f->e.msg, "[t] lat_ns: expected an integer, got '2e9'");
	assert_int_equal(cfg_field_set(&typed_keys[0], &t, "-7", &f->e), 0);
	assert_int_equal(t.lat_ns, -7);
	cfg_fill_free(typed_keys, N_TYPED, &t);
}

static void test_alias_is_accepted_and_sets_its_key(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_load_string(f->c, "d.ini", "[t]\nold_nodes = 6\n", &f->e), 0);
	typed_t t = {0};
	assert_int_equal(cfg_fill(f->c, typed_keys, N_TYPED, &t, &f->e), 0);
	assert_int_equal(t.nodes, 6);
	assert_string_equal(cfg_origin(f->c, "t", "nodes"), "d.ini:2");
	assert_int_equal(cfg_set(f->c, "t.old_nodes=7", &f->e), 0);
	assert_int_equal(cfg_int(f->c, "t", "nodes"), 7);
	/* an alias is never written back: the text names the key itself */
	char *text = cfg_text(f->c);
	assert_non_null(strstr(text, "nodes = 7"));
	assert_null(strstr(text, "old_nodes"));
	free(text);
	/* the old and the new name in one file set one key twice */
	assert_int_equal(cfg_load_string(f->c, "e.ini", "[t]\nnodes = 2\nold_nodes = 3\n", &f->e),
	                 KS_EINPUT);
	assert_string_equal(f->e.msg, "e.ini:3: [t] old_nodes: duplicate key (first set on line 2)");
	/* the alias's type is its key's */
	assert_int_equal(cfg_set(f->c, "t.old_nodes=many", &f->e), KS_EINPUT);
	assert_string_equal(f->e.msg, "--set: [t] old_nodes: expected an integer, got 'many'");
	cfg_fill_free(typed_keys, N_TYPED, &t);
}

/* Keys removed from the built-in schema are refused with the key to use. */
static void test_removed_keys_are_rejected_with_the_key_to_use(void **state)
{
	(void)state;
	cfg_schema_t *s = cfg_schema_default();
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	assert_int_equal(cfg_load_string(c, "f.ini", "[policy.transfer]\nidle_threshold = 0.3\n", &e),
	                 KS_EINPUT);
	assert_string_equal(e.msg, "f.ini:2: [policy.transfer] idle_threshold: unknown key (did "
	                           "you mean 'idle_threshold' in [network]?)");
	assert_int_equal(cfg_set(c, "policy.admission.slo_ttft_ms=100", &e), KS_EINPUT);
	assert_string_equal(e.msg, "--set: [policy.admission] slo_ttft_ms: unknown key (did you "
	                           "mean 'ttft_ms' in [slo]?)");
	assert_int_equal(cfg_set(c, "network.record_flows=false", &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[network] record_flows: unknown key"));
	cfg_free(c);
	cfg_schema_free(s);
}

static const cfg_tkey_t late_keys[] = {
    {{"late", "knob", CFG_INT, "12", 0, 99, NULL, "", "added after the config", NULL},
     CFG_AT(U32, typed_t, nodes)},
};

/* Makes the heap ([heap] in /proc/self/maps) read-only, reading the map
 * without allocating; 0 or -1. */
static int heap_readonly(void)
{
	static char maps[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, maps, sizeof maps - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	maps[n] = '\0';
	for (char *l = maps; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		unsigned long lo, hi;
		if (strstr(l, "[heap]") && sscanf(l, "%lx-%lx", &lo, &hi) == 2)
			return mprotect((void *)lo, hi - lo, PROT_READ);
		if (nl)
			*nl = '\n';
	}
	return -1;
}

/* A key added to the schema after the config was made (a plugin's) reads as
 * its default, and reading never writes: a child process reads the config
 * with its whole heap read-only (a write would kill it), and the digest is
 * the same before and after. */
static void test_const_config_reads_do_not_write(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_set(f->c, "t.nodes=5", &f->e), 0);
	assert_int_equal(cfg_schema_add_typed(f->s, late_keys, 1), 0);
	const cfg_t *c = f->c;
	char d1[65], d2[65];
	cfg_digest(c, d1);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		typed_t t = {0};
		err_t e = {0};
		/* under a sanitizer's allocator there is no [heap] mapping to
		 * protect: the reads still run, and the digests below still
		 * catch a change */
		(void)heap_readonly();
		int ok = cfg_int(c, "late", "knob") == 12 && cfg_int(c, "t", "nodes") == 5 &&
		         !strcmp(cfg_origin(c, "late", "knob"), "default") &&
		         !strcmp(cfg_str(c, "t", "label"), "x") &&
		         cfg_fill(c, late_keys, 1, &t, &e) == 0 && t.nodes == 12;
		_exit(ok ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st)); /* not killed by a write to the heap */
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(cfg_int(c, "late", "knob"), 12);
	cfg_digest(c, d2);
	assert_string_equal(d1, d2);
	/* the text covers the late key with its default */
	char *text = cfg_text(c);
	assert_non_null(strstr(text, "[late]\n# added after the config\nknob = 12\n"));
	free(text);
	/* a clone holds the late key as its own */
	cfg_t *k = cfg_clone(c);
	assert_int_equal(cfg_set(k, "late.knob=13", &f->e), 0);
	assert_int_equal(cfg_int(k, "late", "knob"), 13);
	assert_int_equal(cfg_int(c, "late", "knob"), 12);
	cfg_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fill_every_kind_from_loaded_values, setup, teardown),
	    cmocka_unit_test(test_fill_defaults_without_a_config),
	    cmocka_unit_test_setup_teardown(test_enum_choices_come_from_the_map, setup, teardown),
	    cmocka_unit_test(test_enum_name_is_the_maps_name_of_a_value),
	    cmocka_unit_test(test_map_and_choices_together_are_refused),
	    cmocka_unit_test_setup_teardown(test_range_errors_name_file_and_line, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_alias_is_accepted_and_sets_its_key, setup, teardown),
	    cmocka_unit_test(test_removed_keys_are_rejected_with_the_key_to_use),
	    cmocka_unit_test_setup_teardown(test_const_config_reads_do_not_write, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
