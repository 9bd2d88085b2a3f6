/*
 * Kernel text addresses (query/kaddr.c): hidden in place and in a copy
 * that leaves the original whole, user-space addresses untouched; whether
 * a caller may see them follows kernel.kptr_restrict.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "query.h"

#define KTEXT	UINT64_C(0xffffffff81234567)

/* A profile of a user frame and two kernel frames, in a user and a kernel mapping. */
static void
make(struct profile *p, struct pf_location *l, struct pf_mapping *m)
{
	memset(p, 0, sizeof(*p));
	memset(l, 0, 3 * sizeof(*l));
	memset(m, 0, 2 * sizeof(*m));
	m[0].start = 0x400000;
	m[0].limit = 0x500000;
	m[0].offset = 0x1000;
	m[1].start = UINT64_C(0xffff800000000000);
	m[1].limit = UINT64_MAX;
	l[0].mapping = 1;
	l[0].address = 0x401234;
	l[1].mapping = 2;
	l[1].address = KTEXT;
	l[2].mapping = 2;
	l[2].address = KTEXT + 0x40;
	p->locations = l;
	p->nlocations = 3;
	p->mappings = m;
	p->nmappings = 2;
}

static void
test_hide_in_place(void **state)
{
	struct pf_location l[3];
	struct pf_mapping m[2];
	struct profile p;

	(void)state;
	make(&p, l, m);
	assert_true(kaddr_any(&p));
	assert_int_equal(kaddr_hide(&p), 3);	/* two locations, one mapping */
	assert_false(kaddr_any(&p));
	assert_true(l[0].address == 0x401234);
	assert_true(l[1].address == 0 && l[2].address == 0);
	assert_true(m[0].start == 0x400000 && m[0].limit == 0x500000 && m[0].offset == 0x1000);
	assert_true(m[1].start == 0 && m[1].limit == 0 && m[1].offset == 0);
	assert_int_equal(l[1].mapping, 2);	/* the frame keeps its mapping (its name) */
	assert_int_equal(kaddr_hide(&p), 0);
}

static void
test_hidden_copy(void **state)
{
	struct pf_location l[3];
	struct pf_mapping m[2];
	struct profile p, *c = NULL;

	(void)state;
	make(&p, l, m);
	assert_int_equal(kaddr_hidden_copy(&p, &c), 0);
	assert_non_null(c);
	assert_false(kaddr_any(c));
	assert_true(kaddr_any(&p));	/* the original (the cache's) stays whole */
	assert_true(l[1].address == KTEXT && m[1].limit == UINT64_MAX);
	assert_true(c->locations[0].address == 0x401234);
	assert_null(c->arena);
	kaddr_copy_free(c);

	/* Nothing to hide: no copy, the original serves. */
	kaddr_hide(&p);
	assert_int_equal(kaddr_hidden_copy(&p, &c), 0);
	assert_null(c);
	kaddr_copy_free(NULL);
}

static void
test_visible(void **state)
{
	FILE *f = fopen("/proc/sys/kernel/kptr_restrict", "re");
	int r = -1;

	(void)state;
	if (f == NULL || fscanf(f, "%d", &r) != 1) {
		if (f)
			fclose(f);
		skip();
	}
	fclose(f);
	/* kptr_restrict=2 hides them from everyone; an unknown caller sees them only if all do. */
	if (r >= 2)
		assert_false(kaddr_visible(getpid()));
	assert_int_equal(kaddr_visible(0), kaddr_visible(-1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hide_in_place),
		cmocka_unit_test(test_hidden_copy),
		cmocka_unit_test(test_visible),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
