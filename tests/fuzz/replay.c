/*
 * replay: a main() for the libFuzzer harnesses when libFuzzer is not linked
 * in, so that every test run replays the checked-in corpus (under gcc and the
 * sanitizers the build uses). Arguments are files or directories; every
 * regular file of a directory is one input, in name order. A crash is the
 * sanitizer's report and a nonzero exit; otherwise it prints how many inputs
 * ran and exits 0.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *data = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	for (;;) {
		if (len == cap) {
			unsigned char *nd;

			cap = cap ? cap * 2 : 65536;
			if ((nd = realloc(data, cap)) == NULL) {
				fclose(f);
				free(data);
				return -1;
			}
			data = nd;
		}
		if ((n = fread(data + len, 1, cap - len, f)) == 0)
			break;
		len += n;
	}
	fclose(f);
	/* An exact-size copy, so that ASan sees reads past the end. */
	{
		unsigned char *exact = malloc(len ? len : 1);

		if (exact == NULL) {
			free(data);
			return -1;
		}
		if (len)
			memcpy(exact, data, len);
		free(data);
		if (getenv("REPLAY_VERBOSE"))
			fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
main(int argc, char **argv)
{
	size_t total = 0;
	int i, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		struct stat st;
		char **names = NULL;
		size_t n = 0, j;
		struct dirent *e;
		DIR *d;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			failed = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) < 0)
				failed = 1;
			else
				total++;
			continue;
		}
		if ((d = opendir(argv[i])) == NULL) {
			perror(argv[i]);
			failed = 1;
			continue;
		}
		while ((e = readdir(d)) != NULL) {
			char path[4096], **nn;

			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			if ((nn = realloc(names, (n + 1) * sizeof(*names))) == NULL ||
			    (nn[n] = strdup(path)) == NULL) {
				failed = 1;
				break;
			}
			names = nn;
			n++;
		}
		closedir(d);
		qsort(names, n, sizeof(*names), name_cmp);
		for (j = 0; j < n; j++) {
			if (run_file(names[j]) < 0)
				failed = 1;
			else
				total++;
			free(names[j]);
		}
		free(names);
	}
	printf("replayed %zu inputs\n", total);
	return failed;
}
