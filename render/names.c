/*
 * names: how frame names are shown. Stored profiles keep the names their
 * producer wrote (mangled C++ and Rust symbols included, as pprof keeps them
 * and `go tool pprof` demangles on display); the views demangle them when
 * they build the stack tree, with libiberty's demangler (Itanium C++
 * "_Z...", Rust legacy "_ZN...17h<hash>E" and Rust v0 "_R..."), giving the
 * names `c++filt` prints. Text views (top.txt, folded.txt) also escape the
 * bytes a terminal would act on: C0 and C1 controls, DEL and bytes that are
 * not UTF-8 are written "\xHH".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "render.h"

/* After the project's headers: libiberty.h defines macros (hex_value) over their names. */
#include <libiberty/demangle.h>

/*
 * Longer names are shown as stored: a mangled name of some KiB is already
 * past what any view shows whole, and the demangler's work grows with it.
 */
#define DEMANGLE_MAX_IN		4096
/* A demangled name longer than this (template expansions) is not used. */
#define DEMANGLE_MAX_OUT	65536

bool
render_is_mangled(const char *name)
{
	return name[0] == '_' && (name[1] == 'Z' || (name[1] == 'R' &&
	    name[2] >= 'A' && name[2] <= 'Z'));
}

int
render_demangle(const char *name, struct buf *out)
{
	char *d;
	size_t n;

	if (!render_is_mangled(name) || strnlen(name, DEMANGLE_MAX_IN + 1) > DEMANGLE_MAX_IN)
		return 0;
	/*
	 * c++filt's defaults (arguments, qualifiers, std:: types spelt out) and
	 * its order: Rust first (legacy Rust names are also Itanium names), then
	 * C++. Not cplus_demangle(): it pulls in libiberty's xmalloc, whose name
	 * the project's allocator has.
	 */
	d = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE);
	if (d == NULL && name[1] == 'Z')
		d = cplus_demangle_v3(name, DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE);
	if (d == NULL)
		return 0;
	n = strlen(d);
	if (n == 0 || n > DEMANGLE_MAX_OUT) {
		free(d);
		return 0;
	}
	buf_reset(out);
	buf_add(out, d, n);
	free(d);
	return out->data ? 1 : -ENOMEM;
}

/* Whether the bytes at s (n left) are one character a terminal shows as text: its length, or 0. */
static size_t
printable_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t l;

	if (u[0] < 0x20 || u[0] == 0x7f)
		return 0;
	if (u[0] < 0x80)
		return 1;
	if ((l = utf8_seqlen(s, n)) == 0)
		return 0;
	/* C1 controls U+0080..U+009F: 0xc2 0x80..0x9f (0x9b is CSI). */
	if (l == 2 && u[0] == 0xc2 && u[1] < 0xa0)
		return 0;
	return l;
}

int
render_add_text(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(s), i = 0, l;

	while (i < n) {
		size_t run = i;

		while (run < n && (l = printable_len(s + run, n - run)) > 0)
			run += l;
		buf_add(out, s + i, run - i);
		if (run < n) {
			char esc[4] = { '\\', 'x', hex[(unsigned char)s[run] >> 4],
			    hex[(unsigned char)s[run] & 15] };

			buf_add(out, esc, sizeof(esc));
			run++;
		}
		i = run;
	}
	return buf_error(out);
}
