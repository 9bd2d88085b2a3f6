/*
 * alloc: the out-of-memory policy. Small allocations that fail abort the
 * process with a message (as Redis's zmalloc does): a daemon that cannot get
 * a few kilobytes cannot store, render or even log sensibly, and checking
 * every one of them only multiplies untested paths. Allocations whose size
 * outside input decides are bounded before they are made (decode budgets,
 * body and file limits), so reaching this abort means the host itself is out
 * of memory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static void __attribute__((noreturn))
oom(size_t n)
{
	/* No allocation here: log_fatalx() could itself need memory. */
	fprintf(stderr, "profilefs: out of memory allocating %zu bytes\n", n);
	abort();
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom(n);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (p == NULL)
		oom(nmemb * size);
	return p;
}

void *
xreallocarray(void *p, size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n))
		oom(SIZE_MAX);
	if ((p = realloc(p, n ? n : 1)) == NULL)
		oom(n);
	return p;
}

char *
xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

void *
xgrow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 8;

	if (need <= *cap)
		return p;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			oom(SIZE_MAX);
		ncap *= 2;
	}
	p = xreallocarray(p, ncap, size);
	*cap = ncap;
	return p;
}
