/*
 * runtime: language runtimes seen by the eBPF sampler (see runtime.h): which
 * runtime an executable is, and the service its command line names (the
 * runtimes walk argv alike). The JVM's attach mechanism is jvm.c's; CPython's
 * frames are python.c's, Ruby's ruby.c's.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "runtime.h"

enum runtime_kind
runtime_by_exe(const char *base)
{
	const char *s;

	if (base == NULL)
		return RUNTIME_NONE;
	if (strncmp(base, "python", 6) == 0) {
		/* python, python3, python3.11, python3.13t; not python-config */
		for (s = base + 6; *s; s++)
			if (!(*s >= '0' && *s <= '9') && *s != '.' && !(*s == 't' && s[1] == '\0'))
				return RUNTIME_NONE;
		return RUNTIME_PYTHON;
	}
	if (strcmp(base, "java") == 0)
		return RUNTIME_JVM;
	if (strncmp(base, "ruby", 4) == 0) {
		/* ruby, ruby3.1; not ruby-prof */
		for (s = base + 4; *s; s++)
			if (!(*s >= '0' && *s <= '9') && *s != '.')
				return RUNTIME_NONE;
		return RUNTIME_RUBY;
	}
	if (strcmp(base, "node") == 0 || strcmp(base, "nodejs") == 0)
		return RUNTIME_NODE;
	if (strncmp(base, "php", 3) == 0) {
		/* php, php8.4; not php-fpm (its workers run many scripts) or phpize */
		for (s = base + 3; *s; s++)
			if (!(*s >= '0' && *s <= '9') && *s != '.')
				return RUNTIME_NONE;
		return RUNTIME_PHP;
	}
	return RUNTIME_NONE;
}

/* The next argument of argv (len bytes), advancing *off; NULL at the end. */
static const char *
next_arg(const char *argv, size_t len, size_t *off)
{
	const char *a;
	const char *nul;

	if (*off >= len)
		return NULL;
	a = argv + *off;
	nul = memchr(a, '\0', len - *off);
	if (nul == NULL)	/* the last one, cut: not trusted */
		return NULL;
	*off += (size_t)(nul - a) + 1;
	return a;
}

static bool
base_of(const char *path, const char *suffix, char *out, size_t outsz)
{
	const char *b = strrchr(path, '/');
	size_t n, sl = strlen(suffix);

	b = b ? b + 1 : path;
	n = strlen(b);
	if (n > sl && sl > 0 && strcmp(b + n - sl, suffix) == 0)
		n -= sl;
	if (n == 0 || n >= outsz)
		n = n == 0 ? 0 : outsz - 1;
	if (n == 0)
		return false;
	memcpy(out, b, n);
	out[n] = '\0';
	return true;
}

static bool
python_service(const char *argv, size_t len, char *out, size_t outsz)
{
	size_t off = 0;
	const char *a;

	if (next_arg(argv, len, &off) == NULL)	/* argv[0] */
		return false;
	while ((a = next_arg(argv, len, &off)) != NULL) {
		if (strcmp(a, "--") == 0) {
			a = next_arg(argv, len, &off);
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;	/* the script, or "-": stdin */
		if (a[1] == '-') {
			/* --check-hash-based-pycs takes a value; others (--version) none */
			if (strcmp(a, "--check-hash-based-pycs") == 0)
				(void)next_arg(argv, len, &off);
			continue;
		}
		/* Grouped flags: -u, -OO, -BuW ignore; a value may follow in place or next. */
		for (const char *c = a + 1; *c; c++) {
			if (*c == 'c')
				return false;
			if (*c == 'm') {
				const char *mod = c[1] ? c + 1 : next_arg(argv, len, &off);

				if (mod == NULL || *mod == '\0')
					return false;
				snprintf(out, outsz, "%s", mod);
				return true;
			}
			if (*c == 'W' || *c == 'X') {
				if (c[1] == '\0')
					(void)next_arg(argv, len, &off);
				break;
			}
		}
	}
	if (a == NULL || a[0] == '\0' || strcmp(a, "-") == 0)
		return false;
	{
		const char *b = strrchr(a, '/');

		if (b && strcmp(b + 1, "__main__.py") == 0 && b > a) {
			/* python3 pkg/__main__.py: the package's name */
			char dir[256];
			size_t n = (size_t)(b - a);

			if (n >= sizeof(dir))
				return false;
			memcpy(dir, a, n);
			dir[n] = '\0';
			return base_of(dir, "", out, outsz);
		}
	}
	if (base_of(a, ".py", out, outsz))
		return true;
	return false;
}

/* java options that take the next argument as their value. */
static bool
java_opt_has_value(const char *a)
{
	static const char *const opts[] = {
		"-cp", "-classpath", "--class-path", "-p", "--module-path",
		"--upgrade-module-path", "--add-modules", "--limit-modules",
		"--add-reads", "--add-exports", "--add-opens", "--patch-module",
		"--enable-native-access", "--source", "--illegal-access",
	};
	size_t i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strcmp(a, opts[i]) == 0)
			return true;
	return false;
}

