/*
 * pattern.c - compiled name patterns (pattern.h).
 */
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

/* Compiles text into p.  Returns 0, or -1 out of memory. */
static int compile(struct pattern *p, const char *text)
{
	const char *first, *last;

	p->len = strlen(text);
	p->text = malloc(p->len + 1);
	if (!p->text)
		return -1;
	memcpy(p->text, text, p->len + 1);
	first = strchr(text, '*');
	last = strrchr(text, '*');
	p->wild = first != NULL;
	p->prefix = first ? (size_t)(first - text) : p->len;
	p->suffix = last ? p->len - (size_t)(last - text) - 1 : 0;
	return 0;
}

int pattern_set_init(struct pattern_set *set, const char *const *texts,
		     size_t n)
{
	size_t i;

	memset(set, 0, sizeof(*set));
	set->items = calloc(n ? n : 1, sizeof(*set->items));
	if (!set->items)
		return -1;
	for (i = 0; i < n; i++) {
		const struct pattern *p = &set->items[i];
		unsigned char c;

		if (compile(&set->items[i], texts[i])) {
			pattern_set_release(set);
			return -1;
		}
		set->n++;
		c = (unsigned char)p->text[0];
		if (!p->prefix)
			set->any_first = true;
		else
			set->first[c >> 3] |= (unsigned char)(1u << (c & 7));
		if (p->prefix + p->suffix == 0 || !p->len)
			set->empty = true;
	}
	return 0;
}

int pattern_set_copy(struct pattern_set *dst, const struct pattern_set *src)
{
	const char **texts = calloc(src->n ? src->n : 1, sizeof(*texts));
	size_t i;
	int rc;

	if (!texts) {
		dst->items = NULL;
		dst->n = 0;
		return -1;
	}
	for (i = 0; i < src->n; i++)
		texts[i] = src->items[i].text;
	rc = pattern_set_init(dst, texts, src->n);
	free(texts);
	return rc;
}

void pattern_set_release(struct pattern_set *set)
{
	size_t i;

	for (i = 0; set->items && i < set->n; i++)
		free(set->items[i].text);
	free(set->items);
	memset(set, 0, sizeof(*set));
}

/*
 * Whether s[0..len) matches pat[0..plen), which starts and ends with `*`
 * or is empty: each run of literal bytes between stars is found leftmost
 * in turn, which is enough because a star absorbs whatever lies between
 * two runs.  Linear in len times the longest run.
 */
static bool match_middle(const char *pat, size_t plen, const char *s,
			 size_t len)
{
	size_t i = 0, pos = 0;

	while (i < plen) {
		size_t start, run;

		while (i < plen && pat[i] == '*')
			i++;
		start = i;
		while (i < plen && pat[i] != '*')
			i++;
		run = i - start;
		if (!run)
			continue;
		for (;;) {
			if (pos + run > len)
				return false;
			if (!memcmp(s + pos, pat + start, run))
				break;
			pos++;
		}
		pos += run;
	}
	return true;
}

bool pattern_matchn(const struct pattern *p, const char *s, size_t len)
{
	if (!p->wild)
		return len == p->len && !memcmp(s, p->text, len);
	if (len < p->prefix + p->suffix ||
	    memcmp(s, p->text, p->prefix) ||
	    memcmp(s + len - p->suffix, p->text + p->len - p->suffix,
		   p->suffix))
		return false;
	return match_middle(p->text + p->prefix,
			    p->len - p->prefix - p->suffix, s + p->prefix,
			    len - p->prefix - p->suffix);
}

long pattern_set_findn(const struct pattern_set *set, const char *s,
		       size_t len)
{
	size_t i;

	if (!len ? !set->empty :
	    !set->any_first && !(set->first[(unsigned char)s[0] >> 3] &
				 (1u << ((unsigned char)s[0] & 7))))
		return -1;
	for (i = 0; i < set->n; i++)
		if (pattern_matchn(&set->items[i], s, len))
			return (long)i;
	return -1;
}

bool pattern_is_simple(const struct pattern *p)
{
	return !p->wild || (p->prefix == p->len - 1);
}
