/*
 * fuzz_matchers: the label matchers on arbitrary text, in both forms:
 * matchers_parse_prom() (the Grafana API's selectors) and
 * matchers_parse_path() (the tree's). A refusal gives a reason and leaves no
 * matcher; what parses in the tree's form formats to a canonical text that
 * parses back to the same matchers, and every matcher evaluates on a series.
 * The regexes are RE2's: what parses holds at most the selector's cap of
 * the budget, and a value of 4 KiB matches in linear time whatever the
 * pattern (the corpus holds the shapes that cost regcomp() gigabytes and
 * back-references that cost it minutes).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_matchers: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static void
check_refusal(int rc, const struct matchers *ms, const struct buf *err)
{
	CHECK(rc == -EINVAL || rc == -ENOMEM);
	CHECK(ms->n == 0);
	CHECK(rc == -ENOMEM || err->len > 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct matchers ms, back;
	struct labelset ls = { .n = 0 };
	struct buf err = { 0 }, text = { 0 };
	char *s = malloc(size + 1);
	static char big[4097];
	size_t i;
	int rc;

	CHECK(s != NULL);
	if (big[0] == '\0')
		memset(big, 'a', sizeof(big) - 1);
	memcpy(s, data, size);
	s[size] = '\0';
	(void)labels_add(&ls, "pod", "api-1", NULL);
	(void)labels_add(&ls, "region", "eu", NULL);

	rc = matchers_parse_prom(s, &ms, &err);
	if (rc < 0)
		check_refusal(rc, &ms, &err);
	else {
		CHECK(ms.n <= LABELS_MAX);
		CHECK(matchers_re_mem(&ms) <= MATCHERS_RE_MEM_MAX);
		(void)matchers_match(&ms, "svc", &ls);
		for (i = 0; i < ms.n; i++)
			(void)matcher_match(&ms.m[i], big);
		matchers_clear(&ms);
	}
	buf_reset(&err);
	rc = matchers_parse_path(s, &ms, &err);
	if (rc < 0)
		check_refusal(rc, &ms, &err);
	else {
		bool m1 = matchers_match(&ms, "svc", &ls);

		CHECK(matchers_format(&ms, &text) == 0);
		CHECK(matchers_parse_path(text.data, &back, NULL) == 0);
		CHECK(back.n == ms.n);
		for (i = 0; i < ms.n; i++) {
			CHECK(strcmp(back.m[i].key, ms.m[i].key) == 0);
			CHECK(strcmp(back.m[i].value, ms.m[i].value) == 0);
			CHECK(back.m[i].op == ms.m[i].op);
		}
		CHECK(matchers_match(&back, "svc", &ls) == m1);
		matchers_clear(&back);
		matchers_clear(&ms);
	}
	labels_clear(&ls);
	buf_free(&err);
	buf_free(&text);
	free(s);
	return 0;
}
