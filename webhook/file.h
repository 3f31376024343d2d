/*
 * file.h - reading a whole file into memory, with a size limit.
 *
 * The one reader of the program: the review and default inputs, the
 * serving certificate and key, the client CA bundle.
 */
#ifndef FILE_H
#define FILE_H

#include <stddef.h>

/*
 * Reads the whole file at path, or standard input when path is NULL
 * (named "-" in messages; it is not closed), into a malloc'd buffer that
 * the caller frees.  A NUL follows the last byte and is not counted in
 * *len, so a text file may be used as a string.  A file of more than max
 * bytes is refused.  What was read is wiped before any buffer is freed
 * or given up, so a private key leaves no copy behind.
 *
 * Returns 0 with *data and *len set.  Returns -1 with errno set (EFBIG
 * for a file over max) and one of these messages in err[0..errlen):
 * "cannot read PATH: REASON" or "PATH: larger than MAX bytes".
 */
int file_read(const char *path, size_t max, char **data, size_t *len,
	      char *err, size_t errlen) __attribute__((warn_unused_result));

#endif /* FILE_H */
