/*
 * fuzz_httpparse: the HTTP API's parameter parsers (api/httpparse.c) on
 * arbitrary text; the first byte picks the parser. Whatever parses must be
 * well formed: labels within the limits of label sets (base.h), a time that formats and
 * parses back to itself, an application name without braces, a host and a
 * numeric port.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpparse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_httpparse: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static void
check_labels(const struct labelset *ls)
{
	size_t i;

	CHECK(ls->n <= LABELS_MAX);
	for (i = 0; i < ls->n; i++) {
		CHECK(ls->pairs[i].key[0] != '\0');
		CHECK(strlen(ls->pairs[i].key) <= LABEL_MAX_LEN);
		CHECK(strlen(ls->pairs[i].value) <= LABEL_MAX_LEN);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct labelset ls = { .n = 0 };
	struct buf err = { 0 }, app = { 0 };
	char *s, host[256], port[8], out[40];
	int64_t ns, back;
	int rc;

	if (size == 0)
		return 0;
	s = malloc(size);
	CHECK(s != NULL);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		rc = httpparse_labels(s, &ls, &err);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
		check_labels(&ls);
		break;
	case 1:
		if (httpparse_time(s, &ns) == 0) {
			httpparse_format_time(ns, out);
			CHECK(httpparse_time(out, &back) == 0);
			CHECK(back == ns);
		}
		break;
	case 2:
		rc = httpparse_attime(s, INT64_C(1763800000000000000), &ns);
		CHECK(rc == 0 || rc == -EINVAL);
		if (rc == 0)
			httpparse_format_time(ns, out);
		break;
	case 3:
		rc = httpparse_appname(s, &app, &ls, &err);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
		if (rc == 0) {
			CHECK(app.len > 0 && strpbrk(app.data, "{}") == NULL);
			check_labels(&ls);
		} else if (rc == -EINVAL) {
			CHECK(err.len > 0);
		}
		break;
	default:
		if (httpparse_listen(s, host, sizeof(host), port, sizeof(port), &err) == 0) {
			CHECK(host[0] != '\0');
			CHECK(port[0] != '\0' && strspn(port, "0123456789") == strlen(port));
			CHECK(atoi(port) <= 65535);
		} else {
			CHECK(err.len > 0);
		}
		break;
	}
	labels_clear(&ls);
	buf_free(&err);
	buf_free(&app);
	free(s);
	return 0;
}
