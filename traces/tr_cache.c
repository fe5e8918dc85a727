/* tr_cache — what a trace file costs to read, paid once per file version:
 * the per-user cache directory, the identity of one version of a file, and
 * the parsed-request cache (tr_int.h; the contract is in tr.h).
 *
 * An entry holds exactly what tr_next returned for one (file version,
 * reader options, simulated block size, seed, kvsim binary), plus the
 * reader's end state. Its name hashes what stays the same across file
 * versions and builds (path, options, block size, seed), so a new version
 * or build replaces the entry instead of adding one. Layout: a header
 * (magic, version, key digest, counts, a checksum of the rest), n_req fixed
 * records, then every record's block ids in order, all host-endian (a
 * cache is never shared between machines). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/file.h"
#include "sim/base/rng.h"
#include "traces/tr_int.h"

#define TRC_MAGIC "kvsimtrc"
/* Bump whenever tr_next's output for the same input could change in a way
 * the binary identity would not catch (it catches every rebuild). */
#define TRC_VERSION 2u
/* Past this a trace is not recorded (own choice: a cache must not double a
 * long sweep's memory; the Bursted-ART windows take 8 MB each). */
#define TRC_MAX_BYTES (512u << 20)
#define TRC_RACY_NS 2000000000LL /* as the digest cache: see tr.h */
/* Entries past this many bytes in all are removed, oldest written first,
 * before a new one is written (own choice: a few sweeps' traces, e.g. 80
 * of the Mooncake conversation trace's 12 MB entries). */
#define TRC_DIR_MAX_BYTES (1ULL << 30)

static int cache_on = 1;
static uint64_t dir_max = TRC_DIR_MAX_BYTES;

void tr_cache_set_dir_max(uint64_t bytes)
{
	dir_max = bytes ? bytes : TRC_DIR_MAX_BYTES;
}

void tr_cache_set_enabled(int on)
{
	cache_on = on != 0;
}

int tr_cache_enabled(void)
{
	return cache_on;
}

