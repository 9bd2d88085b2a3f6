/*
 * buf: growable byte buffer. Growth doubles; every mutator keeps data[len]
 * == '\0'. A failed append (no memory, or past the buffer's max) is
 * remembered in b->err and makes every later append a no-op, so a renderer
 * may append freely and its caller checks buf_error() once.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"

#define BUF_SMALL	(64u << 10)

int
buf_reserve(struct buf *b, size_t more)
{
	size_t need, ncap;
	char *p;

	if (b->err)
		return b->err;
	if (more > SIZE_MAX - b->len - 1)
		return b->err = -ENOMEM;
	need = b->len + more + 1;
	if (b->max && need - 1 > b->max)
		return b->err = -EFBIG;
	if (need <= b->cap)
		return 0;
	/*
	 * Double small buffers, grow large ones by half (what is reserved in
	 * the memory budget stays near what is used), and take one large
	 * reservation exactly.
	 */
	ncap = b->cap ? b->cap : 64;
	ncap = ncap > SIZE_MAX / 2 ? need : ncap + (ncap < (8u << 20) ? ncap : ncap / 2);
	if (ncap < need)
		ncap = need;
	if (b->max && ncap > b->max + 1)
		ncap = need > b->max + 1 ? need : b->max + 1;
	/*
	 * Small buffers (names, paths, messages) are counted but never
	 * refused, so a full budget cannot stop the daemon from parsing a
	 * path or saying why it refused something.
	 */
	if (ncap <= BUF_SMALL)
		budget_charge(ncap - b->cap);
	else if (budget_reserve(ncap - b->cap) < 0)
		return b->err = -ENOMEM;
	p = realloc(b->data, ncap);
	if (p == NULL) {
		budget_release(ncap - b->cap);
		return b->err = -ENOMEM;
	}
	b->data = p;
	b->cap = ncap;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_add(struct buf *b, const void *p, size_t n)
{
	int rc;

	if ((rc = buf_reserve(b, n)) < 0)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	assert(b->len < b->cap);	/* room for the terminating NUL, always */
	b->data[b->len] = '\0';
	return 0;
}

int
buf_addc(struct buf *b, int c)
{
	char ch = (char)c;

	return buf_add(b, &ch, 1);
}

int
buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, rc;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	if ((rc = buf_reserve(b, (size_t)n)) < 0)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int
buf_add_xml(struct buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, l;
	int rc = 0;

	while (i < n && rc == 0) {
		unsigned char c = u[i];

		switch (c) {
		case '<': rc = buf_adds(b, "&lt;"); i++; continue;
		case '>': rc = buf_adds(b, "&gt;"); i++; continue;
		case '&': rc = buf_adds(b, "&amp;"); i++; continue;
		case '"': rc = buf_adds(b, "&quot;"); i++; continue;
		case '\'': rc = buf_adds(b, "&#39;"); i++; continue;
		}
		if (c < 0x20 && c != '\t' && c != '\n') {
			/* XML 1.0 forbids most control characters. */
			rc = buf_adds(b, "\xef\xbf\xbd");
			i++;
			continue;
		}
		l = utf8_seqlen(s + i, n - i);
		/* XML 1.0's Char excludes U+FFFE and U+FFFF as well. */
		if (l == 3 && u[i] == 0xef && u[i + 1] == 0xbf && (u[i + 2] & 0xfe) == 0xbe)
			l = 0;
		if (l == 0) {
			rc = buf_adds(b, "\xef\xbf\xbd");
			i++;
			continue;
		}
		rc = buf_add(b, u + i, l);
		i += l;
	}
	return rc;
}

/* Decimal digits of u, right-aligned ending at end; returns the first. */
static char *
digits(char *end, uint64_t u, int min)
{
	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
		min--;
	} while (u || min > 0);
	return end;
}

