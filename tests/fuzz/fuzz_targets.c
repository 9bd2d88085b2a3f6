/*
 * fuzz_targets: the scraper's targets file (collector/scrape/targets.c, jansson
 * underneath) on arbitrary bytes. Either it parses, and every job has a
 * URL under http(s)://, a service, an instance label and sane durations, or
 * it is refused with "line N: reason" and nothing allocated is left behind.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "targets.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_targets: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct target_list l;
	struct buf err = { 0 };
	size_t i;
	int rc;

	/* data is not NUL-terminated: the length alone bounds the parse. */
	rc = targets_parse((const char *)data, size, &l, &err);
	if (rc < 0) {
		CHECK(rc == -EINVAL || rc == -ENOMEM);
		CHECK(l.n == 0 && l.v == NULL);
		CHECK(rc == -ENOMEM || strncmp(err.data, "line ", 5) == 0);
		/* The line named is one the input has. */
		if (rc == -EINVAL) {
			long line = strtol(err.data + 5, NULL, 10);
			size_t lines = 1;

			for (i = 0; i < size; i++)
				lines += data[i] == '\n';
			CHECK(line >= 1 && (size_t)line <= lines);
		}
	} else {
		CHECK(l.n <= TARGETS_MAX_SPECS);
		for (i = 0; i < l.n; i++) {
			const struct target_spec *s = &l.v[i];

			CHECK(strncmp(s->url, "http://", 7) == 0 || strncmp(s->url, "https://", 8) == 0);
			CHECK(strpbrk(s->url, " \t\r\n#") == NULL);
			CHECK(s->service[0] && s->instance[0] && s->key[0]);
			CHECK(s->interval >= TARGETS_MIN_INTERVAL);
			CHECK(s->timeout > 0);
			CHECK(store_check_service(s->service, NULL) == 0);
			CHECK(s->labels.n >= 1);
		}
		targets_free(&l);
	}
	buf_free(&err);
	return 0;
}
