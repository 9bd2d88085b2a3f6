/*
 * json: a small, bounded JSON reader for configuration files (the scraper's
 * targets file). It builds a tree in which every value remembers the line it
 * started on, so errors in the file can name the line. Input is bounded by the
 * caller (the file size) and here by nesting depth and string length.
 */
#ifndef PROFILEFS_JSON_H
#define PROFILEFS_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

#define JSON_MAX_DEPTH		32
#define JSON_MAX_STRING		(64u << 10)

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
	enum json_type	 type;
	int		 line;		/* where the value starts, from 1 */
	char		*key;		/* member name when the parent is an object */
	char		*str;		/* JSON_STRING: unescaped UTF-8, NUL-terminated */
	size_t		 len;
	double		 num;
	bool		 b;
	struct json	*child;		/* first element or member */
	struct json	*next;		/* next sibling */
};

/*
 * Parse text (len bytes, need not be NUL-terminated). On success *out is a
 * tree the caller frees with json_free(). -EINVAL with "line N: reason" in err
 * for malformed input, -ENOMEM.
 */
int	json_parse(const char *text, size_t len, struct json **out, struct buf *err);
void	json_free(struct json *j);
/* The member of an object named key, or NULL. */
const struct json *json_get(const struct json *obj, const char *key);
/* "string", "array", ... for messages. */
const char *json_type_name(enum json_type t);

#endif
