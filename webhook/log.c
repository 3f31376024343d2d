/*
 * log.c - the log line, as text or JSON: one write(2) per line, or whole
 * lines gathered in a buffer that the server flushes (log_buffering()).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "text.h"

#define LINE_MAX_BYTES 4096
/* Kept free at the end of a line for ",\"truncated\":true}\n". */
#define LINE_RESERVE 24
/* The most bytes one value (or the message) takes in a line. */
#define VALUE_MAX_BYTES 1024

int log_verbosity;
static bool log_json;

/*
 * The lines of log_event() gathered while buffering is on: whole lines, in
 * the order they were made.  The lock also orders the writes of lines that
 * go out at once, so that a line never passes one made before.
 */
#define PENDING_BYTES (16u << 10)
static struct {
	pthread_mutex_t lock;
	bool on;
	size_t len;
	char s[PENDING_BYTES];
} pending = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const char *const level_names[] = {
	[LOG_ERROR] = "error",
	[LOG_WARN] = "warning",
	[LOG_INFO] = "info",
	[LOG_DEBUG] = "debug",
};

/*
 * A line under construction.  Invariant: len <= sizeof(s) - LINE_RESERVE.
 * full is set when an append did not fit; the caller then rolls back to
 * the end of the last whole field.
 */
struct line {
	char s[LINE_MAX_BYTES];
	size_t len;
	bool full;
};

void log_setup(bool json, int verbosity)
{
	log_json = json;
	log_verbosity = verbosity;
}

/* Appends n bytes when they fit; otherwise sets full. */
static void put(struct line *l, const char *s, size_t n)
{
	if (l->full || n > sizeof(l->s) - LINE_RESERVE - l->len) {
		l->full = true;
		return;
	}
	memcpy(l->s + l->len, s, n);
	l->len += n;
}

static void puts_(struct line *l, const char *s)
{
	put(l, s, strlen(s));
}

/*
 * The length of the run of printable ASCII at p[0..n), but '"' and '\\',
 * and at most the bytes a value started at start may still take: what the
 * loop below would append one character at a time.
 */
static size_t plain_run(const struct line *l, size_t start,
			const unsigned char *p, size_t n)
{
	size_t used = l->len - start, max, i;

	if (used > VALUE_MAX_BYTES)
		return 0;
	max = VALUE_MAX_BYTES + 1 - used;
	if (n > max)
		n = max;
	for (i = 0; i < n && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' &&
		    p[i] != '\\'; i++)
		;
	return i;
}

/* Whether a text value must be quoted. */
static bool needs_quotes(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!*p)
		return true;
	for (; *p; p++)
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' ||
		    *p >= 0x7f)
			return true;
	return false;
}

/* How a value is written. */
enum style {
	STYLE_TEXT,   /* a text line, unquoted */
	STYLE_QUOTED, /* a text line, in quotes: '"' and '\\' escaped */
	STYLE_JSON,   /* the inside of a JSON string */
};

/*
 * Whether the character at p, of k bytes, is U+2028 LINE SEPARATOR or
 * U+2029 PARAGRAPH SEPARATOR: valid in JSON strings, yet many log readers
 * (and JavaScript before ES2019) end a line there.
 */
static bool is_separator(const unsigned char *p, size_t k)
{
	return k == 3 && p[0] == 0xe2 && p[1] == 0x80 &&
	       (p[2] == 0xa8 || p[2] == 0xa9);
}

/*
 * Appends the character at p, whose valid UTF-8 sequence takes k bytes (0:
 * not valid), in style st; returns the bytes of p it took.  In text,
 * control characters, U+2028, U+2029 and invalid bytes become \xNN; in
 * JSON, control characters become \u00NN, U+2028 and U+2029 \u2028 and
 * \u2029, invalid bytes U+FFFD.
 */
static size_t put_char(struct line *l, const unsigned char *p, size_t k,
		       enum style st)
{
	char esc[8];
	size_t j;

