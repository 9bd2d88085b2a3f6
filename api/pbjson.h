/*
 * pbjson: the one reader of proto3's JSON mapping, for both protocols of the
 * API that take JSON (OTLP in otlp.c, Connect in connect.c), and the one
 * budgeted unpacker of the messages built from outside input. JSON text is
 * re-encoded as protobuf by walking protobuf-c's descriptors, so each
 * protocol then decodes one wire format only.
 *
 * JSON is a parse bomb's favourite shape: a few bytes of "[0," grow a tree
 * element of tens of bytes each. So the text is first scanned, allocating
 * nothing, against limits of nesting, elements and string bytes; the tree's
 * cost (an upper bound from the scan) is then reserved in the memory budget
 * before jansson builds it, and given back once the protobuf is made. The
 * messages unpacked from that protobuf (or from a protobuf body) have their
 * own cap and are charged to the budget too. Internal to api/ (it shows
 * protobuf-c types).
 */
#ifndef PROFILEFS_PBJSON_H
#define PROFILEFS_PBJSON_H

#include <protobuf-c/protobuf-c.h>

#include "api_int.h"

/* What one JSON document may hold; past any of them it is refused (-EFBIG). */
struct pbjson_limits {
	size_t		max_text;	/* bytes of JSON text */
	unsigned	max_depth;	/* arrays and objects inside one another */
	size_t		max_elements;	/* values, arrays, objects and keys together */
	size_t		max_strings;	/* bytes of all strings (keys too), as written */
};

/* The API's: what real requests need many times over, far below a bomb's. */
#define PBJSON_MAX_DEPTH	64
#define PBJSON_MAX_ELEMENTS	(2u << 20)

/* What the scan counts: elements by kind, keys among the strings. */
struct pbjson_count {
	size_t	scalars;	/* numbers, true, false, null */
	size_t	strings;	/* keys too */
	size_t	arrays, objects;
	size_t	string_bytes;	/* as written, escapes included */
};

/*
 * Bytes jansson's tree for what the scan counted may take at most: a json_t
 * of each kind, its slot in an array (growing by doubling: up to 3 slots
 * while it moves) or its pair in an object's hash table, malloc's overhead,
 * and a string's bytes 4 times (its copy, the lexer's doubling buffer). The
 * converter reserves this in the budget while the tree lives;
 * tests/unit/test_pbjson.c checks it against jansson's own allocations for
 * the shapes of parse bombs.
 */
size_t	pbjson_cost(const struct pbjson_count *c);

/* OTLP's trace_id, span_id and profile_id are hex in its JSON, not base64. */
#define PBJSON_HEX_IDS		1u

/*
 * Encode the JSON text[0..len) as a message of d in protobuf, appended to
 * out. Unknown keys and nulls are skipped, names are the fields' own or
 * proto3's lowerCamelCase, 64-bit integers numbers or decimal strings,
 * floating point numbers or strings ("NaN", "Infinity", "1.5"), enums names
 * or numbers, bytes base64 (either alphabet; hex for OTLP's ids with
 * PBJSON_HEX_IDS). Returns 0; -EINVAL for text that is not JSON or not of d's
 * shape, -EFBIG past a limit of lim, -ENOMEM when the memory budget has no
 * room (or memory ran out); the reason, naming the limit, appended to err.
 */
int	pbjson_encode(const ProtobufCMessageDescriptor *d, const void *text, size_t len,
	    const struct pbjson_limits *lim, unsigned flags, struct buf *out, struct buf *err);

/*
 * The scan alone, allocating nothing: what text holds into *c, or -EFBIG
 * past a limit of lim (named in err). It does not validate: jansson does.
 */
int	pbjson_scan(const void *text, size_t len, const struct pbjson_limits *lim,
	    struct pbjson_count *c, struct buf *err);

/*
 * Unpack protobuf data[0..len) as a message of d into *out, its memory
 * charged to the budget and capped at max_bytes; free it with pbjson_free()
 * (never protobuf_c_message_free_unpacked(m, NULL)). -EINVAL for bytes that
 * are not a d, -EFBIG past max_bytes, -ENOMEM when the budget has no room;
 * the reason in err.
 */
int	pbjson_unpack(const ProtobufCMessageDescriptor *d, const void *data, size_t len,
	    size_t max_bytes, ProtobufCMessage **out, struct buf *err);
void	pbjson_free(ProtobufCMessage *m);

#endif
