/*
 * re2shim: RE2 behind a C interface (re2shim.h). C++ exceptions stop here:
 * an allocation that fails inside RE2 becomes an error code, never an
 * exception crossing C frames.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include <re2/re2.h>

#include "re2shim.h"

struct re2shim {
	re2::RE2	re;

	re2shim(const re2::StringPiece &p, const re2::RE2::Options &o) : re(p, o) {}
};

static enum re2shim_error
kind_of(re2::RE2::ErrorCode c)
{
	switch (c) {
	case re2::RE2::NoError:			return RE2SHIM_OK;
	case re2::RE2::ErrorBadEscape:		return RE2SHIM_BAD_ESCAPE;
	case re2::RE2::ErrorRepeatSize:		return RE2SHIM_BAD_REPEAT;
	case re2::RE2::ErrorRepeatOp:		return RE2SHIM_BAD_REPEAT_OP;
	case re2::RE2::ErrorPatternTooLarge:	return RE2SHIM_TOO_LARGE;
	default:				return RE2SHIM_OTHER;
	}
}

extern "C" enum re2shim_error
re2shim_compile(const char *pattern, size_t len, int64_t max_mem, struct re2shim **out,
    char *why, size_t whysz)
{
	re2::RE2::Options o;
	enum re2shim_error e;
	struct re2shim *re;

	*out = NULL;
	if (whysz)
		why[0] = '\0';
	o.set_encoding(re2::RE2::Options::EncodingUTF8);
	o.set_log_errors(false);
	o.set_never_capture(true);	/* whole-value matches need no groups */
	o.set_max_mem(max_mem);
	try {
		re = new struct re2shim(re2::StringPiece(pattern, len), o);
	} catch (const std::bad_alloc &) {
		snprintf(why, whysz, "out of memory");
		return RE2SHIM_NOMEM;
	}
	if ((e = kind_of(re->re.error_code())) != RE2SHIM_OK) {
		snprintf(why, whysz, "%s", re->re.error().c_str());
		delete re;
		return e;
	}
	*out = re;
	return RE2SHIM_OK;
}

extern "C" int
re2shim_full_match(const struct re2shim *re, const char *s, size_t n)
{
	try {
		return re->re.Match(re2::StringPiece(s, n), 0, n, re2::RE2::ANCHOR_BOTH, NULL, 0);
	} catch (const std::bad_alloc &) {
		return -1;
	}
}

extern "C" int
re2shim_program_size(const struct re2shim *re)
{
	return re->re.ProgramSize();
}

extern "C" void
re2shim_free(struct re2shim *re)
{
	delete re;
}
