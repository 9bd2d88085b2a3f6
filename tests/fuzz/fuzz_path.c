/*
 * fuzz_path: path_parse() on arbitrary paths (every lookup the kernel sends),
 * and path_range() / path_selector() on arbitrary names. Whatever parses must
 * be self-consistent: a range is non-empty, a canonical selector is its own
 * canonical form, a profile's file name parses back to its id.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_path: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

/* 2026-11-22T10:05:03Z */
#define NOW	(INT64_C(1795341903) * INT64_C(1000000000))

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fspath o;
	struct range r;
	char *s = malloc(size + 1), sel[1024], sel2[1024], name[128], path[256];
	int64_t t = 0;
	uint64_t id = 0;

	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	if (path_parse(s, NOW, &o) == 0) {
		bool ranged = o.node == NODE_RANGE || o.node == NODE_VIEW ||
		    o.node == NODE_PROFILES || o.node == NODE_PROFILE || o.node == NODE_VS ||
		    o.node == NODE_VS_BASE || o.node == NODE_VS_VIEW;

		CHECK(memchr(o.service, '\0', sizeof(o.service)) != NULL);
		if (ranged) {
			CHECK(o.range.from < o.range.to);
			/* The selector is canonical: parsing it again changes nothing. */
			if (o.selector[0]) {
				CHECK(path_selector(o.selector, sel, sizeof(sel)) == 0);
				CHECK(strcmp(sel, o.selector) == 0);
			}
		}
		if (o.node == NODE_VS_BASE || o.node == NODE_VS_VIEW)
			CHECK(o.base_range.from < o.base_range.to);
	}
	if (path_range(s, NOW, &r) == 0) {
		struct range r2;

		CHECK(r.from < r.to);
		/* The name is the form the tree lists: no ':', and it parses to itself. */
		CHECK(strchr(r.name, ':') == NULL);
		CHECK(path_range(r.name, NOW, &r2) == 0);
		CHECK(strcmp(r2.name, r.name) == 0 && r2.from == r.from && r2.to == r.to);
	}
	if (path_selector(s, sel, sizeof(sel)) == 0) {
		CHECK(sel[0] == '\0' || path_selector(sel, sel2, sizeof(sel2)) == 0);
		CHECK(sel[0] == '\0' || strcmp(sel, sel2) == 0);
	}
	/* Any time and id give a name that profiles/ parses back. */
	if (size >= 16) {
		memcpy(&t, data, 8);
		memcpy(&id, data + 8, 8);
		path_profile_name(t, id, name, sizeof(name));
		snprintf(path, sizeof(path), "/s/cpu/all/all/profiles/%s", name);
		CHECK(path_parse(path, NOW, &o) == 0);
		CHECK(o.node == NODE_PROFILE && o.profile_id == id);
		CHECK(strchr(name, ':') == NULL);
	}
	free(s);
	return 0;
}
