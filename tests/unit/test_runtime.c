/*
 * Unit tests of the eBPF sampler's runtime support: the service a Python,
 * Java or Node.js command line names (collector/ebpf/runtimes/runtime.c),
 * CPython's location table (collector/ebpf/runtimes/python.c) and where a
 * V8 ScopeInfo keeps a function's name (collector/ebpf/runtimes/v8.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "python.h"
#include "runtime.h"
#include "v8.h"

/* argv as /proc/PID/cmdline has it: NUL after each argument. */
static bool
svc(enum runtime_kind k, const char *argv, size_t len, char *out, size_t outsz)
{
	return runtime_service(k, argv, len, out, outsz);
}

#define SVC(k, lit, out) svc((k), (lit), sizeof(lit) - 1, (out), sizeof(out))

static void
test_by_exe(void **state)
{
	(void)state;
	assert_int_equal(runtime_by_exe("python3"), RUNTIME_PYTHON);
	assert_int_equal(runtime_by_exe("python3.11"), RUNTIME_PYTHON);
	assert_int_equal(runtime_by_exe("python3.13t"), RUNTIME_PYTHON);
	assert_int_equal(runtime_by_exe("python"), RUNTIME_PYTHON);
	assert_int_equal(runtime_by_exe("python3-config"), RUNTIME_NONE);
	assert_int_equal(runtime_by_exe("pythonista"), RUNTIME_NONE);
	assert_int_equal(runtime_by_exe("java"), RUNTIME_JVM);
	assert_int_equal(runtime_by_exe("javac"), RUNTIME_NONE);
	assert_int_equal(runtime_by_exe("node"), RUNTIME_NODE);
	assert_int_equal(runtime_by_exe("nodejs"), RUNTIME_NODE);
	assert_int_equal(runtime_by_exe("node-gyp"), RUNTIME_NONE);
	assert_int_equal(runtime_by_exe("php"), RUNTIME_PHP);
	assert_int_equal(runtime_by_exe("php8.4"), RUNTIME_PHP);
	assert_int_equal(runtime_by_exe("php-fpm8.4"), RUNTIME_NONE);
	assert_int_equal(runtime_by_exe("phpize"), RUNTIME_NONE);
	assert_int_equal(runtime_by_exe(NULL), RUNTIME_NONE);
}

/* PHP's CLI: the script, after options with and without values; -r names none. */
static void
test_php(void **state)
{
	char out[64];

	(void)state;
	assert_true(SVC(RUNTIME_PHP, "php8.4\0/srv/cron.php\0--force\0", out));
	assert_string_equal(out, "cron");
	assert_true(SVC(RUNTIME_PHP, "php\0-d\0memory_limit=1G\0-c\0/etc/php.ini\0artisan\0queue:work\0", out));
	assert_string_equal(out, "artisan");
	assert_true(SVC(RUNTIME_PHP, "php\0-f\0/srv/job.php\0", out));
	assert_string_equal(out, "job");
	assert_true(SVC(RUNTIME_PHP, "php\0-dx=1\0--\0tool.php\0", out));
	assert_string_equal(out, "tool");
	assert_false(SVC(RUNTIME_PHP, "php\0-r\0echo 1;\0", out));
	assert_false(SVC(RUNTIME_PHP, "php\0-a\0", out));
	assert_false(SVC(RUNTIME_PHP, "php\0", out));
	assert_false(SVC(RUNTIME_PHP, "php\0-\0", out));
}

static void
test_node(void **state)
{
	char out[64];

	(void)state;
	assert_true(SVC(RUNTIME_NODE, "node\0/srv/app.js\0--port\0" "80\0", out));
	assert_string_equal(out, "app");
	assert_true(SVC(RUNTIME_NODE, "node\0--max-old-space-size=512\0-r\0dotenv/config\0srv.mjs\0", out));
	assert_string_equal(out, "srv");
	assert_true(SVC(RUNTIME_NODE, "node\0--require\0x\0/opt/api/index.js\0", out));
	assert_string_equal(out, "api");
	assert_true(SVC(RUNTIME_NODE, "nodejs\0bin/www\0", out));
	assert_string_equal(out, "www");
	assert_true(SVC(RUNTIME_NODE, "node\0--\0tool.cjs\0", out));
	assert_string_equal(out, "tool");
	assert_false(SVC(RUNTIME_NODE, "node\0-e\0while(1);\0", out));
	assert_false(SVC(RUNTIME_NODE, "node\0--eval=1\0", out));
	assert_false(SVC(RUNTIME_NODE, "node\0-p\0" "1+1\0", out));
	assert_false(SVC(RUNTIME_NODE, "node\0", out));
	assert_false(SVC(RUNTIME_NODE, "node\0-\0", out));
	assert_false(SVC(RUNTIME_NODE, "node\0/srv/ap", out));
}

