/*
 * re2shim: the C face of RE2 (Debian's libre2, C++), the engine of the label
 * matchers' regular expressions (labels.c). RE2's syntax is Prometheus's
 * and Pyroscope's (Go's regexp): no back-references, repetition counts of
 * at most 1000, and matching in time linear in the input, with the memory
 * of one compiled expression capped by max_mem. This module only wraps: the
 * limits, the budget and the messages a user reads are labels.c's.
 */
#ifndef PROFILEFS_RE2SHIM_H
#define PROFILEFS_RE2SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct re2shim;

/* Why RE2 refused a pattern, as labels.c words it. */
enum re2shim_error {
	RE2SHIM_OK,
	RE2SHIM_BAD_ESCAPE,	/* \1 (a back-reference), \Z, ... */
	RE2SHIM_BAD_REPEAT,	/* a count over 1000, nested counts multiplied */
	RE2SHIM_BAD_REPEAT_OP,	/* a** and the like */
	RE2SHIM_TOO_LARGE,	/* the program would pass max_mem */
	RE2SHIM_NOMEM,		/* operator new failed */
	RE2SHIM_OTHER,		/* any other syntax error */
};

/*
 * Compile pattern[0..len) (UTF-8, RE2 syntax, no captures, errors not
 * logged) into *out, RE2 using at most about max_mem bytes for its program
 * and matching caches. On refusal *out is NULL, RE2's own message is put
 * in why[0..whysz) and the kind of refusal returned. Free with
 * re2shim_free().
 */
enum re2shim_error re2shim_compile(const char *pattern, size_t len, int64_t max_mem,
	    struct re2shim **out, char *why, size_t whysz);
/*
 * Whether the whole of s[0..n) matches (as Go's ^(?:re)$): 1, 0, or -1
 * when RE2 ran out of memory. Safe from many threads at once.
 */
int	re2shim_full_match(const struct re2shim *re, const char *s, size_t n);
/* Instructions in the compiled program (RE2's measure of its size). */
int	re2shim_program_size(const struct re2shim *re);
void	re2shim_free(struct re2shim *re);

#ifdef __cplusplus
}
#endif

#endif
