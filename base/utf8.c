/*
 * utf8: checking and repairing UTF-8. Names and strings from outside (service
 * names, label values, function and file names in uploaded profiles, error
 * messages that quote them) may hold any bytes; JSON and XML output may not,
 * so writers repair them here: each byte that does not start a well-formed
 * sequence (RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF) becomes U+FFFD, the rest is kept as is. Strings stored from
 * outside are bounded here too (utf8_cut(): STR_MAX_STORED bytes, cut
 * between characters and marked), so every producer cuts them alike.
 */
#include <stdint.h>
#include <string.h>

#include "base.h"

#define REPLACEMENT	"\xef\xbf\xbd"	/* U+FFFD */

size_t
utf8_seqlen(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len, i;
	uint32_t cp;

	if (n == 0)
		return 0;
	if (u[0] < 0x80)
		return 1;
	if ((u[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = u[0] & 0x1f;
	} else if ((u[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = u[0] & 0x0f;
	} else if ((u[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = u[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (u[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool
utf8_valid(const char *s, size_t n)
{
	size_t i = 0, l;

	while (i < n) {
		/* ASCII runs are the common case: no decoding. */
		if ((unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		if ((l = utf8_seqlen(s + i, n - i)) == 0)
			return false;
		i += l;
	}
	return true;
}

int
utf8_repair(struct buf *out, const char *s, size_t n)
{
	size_t i = 0, run, l;
	int rc;

	while (i < n) {
		/* Copy the longest valid run at once. */
		for (run = i; run < n && (l = utf8_seqlen(s + run, n - run)) != 0; run += l)
			;
		if (run > i && (rc = buf_add(out, s + i, run - i)) < 0)
			return rc;
		i = run;
		if (i < n) {
			if ((rc = buf_add(out, REPLACEMENT, 3)) < 0)
				return rc;
			i++;
		}
	}
	/* An empty input still leaves a valid, NUL-terminated buffer. */
	return buf_reserve(out, 0);
}

size_t
utf8_cut(const char *s, size_t n, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t k, j;

	if (n <= max)
		return n;
	k = max - (sizeof(STR_CUT_MARK) - 1);	/* s[k]: the first byte left out */
	/*
	 * A character that s[k] continues goes whole, if it is one: a lead
	 * byte at most 3 back whose well-formed sequence reaches past k.
	 * Bytes that are not UTF-8 are cut where they are.
	 */
	for (j = k; j > 0 && k - j < 3 && (u[j] & 0xc0) == 0x80; j--)
		;
	if (j < k && (u[j] & 0xc0) != 0x80 && utf8_seqlen(s + j, n - j) > k - j)
		k = j;
	return k;
}

int
utf8_add_cut(struct buf *out, const char *s, size_t n, size_t max)
{
	size_t k = utf8_cut(s, n, max);
	int rc;

	if ((rc = buf_add(out, s, k)) < 0 || k == n)
		return rc;
	return buf_add(out, STR_CUT_MARK, sizeof(STR_CUT_MARK) - 1);
}
