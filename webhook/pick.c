/*
 * pick.c - a selective JSON decoder (see pick.h).
 *
 * One pass over the text.  Each value is decoded in one of three modes,
 * chosen by the rule its parent hands down: built (a jansson value),
 * stubbed (checked, then an empty value of its type), or skipped (checked
 * only).  Built values are read by recursive descent (value(), object(),
 * array()), as deep as jansson reads; what is only checked, a skipped
 * value or a stub's content, is read by one loop, check(), with the open
 * containers as a stack of bits on the heap, so that no depth costs C
 * stack.  The checks are the same in every mode, so the mode changes what
 * is built and how deep it may be, never what else is accepted.
 *
 * Duplicate keys are found per object from a stack of the keys of the
 * objects being read: compared one by one while an object is small, and
 * sorted once at its end when it is large, so that no input costs more
 * than n log n.  Objects deeper than JSON_PARSER_MAX_DEPTH, which jansson
 * never reads, are not compared (pick.h): a key a level would otherwise
 * cost the stack memory that checking without recursion saves.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pick.h"
#include "text.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

const struct pick_rule pick_all = { PICK_ALL, NULL, NULL, NULL };
const struct pick_rule pick_stub = { PICK_STUB, NULL, NULL, NULL };
const struct pick_rule pick_text = { PICK_TEXT, NULL, NULL, NULL };

/* Keys of one object compared one by one up to this many; sorted after. */
#define SMALL_OBJECT 24

/*
 * A key of an object being read: in the text, or decoded into dec.  Its
 * first eight bytes (zero-padded) tell most keys apart without a memcmp().
 */
struct key {
	size_t off;
	size_t len;
	uint64_t prefix;
	bool decoded;
};

/* Where check() found an object whose keys it compares: how far the key
 * stack and dec went before it, for when it ends. */
struct mark {
	size_t nkeys;
	size_t declen;
};

#define INLINE_KEYS 128
#define INLINE_DEC 512
#define INLINE_MARKS 32
#define INLINE_OPEN 16 /* 64-bit words: 1024 levels */

struct scan {
	const unsigned char *start, *p, *end;
	size_t depth;     /* of the value being built, the top level being 1 */
	struct pick_error *err;
	bool failed;
	struct key *keys; /* the keys of the open objects, innermost last */
	size_t nkeys, capkeys;
	char *dec;        /* decoded escaped keys, then scratch space */
	size_t declen, deccap;
	struct mark *marks; /* check()'s objects whose keys it compares */
	size_t nmarks, capmarks;
	uint64_t *open;   /* check()'s open containers, a bit each: 1 for an
			     object, 0 for an array; innermost highest */
	size_t capopen;   /* in words */
	/* Where the stacks start, so that most bodies need no malloc(). */
	struct key inline_keys[INLINE_KEYS];
	char inline_dec[INLINE_DEC];
	struct mark inline_marks[INLINE_MARKS];
	uint64_t inline_open[INLINE_OPEN];
};

/* Bytes that a string may hold as they are: printable ASCII but '"' and
 * '\\'.  Everything else needs a closer look. */
static const unsigned char plain[256] = {
#define R8(v) v, v, v, v, v, v, v, v
	R8(0), R8(0), R8(0), R8(0),           /* 0x00..0x1f */
	1, 1, 0, 1, 1, 1, 1, 1, R8(1),        /* 0x20..0x2f: not '"' */
	R8(1), R8(1), R8(1), R8(1), R8(1),    /* 0x30..0x57 */
	1, 1, 1, 1, 0, 1, 1, 1,               /* 0x58..0x5f: not '\\' */
	R8(1), R8(1), R8(1), R8(1),           /* 0x60..0x7f */
	R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0),
	R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0),
#undef R8
};

#define ONES UINT64_C(0x0101010101010101)
#define LOWS UINT64_C(0x7f7f7f7f7f7f7f7f)
#define HIGHS UINT64_C(0x8080808080808080)

/* w, loaded from memory, as if the machine were little-endian. */
static inline uint64_t le64(uint64_t w)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(w);
#else
	return w;
#endif
}

/* The high bit of each byte of w that is zero; the other bits clear. */
static inline uint64_t zero_bytes(uint64_t w)
{
	return ~(((w & LOWS) + LOWS) | w) & HIGHS;
}

