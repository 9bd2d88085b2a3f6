/*
 * fuzz_labels: labels_parse() on arbitrary text (label sets come from path
 * segments, ingest directories, HTTP query strings and scrape configs). A set
 * that parses must format to a canonical text that parses back to the same
 * set; escaping any NUL-free bytes must unescape to the same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_labels: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct labelset ls, back;
	struct buf err = { 0 }, text = { 0 }, again = { 0 }, esc = { 0 }, unesc = { 0 };
	char *s = malloc(size + 1);
	size_t i;
	int rc;

	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	rc = labels_parse(s, &ls, &err);
	if (rc < 0) {
		CHECK(rc == -EINVAL || rc == -ENOMEM);
		CHECK(ls.n == 0);
		CHECK(rc == -ENOMEM || err.len > 0);
	} else {
		CHECK(ls.n <= LABELS_MAX);
		for (i = 0; i < ls.n; i++) {
			CHECK(ls.pairs[i].key[0] != '\0');
			CHECK(strlen(ls.pairs[i].key) <= LABEL_MAX_LEN);
			CHECK(strlen(ls.pairs[i].value) <= LABEL_MAX_LEN);
			if (i)
				CHECK(strcmp(ls.pairs[i - 1].key, ls.pairs[i].key) < 0);
		}
		CHECK(labels_format(&ls, &text) == 0);
		CHECK(strchr(text.data, '/') == NULL);
		CHECK(labels_parse(text.data, &back, NULL) == 0);
		CHECK(back.n == ls.n);
		for (i = 0; i < ls.n; i++) {
			CHECK(strcmp(back.pairs[i].key, ls.pairs[i].key) == 0);
			CHECK(strcmp(back.pairs[i].value, ls.pairs[i].value) == 0);
		}
		CHECK(labels_format(&back, &again) == 0);
		CHECK(strcmp(text.data, again.data) == 0);
		CHECK(labels_match(&ls, &back) && labels_match(&back, &ls));
		labels_clear(&back);
		labels_clear(&ls);
	}
	/* Escaping is reversible for bytes without NUL. */
	if (memchr(data, 0, size) == NULL) {
		CHECK(labels_escape(&esc, (const char *)data, size) == 0);
		for (i = 0; i < esc.len; i++)
			CHECK(esc.data[i] > 0x20 && esc.data[i] < 0x7f && esc.data[i] != '/' &&
			    esc.data[i] != ',' && esc.data[i] != '=');
		CHECK(labels_unescape(&unesc, esc.data ? esc.data : "", esc.len) == 0);
		CHECK(unesc.len == size && (size == 0 || memcmp(unesc.data, data, size) == 0));
	}
	/* Unescaping arbitrary text never reads past its length. */
	buf_reset(&unesc);
	(void)labels_unescape(&unesc, (const char *)data, size);
	free(s);
	buf_free(&err);
	buf_free(&text);
	buf_free(&again);
	buf_free(&esc);
	buf_free(&unesc);
	return 0;
}