int tr_cache_dir(char *buf, size_t n, int mkdirs)
{
	const char *k = getenv("KVSIM_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	int w;
	if (k && *k)
		w = snprintf(buf, n, "%s", k);
	else if (x && x[0] == '/') /* the XDG spec ignores a relative XDG_CACHE_HOME */
		w = snprintf(buf, n, "%s/kvsim", x);
	else if (home && home[0] == '/')
		w = snprintf(buf, n, "%s/.cache/kvsim", home);
	else
		return 0;
	if (w <= 0 || (size_t)w >= n)
		return 0;
	if (mkdirs && !(k && *k)) { /* the XDG parent may not exist yet */
		char *slash = strrchr(buf, '/');
		*slash = 0;
		mkdir(buf, 0700);
		*slash = '/';
	}
	if (mkdirs)
		mkdir(buf, 0700);
	return 1;
}

int tr_file_identify(const char *path, tr_file_id_t *id, int *racy)
{
	struct stat st;
	memset(id, 0, sizeof *id);
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return -1;
	id->size = (uint64_t)st.st_size;
	id->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	id->dev = (uint64_t)st.st_dev;
	id->ino = (uint64_t)st.st_ino;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	*racy = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec - id->mtime_ns < TRC_RACY_NS;
	return 0;
}

/* ---- parsed-request cache ----------------------------------------------- */

typedef struct trc_hdr {
	char magic[8];
	uint32_t version, rec_size;
	uint8_t key[SHA256_DIGEST_SIZE];
	uint64_t n_req, n_blk;
	tr_cache_tail_t tail;
	uint64_t sum; /* payload_sum of the ids seeded with that of the records */
} trc_hdr_t;

typedef struct trc_rec {
	int64_t arrival_ns;
	uint32_t input_len, output_len, n_blocks, n_out_blocks;
	int32_t status;
	uint32_t pad;
	uint64_t session_id;
} trc_rec_t;

struct tr_cache {
	int hit; /* 1: serving a loaded entry; 0: recording (dead when rec_dead) */
	uint32_t S;
	char file[4200];
	uint8_t key[SHA256_DIGEST_SIZE];
	trc_hdr_t h;
	char *map; /* hit: the whole entry, mapped read-only */
	size_t map_len;
	const trc_rec_t *recs;
	const uint64_t *blk;
	uint64_t at, blk_at; /* next record, its first block */
	/* recording */
	trc_rec_t *rv;
	size_t rn, rcap;
	uint64_t *bv;
	size_t bn, bcap;
	int rec_dead;
};

/* The options' bytes with the pointers cleared (their strings go in as
 * text, the trace's path resolved so that every spelling of it shares one
 * entry): padding left by a hand-built struct can only cause a miss. */
static void hash_opts(struct sha256_ctx *c, const tr_opts_t *o)
{
	tr_opts_t k;
	memcpy(&k, o, sizeof k);
	k.path = k.in.path = k.out.path = NULL;
	k.in.load = k.out.load = NULL;
	k.spec_experiment = NULL; /* kind = spec is never cached (no trace to read) */
	sha256_update(c, sizeof k, (const uint8_t *)&k);
	char *real = o->path ? realpath(o->path, NULL) : NULL;
	const char *s[] = {real ? real : o->path, o->in.path, o->out.path};
	for (int i = 0; i < 3; i++)
		sha256_update(c, strlen(s[i] ? s[i] : "") + 1, (const uint8_t *)(s[i] ? s[i] : ""));
	free(real);
}

/* The running binary: any rebuild (reader code included) is another key. */
static int exe_identity(tr_file_id_t *id)
{
	int racy;
	return tr_file_identify("/proc/self/exe", id, &racy);
}

/* The payload checksum: four xxHash64-style lanes over 64-bit words (the
 * round of xxHash, Collet 2012), about 4x zlib's CRC-32 here; it only has
 * to catch a damaged or truncated file, not an adversary. n is a multiple
 * of 8 (records and ids are). */
static uint64_t sum_round(uint64_t h, uint64_t w)
{
	h += w * 0xc2b2ae3d27d4eb4fULL;
	h = h << 31 | h >> 33;
	return h * 0x9e3779b185ebca87ULL;
}

static uint64_t payload_sum(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t l[4] = {seed, seed + 1, seed + 2, seed + 3}, w;
	size_t i = 0;
	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			memcpy(&w, b + i + 8 * k, 8);
			l[k] = sum_round(l[k], w);
		}
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		l[0] = sum_round(l[0], w);
	}
	return rng_fmix64(l[0] ^ rng_fmix64(l[1] ^ rng_fmix64(l[2] ^ rng_fmix64(l[3] ^ n))));
}

/* Maps and checks the entry; 1 when it is this key's, intact. Mapped, not
 * read: the page cache's pages serve it without a copy. Entries are only
 * ever replaced by rename, never rewritten in place, so the mapping stays
 * whole while the run uses it. */
