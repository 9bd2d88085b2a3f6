/*
 * fuzz_ruby: the eBPF sampler's readers of what a Ruby process hands it: its
 * command line (/proc/PID/cmdline) read for a service name (runtime_service),
 * and an iseq's line table read from its memory, as the VM's succinct index
 * table or its positions array (ruby_succ_decode, ruby_positions_decode).
 * The first byte picks the reader; for tables the next three give the iseq's
 * size and the number of lines, then come the lines (4 bytes each) and the
 * table. Names stay within their buffer; rows cover the iseq in ascending
 * order and lookups past them give 0; never a crash or a hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruby.h"
#include "runtime.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_ruby: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static void
check_rows(const struct rbrow *rows, uint32_t n, uint32_t iseq_size)
{
	uint32_t k;

	for (k = 0; k < n; k++) {
		CHECK(rows[k].end <= iseq_size);
		CHECK(k == 0 || rows[k].end > rows[k - 1].end);
	}
	CHECK(ruby_rows_lookup(rows, n, iseq_size) == 0);
	for (k = 0; k < iseq_size; k += 1 + iseq_size / 64)
		(void)ruby_rows_lookup(rows, n, k);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rbrow *rows;
	uint32_t nrows, iseq_size, nlines;
	uint8_t sel;
	int32_t *lines;
	uint8_t *in;
	char out[65];
	size_t outsz, i;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	if (sel & 1) {
		if ((in = malloc(size ? size : 1)) == NULL)
			return 0;
		memcpy(in, data, size);
		outsz = 1 + (sel >> 2) % 64;
		memset(out, 'X', sizeof(out));
		if (runtime_service(RUNTIME_RUBY, (const char *)in, size, out, outsz)) {
			CHECK(memchr(out, '\0', outsz) != NULL);
			CHECK(out[0] != '\0');
		}
		for (i = outsz; i < sizeof(out); i++)
			CHECK(out[i] == 'X');
		free(in);
		return 0;
	}
	if (size < 3)
		return 0;
	iseq_size = (uint32_t)data[0] | (uint32_t)data[1] << 8;
	if (sel & 2)
		iseq_size <<= 4;	/* many blocks of the succinct table */
	nlines = data[2];
	data += 3;
	size -= 3;
	if ((size_t)nlines * 4 > size)
		nlines = (uint32_t)(size / 4);
	/* Exact copies: reads past them are ASan's to find. */
	lines = malloc(nlines ? nlines * sizeof(*lines) : 1);
	in = malloc(size - nlines * 4 ? size - nlines * 4 : 1);
	if (lines == NULL || in == NULL) {
		free(lines);
		free(in);
		return 0;
	}
	memcpy(lines, data, nlines * 4);
	memcpy(in, data + nlines * 4, size - nlines * 4);
	size -= nlines * 4;
	if (ruby_succ_decode(in, size, iseq_size, lines, nlines, &rows, &nrows) == 0) {
		check_rows(rows, nrows, iseq_size);
		CHECK(nrows > 0 || iseq_size == 0);
		CHECK(nrows == 0 || rows[nrows - 1].end == iseq_size);
		free(rows);
	}
	if (size / 4 >= nlines &&
	    ruby_positions_decode((const uint32_t *)(const void *)in, lines, nlines, iseq_size,
	    &rows, &nrows) == 0) {
		check_rows(rows, nrows, iseq_size);
		free(rows);
	}
	free(lines);
	free(in);
	return 0;
}
