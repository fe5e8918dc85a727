/* tr_csv — line reading (plain or gzip), CSV field splitting and strict
 * number parsing for the trace readers. One reusable line buffer plus a
 * fixed input chunk: memory is the longest line + LINES_CHUNK. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "traces/tr_int.h"

/* Decompressed bytes per gzread, and zlib's own input buffer: large enough
 * that a plain file is read in few syscalls (gzread copies big requests
 * straight from the file when it is not compressed). Own choice. */
#define LINES_CHUNK (1u << 16)

/* The text tr_lines_verify kept: one file version's whole decompressed
 * contents, shared by the readers that open it (refs: one for the keeper
 * slot while it is set, one per reader). */
struct tr_kept {
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	char *text;
	size_t len;
	unsigned refs;
};
static struct tr_kept *kept_slot;
static size_t kept_max = TR_KEPT_MAX;

void tr_lines_set_kept_max(size_t bytes)
{
	kept_max = bytes ? bytes : TR_KEPT_MAX;
}

static void kept_unref(struct tr_kept *k)
{
	if (k && !--k->refs) {
		free(k->path);
		free(k->text);
		free(k);
	}
}

void tr_lines_keep_drop(void)
{
	kept_unref(kept_slot);
	kept_slot = NULL;
}

static int same_version(const struct tr_kept *k, const char *path, const struct stat *sb)
{
	return k && !strcmp(k->path, path) && k->dev == sb->st_dev && k->ino == sb->st_ino &&
	       k->size == sb->st_size && k->mtime.tv_sec == sb->st_mtim.tv_sec &&
	       k->mtime.tv_nsec == sb->st_mtim.tv_nsec;
}

int tr_lines_open(tr_lines_t *l, const char *path, err_t *e)
{
	memset(l, 0, sizeof *l);
	l->path = path;
	l->max_line = TR_MAX_LINE_DEFAULT;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, err_path_code(errno), "%s: cannot open: %s", path,
		               strerror(errno));
	struct stat sb;
	int have = !fstat(fd, &sb);
	if (have && S_ISDIR(sb.st_mode)) {
		close(fd);
		return err_set(e, KS_EINPUT, "%s: cannot open: %s", path, strerror(EISDIR));
	}
	if (have && same_version(kept_slot, path, &sb)) {
		/* the whole text is one chunk, and the end of file follows it */
		close(fd);
		l->kept = kept_slot;
		l->kept->refs++;
		l->in = l->kept->text;
		l->in_len = l->kept->len;
		l->eof = 1;
		return 0;
	}
	if (!(l->in = malloc(LINES_CHUNK)) || !(l->gz = gzdopen(fd, "rb"))) {
		close(fd);
		free(l->in);
		l->in = NULL;
		return err_set(e, KS_ENOMEM, "%s: out of memory", path);
	}
	gzbuffer(l->gz, LINES_CHUNK);
	return 0;
}

/* Refills l->in: 1 data, 0 clean end of file, <0 error. zlib reports a
 * stream that stops before its trailer as Z_BUF_ERROR ("unexpected end of
 * file") and bad deflate data or a CRC mismatch as Z_DATA_ERROR (zlib.h,
 * gzread and gzerror). */
static int lines_fill(tr_lines_t *l, err_t *e)
{
	if (l->eof)
		return 0;
	errno = 0;
	int n = gzread(l->gz, l->in, LINES_CHUNK);
	if (n > 0) {
		l->in_pos = 0;
		l->in_len = (size_t)n;
		return 1;
	}
	int zerr;
	const char *msg = gzerror(l->gz, &zerr);
	const char *why = strstr(msg, ">: "); /* gzdopen names the file "<fd:N>" */
	why = why ? why + 3 : msg;
	unsigned long long at = (unsigned long long)l->line + 1;
	switch (zerr) {
	case Z_OK:
		l->eof = 1;
		return 0;
	case Z_BUF_ERROR:
		return err_set(e, KS_EINPUT,
		               "%s:%llu: gzip: truncated file (the compressed stream ends "
		               "before its trailer, after %llu complete lines)",
		               l->path, at, (unsigned long long)l->line);
	case Z_DATA_ERROR:
		return err_set(e, KS_EINPUT, "%s:%llu: gzip: corrupt compressed data (%s)", l->path,
		               at, why);
	case Z_MEM_ERROR:
		return err_set(e, KS_ENOMEM, "%s: out of memory", l->path);
	default:
		return err_set(e, KS_EIO, "%s:%llu: read error: %s", l->path, at,
		               zerr == Z_ERRNO ? strerror(errno) : why);
	}
}