static int load_entry(tr_cache_t *c)
{
	int fd = open(c->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	trc_hdr_t *h = &c->h;
	int ok = fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof *h &&
		 read(fd, h, sizeof *h) == (ssize_t)sizeof *h &&
		 !memcmp(h->magic, TRC_MAGIC, 8) && h->version == TRC_VERSION &&
		 h->rec_size == sizeof(trc_rec_t) && !memcmp(h->key, c->key, sizeof c->key) &&
		 h->n_req <= TRC_MAX_BYTES / sizeof(trc_rec_t) &&
		 h->n_blk <= TRC_MAX_BYTES / sizeof(uint64_t) &&
		 (uint64_t)st.st_size ==
		     sizeof *h + h->n_req * sizeof(trc_rec_t) + h->n_blk * sizeof(uint64_t);
	if (ok) {
		c->map_len = (size_t)st.st_size;
		c->map = mmap(NULL, c->map_len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (c->map == MAP_FAILED) {
			c->map = NULL;
			ok = 0;
		}
	}
	close(fd);
	const char *pay = c->map + sizeof *h;
	size_t n = ok ? c->map_len - sizeof *h : 0;
	size_t rb = ok ? h->n_req * sizeof(trc_rec_t) : 0;
	if (ok && payload_sum(pay + rb, n - rb, payload_sum(pay, rb, 0)) != h->sum)
		ok = 0;
	c->recs = (const trc_rec_t *)pay;
	c->blk = (const uint64_t *)(pay + h->n_req * sizeof(trc_rec_t));
	uint64_t sum = 0; /* the records must account for every block, exactly */
	for (uint64_t i = 0; ok && i < h->n_req; i++)
		sum += (uint64_t)c->recs[i].n_blocks + c->recs[i].n_out_blocks;
	if (ok && sum != h->n_blk)
		ok = 0;
	if (!ok && c->map) {
		munmap(c->map, c->map_len);
		c->map = NULL;
	}
	return ok;
}

int tr_cache_open(const tr_opts_t *o, const char *path, uint32_t S, uint64_t seed,
		  tr_cache_t **out)
{
	*out = NULL;
	tr_file_id_t f, x;
	int racy;
	char dir[4096];
	if (!cache_on || o->in.kind == TR_DIST_EMPIRICAL || o->out.kind == TR_DIST_EMPIRICAL ||
	    tr_file_identify(path, &f, &racy) || racy || exe_identity(&x) ||
	    !tr_cache_dir(dir, sizeof dir, 0))
		return 0;
	tr_cache_t *c = calloc(1, sizeof *c);
	if (!c)
		return 0;
	c->S = S;
	struct sha256_ctx h;
	uint32_t v = TRC_VERSION;
	sha256_init(&h);
	sha256_update(&h, sizeof v, (const uint8_t *)&v);
	sha256_update(&h, sizeof S, (const uint8_t *)&S);
	sha256_update(&h, sizeof seed, (const uint8_t *)&seed);
	hash_opts(&h, o);
	struct sha256_ctx named = h; /* the name: what a new version or build keeps */
	uint8_t nd[SHA256_DIGEST_SIZE];
	sha256_digest(&named, sizeof nd, nd);
	sha256_update(&h, sizeof f, (const uint8_t *)&f);
	sha256_update(&h, sizeof x, (const uint8_t *)&x);
	sha256_digest(&h, sizeof c->key, c->key);
	int w = snprintf(c->file, sizeof c->file, "%s/trace-", dir);
	for (int i = 0; i < 12 && w > 0 && (size_t)w + 8 < sizeof c->file; i++)
		w += snprintf(c->file + w, sizeof c->file - (size_t)w, "%02x", nd[i]);
	if (w <= 0 || (size_t)w + 5 >= sizeof c->file) {
		free(c);
		return 0;
	}
	strcat(c->file, ".bin");
	c->hit = load_entry(c);
	*out = c;
	return c->hit;
}

const tr_cache_tail_t *tr_cache_tail(const tr_cache_t *c)
{
	return &c->h.tail;
}

int tr_cache_hit(const tr_cache_t *c)
{
	return c && c->hit;
}

int tr_cache_next(tr_cache_t *c, tr_request_t *q)
{
	if (c->at >= c->h.n_req)
		return 0;
	const trc_rec_t *r = &c->recs[c->at];
	*q = (tr_request_t){
	    .id = c->at,
	    .arrival_ns = r->arrival_ns,
	    .input_len = r->input_len,
	    .output_len = r->output_len,
	    .n_blocks = r->n_blocks,
	    .n_out_blocks = r->n_out_blocks,
	    .blocks = c->blk + c->blk_at,
	    .block_tokens = c->S,
	    .status = r->status,
	    .session_id = r->session_id,
	};
	c->at++;
	c->blk_at += (uint64_t)r->n_blocks + r->n_out_blocks;
	return 1;
}

double tr_cache_progress(const tr_cache_t *c)
{
	return c->h.n_req ? (double)c->at / (double)c->h.n_req : 1;
}

void tr_cache_put(tr_cache_t *c, const tr_request_t *q)
{
	if (!c || c->hit || c->rec_dead)
		return;
	size_t nb = (size_t)q->n_blocks + q->n_out_blocks;
	if ((c->rn + 1) * sizeof(trc_rec_t) + (c->bn + nb) * sizeof(uint64_t) > TRC_MAX_BYTES ||
	    VEC_GROW(c->rv, c->rcap, c->rn + 1, 1024) ||
	    VEC_GROW(c->bv, c->bcap, c->bn + nb, 1 << 16)) {
		c->rec_dead = 1;
		free(c->rv);
		free(c->bv);
		c->rv = NULL;
		c->bv = NULL;
		return;
	}
	c->rv[c->rn++] = (trc_rec_t){.arrival_ns = q->arrival_ns,
				     .input_len = q->input_len,
				     .output_len = q->output_len,
				     .n_blocks = q->n_blocks,
				     .n_out_blocks = q->n_out_blocks,
				     .status = q->status,
				     .session_id = q->session_id};
	if (nb)
		memcpy(c->bv + c->bn, q->blocks, nb * sizeof *c->bv);
	c->bn += nb;
}

/* Makes room for `need` more bytes under dir_max by removing
 * the oldest entries; only at a write, so a hit never scans the directory. */
static void prune(const char *dir, uint64_t need)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct old {
		char name[64];
		int64_t mtime_ns;
		uint64_t size;
	} *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = need;
	char p[4200];
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat st;
		if (strncmp(de->d_name, "trace-", 6) || len < 5 || len >= sizeof v->name ||
		    strcmp(de->d_name + len - 4, ".bin"))
			continue;
		int k = snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		if (k < 0 || (size_t)k >= sizeof p || stat(p, &st) || VEC_GROW(v, cap, n + 1, 16))
			continue;
		memcpy(v[n].name, de->d_name, len + 1); /* len < sizeof name: above */
		v[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
		v[n].size = (uint64_t)st.st_size;
		total += v[n++].size;
	}
	closedir(d);
	while (total > dir_max && n) {
		size_t o = 0;
		for (size_t i = 1; i < n; i++)
			if (v[i].mtime_ns < v[o].mtime_ns)
				o = i;
		int k = snprintf(p, sizeof p, "%s/%s", dir, v[o].name);
		if (k >= 0 && (size_t)k < sizeof p)
			unlink(p);
		total -= v[o].size;
		v[o] = v[--n];
	}
	free(v);
}

void tr_cache_finish(tr_cache_t *c, const tr_cache_tail_t *tail)
{
	char dir[4096], tmp[4300];
	if (!c || c->hit || c->rec_dead || !tr_cache_dir(dir, sizeof dir, 1))
		return;
	trc_hdr_t h = {.version = TRC_VERSION, .rec_size = sizeof(trc_rec_t),
		       .n_req = c->rn, .n_blk = c->bn, .tail = *tail};
	memcpy(h.magic, TRC_MAGIC, 8);
	memcpy(h.key, c->key, sizeof h.key);
	size_t rb = c->rn * sizeof *c->rv, bb = c->bn * sizeof *c->bv;
	h.sum = payload_sum(c->bv, bb, payload_sum(c->rv, rb, 0));
	prune(dir, sizeof h + rb + bb);
	/* a temporary name, then rename: readers see a whole entry or none (no
	 * fsync: a crash may leave a partial temporary file, never an entry) */
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", c->file, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	int bad = file_write_all(fd, &h, sizeof h) || file_write_all(fd, c->rv, rb) ||
		  file_write_all(fd, c->bv, bb);
	if (close(fd) || bad || rename(tmp, c->file))
		unlink(tmp); /* best effort: a cache that cannot be written costs a parse */
}

void tr_cache_free(tr_cache_t *c)
{
	if (!c)
		return;
	if (c->map)
		munmap(c->map, c->map_len);
	free(c->rv);
	free(c->bv);
	free(c);
}
