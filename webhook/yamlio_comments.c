/*
 * yamlio_comments.c - the comment lines of a changed value put back into
 * the value written anew (yamlio_keep_comments() in yamlio.h).
 *
 * The written value is block style with one member or item per line and
 * no scalar over two lines, so a comment line fits between any two of its
 * lines.  Keys keep their order and the policy adds members last, so a
 * forward search for the key of the line a comment stood before finds
 * where that line went.
 */
#include <stdbool.h>
#include <string.h>

#include "yamlio.h"

/* One line: [s, e), e at its '\n' or at the end. */
struct line {
	const char *s, *e;
};

static struct line line_at(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return (struct line){ p, nl ? nl : end };
}

/* The line without its indent, its "- " item marks and its end spaces. */
static struct line trimmed(struct line l)
{
	for (;;) {
		while (l.s < l.e && (*l.s == ' ' || *l.s == '\t'))
			l.s++;
		if (l.e - l.s >= 2 && l.s[0] == '-' &&
		    (l.s[1] == ' ' || l.s[1] == '\t'))
			l.s++;
		else
			break;
	}
	while (l.e > l.s && (l.e[-1] == ' ' || l.e[-1] == '\t' ||
			     l.e[-1] == '\r'))
		l.e--;
	return l;
}

/* A line that holds only a comment ("- # x" holds an item too). */
static bool is_comment(struct line l)
{
	while (l.s < l.e && (*l.s == ' ' || *l.s == '\t'))
		l.s++;
	return l.s < l.e && *l.s == '#';
}

static bool is_blank(struct line l)
{
	l = trimmed(l);
	return l.s == l.e;
}

/*
 * What a line is found by: its key with the colon ("name:") when it is a
 * member written plain, else its whole trimmed text.
 */
static struct line key_of(struct line l)
{
	const char *p;

	l = trimmed(l);
	if (l.s < l.e && (*l.s == '"' || *l.s == '\''))
		return l;
	for (p = l.s; p < l.e; p++)
		if (*p == ':' && (p + 1 == l.e || p[1] == ' ' || p[1] == '\t'))
			return (struct line){ l.s, p + 1 };
	return l;
}

static bool same(struct line a, struct line b)
{
	return a.e - a.s == b.e - b.s && !memcmp(a.s, b.s, (size_t)(a.e - a.s));
}

/* Whether offset at of in lies inside one of d's scalars over lines. */
static bool in_scalar(const struct yamlio_doc *d, size_t at, size_t *next)
{
	while (*next < d->nscalars && d->scalars[*next][1] <= at)
		(*next)++;
	return *next < d->nscalars && d->scalars[*next][0] < at;
}

/*
 * Appends the lines of group, each with its newline.  A tab may indent a
 * comment inside a flow collection but not at the start of a block line:
 * the indent is written in spaces, and a line of white space alone empty.
 */
static void add_group(struct buf *b, struct line group)
{
	const char *p = group.s;

	while (p <= group.e) {
		struct line l = line_at(p, group.e);
		const char *t = l.s;

		while (t < l.e && (*t == ' ' || *t == '\t'))
			t++;
		if (t < l.e) {
			buf_addf(b, "%*s", (int)(t - l.s), "");
			buf_addn(b, t, (size_t)(l.e - t));
		}
		buf_add(b, "\n");
		if (l.e == group.e)
			break;
		p = l.e + 1;
	}
}

void yamlio_keep_comments(struct buf *b, const char *in,
			  const struct yamlio_doc *d, const char *dumped,
			  size_t dlen)
{
	const char *end = in + d->content_end, *p = in + d->content_start;
	const char *out = dumped, *out_end = dumped + dlen;
	size_t scalar = 0;

	if (d->scalars_lost) {
		buf_addn(b, dumped, dlen);
		return;
	}
	while (p < end) {
		struct line l = line_at(p, end), group, key, o;
		const char *q, *at;

		if (!is_comment(l) || in_scalar(d, (size_t)(l.s - in), &scalar)) {
			p = l.e < end ? l.e + 1 : end;
			continue;
		}
		/* A group: comment lines, blank lines between them. */
		group = l;
		for (q = l.e < end ? l.e + 1 : end; q < end;) {
			struct line n = line_at(q, end);

			if (is_comment(n))
				group.e = n.e;
			else if (!is_blank(n))
				break;
			q = n.e < end ? n.e + 1 : end;
		}
		/* The line it stood before, found in what was written. */
		at = out;
		if (q < end) {
			key = key_of(line_at(q, end));
			for (at = out; at < out_end;) {
				o = line_at(at, out_end);
				if (same(key_of(o), key))
					break;
				at = o.e < out_end ? o.e + 1 : out_end;
			}
			if (at == out_end)
				at = out;
		} else {
			at = out_end;
		}
		buf_addn(b, out, (size_t)(at - out));
		if (at > dumped && at[-1] != '\n')
			buf_add(b, "\n");
		add_group(b, group);
		out = at;
		p = q;
	}
	buf_addn(b, out, (size_t)(out_end - out));
}