/* The line after l->line passed l->max_line bytes (without its newline). */
static int line_too_long(const tr_lines_t *l, err_t *e)
{
	return err_set(e, KS_EINPUT,
	               "%s:%llu: [trace] max_line_bytes: line longer than %llu bytes (a file "
	               "without newlines, or rows longer than expected: raise "
	               "trace.max_line_bytes)",
	               l->path, (unsigned long long)l->line + 1, (unsigned long long)l->max_line);
}

int tr_lines_next(tr_lines_t *l, err_t *e)
{
	size_t n = 0;
	int newline = 0;
	while (!newline) {
		if (l->in_pos == l->in_len) {
			int rc = lines_fill(l, e);
			if (rc < 0)
				return rc;
			if (rc == 0)
				break;
		}
		const char *p = l->in + l->in_pos;
		size_t avail = l->in_len - l->in_pos;
		const char *q = memchr(p, '\n', avail);
		size_t take = q ? (size_t)(q - p) + 1 : avail;
		if ((uint64_t)(n + take - (q != NULL)) > l->max_line)
			return line_too_long(l, e);
		if (VEC_GROW(l->buf, l->cap, n + take + 1, 16))
			return err_set(e, KS_ENOMEM, "%s: out of memory", l->path);
		memcpy(l->buf + n, p, take);
		n += take;
		l->in_pos += take;
		newline = q != NULL;
	}
	if (n == 0)
		return 0;
	l->line++;
	l->bytes += (uint64_t)n;
	l->no_newline = !newline;
	if (newline)
		n--;
	if (n > 0 && l->buf[n - 1] == '\r')
		n--;
	l->buf[n] = '\0';
	l->len = n;
	if (memchr(l->buf, '\0', n))
		return err_set(e, KS_EINPUT, "%s:%llu: line: contains a NUL byte (binary file?)",
		               l->path, (unsigned long long)l->line);
	return 1;
}

static int drop_text(char **text, size_t *len)
{
	free(*text);
	*text = NULL;
	*len = 0;
	return 0;
}

/* Inflates l (a gzip stream) to its end, counting its lines. The text goes
 * to *text (*len bytes) while it stays within kept_max bytes and its lines
 * within l->max_line; past either, or when memory runs out, it is dropped
 * (*text NULL) and only counted: the reader inflates it again and refuses
 * the long line in its place, after the rows before it, as in a plain file.
 * Returns lines_fill's 0 or error (*text NULL then too). */
static int inflate_all(tr_lines_t *l, char **text, size_t *len, err_t *e)
{
	size_t cap = 0;
	uint64_t cur = 0; /* bytes of the line not yet ended */
	int keep = 1, rc;
	*text = NULL;
	*len = 0;
	for (;;) {
		if (keep && (*len + LINES_CHUNK > kept_max ||
		             VEC_GROW(*text, cap, *len + LINES_CHUNK, LINES_CHUNK)))
			keep = drop_text(text, len);
		char *chunk = l->in;
		if (keep) /* inflate straight into the kept text */
			l->in = *text + *len;
		rc = lines_fill(l, e);
		const char *p = l->in, *end = p + (rc > 0 ? l->in_len : 0), *q;
		l->in = chunk;
		int too_long = 0; /* the chunk lies in *text: dropped after the scan */
		for (; rc > 0; l->line++, cur = 0, p = q + 1) {
			q = memchr(p, '\n', (size_t)(end - p));
			cur += (uint64_t)((q ? q : end) - p);
			too_long |= cur > l->max_line;
			if (!q)
				break;
		}
		if (rc < 0)
			drop_text(text, len);
		if (rc <= 0)
			return rc;
		if (keep && too_long)
			keep = drop_text(text, len);
		else if (keep)
			*len += l->in_len;
		l->in_pos = l->in_len;
	}
}

/* zlib's gzread takes what follows a gzip member for the end of the file
 * unless it is another member (RFC 1952 2.2: a file is a series of
 * members), so bytes appended to a trace would pass unseen. Walks the
 * members of path with inflate itself (output discarded): 0 when the file
 * is members only, else "PATH:LINE: gzip: N bytes after the end of the
 * compressed stream" (line: past the last line read, as lines_fill says). */