static bool
java_service(const char *argv, size_t len, char *out, size_t outsz)
{
	size_t off = 0;
	const char *a;

	if (next_arg(argv, len, &off) == NULL)
		return false;
	while ((a = next_arg(argv, len, &off)) != NULL) {
		if (strcmp(a, "-jar") == 0) {
			if ((a = next_arg(argv, len, &off)) == NULL)
				return false;
			return base_of(a, ".jar", out, outsz);
		}
		if (strcmp(a, "-m") == 0 || strcmp(a, "--module") == 0) {
			const char *slash;

			if ((a = next_arg(argv, len, &off)) == NULL || *a == '\0')
				return false;
			/* module/class: the class; a module alone: the module */
			slash = strchr(a, '/');
			snprintf(out, outsz, "%s", slash && slash[1] ? slash + 1 : a);
			if ((slash = strchr(out, '/')) != NULL)
				*(char *)slash = '\0';
			return true;
		}
		if (java_opt_has_value(a)) {
			(void)next_arg(argv, len, &off);
			continue;
		}
		if (a[0] == '-' || a[0] == '@')
			continue;	/* -Dk=v, -Xmx1g, -XX:..., --x=y, @argfile */
		if (*a == '\0')
			return false;
		/* The main class, or a source file (java Hello.java). */
		return base_of(a, ".java", out, outsz);
	}
	return false;
}

static bool
ruby_service(const char *argv, size_t len, char *out, size_t outsz)
{
	size_t off = 0;
	const char *a;

	if (next_arg(argv, len, &off) == NULL)
		return false;
	while ((a = next_arg(argv, len, &off)) != NULL) {
		if (strcmp(a, "--") == 0) {
			a = next_arg(argv, len, &off);
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;	/* the script, or "-": stdin */
		if (a[1] == '-')
			continue;	/* --disable=gems, --jit, --encoding=x */
		/* Grouped flags: -w, -rjson; -C, -I, -r, -E, -F take a value, in place or next. */
		for (const char *c = a + 1; *c; c++) {
			if (*c == 'e')
				return false;
			if (strchr("CIrEFx", *c)) {
				if (c[1] == '\0' && *c != 'x')
					(void)next_arg(argv, len, &off);
				break;
			}
		}
	}
	if (a == NULL || a[0] == '\0' || strcmp(a, "-") == 0)
		return false;
	return base_of(a, ".rb", out, outsz);
}

/* node options that take the next argument as their value (when not given as --opt=v). */
static bool
node_opt_has_value(const char *a)
{
	static const char *const opts[] = {
		"-r", "--require", "--import", "--loader", "--experimental-loader", "-C",
		"--conditions", "--input-type", "--title", "--inspect-port", "--debug-port",
		"--env-file", "--disable-warning", "--redirect-warnings", "--diagnostic-dir",
		"--icu-data-dir", "--openssl-config", "--tls-cipher-list", "--experimental-policy",
		"--secure-heap", "--secure-heap-min", "--unhandled-rejections", "--dns-result-order",
	};
	size_t i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strcmp(a, opts[i]) == 0)
			return true;
	return false;
}

