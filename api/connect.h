/*
 * connect: the Connect protocol's unary calls over HTTP/1.1, for the Grafana
 * query API (querier.c). A request is POST with the message as the whole body
 * (no envelope), application/proto or application/json (proto3's JSON mapping:
 * lowerCamelCase names, original names accepted too, 64-bit integers as
 * strings, enums by name), gzipped if Content-Encoding says so; the reply has
 * the request's encoding. Errors are http_reply_error()'s Connect form. The
 * JSON mapping is generic, driven by protobuf-c's descriptors, so every
 * message of api/proto has it. Internal to api/ (it shows protobuf-c types).
 */
#ifndef PROFILEFS_CONNECT_H
#define PROFILEFS_CONNECT_H

#include <protobuf-c/protobuf-c.h>

#include "api_int.h"

/* Whether r's body is JSON (application/json), else protobuf. */
bool	connect_is_json(struct http_req *r);
/*
 * Decode r's body as a message of d into *out (malloc'd; free with
 * protobuf_c_message_free_unpacked(*out, NULL)). On bad input it replies
 * (400, 415) and returns -EINVAL; -ENOMEM likewise after a 500.
 */
int	connect_decode(struct http_req *r, const ProtobufCMessageDescriptor *d,
	    ProtobufCMessage **out);
/* Reply 200 with m in r's encoding. */
void	connect_reply(struct http_req *r, const ProtobufCMessage *m);
/* Reply 200 with an already encoded message of d (body taken); JSON converts it. */
void	connect_reply_packed(struct http_req *r, const ProtobufCMessageDescriptor *d,
	    struct buf *body);
/*
 * The JSON mapping on its own: from a parsed document (NULL with the reason
 * in err), and to one (NULL: out of memory).
 */
ProtobufCMessage *connect_from_json(const ProtobufCMessageDescriptor *d, const json_t *j,
	    struct buf *err);
json_t	*connect_to_json(const ProtobufCMessage *m);

#endif
