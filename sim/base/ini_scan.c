/* ini_scan — INI text line by line through libinih, with line numbers, and
 * the "did you mean" of unknown sections and keys (see ini_scan.h).
 */
#include "sim/base/ini_scan.h"

#include "sim/base/cfg_int.h"
#include "sim/base/near.h"

#include <ctype.h>
#include <ini.h>
#include <stdlib.h>
#include <string.h>

/* ---- did you mean ----------------------------------------------------- */

void ini_suggest_section(const ini_names_t *k, const char *sec, char *out, size_t len)
{
	size_t best = (size_t)-1;
	const char *bs = NULL;
	for (size_t i = 0; i < k->n; i++) {
		const char *s = k->key(k->set, i)->section;
		size_t d = near_distance(sec, s);
		if (d < best) {
			best = d;
			bs = s;
		}
	}
	if (bs && near_close(sec, best))
		snprintf(out, len, " (did you mean '%s'?)", bs);
	else
		out[0] = '\0';
}

/* A key of another section that name may stand for, counting the section
 * in the name ("slo_ttft_ms" for [slo] ttft_ms, a key that moved there):
 * its name with *sec_out set, or NULL when none is close. */
static const char *suggest_elsewhere(const ini_names_t *ks, const char *sec, const char *name,
                                     const char **sec_out)
{
	size_t best = (size_t)-1;
	const char *bn = NULL;
	for (size_t i = 0; i < ks->n; i++) {
		const cfg_key_t *k = ks->key(ks->set, i);
		if (!strcmp(k->section, sec))
			continue;
		const char *last = strrchr(k->section, '.');
		char joined[2 * CFG_NAME_MAX + 2];
		snprintf(joined, sizeof joined, "%s_%s", last ? last + 1 : k->section, k->name);
		size_t d = near_distance(name, k->name), dj = near_distance(name, joined);
		d = dj < d ? dj : d;
		if (d < best) {
			best = d;
			bn = k->name;
			*sec_out = k->section;
		}
	}
	return bn && near_close(name, best) ? bn : NULL;
}

void ini_suggest_key(const ini_names_t *ks, const char *sec, const char *name, char *out,
                     size_t len)
{
	size_t best = (size_t)-1;
	const char *bn = NULL, *other = NULL;
	for (size_t i = 0; i < ks->n; i++) {
		const cfg_key_t *k = ks->key(ks->set, i);
		if (strcmp(k->section, sec)) {
			if (!other && !strcmp(k->name, name))
				other = k->section;
			continue;
		}
		size_t d = near_distance(name, k->name);
		if (d < best) {
			best = d;
			bn = k->name;
		}
	}
	if (bn && near_close(name, best))
		snprintf(out, len, " (did you mean '%s'?)", bn);
	else if (other)
		snprintf(out, len, " (did you mean '%s' in [%s]?)", name, other);
	else if ((bn = suggest_elsewhere(ks, sec, name, &other)))
		snprintf(out, len, " (did you mean '%s' in [%s]?)", bn, other);
	else
		out[0] = '\0';
}

/* ---- the reader ------------------------------------------------------- */

typedef struct scan {
	const char *origin;
	const ini_scan_ops_t *ops;
	void *user;
	const char *p; /* next unread byte of the text */
	int line;      /* line number of the line last handed to inih */
	err_t *e;
	int err_line; /* line of the first error found by us, 0 if none */
	int code;
	char section[CFG_NAME_MAX + 1]; /* current section, as inih keeps it */
} scan_t;

/* Records the first error, whose reason is in s->e, at the current line;
 * 0 for inih (the line failed). */
static int scan_fail(scan_t *s, int code)
{
	err_prefix(s->e, "%s:%d", s->origin, s->line);
	s->err_line = s->line;
	s->code = code;
	return 0;
}

static int scan_key(void *user, const char *section, const char *name, const char *value)
{
	scan_t *s = user;
	if (s->err_line)
		return 1; /* report only the first error */
	if (!*section) {
		err_set(s->e, KS_EINPUT, "%s: key outside any [section]", name);
		return scan_fail(s, KS_EINPUT);
	}
	int rc = s->ops->key ? s->ops->key(s->user, section, name, value, s->line, s->e) : 0;
	return rc ? scan_fail(s, rc) : 1;
}

/* A "key = value" line too long for inih's buffer (long paths), split the
 * way inih splits: at the first '=' or ':', blanks stripped, an inline
 * comment starting at a ';' after a blank. */