	if (st == STYLE_JSON && k == 0) {
		put(l, "\\ufffd", 6);
		return 1;
	}
	if (st == STYLE_JSON && is_separator(p, k)) {
		put(l, p[2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
		return k;
	}
	if (st != STYLE_JSON &&
	    (k == 0 || text_is_control(p) || is_separator(p, k))) {
		k = k ? k : 1;
		for (j = 0; j < k; j++) {
			snprintf(esc, sizeof(esc), "\\x%02x", p[j]);
			put(l, esc, 4);
		}
		return k;
	}
	if (st != STYLE_TEXT && (p[0] == '"' || p[0] == '\\')) {
		esc[0] = '\\';
		esc[1] = (char)p[0];
		put(l, esc, 2);
	} else if (st == STYLE_JSON && text_is_control(p)) {
		snprintf(esc, sizeof(esc), "\\u%04x", k == 1 ? p[0] : p[1]);
		put(l, esc, 6);
	} else {
		put(l, (const char *)p, k);
	}
	return k;
}

/* Appends s in style st, cut with "..." once it takes VALUE_MAX_BYTES. */
static void put_value(struct line *l, const char *s, enum style st)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, start = l->len;

	while (i < n && !l->full) {
		size_t k = plain_run(l, start, p + i, n - i);

		if (k) {
			put(l, s + i, k);
			i += k;
			continue;
		}
		if (l->len - start > VALUE_MAX_BYTES) {
			put(l, "...", 3);
			break;
		}
		i += put_char(l, p + i, text_utf8_charn(p + i, n - i), st);
	}
}

static void put_time(struct line *l)
{
	struct timespec ts;
	struct tm tm;
	char buf[40];
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	put(l, buf, n > 0 ? (size_t)n : 0);
}

/*
 * Finishes the line in the reserve, saying whether fields were left out,
 * and writes it.
 */
/* Writes n bytes to stderr, through EINTR and short writes; gives up on
 * an error (a log line has nowhere else to go). */
static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDERR_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Writes the gathered lines; the caller holds pending.lock. */
static void pending_write(void)
{
	write_all(pending.s, pending.len);
	pending.len = 0;
}

/*
 * Ends the line and sends it: into the buffer when gather is set and
 * buffering is on (the buffer written first when the line does not fit),
 * otherwise to stderr at once, after the lines gathered before it.
 */
static void line_write(struct line *l, bool gather, bool truncated)
{
	const char *end = log_json ? (truncated ? ",\"truncated\":true}\n" : "}\n")
				   : (truncated ? " ...\n" : "\n");

	memcpy(l->s + l->len, end, strlen(end));
	l->len += strlen(end);
	pthread_mutex_lock(&pending.lock);
	if (pending.on && gather) {
		if (l->len > sizeof(pending.s) - pending.len)
			pending_write();
		memcpy(pending.s + pending.len, l->s, l->len);
		pending.len += l->len;
	} else {
		if (pending.len)
			pending_write();
		write_all(l->s, l->len);
	}
	pthread_mutex_unlock(&pending.lock);
}

void log_buffering(bool on)
{
	pthread_mutex_lock(&pending.lock);
	if (!on && pending.len)
		pending_write();
	pending.on = on;
	pthread_mutex_unlock(&pending.lock);
}

void log_flush(void)
{
	pthread_mutex_lock(&pending.lock);
	if (pending.len)
		pending_write();
	pthread_mutex_unlock(&pending.lock);
}

/* Makes the line of log_fields() and log_event() and sends it. */
static void log_line(enum log_level level, const char *msg,
		     const struct log_field *fields, size_t nfields,
		     bool gather)
{
	struct line l;
	char num[32];
	size_t i;

	l.len = 0;
	l.full = false;
	/* The head always fits: the message is capped at VALUE_MAX_BYTES. */
	if (log_json) {
		puts_(&l, "{\"time\":\"");
		put_time(&l);
		puts_(&l, "\",\"level\":\"");
		puts_(&l, level_names[level]);
		puts_(&l, "\",\"msg\":\"");
		put_value(&l, msg, STYLE_JSON);
		put(&l, "\"", 1);
	} else {
		put_time(&l);
		put(&l, " ", 1);
		puts_(&l, level_names[level]);
		put(&l, " ", 1);
		put_value(&l, msg, STYLE_TEXT);
	}
	for (i = 0; i < nfields; i++) {
		const struct log_field *f = &fields[i];
		const char *s = f->str ? f->str : "";
		size_t mark = l.len;

		if (f->is_num)
			snprintf(num, sizeof(num), "%lld", f->num);
		if (log_json) {
			puts_(&l, ",\"");
			put_value(&l, f->key, STYLE_JSON);
			puts_(&l, "\":");
			if (f->is_num) {
				puts_(&l, num);
			} else {
				put(&l, "\"", 1);
				put_value(&l, s, STYLE_JSON);
				put(&l, "\"", 1);
			}
		} else {
			bool quoted = !f->is_num && needs_quotes(s);

			put(&l, " ", 1);
			put_value(&l, f->key, STYLE_TEXT);
			put(&l, "=", 1);
			if (quoted)
				put(&l, "\"", 1);
			put_value(&l, f->is_num ? num : s,
				  quoted ? STYLE_QUOTED : STYLE_TEXT);
			if (quoted)
				put(&l, "\"", 1);
		}
		if (l.full) {
			l.len = mark;
			break;
		}
	}
	line_write(&l, gather, i < nfields);
}

void log_fields(enum log_level level, const char *msg,
		const struct log_field *fields, size_t nfields)
{
	log_line(level, msg, fields, nfields, false);
}

void log_event(enum log_level level, const char *msg,
	       const struct log_field *fields, size_t nfields)
{
	log_line(level, msg, fields, nfields, true);
}

void log_printf(enum log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fields(level, msg, NULL, 0);
}
