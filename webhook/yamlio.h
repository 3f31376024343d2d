/*
 * yamlio.h - YAML streams read into jansson values the way Kubernetes reads
 * them, and jansson values written back as YAML.
 *
 * Kubernetes reads YAML with sigs.k8s.io/yaml, that is go-yaml v2 (a
 * YAML 1.1 reader) followed by a conversion to JSON.  The reader here is
 * libyaml's parser (go-yaml v2 is a port of it, so both accept the same
 * syntax) with go-yaml v2's rules for what a plain scalar means:
 * - y, yes, on, true, n, no, off, false in the case forms Go accepts are
 *   booleans; "", ~, null are null;
 * - integers as Go's strconv.ParseInt(s, 0, 64) reads them after every
 *   "_" is removed (0x1f, 0o17, 0b101, and 017 is octal), then uint64;
 * - reals of the form [-+]?(.D+|D+(.D*)?)([eE][-+]?D+)?;
 * - everything else, timestamps included, is a string; a quoted scalar
 *   is always a string.
 * Keys become JSON member names as sigs.k8s.io/yaml makes them (an
 * integer key 1 is "1", a boolean key yes is "true"); a null or a
 * collection as a key is an error.  Anchors and aliases are resolved (an
 * alias is a copy), "<<" merge keys are merged, and a key given twice in
 * one mapping is an error.
 *
 * Hostile input is bounded: nesting deeper than YAMLIO_DEPTH_MAX, and
 * aliases that copy more than YAMLIO_ALIAS_NODES_MIN + len / 8 nodes in a
 * stream of len bytes, or more than YAMLIO_ALIAS_NODES_MIN + n / 8 in a
 * document read up to its byte n (a "billion laughs" document), are
 * refused before the memory is spent; so is a document of more than
 * YAMLIO_DOCUMENT_MAX bytes, as soon as its end passes that size.
 *
 * The reader is yamlio_load.c, the writer yamlio_dump.c, and the scalar
 * rules both follow are yamlio_scalar.c (yamlio_scalar.h, internal).
 */
#ifndef YAMLIO_H
#define YAMLIO_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "compiler.h"

#define YAMLIO_DOCUMENT_MAX ((size_t)3 << 20)
#define YAMLIO_DEPTH_MAX 200
#define YAMLIO_ALIAS_NODES_MIN 100000

/* Where and why reading failed. */
struct yamlio_error {
	size_t document; /* 1-based index in the stream; 0 before the first */
	int line;        /* 1-based; 0 when the error has no place */
	int column;      /* 1-based */
	char text[200];  /* lower case, no final full stop */
};

/*
 * Where one document of a stream sits.  The byte offsets are into the
 * buffer given to yamlio_each(), and valid only when spans is true (UTF-8
 * input; not UTF-16).  The documents' [start, end) ranges follow each
 * other from 0: the first starts at 0 (leading comments, a byte order
 * mark), each starts where the one before it ended, and the text after
 * the last is yamlio_each()'s *tail.  Inside [start, end), the document's
 * value is [content_start, content_end): before it "---" and comments,
 * after it comments and "...".  An empty document has content_start ==
 * content_end == end.
 */
struct yamlio_doc {
	size_t index; /* 1-based in the stream */
	int line;     /* 1-based line where the document starts */
	bool spans;
	size_t start, content_start, content_end, end;
	/* The scalars of the value that span lines ([i][0], [i][1]: where
	 * each starts and ends), in order, so that a line in them that
	 * starts with "#" is not taken for a comment; scalars_lost when
	 * memory ran out to list them. */
	const size_t (*scalars)[2];
	size_t nscalars;
	bool scalars_lost;
};

/*
 * Called by yamlio_each() for each document, in order: doc (borrowed; the
 * callee may change it and takes a reference to keep it; null for an
 * empty document) and where it sits.  Returns 0 to go on, or -1 to stop
 * the reading.
 */
typedef int yamlio_doc_fn(void *ctx, json_t *doc, const struct yamlio_doc *d);

/*
 * Reads the YAML stream buf[0..len) (UTF-8, or UTF-16 with a byte order
 * mark) and hands each document to fn as soon as it is read, so that only
 * one document is held at a time.  Returns 0 at the end of the stream,
 * with *tail (when tail is not NULL) the offset of the text after the last
 * document (len when there is none, or for UTF-16 input), or -1 with *err
 * filled on a syntax error or a limit (err->text is "" when fn stopped the
 * reading).  Documents before the error have been handed over.
 */
int yamlio_each(const char *buf, size_t len, yamlio_doc_fn *fn, void *ctx,
		size_t *tail, struct yamlio_error *err) COMPILER_WUR;

/*
 * Reads the YAML stream buf[0..len) (UTF-8, or UTF-16 with a byte order
 * mark).  Returns a new array with one value per document of the stream,
 * in order: null for an empty document.  A document's start line (1-based)
 * goes to lines[i] for the i-th document when lines is not NULL (a new
 * array of integers, owned by the caller).  Returns NULL with *err filled
 * on a syntax error or a limit; *lines is then NULL.
 */
json_t *yamlio_load(const char *buf, size_t len, json_t **lines,
		  struct yamlio_error *err) COMPILER_WUR;

/*
 * Appends v as one YAML document in block style, two spaces an indent,
 * sequences in a mapping at the mapping's indent (as go-yaml writes),
 * ending with a newline.  Object members stay in their order.  A string
 * that go-yaml v2 would read as anything but that string is written
 * double-quoted; reals always read back as reals.  Failures show in
 * buf_failed(b).
 */
void yamlio_dump(struct buf *b, const json_t *v);

/*
 * Appends to b the value dumped[0..dlen) (what yamlio_dump() wrote for
 * the changed value of the document d of in) with the comment lines of
 * the value's own text put back: each group of lines that hold only a
 * comment goes, as it was written, before the first line of dumped, after
 * those already placed, that has the key (or, for a line without one, the
 * text) of the line the group stood before; a group whose line is not
 * found goes where the last one went, and one at the end of the value at
 * the end.  Comments after a value on its line are not kept.
 */
void yamlio_keep_comments(struct buf *b, const char *in,
			  const struct yamlio_doc *d, const char *dumped,
			  size_t dlen);

/*
 * Whether s[0..n) can be written as a plain scalar and still read back by
 * go-yaml v2 as this string (conservative: may say no to a string that
 * would be safe).
 */
int yamlio_plain_safe(const char *s, size_t n);

#endif /* YAMLIO_H */