/*
 * The high bit of each of the eight bytes of w that is not plain: below
 * 0x20, from 0x80 up, '"' or '\\'.  Exact for every byte (no carry crosses
 * from one byte into the next).
 */
static inline uint64_t special_bytes(uint64_t w)
{
	uint64_t below_space = ~((w & LOWS) + ONES * (0x80 - 0x20)) & ~w &
			       HIGHS;

	return (w & HIGHS) | below_space | zero_bytes(w ^ (ONES * '"')) |
	       zero_bytes(w ^ (ONES * '\\'));
}

/* Records the first error, status with text, at byte at; returns -1. */
static int set_error(struct scan *s, enum pick_status status,
		     const unsigned char *at, const char *text)
{
	const unsigned char *q;
	int line = 1, column = 1;

	if (s->failed)
		return -1;
	s->failed = true;
	for (q = s->start; q < at && q < s->end; q++) {
		if (*q == '\n') {
			line++;
			column = 1;
		} else {
			column++;
		}
	}
	s->err->status = status;
	s->err->line = line;
	s->err->column = column;
	snprintf(s->err->text, sizeof(s->err->text), "%s", text);
	return -1;
}

/* The document is not JSON (PICK_INVALID), at byte at; returns -1. */
static int fail(struct scan *s, const unsigned char *at, const char *fmt, ...)
	COMPILER_PRINTF(3, 4);

static int fail(struct scan *s, const unsigned char *at, const char *fmt, ...)
{
	char text[sizeof(s->err->text)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return set_error(s, PICK_INVALID, at, text);
}

/* A value to build, at s->p, is nested too deep (PICK_DEPTH); returns -1. */
static int fail_depth(struct scan *s)
{
	return set_error(s, PICK_DEPTH, s->p, "maximum parsing depth reached");
}

static int nomem(struct scan *s)
{
	if (!s->failed) {
		s->failed = true;
		s->err->status = PICK_NOMEM;
		s->err->line = s->err->column = 0;
		snprintf(s->err->text, sizeof(s->err->text), "out of memory");
	}
	return -1;
}

/* Fails for the byte at s->p: the end of the text, or an unexpected byte. */
static int fail_here(struct scan *s, const char *what)
{
	if (s->p >= s->end)
		return fail(s, s->p, "%s near end of file", what);
	return fail(s, s->p, "%s", what);
}

static inline void skip_space(struct scan *s)
{
	const unsigned char *p = s->p, *end = s->end;

	/* Most calls meet a token at once: every byte of one is above ' '. */
	if (p < end && *p > ' ')
		return;
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' ||
			   *p == '\t'))
		p++;
	s->p = p;
}

/* Makes room for extra more bytes in dec; returns a pointer to them. */
static char *dec_reserve(struct scan *s, size_t extra)
{
	size_t cap = s->deccap;
	char *grown;

	if (cap - s->declen >= extra)
		return s->dec + s->declen;
	while (cap - s->declen < extra) {
		if (cap > SIZE_MAX / 2)
			return NULL;
		cap *= 2;
	}
	grown = malloc(cap);
	if (!grown)
		return NULL;
	memcpy(grown, s->dec, s->declen);
	if (s->dec != s->inline_dec)
		free(s->dec);
	s->dec = grown;
	s->deccap = cap;
	return s->dec + s->declen;
}

/*
 * Doubles the room of a stack: items, *cap elements of size elem, the
 * first used of them in use, whose first room is inline (not freed).
 * Returns the new room, items freed unless inline, or NULL out of memory
 * (items unchanged).
 */
static void *grow(void *items, const void *inline_items, size_t *cap,
		  size_t used, size_t elem)
{
	void *grown;

	if (*cap > SIZE_MAX / 2 / elem)
		return NULL;
	grown = malloc(2 * *cap * elem);
	if (!grown)
		return NULL;
	memcpy(grown, items, used * elem);
	if (items != inline_items)
		free(items);
	*cap *= 2;
	return grown;
}

/* Doubles the room of the key stack.  Returns 0, or -1 out of memory. */
static int grow_keys(struct scan *s)
{
	struct key *grown = grow(s->keys, s->inline_keys, &s->capkeys,
				 s->nkeys, sizeof(*grown));

	if (!grown)
		return -1;
	s->keys = grown;
	return 0;
}