/*
 * ScopeInfo slots as V8 11 (Node.js 20) lays them out: a function with no
 * context locals (flags 0x4171e2, a Smi: a function scope whose function
 * variable slot and inferred name are there) keeps its name at 3, its
 * inferred name at 5, its start at 6; one with a local (names and infos
 * before). V8 13 (Node.js 24): flags untagged, function scope type 4, the
 * variable part from slot 5 on, the start position at 3.
 */
static void
test_v8_scopeinfo(void **state)
{
	const struct v8_layout *l11 = v8_layout_of(11), *l13 = v8_layout_of(13);
	struct v8_si_slots s;

	(void)state;
	assert_non_null(l11);
	assert_non_null(l13);
	assert_null(v8_layout_of(9));
	assert_null(v8_layout_of(99));
	assert_int_equal(v8_scopeinfo_slots(l11, 0x4171e2ULL << 32, 0, &s), 0);
	assert_int_equal(s.name, 3);
	assert_int_equal(s.inferred, 5);
	assert_int_equal(s.start, 6);
	assert_int_equal(v8_scopeinfo_slots(l11, 0x4171e2ULL << 32, 2, &s), 0);
	assert_int_equal(s.name, 7);
	assert_int_equal(s.inferred, 9);
	assert_int_equal(s.start, 10);
	/* No function variable, no inferred name, a saved class variable. */
	assert_int_equal(v8_scopeinfo_slots(l11, (0x402ULL | (1u << 10)) << 32, 1, &s), 0);
	assert_int_equal(s.name, -1);
	assert_int_equal(s.inferred, -1);
	assert_int_equal(s.start, 6);
	/* Locals past the inlined ones: one hash table slot for their names. */
	assert_int_equal(v8_scopeinfo_slots(l11, 0x3002ULL << 32, 80, &s), 0);
	assert_int_equal(s.name, 3 + 1 + 80);
	/* Not a function's scope, not a Smi, too many locals. */
	assert_int_equal(v8_scopeinfo_slots(l11, 0x4171e4ULL << 32, 0, &s), -EINVAL);
	assert_int_equal(v8_scopeinfo_slots(l11, 0x4171e2, 0, &s), -EINVAL);
	assert_int_equal(v8_scopeinfo_slots(l11, 0x4171e2ULL << 32, 1u << 20, &s), -EINVAL);
	/* V8 13: the same function, its flags untagged. */
	assert_int_equal(v8_scopeinfo_slots(l13, 0x4171e4, 0, &s), 0);
	assert_int_equal(s.name, 5);
	assert_int_equal(s.inferred, 7);
	assert_int_equal(s.start, 3);
	assert_int_equal(v8_scopeinfo_slots(l13, 0x4171e4, 2, &s), 0);
	assert_int_equal(s.name, 9);
	assert_int_equal(s.inferred, 11);
	assert_int_equal(s.start, 3);
	assert_int_equal(v8_scopeinfo_slots(l13, 0x4171e2, 0, &s), -EINVAL);
}

/*
 * The versions known: Node.js 20's constants (V8 11.3) and Node.js 24's
 * (V8 13.6, whose SharedFunctionInfo fields carry V8 12's Tagged_ names) are
 * read; a V8 major not in the table, or one whose ScopeInfo constant
 * disagrees with its row, is refused.
 */
static int
attach(const char *sfi_name, const char *sfi_script, int32_t major, int32_t first_vars)
{
	const char *names[] = {
		"v8dbg_off_fp_function", "v8dbg_off_fp_context_or_frame_type", "v8dbg_TaggedSize",
		"v8dbg_SmiShiftSize", "v8dbg_class_HeapObject__map__Map",
		"v8dbg_class_Map__instance_type__uint16_t",
		"v8dbg_class_JSFunction__shared__SharedFunctionInfo", sfi_name, sfi_script,
		"v8dbg_class_Script__name__Object", "v8dbg_class_Script__source__Object",
		"v8dbg_class_Script__line_ends__Object", "v8dbg_class_String__length__int32_t",
		"v8dbg_class_SeqOneByteString__chars__char",
		"v8dbg_class_SeqTwoByteString__chars__char",
		"v8dbg_class_ConsString__first__String", "v8dbg_class_ConsString__second__String",
		"v8dbg_class_ThinString__actual__String", "v8dbg_class_FixedArrayBase__length__SMI",
		"v8dbg_class_FixedArray__data__uintptr_t",
		"v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE",
		"v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE", "v8dbg_type_Script__SCRIPT_TYPE",
		"v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", "v8dbg_FirstNonstringType",
		"v8dbg_scopeinfo_idx_first_vars", "v8dbg_scopeinfo_idx_ncontextlocals",
		"v8dbg_StringRepresentationMask", "v8dbg_StringEncodingMask",
		"v8dbg_OneByteStringTag", "v8dbg_SeqStringTag", "v8dbg_ConsStringTag",
		"v8dbg_ThinStringTag", "_ZN2v88internal7Version6major_E",
		"_ZN2v88internal7Version6minor_E",
	};
	int32_t vals[] = {
		-16, -8, 8, 31, 0, 12, 32, 24, 40, 16, 8, 56, 12, 16, 16, 16, 24, 16, 8, 16,
		282, 280, 167, 205, 128, first_vars, 2, 7, 8, 8, 0, 1, 5, major, 6,
	};
	struct v8 *v = v8_create(-1);
	struct proc p;
	int rc;

	assert_non_null(v);
	memset(&p, 0, sizeof(p));
	p.gone = true;		/* no BPF map */
	rc = v8_attach_layout(v, &p, names, vals, sizeof(vals) / sizeof(vals[0]));
	v8_forget(v, &p);
	v8_destroy(v);
	return rc;
}

