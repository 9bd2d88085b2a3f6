/*
 * test_cfi: the unwind tables of Debian's glibc, libstdc++ and python3.11
 * checked row by row against `readelf --debug-dump=frames-interp` (binutils'
 * own CFI interpreter): at the first and last pc of every row readelf prints,
 * the CFA rule, the return address rule and where rbp is saved must agree,
 * or the row must be one the walker refuses (an expression it cannot follow).
 * Also: files that are not ELF, truncated ELF, and a Go-like file are refused;
 * and cfi_build's one pass per FDE gives the very rows of cfi_build_reference
 * (libdw asked at every row) over hundreds of installed ELF files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfi.h"

#define MAXCOLS	32

struct state {
	char	cfa[32], ra[16], rbp[16];
};

struct stats {
	size_t	checked, unsupported, mismatched, fdes;
};

static int
parse_cols(char *line, char cols[MAXCOLS][32])
{
	int n = 0;
	char *tok, *save;

	for (tok = strtok_r(line, " \t\n", &save); tok && n < MAXCOLS;
	    tok = strtok_r(NULL, " \t\n", &save))
		snprintf(cols[n++], 32, "%s", tok);
	return n;
}

/* Compare our row at pc with readelf's state; counts into st. */
static void
check(const struct cfi_table *t, uint64_t pc, const struct state *want, struct stats *st,
    const char *file)
{
	const struct unw_row *r = cfi_lookup(t, pc);
	bool ok = true;
	int n;

	st->checked++;
	if (r == NULL) {
		ok = false;
		goto out;
	}
	if (r->kind == UNW_UNSUPPORTED) {
		st->unsupported++;
		return;
	}
	if (strcmp(want->ra, "u") == 0) {
		ok = r->kind == UNW_END;
		goto out;
	}
	if (r->kind == UNW_END) {
		ok = false;
		goto out;
	}
	if (strcmp(want->cfa, "exp") == 0) {
		ok = r->kind == UNW_PLT || r->kind == UNW_DEREF || r->kind == UNW_SIGNAL;
		goto out;
	}
	if (strncmp(want->cfa, "rsp+", 4) == 0)
		ok = r->kind == UNW_RSP && r->cfa_off == atoi(want->cfa + 4);
	else if (strncmp(want->cfa, "rbp+", 4) == 0)
		ok = r->kind == UNW_RBP && r->cfa_off == atoi(want->cfa + 4);
	else
		ok = false;	/* another base register: we must have refused it */
	if (strcmp(want->ra, "c-8") != 0)
		ok = false;
	if (want->rbp[0] == 'c' && sscanf(want->rbp + 1, "%d", &n) == 1)
		ok = ok && r->rbp_off * 8 == n;
	else
		ok = ok && r->rbp_off == 0;
out:
	if (!ok) {
		if (st->mismatched < 10)
			print_message("%s: pc %#llx: readelf CFA %s ra %s rbp %s; ours kind %u off %u rbp %d\n",
			    file, (unsigned long long)pc, want->cfa, want->ra, want->rbp,
			    r ? r->kind : 99, r ? r->cfa_off : 0, r ? r->rbp_off : 0);
		st->mismatched++;
	}
}

/*
 * Walk readelf's output: CIE blocks give the initial state of FDEs that print
 * no rows of their own; every FDE row is checked at its first and last pc.
 */