static int gz_members_only(const char *path, unsigned long long line, err_t *e)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_set(e, err_path_code(errno), "%s: cannot open: %s", path,
		               strerror(errno));
	unsigned char *in = malloc(LINES_CHUNK), *out = malloc(LINES_CHUNK);
	z_stream z = {0};
	int rc = 0, zr = Z_OK, init = in && out && inflateInit2(&z, 16 + MAX_WBITS) == Z_OK;
	if (!init)
		rc = err_set(e, KS_ENOMEM, "%s: out of memory", path);
	uint64_t at = 0; /* file offset of z.next_in */
	while (!rc) {
		if (!z.avail_in) {
			size_t got = fread(in, 1, LINES_CHUNK, f);
			if (!got)
				break; /* the end: after a whole member (lines_fill saw to that) */
			z.next_in = in;
			z.avail_in = (uInt)got;
		}
		if (zr == Z_STREAM_END) { /* between members: another, or stray bytes */
			if (z.next_in[0] != 0x1f || (z.avail_in > 1 && z.next_in[1] != 0x8b)) {
				long size = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
				rc = err_set(
				    e, KS_EINPUT,
				    "%s:%llu: gzip: %lld bytes after the end of the compressed "
				    "stream",
				    path, line, size < 0 ? -1LL : (long long)(size - (long)at));
				break;
			}
			inflateReset(&z);
		}
		uInt before = z.avail_in;
		z.next_out = out;
		z.avail_out = LINES_CHUNK;
		zr = inflate(&z, Z_NO_FLUSH);
		at += before - z.avail_in;
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			break; /* corrupt data: lines_fill has said so already */
	}
	if (init)
		inflateEnd(&z);
	free(in);
	free(out);
	fclose(f);
	return rc;
}

int tr_lines_verify(const char *path, uint64_t max_line, err_t *e)
{
	struct stat sb, now;
	if (stat(path, &sb) || !S_ISREG(sb.st_mode))
		return 0; /* a pipe read twice would lose its data; open reports the rest */
	if (same_version(kept_slot, path, &sb))
		return 0; /* verified already, and unchanged since */
	/* zlib tells gzip from plain text by the magic bytes 1f 8b (RFC 1952
	 * 2.3.1); a plain file needs no zlib stream and its buffers */
	unsigned char magic[2] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : read(fd, magic, 2);
	if (fd >= 0)
		close(fd);
	if (got == 2 && (magic[0] != 0x1f || magic[1] != 0x8b))
		return 0;
	tr_lines_t l;
	int rc = tr_lines_open(&l, path, e);
	if (rc)
		return rc;
	if (max_line)
		l.max_line = max_line;
	char *text = NULL;
	size_t len = 0;
	if (!gzdirect(l.gz))
		rc = inflate_all(&l, &text, &len, e);
	if (!rc && !gzdirect(l.gz) && (rc = gz_members_only(path, l.line + 1, e))) {
		free(text);
		text = NULL;
	}
	tr_lines_close(&l);
	/* kept only if the file is still the version that was read */
	struct tr_kept *k = text ? calloc(1, sizeof *k) : NULL;
	if (k && (k->path = strdup(path)) && !stat(path, &now)) {
		k->dev = sb.st_dev;
		k->ino = sb.st_ino;
		k->size = sb.st_size;
		k->mtime = sb.st_mtim;
		if (same_version(k, path, &now)) {
			k->text = text;
			k->len = len;
			k->refs = 1;
			tr_lines_keep_drop();
			kept_slot = k;
			return rc;
		}
	}
	if (k)
		free(k->path);
	free(k);
	free(text);
	return rc;
}

void tr_lines_close(tr_lines_t *l)
{
	if (l->gz)
		gzclose(l->gz);
	free(l->buf);
	if (l->kept)
		kept_unref(l->kept);
	else
		free(l->in);
	memset(l, 0, sizeof *l);
}

void *tr_lines_src_new(size_t size, size_t lines_off, const char *path, int *rc, err_t *e)
{
	char *s = calloc(1, size);
	if (!s) {
		*rc = err_set(e, KS_ENOMEM, "out of memory");
		return NULL;
	}
	if ((*rc = tr_lines_open((tr_lines_t *)(void *)(s + lines_off), path, e))) {
		free(s);
		return NULL;
	}
	return s;
}