static void
test_v8_versions(void **state)
{
	const char *n11 = "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object";
	const char *s11 = "v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject";
	const char *n13 = "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_";
	const char *s13 = "v8dbg_class_SharedFunctionInfo__script__Tagged_HeapObject_";

	(void)state;
	assert_int_equal(attach(n11, s11, 11, 3), 0);
	assert_int_equal(attach(n13, s13, 13, 5), 0);
	assert_int_equal(attach(n13, s13, 14, 5), 0);
	assert_int_equal(attach(n13, s13, 99, 5), -EINVAL);	/* a V8 not known */
	assert_int_equal(attach(n13, s13, 9, 3), -EINVAL);
	assert_int_equal(attach(n13, s13, 13, 3), -EINVAL);	/* disagrees with its row */
	assert_int_equal(attach(n11, s11, 11, 5), -EINVAL);
	assert_int_equal(attach("v8dbg_x", s13, 13, 5), -EINVAL);	/* a constant missing */
}

static void
test_python(void **state)
{
	char out[64];

	(void)state;
	assert_true(SVC(RUNTIME_PYTHON, "python3\0/srv/app.py\0--port\0" "80\0", out));
	assert_string_equal(out, "app");
	assert_true(SVC(RUNTIME_PYTHON, "python3\0-u\0-X\0dev\0-W\0ignore\0tool\0", out));
	assert_string_equal(out, "tool");
	assert_true(SVC(RUNTIME_PYTHON, "python3\0-OO\0-m\0http.server\0" "8000\0", out));
	assert_string_equal(out, "http.server");
	assert_true(SVC(RUNTIME_PYTHON, "python3\0-mpip\0install\0", out));
	assert_string_equal(out, "pip");
	assert_true(SVC(RUNTIME_PYTHON, "python3\0-Xfrozen_modules=off\0x.py\0", out));
	assert_string_equal(out, "x");
	assert_true(SVC(RUNTIME_PYTHON, "python3\0/opt/pkg/__main__.py\0", out));
	assert_string_equal(out, "pkg");
	assert_true(SVC(RUNTIME_PYTHON, "python3\0--\0-weird.py\0", out));
	assert_string_equal(out, "-weird");
	assert_false(SVC(RUNTIME_PYTHON, "python3\0-c\0print(1)\0", out));
	assert_false(SVC(RUNTIME_PYTHON, "python3\0-\0", out));
	assert_false(SVC(RUNTIME_PYTHON, "python3\0", out));
	assert_false(SVC(RUNTIME_PYTHON, "python3\0-i\0", out));
	/* The last argument cut short (no NUL): not trusted. */
	assert_false(SVC(RUNTIME_PYTHON, "python3\0/srv/ap", out));
	assert_false(svc(RUNTIME_PYTHON, "", 0, out, sizeof(out)));
	/* A long name is cut to the buffer. */
	{
		char small[4];

		assert_true(SVC(RUNTIME_PYTHON, "python3\0abcdefgh.py\0", small));
		assert_string_equal(small, "abc");
	}
}

