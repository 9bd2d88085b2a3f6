/*
 * fuzz_runtime: the eBPF sampler's readers of what other processes hand it:
 * a command line (/proc/PID/cmdline) read for a Python or Java service name
 * (runtime_service), and a CPython location table read from a process's
 * memory (python_linetable_line). The first byte picks the reader and its
 * parameters; the rest is the input. Names must stay within their buffer and
 * be NUL-terminated; lines are a number or 0, never a crash or a hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python.h"
#include "runtime.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_runtime: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel;
	char *in, out[65];
	size_t outsz, i;

	if (size == 0)
		return 0;
	sel = data[0];
	data++;
	size--;
	if (sel & 1) {
		/* A copy of exactly size bytes: reads past it are ASan's to find. */
		if ((in = malloc(size ? size : 1)) == NULL)
			return 0;
		memcpy(in, data, size);
		outsz = 1 + (sel >> 2) % 64;
		memset(out, 'X', sizeof(out));
		if (runtime_service((sel & 2) ? RUNTIME_JVM : RUNTIME_PYTHON, in, size, out,
		    outsz)) {
			CHECK(memchr(out, '\0', outsz) != NULL);
			CHECK(out[0] != '\0');
		}
		for (i = outsz; i < sizeof(out); i++)
			CHECK(out[i] == 'X');
		free(in);
	} else {
		uint8_t *lt = malloc(size ? size : 1);

		if (lt == NULL)
			return 0;
		memcpy(lt, data, size);
		struct ltrow *rows;
		uint32_t nrows;

		if (python_linetable_decode(lt, size, (int32_t)(sel >> 4), &rows, &nrows) < 0)
			rows = NULL;
		for (i = 0; i < 64; i += 1 + (sel >> 1) % 8)
			CHECK(rows == NULL || python_linetable_line(lt, size, (int32_t)(sel >> 4), i) ==
			    python_lines_lookup(rows, nrows, i));
		free(rows);
		free(lt);
	}
	return 0;
}
