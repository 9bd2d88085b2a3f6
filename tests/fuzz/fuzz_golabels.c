/*
 * fuzz_golabels: the Go label readers of the eBPF sampler, on what a hostile
 * Go process controls: an executable's .go.buildinfo section
 * (golabels_buildinfo_version, its pointer form read from the input too) and
 * the label bytes a sample carries from the goroutine's memory
 * (golabels_sample: offsets, lengths and bytes as the BPF side copied them,
 * then checked again). The first byte picks the reader. Versions are numbers
 * or -EINVAL; label sets are NUL-terminated strings within the bounds, never
 * a crash, a leak or a hang.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golabels.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_golabels: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

struct input {
	const uint8_t	*data;
	size_t		 size;
};

/* Addresses are offsets into the input. */
static int
input_read(void *arg, uint64_t vaddr, void *dst, size_t n)
{
	const struct input *in = arg;

	if (vaddr > in->size || n > in->size - vaddr)
		return -EFAULT;
	memcpy(dst, in->data + vaddr, n);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct prof_sample s;
	struct golabels_set gs;
	struct golabels *gl;
	struct input in;
	struct proc p;
	uint8_t *copy;
	size_t i, n;
	int major, minor;

	if (size == 0)
		return 0;
	if ((data[0] & 1) == 0) {
		/* A copy of exactly the section's bytes: reads past it are ASan's to find. */
		if ((copy = malloc(size)) == NULL)
			return 0;
		memcpy(copy, data + 1, size - 1);
		in.data = copy;
		in.size = size - 1;
		if (golabels_buildinfo_version(copy, size - 1, input_read, &in, &major,
		    &minor) == 0)
			CHECK(major >= 1 && minor >= 0);
		free(copy);
		return 0;
	}
	memset(&s, 0, sizeof(s));
	n = size - 1 < sizeof(s.go) + sizeof(s.go_str) + 8 ?
	    size - 1 : sizeof(s.go) + sizeof(s.go_str) + 8;
	s.rt = PROF_RT_GO;	/* the union's Go member */
	memcpy(&s.go_n, data + 1, n);	/* go_n, go_flags, go[], go_str[] */
	memset(&p, 0, sizeof(p));
	snprintf(p.service, sizeof(p.service), "svc");
	p.labels_text = "host=h";
	if (labels_parse(p.labels_text, &p.labels, NULL) < 0 ||
	    (gl = golabels_create(-1)) == NULL)
		return 0;
	for (i = 0; i < 2; i++) {
		if (golabels_sample(gl, &p, &s, &gs) < 0)
			continue;
		CHECK(gs.n >= 1 && gs.n <= PROF_MAX_GOLABELS);
		for (n = 0; n < gs.n; n++) {
			CHECK(strlen(gs.keys[n]) >= 1 && strlen(gs.keys[n]) <= PROF_GO_KEY_MAX);
			CHECK(strlen(gs.values[n]) >= 1 && strlen(gs.values[n]) <= PROF_GO_VALUE_MAX);
		}
		CHECK(gs.series == NULL || strstr(gs.series, "host=h") != NULL);
	}
	golabels_destroy(gl);
	labels_clear(&p.labels);
	return 0;
}