static void
test_java(void **state)
{
	char out[64];

	(void)state;
	assert_true(SVC(RUNTIME_JVM, "java\0-Xmx1g\0-cp\0/a:/b\0-Dk=v\0com.example.Main\0x\0", out));
	assert_string_equal(out, "com.example.Main");
	assert_true(SVC(RUNTIME_JVM, "java\0-XX:+UseG1GC\0-jar\0/opt/shop-1.2.jar\0", out));
	assert_string_equal(out, "shop-1.2");
	assert_true(SVC(RUNTIME_JVM, "java\0--module-path\0mods\0-m\0app/pkg.Main\0", out));
	assert_string_equal(out, "pkg.Main");
	assert_true(SVC(RUNTIME_JVM, "java\0--module\0app\0", out));
	assert_string_equal(out, "app");
	assert_true(SVC(RUNTIME_JVM, "java\0--add-opens\0java.base/java.lang=ALL-UNNAMED\0Hot\0", out));
	assert_string_equal(out, "Hot");
	assert_true(SVC(RUNTIME_JVM, "java\0Hello.java\0", out));
	assert_string_equal(out, "Hello");
	assert_false(SVC(RUNTIME_JVM, "java\0-version\0", out));
	assert_false(SVC(RUNTIME_JVM, "java\0-jar\0", out));
	assert_false(SVC(RUNTIME_NONE, "x\0y\0", out));
}

/* def f(a, b): ... compiled by CPython 3.11 (first line 1), and co_positions' lines. */
static const uint8_t lt311[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x07, 0x08,
	0x88, 0x31, 0x82, 0x75, 0x80, 0x75, 0xf0, 0x02, 0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01,
	0x0d, 0x20, 0xdd, 0x16, 0x1b, 0x98, 0x41, 0x91, 0x68, 0x94, 0x68, 0xf0, 0x03, 0x01,
	0x0d, 0x20, 0xf1, 0x00, 0x01, 0x0d, 0x20, 0xf4, 0x00, 0x01, 0x0d, 0x20, 0x88, 0x01,
	0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x11, 0x88, 0x01, 0xf0, 0x08, 0x00, 0x0d, 0x0e,
	0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f,
};
static const int lines311[] = {
	1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 7, 7, 11, 12, 11, 11,
};

static void
test_linetable(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines311) / sizeof(lines311[0]); i++)
		assert_int_equal(python_linetable_line(lt311, sizeof(lt311), 1, i), lines311[i]);
	/* Past the table, a table cut short, and bytes that are no table. */
	assert_int_equal(python_linetable_line(lt311, sizeof(lt311), 1, 44), 0);
	assert_int_equal(python_linetable_line(lt311, 22, 1, 20), 0);
	{
		static const uint8_t junk[] = { 0x00, 0x7f, 0xf0 };
		static const uint8_t longvar[] = { 0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
		    0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0, 0, 0 };

		assert_int_equal(python_linetable_line(junk, sizeof(junk), 1, 0), 0);
		assert_int_equal(python_linetable_line(junk + 2, 1, 1, 0), 0);
		assert_int_equal(python_linetable_line(longvar, sizeof(longvar), 1, 0), 0);
	}
}

/*
 * The decoded table gives every unit the line the scan gives: the table
 * above, cut at every length, and a long generated one (a function of
 * 48,000 lines, as a hostile program may have).
 */
static void
lines_agree(const uint8_t *lt, size_t len, int32_t first, uint64_t units)
{
	struct ltrow *rows;
	uint32_t n;
	uint64_t i;

	assert_int_equal(python_linetable_decode(lt, len, first, &rows, &n), 0);
	for (i = 0; i < units; i++)
		assert_int_equal(python_lines_lookup(rows, n, i),
		    python_linetable_line(lt, len, first, i));
	free(rows);
}

static void
test_linetable_decoded(void **state)
{
	uint8_t *big;
	size_t k, len = 0;

	(void)state;
	for (k = 0; k <= sizeof(lt311); k++)
		lines_agree(lt311, k, 1, 50);
	/* 48,000 lines of two units each: code 13 (line delta +1, no column). */
	big = malloc(48000 * 2);
	assert_non_null(big);
	for (k = 0; k < 48000; k++) {
		big[len++] = 0x80 | (13 << 3) | 1;
		big[len++] = 2;		/* +1, as a signed varint */
	}
	lines_agree(big, len, 1, 96010);
	lines_agree(big, len - 1, 7, 1000);
	free(big);
}

static void
test_is_eval(void **state)
{
	(void)state;
	assert_true(python_is_eval("_PyEval_EvalFrameDefault"));
	assert_true(python_is_eval("_PyEval_EvalFrameDefault.cold"));
	assert_false(python_is_eval("_PyEval_EvalFrameDefaultX"));
	assert_false(python_is_eval("_PyEval_EvalFrame"));
	assert_false(python_is_eval(NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_exe),
		cmocka_unit_test(test_python),
		cmocka_unit_test(test_java),
		cmocka_unit_test(test_node),
		cmocka_unit_test(test_php),
		cmocka_unit_test(test_v8_scopeinfo),
		cmocka_unit_test(test_v8_versions),
		cmocka_unit_test(test_linetable),
		cmocka_unit_test(test_linetable_decoded),
		cmocka_unit_test(test_is_eval),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