static bool
node_service(const char *argv, size_t len, char *out, size_t outsz)
{
	static const char *const exts[] = { ".js", ".mjs", ".cjs" };
	size_t off = 0, i;
	const char *a, *b;

	if (next_arg(argv, len, &off) == NULL)
		return false;
	while ((a = next_arg(argv, len, &off)) != NULL) {
		if (strcmp(a, "--") == 0) {
			a = next_arg(argv, len, &off);
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;	/* the script, or "-": stdin */
		if (strcmp(a, "-e") == 0 || strcmp(a, "--eval") == 0 || strcmp(a, "-p") == 0 ||
		    strcmp(a, "--print") == 0 || strncmp(a, "--eval=", 7) == 0 ||
		    strncmp(a, "--print=", 8) == 0 || strcmp(a, "-pe") == 0 ||
		    strcmp(a, "-i") == 0 || strcmp(a, "--interactive") == 0)
			return false;
		if (node_opt_has_value(a))
			(void)next_arg(argv, len, &off);
	}
	if (a == NULL || a[0] == '\0' || strcmp(a, "-") == 0)
		return false;
	b = strrchr(a, '/');
	if (b && b > a && (strcmp(b + 1, "index.js") == 0 || strcmp(b + 1, "index.mjs") == 0 ||
	    strcmp(b + 1, "index.cjs") == 0)) {
		/* node app/index.js: the directory's name */
		char dir[256];
		size_t n = (size_t)(b - a);

		if (n >= sizeof(dir))
			return false;
		memcpy(dir, a, n);
		dir[n] = '\0';
		return base_of(dir, "", out, outsz);
	}
	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t n = strlen(a), el = strlen(exts[i]);

		if (n > el && strcmp(a + n - el, exts[i]) == 0)
			return base_of(a, exts[i], out, outsz);
	}
	return base_of(a, "", out, outsz);
}

static bool
php_service(const char *argv, size_t len, char *out, size_t outsz)
{
	size_t off = 0;
	const char *a;

	if (next_arg(argv, len, &off) == NULL)
		return false;
	while ((a = next_arg(argv, len, &off)) != NULL) {
		if (strcmp(a, "--") == 0) {
			a = next_arg(argv, len, &off);
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;	/* the script, or "-": stdin */
		/* -r code, -R/-B/-E per line, -a interactive, -S a server: no script names it */
		if (strchr("rRBEaS", a[1]) != NULL && a[1] != '\0')
			return false;
		if (a[1] == 'f') {	/* -f file, -ffile */
			a = a[2] ? a + 2 : next_arg(argv, len, &off);
			break;
		}
		/* -d k=v, -c path, -z file, -t root: a value, in place or next */
		if (strchr("dczt", a[1]) != NULL && a[2] == '\0')
			(void)next_arg(argv, len, &off);
	}
	if (a == NULL || a[0] == '\0' || strcmp(a, "-") == 0)
		return false;
	return base_of(a, ".php", out, outsz);
}

bool
runtime_service(enum runtime_kind k, const char *argv, size_t len, char *out, size_t outsz)
{
	bool found = false;

	if (outsz == 0)
		return false;
	out[0] = '\0';
	if (k == RUNTIME_PYTHON)
		found = python_service(argv, len, out, outsz);
	else if (k == RUNTIME_JVM)
		found = java_service(argv, len, out, outsz);
	else if (k == RUNTIME_RUBY)
		found = ruby_service(argv, len, out, outsz);
	else if (k == RUNTIME_NODE)
		found = node_service(argv, len, out, outsz);
	else if (k == RUNTIME_PHP)
		found = php_service(argv, len, out, outsz);
	/* An empty name ("-m /", a buffer of one byte) names nothing. */
	if (found && out[0] == '\0')
		found = false;
	if (!found)
		out[0] = '\0';
	return found;
}