int tr_csv_split(tr_lines_t *l, tr_field_t *f, int max, err_t *e)
{
	char *p = l->buf, *end = l->buf + l->len;
	int n = 0;
	for (;;) {
		if (n == max)
			return n; /* extra columns are ignored */
		char *w = p, *start = p;
		if (p < end && *p == '"') {
			/* RFC 4180 quoted field: "" is a quote; unescape in place. */
			p++;
			for (;;) {
				if (p >= end)
					return err_set(e, KS_EINPUT,
					               "%s:%llu: field %d: unterminated quote",
					               l->path, (unsigned long long)l->line, n + 1);
				if (*p == '"') {
					if (p + 1 < end && p[1] == '"') {
						*w++ = '"';
						p += 2;
						continue;
					}
					p++;
					break;
				}
				*w++ = *p++;
			}
			if (p < end && *p != ',')
				return err_set(e, KS_EINPUT,
				               "%s:%llu: field %d: text after closing quote",
				               l->path, (unsigned long long)l->line, n + 1);
		} else {
			while (p < end && *p != ',')
				p++;
			w = p;
		}
		f[n].s = start;
		f[n].len = (size_t)(w - start);
		n++;
		if (p >= end) {
			*w = '\0';
			return n;
		}
		*w = '\0'; /* p points at the comma (w <= p) */
		p++;
	}
}

static const char *trim(const char *s, char *buf, size_t cap)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

int tr_parse_u32(const tr_lines_t *l, const char *name, const char *s, uint32_t max, uint32_t *out,
                 err_t *e)
{
	char buf[64];
	const char *t = trim(s, buf, sizeof buf);
	unsigned long long line = (unsigned long long)l->line;
	if (!*t)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: empty (expected a token count)", l->path,
		               line, name);
	/* Accept integral floats ("472.0") some exports write. */
	char *end;
	errno = 0;
	double v = strtod(t, &end);
	if (*end || end == t || isnan(v))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: '%s' is not a number", l->path, line,
		               name, t);
	if (v < 0)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: negative length %s", l->path, line, name,
		               t);
	if (v != floor(v))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: '%s' is not an integer", l->path, line,
		               name, t);
	if (v > (double)max || errno == ERANGE)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: %s out of range [0, %u]", l->path, line,
		               name, t, max);
	*out = (uint32_t)v;
	return 0;
}

int tr_parse_f64(const tr_lines_t *l, const char *name, const char *s, double *out, err_t *e)
{
	char buf[64];
	const char *t = trim(s, buf, sizeof buf);
	char *end;
	errno = 0;
	double v = strtod(t, &end);
	if (!*t || *end || end == t || !isfinite(v))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: '%s' is not a number", l->path,
		               (unsigned long long)l->line, name, t);
	*out = v;
	return 0;
}

int tr_seconds_ns(const tr_lines_t *l, const char *name, double s, int64_t *ns, err_t *e)
{
	/* < 4e9 s (epoch seconds up to 2096) keeps ns inside int64 and catches garbage. */
	if (!(s >= 0 && s < 4e9))
		return err_set(e, KS_EINPUT, "%s:%llu: %s: %.17g s out of range [0, 4e9)", l->path,
		               (unsigned long long)l->line, name, s);
	*ns = (int64_t)llround(s * 1e9);
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil, http://howardhinnant.github.io/date_algorithms.html). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char **p, int n, int *v)
{
	int x = 0;
	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		x = x * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*v = x;
	return 0;
}

int tr_parse_datetime(const char *s, int64_t *ns)
{
	const char *p = s;
	int Y, M, D, h, m, sec;
	while (*p == ' ')
		p++;
	if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
	    digits(&p, 2, &D) || (*p != ' ' && *p != 'T'))
		return -1;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
	    digits(&p, 2, &sec))
		return -1;
	/* 1900..2200 keeps ns since the epoch inside int64 */
	if (Y < 1900 || Y > 2200 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 ||
	    sec > 60)
		return -1;
	/* a day the month does not have (2023-02-29, 04-31) would count on
	 * into the next month */
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
	if (D > mdays[M - 1] + (M == 2 && leap))
		return -2;
	int64_t frac = 0;
	if (*p == '.') {
		p++;
		int nd = 0;
		while (*p >= '0' && *p <= '9') {
			if (nd < 9) {
				frac = frac * 10 + (*p - '0');
				nd++;
			}
			p++;
		}
		if (nd == 0)
			return -1;
		for (; nd < 9; nd++)
			frac *= 10;
	}
	int64_t off = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh, om;
		p++;
		if (digits(&p, 2, &oh))
			return -1;
		if (*p == ':')
			p++;
		if (digits(&p, 2, &om) || oh > 23 || om > 59)
			return -1;
		off = sign * (oh * 3600 + om * 60);
	}
	while (*p == ' ')
		p++;
	if (*p)
		return -1;
	int64_t secs =
	    days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + m * 60 + sec - off;
	*ns = secs * 1000000000LL + frac;
	return 0;
}