static void
compare_file(const char *file)
{
	struct state cies[4096], cur, row;
	unsigned long cie_off[4096];
	size_t ncies = 0, i;
	char cmd[512], line[4096], cols[MAXCOLS][32], names[MAXCOLS][32];
	int ncols = 0, k;
	uint64_t fstart = 0, fend = 0, pend = 0, ploc = 0;
	bool in_fde = false, have_row = false, in_cie = false;
	struct cfi_table t;
	struct stats st = { 0 };
	FILE *f;
	int rc;

	if (access(file, R_OK) != 0) {
		print_message("skip %s: not installed\n", file);
		return;
	}
	rc = cfi_build(file, &t);
	assert_int_equal(rc, 0);
	assert_true(t.nrows > 100);
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", file);
	f = popen(cmd, "r");
	assert_non_null(f);
	memset(&cur, 0, sizeof(cur));
	/* Flush the pending row of the FDE being read, now that its end is known. */
#define FLUSH(endpc) do {						\
		if (in_fde && have_row && (endpc) > ploc) {		\
			check(&t, ploc, &row, &st, file);		\
			check(&t, (endpc) - 1, &row, &st, file);	\
		}							\
	} while (0)
	while (fgets(line, sizeof(line), f)) {
		unsigned long off, cie, a, b;

		if (sscanf(line, "%lx %*x %lx FDE cie=%lx pc=%lx..%lx", &off, &off, &cie, &a, &b) == 5) {
			FLUSH(pend);
			if (in_fde && !have_row && pend > fstart)
				check(&t, fstart, &cur, &st, file);
			in_fde = true;
			in_cie = false;
			have_row = false;
			fstart = a;
			fend = b;
			pend = b;
			st.fdes++;
			memset(&cur, 0, sizeof(cur));
			for (i = 0; i < ncies; i++)
				if (cie_off[i] == cie)
					cur = cies[i];
			ncols = 0;
			continue;
		}
		if (sscanf(line, "%lx %*x %*x CIE", &off) == 1 && strstr(line, " CIE") != NULL) {
			FLUSH(pend);
			if (in_fde && !have_row && pend > fstart)
				check(&t, fstart, &cur, &st, file);
			in_fde = false;
			in_cie = ncies < 4096;
			if (in_cie) {
				cie_off[ncies] = off;
				memset(&cies[ncies], 0, sizeof(cies[ncies]));
				snprintf(cies[ncies].cfa, sizeof(cies[ncies].cfa), "rsp+8");
				snprintf(cies[ncies].ra, sizeof(cies[ncies].ra), "c-8");
				ncies++;
			}
			ncols = 0;
			continue;
		}
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			ncols = parse_cols(line, names);
			continue;
		}
		if (ncols > 0 && strlen(line) > 17 && line[16] == ' ' &&
		    sscanf(line, "%lx", &a) == 1) {
			struct state s;

			memset(&s, 0, sizeof(s));
			if (parse_cols(line, cols) != ncols)
				continue;
			for (k = 1; k < ncols; k++) {
				if (strcmp(names[k], "CFA") == 0)
					snprintf(s.cfa, sizeof(s.cfa), "%s", cols[k]);
				else if (strcmp(names[k], "ra") == 0)
					snprintf(s.ra, sizeof(s.ra), "%s", cols[k]);
				else if (strcmp(names[k], "rbp") == 0)
					snprintf(s.rbp, sizeof(s.rbp), "%s", cols[k]);
			}
			if (in_cie) {
				cies[ncies - 1] = s;
			} else if (in_fde) {
				FLUSH(a);
				row = s;
				ploc = a;
				have_row = true;
			}
		}
	}
	FLUSH(pend);
	(void)fend;
	pclose(f);
	print_message("%s: %zu rows, %zu FDEs (readelf %zu), %zu pcs checked, %zu refused, "
	    "%zu mismatched, %zu bytes\n", file, t.nrows, t.nfdes, st.fdes, st.checked,
	    st.unsupported, st.mismatched, t.nrows * sizeof(struct unw_row));
	assert_true(st.checked > 1000);
	assert_int_equal(st.mismatched, 0);
	/* The walker follows nearly everything compilers emit. */
	assert_true(st.unsupported * 1000 <= st.checked);
	cfi_free(&t);
}

static void
test_glibc(void **state)
{
	(void)state;
	compare_file("/usr/lib/x86_64-linux-gnu/libc.so.6");
}

