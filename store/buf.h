/*
 * buf: the one growable byte buffer of profilefs, for request bodies, encoded
 * profiles and generated file contents. Binary-safe and always NUL-terminated
 * (so text can be handed to string functions). A zeroed struct buf is empty and
 * valid; buf_free() on it is a no-op.
 */
#ifndef PROFILEFS_BUF_H
#define PROFILEFS_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	char	*data;
	size_t	 len;
	size_t	 cap;
};

/* Make room for `more` bytes past len. 0 or -ENOMEM. */
int	buf_reserve(struct buf *b, size_t more);
int	buf_add(struct buf *b, const void *p, size_t n);
int	buf_addc(struct buf *b, int c);
int	buf_adds(struct buf *b, const char *s);
int	buf_printf(struct buf *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Append s with JSON string escaping (without the quotes). */
int	buf_add_json(struct buf *b, const char *s, size_t n);
/* Append s escaped for XML text and attributes; invalid UTF-8 becomes U+FFFD. */
int	buf_add_xml(struct buf *b, const char *s, size_t n);
/* Append a protobuf varint. */
int	buf_add_varint(struct buf *b, uint64_t v);
void	buf_reset(struct buf *b);
void	buf_free(struct buf *b);
/* Hand the storage to the caller (who frees it with free()); b becomes empty. */
char	*buf_steal(struct buf *b, size_t *len);

/* Read a whole file into b, refusing files over `limit` bytes (-EFBIG). */
int	buf_read_file(struct buf *b, const char *path, size_t limit);

#endif