/* The value of the four hex digits at p, or -1. */
static long hex4(const unsigned char *p, const unsigned char *end)
{
	long v = 0;
	int i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		unsigned c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/*
 * Checks the string whose opening quote is at s->p and moves past its
 * closing quote.  *raw and *len give the text between the quotes;
 * *escaped says whether it holds a backslash.
 */
static int scan_string(struct scan *s, const unsigned char **raw, size_t *len,
		       bool *escaped)
{
	const unsigned char *p = s->p + 1, *end = s->end;

	*escaped = false;
	*raw = p;
	for (;;) {
#ifdef __SSE2__
		/* Sixteen bytes at a time: a signed compare with 0x20 finds
		 * the control bytes and the bytes from 0x80 up at once. */
		while (end - p >= 16) {
			__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
			__m128i hit = _mm_or_si128(
				_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
					     _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
				_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));
			unsigned mask = (unsigned)_mm_movemask_epi8(hit);

			if (mask) {
				p += __builtin_ctz(mask);
				goto look;
			}
			p += 16;
		}
#endif
		/* Eight bytes at a time, up to the first one that is not
		 * plain (the words are read as little-endian). */
		while (end - p >= 8) {
			uint64_t w, special;

			memcpy(&w, p, 8);
			w = le64(w);
			special = special_bytes(w);
			if (special) {
				p += (size_t)__builtin_ctzll(special) / 8;
				break;
			}
			p += 8;
		}
		while (p < end && plain[*p])
			p++;
#ifdef __SSE2__
look:
#endif
		if (p >= end)
			return fail(s, p, "premature end of input");
		if (*p == '"')
			break;
		if (*p == '\\') {
			long v, w;

			*escaped = true;
			if (++p >= end)
				return fail(s, p, "premature end of input");
			switch (*p) {
			case '"': case '\\': case '/': case 'b': case 'f':
			case 'n': case 'r': case 't':
				p++;
				continue;
			case 'u':
				break;
			default:
				return fail(s, p, "invalid escape");
			}
			v = hex4(p + 1, end);
			if (v < 0)
				return fail(s, p, "invalid escape");
			p += 5;
			if (v >= 0xDC00 && v <= 0xDFFF)
				return fail(s, p, "invalid Unicode '\\u%04lX'", v);
			if (v < 0xD800 || v > 0xDBFF)
				continue;
			/* A high surrogate needs a low one right after it. */
			if (end - p < 2 || p[0] != '\\' || p[1] != 'u')
				return fail(s, p, "invalid Unicode '\\u%04lX'", v);
			w = hex4(p + 2, end);
			if (w < 0)
				return fail(s, p + 1, "invalid escape");
			if (w < 0xDC00 || w > 0xDFFF)
				return fail(s, p, "invalid Unicode '\\u%04lX\\u%04lX'",
					    v, w);
			p += 6;
		} else if (*p < 0x20) {
			return fail(s, p, *p == '\n' ? "unexpected newline" :
				    "control character 0x%x", *p);
		} else {
			size_t n = text_utf8_charn(p, (size_t)(end - p));

			if (!n)
				return fail(s, p, "unable to decode byte 0x%x", *p);
			p += n;
		}
	}
	*len = (size_t)(p - *raw);
	s->p = p + 1;
	return 0;
}