int
buf_add_i64(struct buf *b, int64_t v)
{
	char tmp[24], *p = digits(tmp + sizeof(tmp), v < 0 ? -(uint64_t)v : (uint64_t)v, 1);

	if (v < 0)
		*--p = '-';
	return buf_add(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

/*
 * v with dec (0..4) digits after the point, as printf's "%.<dec>f" writes
 * it, without the cost of printf's exact binary-to-decimal conversion
 * (ties to even, as printf's; the product's rounding may differ in the
 * last digit from printf's exact one). Renderers write millions of these.
 */
int
buf_add_fixed(struct buf *b, double v, int dec)
{
	static const double scale[] = { 1, 10, 100, 1000, 10000 };
	char tmp[48], *p;
	uint64_t u, whole, frac;
	bool neg;

	if (dec < 0 || dec > 4 || !(v > -1e15 && v < 1e15))
		return buf_printf(b, "%.*f", dec < 0 ? 0 : dec, v);
	neg = v < 0;
	u = (uint64_t)nearbyint((neg ? -v : v) * scale[dec]);
	whole = u / (uint64_t)scale[dec];
	frac = u % (uint64_t)scale[dec];
	p = tmp + sizeof(tmp);
	if (dec > 0) {
		p = digits(p, frac, dec);
		*--p = '.';
	}
	p = digits(p, whole, 1);
	if (neg && u != 0)
		*--p = '-';
	return buf_add(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

int
buf_add_varint(struct buf *b, uint64_t v)
{
	unsigned char tmp[VARINT_MAX];

	return buf_add(b, tmp, varint_put(tmp, v));
}

long
pct_decode(char *dst, const char *s, size_t n, unsigned flags)
{
	size_t i = 0, w = 0;
	int hi, lo;

	while (i < n) {
		if (s[i] == '%') {
			if (n - i >= 3 && (hi = hex_value(s[i + 1])) >= 0 &&
			    (lo = hex_value(s[i + 2])) >= 0 && ((hi | lo) != 0 || (flags & PCT_NUL_OK))) {
				dst[w++] = (char)(hi << 4 | lo);
				i += 3;
				continue;
			}
			if (!(flags & PCT_LENIENT))
				return -EINVAL;
			dst[w++] = s[i++];
			continue;
		}
		dst[w++] = s[i] == '+' && (flags & PCT_PLUS_SPACE) ? ' ' : s[i];
		i++;
	}
	return (long)w;
}

int
buf_add_pct_decoded(struct buf *b, const char *s, size_t n, unsigned flags)
{
	long w;
	int rc;

	if ((rc = buf_reserve(b, n)) < 0)
		return rc;
	if ((w = pct_decode(b->data + b->len, s, n, flags)) < 0) {
		b->data[b->len] = '\0';
		return (int)w;
	}
	b->len += (size_t)w;
	b->data[b->len] = '\0';
	return 0;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	b->err = 0;
	if (b->data)
		b->data[0] = '\0';
}

void
buf_free(struct buf *b)
{
	budget_release(b->cap);
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->err = 0;
}

char *
buf_steal(struct buf *b, size_t *len)
{
	char *p = b->data;

	if (p == NULL)
		p = xcalloc(1, 1);
	/* The storage leaves the buffer, and with it the budget's count. */
	budget_release(b->cap);
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	b->err = 0;
	return p;
}

int
buf_read_file(struct buf *b, const char *path, size_t limit)
{
	char tmp[65536];
	ssize_t n;
	int fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	for (;;) {
		n = read(fd, tmp, sizeof(tmp));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		if (b->len + (size_t)n > limit) {
			rc = -EFBIG;
			break;
		}
		if ((rc = buf_add(b, tmp, (size_t)n)) < 0)
			break;
	}
	close(fd);
	return rc;
}

int
buf_add_base64(struct buf *b, const void *p, size_t n)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *u = p;
	size_t i;
	char q[4];

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 | u[i + 2];

		q[0] = tab[v >> 18];
		q[1] = tab[v >> 12 & 63];
		q[2] = tab[v >> 6 & 63];
		q[3] = tab[v & 63];
		buf_add(b, q, 4);
	}
	if (n - i == 1) {
		q[0] = tab[u[i] >> 2];
		q[1] = tab[(u[i] & 3) << 4];
		q[2] = q[3] = '=';
		buf_add(b, q, 4);
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)u[i] << 8 | u[i + 1];

		q[0] = tab[v >> 10];
		q[1] = tab[v >> 4 & 63];
		q[2] = tab[(v & 15) << 2];
		q[3] = '=';
		buf_add(b, q, 4);
	}
	return buf_error(b);
}

/* The value of base64 character c in either alphabet, or -1. */
static int
base64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int
buf_add_base64_decoded(struct buf *b, const char *s, size_t n)
{
	uint32_t acc = 0;
	size_t i;
	int bits = 0, v;

	if (buf_reserve(b, n / 4 * 3 + 3) < 0)
		return buf_error(b);
	for (i = 0; i < n && s[i] != '='; i++) {
		if ((v = base64_value((unsigned char)s[i])) < 0)
			return -EINVAL;
		acc = acc << 6 | (uint32_t)v;
		if ((bits += 6) >= 8) {
			bits -= 8;
			buf_addc(b, (int)(acc >> bits & 0xff));
		}
	}
	return buf_error(b);
}

int
hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
