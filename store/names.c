/*
 * names: what producers may call a service and a type, and whether a
 * profile's sample types fit the type it is stored as. The tree and the
 * store read any name already stored (store_check_service(),
 * store_check_type()); the names people type (ingest/ paths, the profefe
 * and Pyroscope push APIs) are held to Pyroscope's rules for application
 * names and to the known types here, so a typo or a shell's quoting mistake
 * is refused with a reason instead of creating a service or type for good.
 * The type a profile's samples suggest is store_infer_type()'s, the one
 * function that maps sample types to a type.
 */
#include <errno.h>
#include <string.h>

#include "base.h"
#include "store.h"

/* The families of types whose profiles share sample types. */
static const char *
family(const char *type)
{
	if (strcmp(type, "heap") == 0 || strcmp(type, "allocs") == 0)
		return "memory";
	if (strcmp(type, "block") == 0 || strcmp(type, "mutex") == 0)
		return "contention";
	if (strcmp(type, "cpu") == 0 || strcmp(type, "wall") == 0)
		return "time";
	if (strcmp(type, "goroutine") == 0 || strcmp(type, "threadcreate") == 0 ||
	    strcmp(type, "offcpu") == 0 || strcmp(type, "memory-growth") == 0 ||
	    strcmp(type, "memory-mmap") == 0)
		return type;
	return NULL;	/* other: anything */
}

static void
known_list(struct buf *err)
{
	size_t i;

	for (i = 0; store_types[i]; i++)
		buf_printf(err, "%s%s", i ? " " : "", store_types[i]);
}

int
store_check_known_type(const char *type, struct buf *err)
{
	if (type && (strcmp(type, "auto") == 0 || store_type_known(type)))
		return 0;
	if (err) {
		buf_printf(err, "unknown profile type \"%s\": known types are ", type ? type : "");
		known_list(err);
		buf_adds(err, ", and auto (inferred from the sample types)");
	}
	return -EINVAL;
}

int
store_check_profile_type(const char *type, const struct profile *p, struct buf *err)
{
	const char *inferred = store_infer_type(p), *want = family(type), *got = family(inferred);
	size_t i;

	if (want == NULL || got == NULL || strcmp(want, got) == 0)
		return 0;
	if (err) {
		buf_printf(err, "the profile's sample types (");
		for (i = 0; i < p->nsample_types; i++)
			buf_printf(err, "%s%s/%s", i ? " " : "",
			    profile_str(p, p->sample_types[i].type),
			    profile_str(p, p->sample_types[i].unit));
		buf_printf(err, ") are those of a %s profile, not %s: store it under %s/ or auto/",
		    inferred, type, inferred);
	}
	return -EINVAL;
}

int
store_check_service_name(const char *service, struct buf *err)
{
	size_t i, n = strlen(service);
	bool labels = false, bad = false;

	for (i = 0; i < n; i++) {
		char c = service[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			bad = true;
		if (c == '=' || c == '{' || c == '}' || c == ',')
			labels = true;
	}
	if (n == 0 || n > SERVICE_MAX_LEN || bad) {
		if (err) {
			buf_printf(err, "service name \"%s\": use 1 to %d letters, digits, '_', '-' "
			    "and '.' (Pyroscope's application names)", service, SERVICE_MAX_LEN);
			if (labels)
				buf_adds(err, "; labels go apart: app{k=v} over HTTP (with curl, "
				    "pass -g so that it keeps the braces), "
				    "ingest/<service>/<type>/k=v/ in the mount");
		}
		return -EINVAL;
	}
	return store_check_service(service, err);
}