static void long_line(scan_t *s, const char *text, size_t len)
{
	char *l = malloc(len + 1);
	if (!l) {
		err_set(s->e, KS_ENOMEM, "out of memory");
		scan_fail(s, KS_ENOMEM);
		return;
	}
	memcpy(l, text, len);
	l[len] = '\0';
	for (char *c = l + 1; *c; c++)
		if (*c == ';' && isspace((unsigned char)c[-1])) {
			*c = '\0';
			break;
		}
	char *eq = l + strcspn(l, "=:");
	if (*l == '[' || !*eq) {
		err_set(s->e, KS_EINPUT,
		        "malformed line (expected '[section]', 'key = value' or a comment)");
		scan_fail(s, KS_EINPUT);
		free(l);
		return;
	}
	*eq = '\0';
	char *v = eq + 1, *end;
	while (isspace((unsigned char)*v))
		v++;
	for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]);)
		*--end = '\0';
	for (end = eq; end > l && isspace((unsigned char)end[-1]);)
		*--end = '\0';
	scan_key(s, s->section, l, v);
	free(l);
}

/* A section header: kept as inih keeps it, and reported. */
static void scan_header(scan_t *s, const char *str)
{
	/* Same section extent as inih: up to the first ']'. */
	const char *end = strchr(str + 1, ']');
	if (!end)
		return; /* inih reports the line */
	char sec[256];
	size_t l = (size_t)(end - str - 1);
	if (l >= sizeof sec)
		l = sizeof sec - 1;
	memcpy(sec, str + 1, l);
	sec[l] = '\0';
	size_t sl = l < sizeof s->section - 1 ? l : sizeof s->section - 1;
	memcpy(s->section, sec, sl);
	s->section[sl] = '\0';
	int rc = !s->err_line && s->ops->section ? s->ops->section(s->user, sec, s->line, s->e) : 0;
	if (rc)
		scan_fail(s, rc);
}

/* fgets-style reader for ini_parse_stream: one line per call, so s->line is
 * the line number of whatever inih reports next. */
static char *scan_line(char *str, int num, void *stream)
{
	scan_t *s = stream;
	if (!*s->p)
		return NULL;
	const char *nl = strchr(s->p, '\n');
	size_t len = nl ? (size_t)(nl - s->p) + 1 : strlen(s->p);
	const char *t = s->p;
	s->p += len;
	s->line++;
	if (s->line == 1 && len >= 3 && !memcmp(t, "\xEF\xBB\xBF", 3)) {
		t += 3; /* UTF-8 byte-order mark */
		len -= 3;
	}
	/* inih's lskip: any isspace() byte, not only blanks (so a long line and
	 * a short one start at the same place) */
	while (len && *t != '\n' && isspace((unsigned char)*t)) {
		t++;
		len--;
	}
	if ((int)len > num - 2) {
		/* Longer than inih's line buffer: tokenise it here, by inih's
		 * rules, and hand inih an empty line instead. */
		if (*t != ';' && *t != '#' && !s->err_line)
			long_line(s, t, len);
		snprintf(str, (size_t)num, "\n");
		return str;
	}
	memcpy(str, t, len);
	str[len] = '\0';
	if (*str == '[')
		scan_header(s, str);
	return str;
}

/* The text of line n (1-based) for describing a syntax error. */
static void line_text(const char *text, int n, char *out, size_t len)
{
	for (int i = 1; i < n && text; i++) {
		text = strchr(text, '\n');
		if (text)
			text++;
	}
	out[0] = '\0';
	if (!text)
		return;
	while (*text == ' ' || *text == '\t')
		text++;
	size_t l = strcspn(text, "\r\n");
	if (l >= len)
		l = len - 1;
	memcpy(out, text, l);
	out[l] = '\0';
}

int ini_scan(const char *origin, const char *text, const ini_scan_ops_t *ops, void *user,
             err_t *e)
{
	scan_t s = {.origin = origin, .ops = ops, .user = user, .p = text, .e = e};
	int r = ini_parse_stream(scan_line, &s, scan_key, &s);
	if (r == -2 || r == -1)
		return err_set(e, KS_ENOMEM, "%s: out of memory", origin);
	if (r > 0 && (!s.err_line || r < s.err_line)) {
		/* inih found a line it cannot tokenise before any error of ours. */
		char l[128];
		line_text(text, r, l, sizeof l);
		if (l[0] == '[')
			return err_set(e, KS_EINPUT, "%s:%d: section header without ']': '%s'",
			               origin, r, l);
		return err_set(e, KS_EINPUT,
		               "%s:%d: malformed line (expected '[section]', 'key = value' or a "
		               "comment): '%s'",
		               origin, r, l);
	}
	return s.err_line ? s.code : 0;
}

int ini_file_parse(const char *path, file_parse_fn parse, void *obj, err_t *e)
{
	char *buf;
	size_t len;
	if (file_read_all(path, &buf, &len, e))
		return e->code;
	int rc;
	if (memchr(buf, '\0', len)) {
		int line = 1;
		for (const char *q = buf; *q; q++)
			line += *q == '\n';
		rc = err_set(e, KS_EINPUT, "%s:%d: NUL byte in a text file", path, line);
	} else {
		rc = parse(obj, path, buf, e);
	}
	free(buf);
	return rc;
}
