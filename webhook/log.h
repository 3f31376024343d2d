/*
 * log.h - one line per event on stderr, as text or as JSON.
 *
 * A line is written with a single write(2), or gathered whole with others
 * (log_buffering()), so lines from several threads never interleave.  Text lines look like
 *
 *   2025-11-22T08:00:00.123Z info decision uid=... namespace=ml ops=5
 *
 * and JSON lines like
 *
 *   {"time":"2025-11-22T08:00:00.123Z","level":"info","msg":"decision",
 *    "uid":"...","namespace":"ml","ops":5}
 *
 * Values are escaped for the format: in text, a value with a space, a
 * quote, an equals sign or a backslash is quoted; control bytes and invalid
 * UTF-8 never reach the output in either format.
 *
 * Verbosity (-v): 0 logs decisions, notices, warnings and errors; 1 adds
 * refused requests; 2 adds connection-level detail.  The macros check the
 * verbosity before any argument is formatted.
 */
#ifndef LOG_H
#define LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level {
	LOG_ERROR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
};

/* One key and its value: a string (NULL prints as "") or an integer. */
struct log_field {
	const char *key;
	const char *str;
	long long num;
	bool is_num;
};

#define LOG_STR(k, v) ((struct log_field){ (k), (v), 0, false })
#define LOG_NUM(k, v) ((struct log_field){ (k), NULL, (long long)(v), true })

/* Set once by log_setup(), before any thread starts; read-only after. */
extern int log_verbosity;

/* Chooses the format (json or text) and the verbosity. */
void log_setup(bool json, int verbosity);

/*
 * With on, the lines of log_event() are gathered in a buffer of 16 KiB
 * instead of written one by one: they reach stderr, whole and in order,
 * at the next log_flush(), when the buffer cannot take the next line,
 * before any line of log_fields() or log_printf() (which is written at
 * once), or when buffering is turned off.  Off writes what was gathered.
 */
void log_buffering(bool on);

/* Writes the lines gathered, if any. */
void log_flush(void);

/*
 * Writes one line: level, the message msg, then the fields in order.  The
 * line is cut (never split) when it would pass 4 KiB.
 */
void log_fields(enum log_level level, const char *msg,
		const struct log_field *fields, size_t nfields);

/* As log_fields(), for a line about one request or connection, of which
 * there is one a request: gathered while buffering is on. */
void log_event(enum log_level level, const char *msg,
	       const struct log_field *fields, size_t nfields);

/* Writes one line whose message is formatted like printf. */
void log_printf(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_at(v, level, ...)                              \
	do {                                               \
		if ((v) <= log_verbosity)                  \
			log_printf((level), __VA_ARGS__);  \
	} while (0)

#define log_error(...) log_printf(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_printf(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_at(0, LOG_INFO, __VA_ARGS__)
#define log_detail(...) log_at(1, LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(2, LOG_DEBUG, __VA_ARGS__)

#endif /* LOG_H */
