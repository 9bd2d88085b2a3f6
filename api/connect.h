/*
 * connect: the Connect protocol's unary calls over HTTP/1.1, for the Grafana
 * query API (querier.c). A request is POST with the message as the whole body
 * (no envelope), application/proto or application/json (proto3's JSON mapping:
 * lowerCamelCase names, original names accepted too, 64-bit integers as
 * strings, enums by name), gzipped if Content-Encoding says so; the reply has
 * the request's encoding. Errors are http_reply_error()'s Connect form. The
 * JSON mapping is generic, driven by protobuf-c's descriptors, so every
 * message of api/proto has it (requests read by pbjson.c). Internal to api/
 * (it shows protobuf-c types).
 */
#ifndef PROFILEFS_CONNECT_H
#define PROFILEFS_CONNECT_H

#include <protobuf-c/protobuf-c.h>

#include "api_int.h"

/* Whether r's body is JSON (application/json), else protobuf. */
bool	connect_is_json(struct http_req *r);
/*
 * Decode r's body as a message of d into *out, its memory charged to the
 * budget; free it with connect_free(). On a refused request it replies and
 * returns -EINVAL: 400 bad input, 413 past a limit (16 MiB once gunzipped,
 * the JSON limits of pbjson.h, 64 MiB of messages), 415 and 501 for another
 * content type or encoding, 503 when the memory budget has no room.
 */
int	connect_decode(struct http_req *r, const ProtobufCMessageDescriptor *d,
	    ProtobufCMessage **out);
/* Free a message from connect_decode(); NULL is a no-op. */
void	connect_free(ProtobufCMessage *m);
/* Reply 200 with m in r's encoding. */
void	connect_reply(struct http_req *r, const ProtobufCMessage *m);
/* Reply 200 with an already encoded message of d (body taken); JSON converts it. */
void	connect_reply_packed(struct http_req *r, const ProtobufCMessageDescriptor *d,
	    struct buf *body);
/* A message in proto3's JSON mapping (NULL: out of memory); pbjson.c reads it back. */
json_t	*connect_to_json(const ProtobufCMessage *m);

#endif