/* Appends code point v as UTF-8 to out; returns the bytes written. */
static size_t put_utf8(char *out, uint32_t v)
{
	if (v < 0x80) {
		out[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		out[0] = (char)(0xC0 | (v >> 6));
		out[1] = (char)(0x80 | (v & 0x3F));
		return 2;
	}
	if (v < 0x10000) {
		out[0] = (char)(0xE0 | (v >> 12));
		out[1] = (char)(0x80 | ((v >> 6) & 0x3F));
		out[2] = (char)(0x80 | (v & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (v >> 18));
	out[1] = (char)(0x80 | ((v >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((v >> 6) & 0x3F));
	out[3] = (char)(0x80 | (v & 0x3F));
	return 4;
}

/*
 * Decodes the escapes of a string that scan_string() accepted, raw[0..len),
 * into out (at least len bytes: no escape decodes to more bytes than it
 * takes).  Returns the decoded length.
 */
static size_t unescape(const unsigned char *raw, size_t len, char *out)
{
	const unsigned char *p = raw, *end = raw + len;
	size_t o = 0;

	while (p < end) {
		/* The run up to the next escape, in one copy. */
		const unsigned char *esc = memchr(p, '\\', (size_t)(end - p));
		size_t run = (size_t)((esc ? esc : end) - p);

		memcpy(out + o, p, run);
		o += run;
		if (!esc)
			break;
		p = esc + 1;
		switch (*p++) {
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'u': {
			uint32_t v = (uint32_t)hex4(p, end);

			p += 4;
			if (v >= 0xD800 && v <= 0xDBFF) {
				uint32_t w = (uint32_t)hex4(p + 2, end);

				v = 0x10000 + ((v - 0xD800) << 10) + (w - 0xDC00);
				p += 6;
			}
			o += put_utf8(out + o, v);
			break;
		}
		default: /* '"', '\\' and '/' */
			out[o++] = (char)p[-1];
			break;
		}
	}
	return o;
}

static inline const char *key_text(const struct scan *s, const struct key *k)
{
	return k->decoded ? s->dec + k->off : (const char *)s->start + k->off;
}

static COMPILER_INLINE bool same_key(const struct scan *s,
				     const struct key *a, const struct key *b)
{
	return a->len == b->len && a->prefix == b->prefix &&
	       (a->len <= 8 ||
		!memcmp(key_text(s, a), key_text(s, b), a->len));
}

struct sorted_key {
	const char *text;
	size_t len;
};

static int sorted_key_cmp(const void *x, const void *y)
{
	const struct sorted_key *a = x, *b = y;
	int c = memcmp(a->text, b->text, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

/*
 * Checks the keys of a large object, keys[frame..nkeys), for duplicates
 * once it has been read, at the cost of one sort.
 */
static int check_large_object(struct scan *s, size_t frame,
			      const unsigned char *at)
{
	size_t n = s->nkeys - frame, i;
	struct sorted_key *sorted = malloc(n * sizeof(*sorted));

	if (!sorted)
		return nomem(s);
	for (i = 0; i < n; i++) {
		sorted[i].text = key_text(s, &s->keys[frame + i]);
		sorted[i].len = s->keys[frame + i].len;
	}
	qsort(sorted, n, sizeof(*sorted), sorted_key_cmp);
	for (i = 1; i < n; i++)
		if (!sorted_key_cmp(&sorted[i - 1], &sorted[i]))
			break;
	free(sorted);
	if (i < n)
		return fail(s, at, "duplicate object key");
	return 0;
}

/*
 * Reads the key whose quote is at s->p onto the key stack: decoded when it
 * has escapes.  While the object (whose keys start at frame) is small, it
 * is compared with the keys before it.  *text and *len give the key.
 */
static COMPILER_INLINE int read_key(struct scan *s, size_t frame,
				   const char **text, size_t *len)
{
	const unsigned char *at = s->p, *raw;
	struct key *k;
	bool escaped;
	size_t i, n;

	if (scan_string(s, &raw, &n, &escaped))
		return -1;
	if (s->nkeys == s->capkeys && grow_keys(s))
		return nomem(s);
	/* Filled in place: a copy of a just-written struct stalls. */
	k = &s->keys[s->nkeys];
	k->decoded = escaped;
	k->off = (size_t)(raw - s->start);
	k->len = n;
	if (escaped) {
		char *out = dec_reserve(s, n);

		if (!out)
			return nomem(s);
		k->len = unescape(raw, n, out);
		if (memchr(out, '\0', k->len))
			return fail(s, at, "NUL byte in object key not supported");
		k->off = s->declen;
		s->declen += k->len;
	}
	k->prefix = 0;
	memcpy(&k->prefix, key_text(s, k), k->len < 8 ? k->len : 8);
	if (s->nkeys - frame < SMALL_OBJECT) {
		for (i = frame; i < s->nkeys; i++)
			if (same_key(s, &s->keys[i], k))
				return fail(s, at, "duplicate object key");
	}
	s->nkeys++;
	*text = key_text(s, k);
	*len = k->len;
	return 0;
}

/*
 * After a member or an element: moves past a ',' (returns 1: another one
 * follows) or past close (returns 0: the end), or fails (-1).
 */
static int after_item(struct scan *s, char close)
{
	skip_space(s);
	if (s->p < s->end && *s->p == ',') {
		s->p++;
		skip_space(s);
		return 1;
	}
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 0;
	}
	return fail_here(s, close == '}' ? "'}' expected" : "']' expected");
}

/* The rule for the member key of an object read under r (built). */
static const struct pick_rule *member_rule(const struct pick_rule *r,
					   const char *key, size_t len)
{
	const struct pick_field *f;

	if (r->kind == PICK_ALL)
		return &pick_all;
	for (f = r->fields; f && f->key; f++)
		if (f->len == len && !memcmp(f->key, key, len))
			return f->rule;
	return r->others;
}

/* A string value, at s->p; built unless r is NULL. */
static int string(struct scan *s, const struct pick_rule *r, json_t **out)
{
	const unsigned char *raw;
	size_t len;
	bool escaped;

	if (scan_string(s, &raw, &len, &escaped))
		return -1;
	if (!r)
		return 0;
	if (r->kind == PICK_STUB) {
		*out = json_string_nocheck("");
	} else if (!escaped) {
		*out = json_stringn_nocheck((const char *)raw, len);
	} else {
		char *text = dec_reserve(s, len);

		if (!text)
			return nomem(s);
		*out = json_stringn_nocheck(text, unescape(raw, len, text));
	}
	return *out ? 0 : nomem(s);
}

static bool is_digit(const unsigned char *p, const unsigned char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/*
 * A number, at s->p, by jansson's grammar: an integer must fit in 64 bits,
 * a real must not overflow to infinity.  Built unless r is NULL.
 */
static int number(struct scan *s, const struct pick_rule *r, json_t **out)
{
	const unsigned char *start = s->p, *p = s->p, *end = s->end, *digits;
	bool negative = *p == '-', real = false;
	size_t ndigits;

	if (negative)
		p++;
	digits = p;
	if (p < end && *p == '0') {
		p++;
		if (is_digit(p, end))
			return fail(s, start, "invalid token");
	} else if (is_digit(p, end)) {
		while (is_digit(p, end))
			p++;
	} else {
		return fail(s, start, "invalid token");
	}
	ndigits = (size_t)(p - digits);
	if (p < end && *p == '.') {
		p++;
		if (!is_digit(p, end))
			return fail(s, start, "invalid token");
		while (is_digit(p, end))
			p++;
		real = true;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!is_digit(p, end))
			return fail(s, start, "invalid token");
		while (is_digit(p, end))
			p++;
		real = true;
	}
	s->p = p;

	if (!real) {
		static const char max[] = "9223372036854775807";
		static const char min[] = "9223372036854775808";
		unsigned long long u = 0;
		size_t i;

		if (ndigits > 19 ||
		    (ndigits == 19 &&
		     memcmp(digits, negative ? min : max, 19) > 0))
			return fail(s, start, negative ?
				    "too big negative integer" :
				    "too big integer");
		if (!r)
			return 0;
		if (r->kind == PICK_STUB) {
			*out = json_integer(0);
		} else {
			for (i = 0; i < ndigits; i++)
				u = u * 10 + (unsigned)(digits[i] - '0');
			*out = json_integer(!negative ? (json_int_t)u :
					    u ? -(json_int_t)(u - 1) - 1 : 0);
		}
		return *out ? 0 : nomem(s);
	}

	{
		size_t len = (size_t)(p - start);
		char small[64], *text = len < sizeof(small) ? small :
							  malloc(len + 1);
		double d;

		if (!text)
			return nomem(s);
		memcpy(text, start, len);
		text[len] = '\0';
		errno = 0;
		d = strtod(text, NULL);
		if (text != small)
			free(text);
		if ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE)
			return fail(s, start, "real number overflow");
		if (!r)
			return 0;
		*out = json_real(r->kind == PICK_STUB ? 0.0 : d);
		return *out ? 0 : nomem(s);
	}
}

/* true, false or null, at s->p. */
static int literal(struct scan *s, const struct pick_rule *r, json_t **out)
{
	static const struct {
		const char *text;
		size_t len;
	} words[] = { { "true", 4 }, { "false", 5 }, { "null", 4 } };
	const unsigned char *p = s->p;
	size_t i, n = 0;

	/* jansson reads a whole run of letters as one token. */
	while (p + n < s->end && ((p[n] | 0x20) >= 'a' && (p[n] | 0x20) <= 'z'))
		n++;
	for (i = 0; i < 3; i++)
		if (n == words[i].len && !memcmp(p, words[i].text, n))
			break;
	if (i == 3)
		return fail(s, p, "invalid token");
	s->p += n;
	if (r)
		*out = i == 0 ? json_true() : i == 1 ? json_false() : json_null();
	return 0;
}

/*
 * Checks the key of an object that check() does not compare, at s->p, and
 * moves past it: a string that decodes without a NUL.
 */
static int check_key(struct scan *s)
{
	const unsigned char *at = s->p, *raw, *p, *end;
	size_t n;
	bool escaped;

	if (scan_string(s, &raw, &n, &escaped))
		return -1;
	if (!escaped)
		return 0;
	/* scan_string() checked every escape: each is whole. */
	for (p = raw, end = raw + n;
	     (p = memchr(p, '\\', (size_t)(end - p))); p += 2)
		if (p[1] == 'u' && hex4(p + 2, end) == 0)
			return fail(s, at, "NUL byte in object key not supported");
	return 0;
}

/* Pushes a container onto check()'s stack, which holds open of them. */
static int push_open(struct scan *s, size_t open, bool object)
{
	uint64_t bit = UINT64_C(1) << (open % 64);

	if (open / 64 == s->capopen) {
		uint64_t *grown = grow(s->open, s->inline_open, &s->capopen,
				       open / 64, sizeof(*grown));

		if (!grown)
			return nomem(s);
		s->open = grown;
	}
	if (object)
		s->open[open / 64] |= bit;
	else
		s->open[open / 64] &= ~bit;
	return 0;
}

/* Whether the n-th container (from 0) on check()'s stack is an object. */
static inline bool open_is_object(const struct scan *s, size_t n)
{
	return (s->open[n / 64] >> (n % 64)) & 1;
}

/* An object whose keys check() compares begins, at s->p. */
static int push_mark(struct scan *s)
{
	if (s->nmarks == s->capmarks) {
		struct mark *grown = grow(s->marks, s->inline_marks,
					  &s->capmarks, s->nmarks,
					  sizeof(*grown));

		if (!grown)
			return nomem(s);
		s->marks = grown;
	}
	s->marks[s->nmarks].nkeys = s->nkeys;
	s->marks[s->nmarks].declen = s->declen;
	s->nmarks++;
	return 0;
}

/* The innermost object of push_mark() has ended, at s->p - 1. */
static int pop_mark(struct scan *s)
{
	const struct mark *m = &s->marks[--s->nmarks];
	int rc = s->nkeys - m->nkeys > SMALL_OBJECT ?
		 check_large_object(s, m->nkeys, s->p - 1) : 0;

	s->nkeys = m->nkeys;
	s->declen = m->declen;
	return rc;
}

/*
 * Checks the value at s->p, one level below s->depth, as a built value is
 * checked, and moves past it; builds nothing.  One loop and no recursion:
 * the containers open in it are a bit each on a stack on the heap, so that
 * any depth costs no C stack.  Objects at most JSON_PARSER_MAX_DEPTH deep
 * have their keys compared as object() compares them; deeper ones, which
 * jansson never reads, do not (pick.h).  A value deeper than limit fails
 * with PICK_DEPTH.
 */
static int check(struct scan *s, size_t limit)
{
	const size_t max = JSON_PARSER_MAX_DEPTH;
	size_t depth = s->depth, open = 0;
	bool in_object = false; /* the innermost open container's kind */
	int more;

value:
	if (++depth > limit)
		return fail_depth(s);
	if (s->p >= s->end)
		return fail(s, s->p, "unexpected token near end of file");
	switch (*s->p) {
	case '{':
	case '[': {
		bool object = *s->p == '{';

		s->p++;
		skip_space(s);
		if (s->p < s->end && *s->p == (object ? '}' : ']')) {
			s->p++;
			break;
		}
		if (push_open(s, open, object))
			return -1;
		open++;
		in_object = object;
		if (!object)
			goto value;
		if (depth <= max && push_mark(s))
			return -1;
		goto key;
	}
	case '"': {
		const unsigned char *raw;
		size_t len;
		bool escaped;

		if (scan_string(s, &raw, &len, &escaped))
			return -1;
		break;
	}
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		if (number(s, NULL, NULL))
			return -1;
		break;
	case ']': case '}': case ',': case ':':
		return fail(s, s->p, "unexpected token");
	default:
		if (literal(s, NULL, NULL))
			return -1;
		break;
	}
	/* A value has ended, at depth: then its container's next item, or
	 * the container's end, and so on outwards. */
	depth--;
	while (open) {
		more = after_item(s, in_object ? '}' : ']');
		if (more < 0)
			return -1;
		if (more && in_object)
			goto key;
		if (more)
			goto value;
		if (in_object && depth <= max && pop_mark(s))
			return -1;
		open--;
		depth--;
		in_object = open && open_is_object(s, open - 1);
	}
	return 0;

key:
	/* A member of the object open at depth. */
	if (s->p >= s->end || *s->p != '"')
		return fail_here(s, "string or '}' expected");
	if (depth <= max) {
		const char *text;
		size_t len;

		if (read_key(s, s->marks[s->nmarks - 1].nkeys, &text, &len))
			return -1;
	} else if (check_key(s)) {
		return -1;
	}
	skip_space(s);
	if (s->p >= s->end || *s->p != ':')
		return fail_here(s, "':' expected");
	s->p++;
	skip_space(s);
	goto value;
}

/*
 * Adds a segment in front of the path of a PICK_DEPTH error, as the
 * failure unwinds from the value too deep to the top: the member key
 * key[0..n) (masked, cut; "" shown quoted), or when key is NULL the index
 * n ("[n]"), then a '.' when a member follows.  A path too long keeps its
 * outer part and ends in "...".
 */
static COMPILER_NOINLINE void path_prepend(struct scan *s, const char *key,
					   size_t n)
{
	char *path = s->err->path, joined[sizeof(s->err->path) + 64];
	size_t cap = sizeof(s->err->path), old = strlen(path), k, keep;

	if (s->err->status != PICK_DEPTH)
		return;
	if (!key)
		k = (size_t)snprintf(joined, 32, "[%zu]", n);
	else if (!n)
		k = (size_t)snprintf(joined, 32, "\"\"");
	else
		k = text_mask_cutn(joined, 48, key, n, 40);
	if (old && path[0] != '[')
		joined[k++] = '.';
	if (k + old < cap) {
		memcpy(joined + k, path, old + 1);
		memcpy(path, joined, k + old + 1);
		return;
	}
	/* k < cap - 4: cut on a character, then "...". */
	keep = cap - 4;
	memcpy(joined + k, path, keep + 1 - k);
	while (keep && ((unsigned char)joined[keep] & 0xC0) == 0x80)
		keep--;
	memcpy(joined + keep, "...", 4);
	memcpy(path, joined, keep + 4);
}

static int value(struct scan *s, const struct pick_rule *r, json_t **out);

/*
 * An object, at s->p, under r, which keeps all of it (PICK_ALL) or names
 * its members (PICK_OBJECT).  Built.  Never inlined in value(), so that
 * its locals do not weigh on every level of an array.
 */
static COMPILER_NOINLINE int object(struct scan *s, const struct pick_rule *r,
				    json_t **out)
{
	size_t frame = s->nkeys, decmark = s->declen;
	json_t *obj;
	int rc = -1, more;

	s->p++;
	skip_space(s);
	if (!(obj = json_object()))
		return nomem(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		rc = 0;
		goto out;
	}
	for (;;) {
		const char *key = NULL;
		size_t len = 0, at;
		json_t *v;

		if (s->p >= s->end || *s->p != '"') {
			fail_here(s, "string or '}' expected");
			goto out;
		}
		if (read_key(s, frame, &key, &len))
			goto out;
		at = s->nkeys - 1;
		skip_space(s);
		if (s->p >= s->end || *s->p != ':') {
			fail_here(s, "':' expected");
			goto out;
		}
		s->p++;
		skip_space(s);
		if (value(s, member_rule(r, key, len), &v)) {
			path_prepend(s, key_text(s, &s->keys[at]), len);
			goto out;
		}
		/* key may have moved if dec grew: read it again. */
		if (v && json_object_setn_new_nocheck(obj,
				key_text(s, &s->keys[at]), len, v)) {
			nomem(s);
			goto out;
		}
		more = after_item(s, '}');
		if (more < 0)
			goto out;
		if (!more)
			break;
	}
	rc = s->nkeys - frame > SMALL_OBJECT ?
	     check_large_object(s, frame, s->p - 1) : 0;
out:
	s->nkeys = frame;
	s->declen = decmark;
	if (rc) {
		json_decref(obj);
		return -1;
	}
	*out = obj;
	return 0;
}

/*
 * An array, at s->p, each element under item (NULL: checked only).
 * Built.
 */
static int array(struct scan *s, const struct pick_rule *item, json_t **out)
{
	json_t *arr;
	size_t i;
	int more;

	s->p++;
	skip_space(s);
	if (!(arr = json_array()))
		return nomem(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		*out = arr;
		return 0;
	}
	for (i = 0;; i++) {
		json_t *v;

		if (value(s, item, &v)) {
			path_prepend(s, NULL, i);
			goto fail;
		}
		if (v && json_array_append_new(arr, v)) {
			nomem(s);
			goto fail;
		}
		more = after_item(s, ']');
		if (more < 0)
			goto fail;
		if (!more)
			break;
	}
	*out = arr;
	return 0;
fail:
	json_decref(arr);
	return -1;
}

/*
 * An object or array at s->p whose content the rule does not keep: v, a
 * new empty value of its type, consumed, once the container is checked.
 */
static int stub(struct scan *s, json_t *v, json_t **out)
{
	int rc;

	if (!v)
		return nomem(s);
	s->depth--; /* check() counts the container itself */
	rc = check(s, SIZE_MAX);
	s->depth++;
	if (rc) {
		json_decref(v);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * One value, at s->p, under rule r (NULL: checked only, and *out stays
 * NULL).  The depth counts as jansson's parse_value() counts it: every
 * value, scalars included; it is limited for what is built (pick.h).
 */
static int value(struct scan *s, const struct pick_rule *r, json_t **out)
{
	const unsigned char *from = s->p;
	int rc;

	*out = NULL;
	if (!r)
		return check(s, SIZE_MAX);
	if (r->kind == PICK_TEXT) {
		if (check(s, JSON_PARSER_MAX_DEPTH))
			return -1;
		*out = json_stringn_nocheck((const char *)from,
					    (size_t)(s->p - from));
		return *out ? 0 : nomem(s);
	}
	if (++s->depth > JSON_PARSER_MAX_DEPTH)
		return fail_depth(s);
	if (s->p >= s->end)
		return fail(s, s->p, "unexpected token near end of file");
	switch (*s->p) {
	case '{':
		rc = r->kind == PICK_ALL || r->kind == PICK_OBJECT ?
		     object(s, r, out) : stub(s, json_object(), out);
		break;
	case '[':
		rc = r->kind == PICK_ALL ? array(s, &pick_all, out) :
		     r->kind == PICK_ARRAY ? array(s, r->items, out) :
		     stub(s, json_array(), out);
		break;
	case '"':
		rc = string(s, r, out);
		break;
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		rc = number(s, r, out);
		break;
	case ']': case '}': case ',': case ':':
		rc = fail(s, s->p, "unexpected token");
		break;
	default:
		rc = literal(s, r, out);
		break;
	}
	s->depth--;
	return rc;
}

json_t *pick_loadb(const char *buf, size_t len, const struct pick_rule *rule,
		   struct pick_error *err)
{
	struct scan s;
	json_t *root = NULL;

	memset(err, 0, sizeof(*err));
	s.start = s.p = (const unsigned char *)buf;
	s.end = s.start + len;
	s.depth = 0;
	s.err = err;
	s.failed = false;
	s.keys = s.inline_keys;
	s.nkeys = 0;
	s.capkeys = INLINE_KEYS;
	s.dec = s.inline_dec;
	s.declen = 0;
	s.deccap = INLINE_DEC;
	s.marks = s.inline_marks;
	s.nmarks = 0;
	s.capmarks = INLINE_MARKS;
	s.open = s.inline_open;
	s.capopen = INLINE_OPEN;
	skip_space(&s);
	if (s.p >= s.end || (*s.p != '{' && *s.p != '[')) {
		fail_here(&s, "'[' or '{' expected");
	} else if (!value(&s, rule, &root)) {
		skip_space(&s);
		if (s.p < s.end) {
			fail(&s, s.p, "end of file expected");
			json_decref(root);
			root = NULL;
		}
	}
	if (s.keys != s.inline_keys)
		free(s.keys);
	if (s.dec != s.inline_dec)
		free(s.dec);
	if (s.marks != s.inline_marks)
		free(s.marks);
	if (s.open != s.inline_open)
		free(s.open);
	return root;
}