static void
test_libstdcxx(void **state)
{
	(void)state;
	compare_file("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
}

static void
test_python(void **state)
{
	(void)state;
	compare_file("/usr/bin/python3.11");
}

/* The signal trampoline, PLT stubs and the process root in glibc. */
static void
test_glibc_kinds(void **state)
{
	struct cfi_table t;
	size_t i, kinds[UNW_UNSUPPORTED + 1] = { 0 };

	(void)state;
	if (access("/usr/lib/x86_64-linux-gnu/libc.so.6", R_OK) != 0)
		skip();
	assert_int_equal(cfi_build("/usr/lib/x86_64-linux-gnu/libc.so.6", &t), 0);
	for (i = 0; i < t.nrows; i++) {
		assert_true(t.rows[i].kind <= UNW_UNSUPPORTED);
		kinds[t.rows[i].kind]++;
		if (i > 0)
			assert_true(t.rows[i].pc > t.rows[i - 1].pc);
	}
	assert_true(kinds[UNW_SIGNAL] >= 1);	/* __restore_rt */
	assert_true(kinds[UNW_PLT] >= 1);
	assert_true(kinds[UNW_END] >= 1);	/* clone's child */
	assert_true(kinds[UNW_RSP] > 1000);
	cfi_free(&t);
}

static void
test_refused(void **state)
{
	char path[] = "/tmp/test_cfi.XXXXXX", cmd[256];
	struct cfi_table t;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file at all\n", 23), 23);
	close(fd);
	assert_int_equal(cfi_build(path, &t), -ENOEXEC);
	assert_int_equal(cfi_build("/nonexistent/file", &t), -ENOENT);
	/* Truncated copies of glibc: refused or read within bounds, never a crash. */
	if (access("/usr/lib/x86_64-linux-gnu/libc.so.6", R_OK) == 0) {
		static const char *const sizes[] = { "64", "4096", "1700000" };
		size_t i;

		for (i = 0; i < 3; i++) {
			snprintf(cmd, sizeof(cmd), "head -c %s /usr/lib/x86_64-linux-gnu/libc.so.6 > %s",
			    sizes[i], path);
			assert_int_equal(system(cmd), 0);
			if (cfi_build(path, &t) == 0)
				cfi_free(&t);
		}
	}
	unlink(path);
}

/* fast: cfi_build's table equals the reference's (libdw at every row), row for row. */
static bool
same_as_reference(const char *file, size_t *nrows)
{
	struct cfi_table a, b;
	int ra, rb;
	bool ok;

	ra = cfi_build(file, &a);
	rb = cfi_build_reference(file, &b);
	ok = ra == rb;
	if (ok && ra == 0)
		ok = a.nrows == b.nrows && a.nfdes == b.nfdes && a.unsupported == b.unsupported &&
		    memcmp(a.rows, b.rows, a.nrows * sizeof(*a.rows)) == 0;
	if (!ok)
		print_message("%s: cfi_build %d (%zu rows) != reference %d (%zu rows)\n", file,
		    ra, ra == 0 ? a.nrows : 0, rb, rb == 0 ? b.nrows : 0);
	*nrows += ra == 0 ? a.nrows : 0;
	if (ra == 0)
		cfi_free(&a);
	if (rb == 0)
		cfi_free(&b);
	return ok;
}

/*
 * The one pass per FDE gives libdw's rows exactly, over the shared libraries
 * and programs installed (C, C++, Rust, assembler-heavy libcrypto, ...), the
 * first 400 ELF files met.
 */
static void
test_fast_equals_reference(void **state)
{
	static const char *const files[] = {
		"/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/usr/bin/python3.11",
		"/usr/lib64/ld-linux-x86-64.so.2",
		"/usr/lib/gcc/x86_64-linux-gnu/12/cc1",	/* long functions: many rows per FDE */
	};
	size_t i, files_n = 0, rows = 0, bad = 0;
	char cmd[256], line[4096];
	FILE *f;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (access(files[i], R_OK) == 0) {
			bad += !same_as_reference(files[i], &rows);
			files_n++;
		}
	snprintf(cmd, sizeof(cmd), "find /usr/lib/x86_64-linux-gnu /usr/bin -maxdepth 1 -type f "
	    "-size +8k 2>/dev/null | sort | head -2000");
	f = popen(cmd, "r");
	assert_non_null(f);
	while (files_n < 400 && fgets(line, sizeof(line), f)) {
		char magic[4];
		FILE *e;

		line[strcspn(line, "\n")] = '\0';
		if ((e = fopen(line, "rb")) == NULL)
			continue;
		i = fread(magic, 1, 4, e);
		fclose(e);
		if (i != 4 || memcmp(magic, "\177ELF", 4) != 0)
			continue;
		bad += !same_as_reference(line, &rows);
		files_n++;
	}
	pclose(f);
	print_message("%zu files, %zu rows: %zu differ\n", files_n, rows, bad);
	assert_true(files_n >= 4);
	assert_int_equal(bad, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glibc),
		cmocka_unit_test(test_libstdcxx),
		cmocka_unit_test(test_python),
		cmocka_unit_test(test_glibc_kinds),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_fast_equals_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
