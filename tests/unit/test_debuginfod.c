/*
 * test_debuginfod: the parts of collector/ebpf/debuginfod.c that need no
 * server: the server list, the validation of an answer, and the cache
 * directory (files found by build id, links refused, negative answers,
 * leftovers removed and the oldest files evicted past the cap at start).
 * Redirects: which are followed (the checks on the URL and on the address
 * connected to), and a server on loopback that redirects to another port of
 * this host (as to the daemon's own API), which is never connected to.
 * The fetching itself is tests/integration/ebpf_debuginfod.sh's (a real
 * debuginfod server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "debuginfod.h"

static void
test_parse_urls(void **state)
{
	const char *bad;
	char *out;

	(void)state;
	assert_int_equal(dbginfod_parse_urls("http://a:8002/, https://b.example/x//", &out, &bad), 0);
	assert_string_equal(out, "http://a:8002\nhttps://b.example/x\n");
	free(out);
	/* DEBUGINFOD_URLS separates with spaces. */
	assert_int_equal(dbginfod_parse_urls("  https://debuginfod.debian.net http://c ", &out,
	    &bad), 0);
	assert_string_equal(out, "https://debuginfod.debian.net\nhttp://c\n");
	free(out);
	assert_int_equal(dbginfod_parse_urls("", &out, &bad), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(dbginfod_parse_urls("ftp://x", &out, &bad), -EINVAL);
	assert_null(out);
	assert_non_null(bad);
	assert_int_equal(dbginfod_parse_urls("http://a,file:///etc", &out, &bad), -EINVAL);
	assert_int_equal(dbginfod_parse_urls("http://", &out, &bad), -EINVAL);
	assert_int_equal(dbginfod_parse_urls("http://a\x01b", &out, &bad), -EINVAL);
}

static void
test_validate(void **state)
{
	char id[41], other[41];
	const char *why;
	int fd, txt;
	char path[] = "/tmp/test_debuginfod.XXXXXX";

	(void)state;
	/* This test program: an ELF file with a build id (Debian's gcc links one in). */
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(dbginfod_build_id(fd, id), 0);
	assert_true(strlen(id) >= 2 && strspn(id, "0123456789abcdef") == strlen(id));
	assert_int_equal(dbginfod_validate(fd, id, 1ull << 40, &why), 0);
	assert_int_equal(dbginfod_validate(fd, id, 100, &why), -EFBIG);
	assert_string_equal(why, "too big");
	snprintf(other, sizeof(other), "%s", id);
	other[0] = other[0] == '0' ? '1' : '0';
	assert_int_equal(dbginfod_validate(fd, other, 1ull << 40, &why), -ENOEXEC);
	assert_string_equal(why, "another build id");
	close(fd);
	txt = mkstemp(path);
	assert_true(txt >= 0);
	assert_int_equal(write(txt, "<html>404</html>", 16), 16);
	assert_int_equal(dbginfod_validate(txt, id, 1ull << 40, &why), -ENOEXEC);
	assert_string_equal(why, "not an ELF file");
	close(txt);
	unlink(path);
}

static void
put_file(const char *dir, const char *name, size_t size, time_t age)
{
	char path[512];
	struct timeval tv[2];
	char *b = calloc(1, size + 1);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(b);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(b, 1, size, f), size);
	fclose(f);
	free(b);
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= age;
	tv[1] = tv[0];
	assert_int_equal(utimes(path, tv), 0);
}

#define HEX_A	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HEX_C	"cccccccccccccccccccccccccccccccccccccccc"
#define HEX_D	"dddddddddddddddddddddddddddddddddddddddd"

static void
test_cache(void **state)
{
	char data[] = "/tmp/test_debuginfod.XXXXXX", dir[256], path[512];
	struct dbginfod *d;
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(data));
	snprintf(dir, sizeof(dir), "%s/debuginfo", data);
	assert_int_equal(mkdir(dir, 0700), 0);
	put_file(dir, HEX_A ".debug", 3000, 100);	/* the oldest: evicted */
	put_file(dir, HEX_B ".debug", 3000, 10);
	put_file(dir, ".tmp-" HEX_C, 10, 0);		/* a download cut by a crash */
	put_file(dir, HEX_C ".none", 0, 0);
	snprintf(path, sizeof(path), "%s/" HEX_D ".debug", dir);
	assert_int_equal(symlink("/proc/self/exe", path), 0);

	assert_int_equal(dbginfod_create("", data, 4000, &d), 0);
	snprintf(path, sizeof(path), "%s/" HEX_A ".debug", dir);
	assert_int_equal(stat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/.tmp-" HEX_C, dir);
	assert_int_equal(stat(path, &st), -1);

	assert_int_equal(dbginfod_lookup(d, HEX_B, true, &fd), DBGINFOD_READY);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dbginfod_lookup(d, HEX_A, true, &fd), DBGINFOD_NONE);
	assert_int_equal(fd, -1);
	assert_int_equal(dbginfod_lookup(d, HEX_C, true, &fd), DBGINFOD_NONE);
	/* A link in the cache is not followed, whatever it points at. */
	assert_int_equal(dbginfod_lookup(d, HEX_D, true, &fd), DBGINFOD_NONE);
	assert_int_equal(fd, -1);
	/* Names are made of hex build ids only. */
	assert_int_equal(dbginfod_lookup(d, "../../etc/passwd", true, &fd), DBGINFOD_NONE);
	assert_int_equal(dbginfod_lookup(d, "ABCD", true, &fd), DBGINFOD_NONE);
	assert_int_equal(dbginfod_lookup(d, "abc", true, &fd), DBGINFOD_NONE);
	assert_int_equal(dbginfod_generation(d), 0);
	dbginfod_destroy(d);

	snprintf(path, sizeof(path), "%s/" HEX_B ".debug", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" HEX_C ".none", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" HEX_D ".debug", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(rmdir(data), 0);
}

static void
test_redirect_check(void **state)
{
	static const struct {
		const char	*server, *from, *to;
		int		 rc;
		bool		 same;
	} c[] = {
		/* Elsewhere, over http or https. */
		{ "http://debuginfod.example", "http://debuginfod.example/buildid/aa/debuginfo",
		    "http://mirror.example/x", 0, false },
		{ "http://debuginfod.example", "http://debuginfod.example/b",
		    "https://mirror.example:8443/x", 0, false },
		/* No other scheme, no downgrade. */
		{ "http://d.example", "http://d.example/b", "ftp://mirror.example/x", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "file:///etc/shadow", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "gopher://m.example/x", -EPERM, false },
		{ "https://d.example", "https://d.example/b", "http://m.example/x", -EPERM, false },
		{ "http://d.example", "https://m.example/b", "http://n.example/x", -EPERM, false },
		/* Never this host... */
		{ "http://d.example", "http://d.example/b", "http://127.0.0.1:8001/api/0/services",
		    -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://127.1.2.3/", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://localhost:8001/", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://LocalHost./", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://x.localhost/", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://[::1]:8001/", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://[::ffff:127.0.0.1]:8001/",
		    -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://0.0.0.0:8001/", -EPERM, false },
		{ "http://d.example", "http://d.example/b", "http://[::]:8001/", -EPERM, false },
		/* ... unless it is the configured server's own host and port. */
		{ "http://127.0.0.1:8002", "http://127.0.0.1:8002/b", "http://127.0.0.1:8002/moved",
		    0, true },
		{ "http://127.0.0.1:8002", "http://127.0.0.1:8002/b", "http://127.0.0.1:8001/api",
		    -EPERM, false },
		{ "http://localhost", "http://localhost/b", "http://localhost:80/x", 0, true },
		{ "http://d.example", "http://d.example/b", "not a url", -EPERM, false },
	};
	const char *why;
	size_t i;
	bool same;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int rc = dbginfod_redirect_check(c[i].server, c[i].from, c[i].to, &same, &why);

		if (rc != c[i].rc || (rc == 0 && same != c[i].same) || (rc < 0) != (why != NULL))
			fail_msg("%s -> %s: rc %d same %d (%s)", c[i].from, c[i].to, rc, same,
			    why ? why : "");
	}
}

static void
test_addr_local(void **state)
{
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	static const char *const local4[] = { "127.0.0.1", "127.255.0.9", "0.0.0.0" };
	static const char *const local6[] = { "::1", "::", "::ffff:127.0.0.1", "::ffff:0.0.0.0" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(local4) / sizeof(local4[0]); i++) {
		assert_int_equal(inet_pton(AF_INET, local4[i], &s4.sin_addr), 1);
		assert_true(dbginfod_addr_local((struct sockaddr *)&s4));
	}
	for (i = 0; i < sizeof(local6) / sizeof(local6[0]); i++) {
		assert_int_equal(inet_pton(AF_INET6, local6[i], &s6.sin6_addr), 1);
		assert_true(dbginfod_addr_local((struct sockaddr *)&s6));
	}
	/* Documentation addresses (RFC 5737, 3849): no interface has them. */
	assert_int_equal(inet_pton(AF_INET, "192.0.2.7", &s4.sin_addr), 1);
	assert_false(dbginfod_addr_local((struct sockaddr *)&s4));
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::7", &s6.sin6_addr), 1);
	assert_false(dbginfod_addr_local((struct sockaddr *)&s6));
}

/*
 * A tiny HTTP server on loopback: the "debuginfod" answers a request for
 * HEX_A with a redirect to the trap (another port of this host, as the
 * daemon's API would be), one for HEX_B with a redirect to itself
 * (/moved, then 404). The trap counts the connections it gets.
 */
struct tiny {
	int		 fd;
	int		 port;
	int		 trap_port;	/* 0: this is the trap */
	char		 host[256];	/* this host's name */
	atomic_int	 conns, moved;
	pthread_t	 thread;
};

static void *
tiny_main(void *arg)
{
	struct tiny *t = arg;
	char req[4096], ans[512];
	ssize_t n;
	int c;

	while ((c = accept(t->fd, NULL, NULL)) >= 0) {
		atomic_fetch_add(&t->conns, 1);
		n = read(c, req, sizeof(req) - 1);
		req[n > 0 ? n : 0] = '\0';
		if (t->trap_port && strstr(req, "GET /buildid/" HEX_A))
			snprintf(ans, sizeof(ans), "HTTP/1.1 302 Found\r\nLocation: "
			    "http://127.0.0.1:%d/api/0/services\r\nContent-Length: 0\r\n"
			    "Connection: close\r\n\r\n", t->trap_port);
		else if (t->trap_port && strstr(req, "GET /buildid/" HEX_C))
			snprintf(ans, sizeof(ans), "HTTP/1.1 302 Found\r\nLocation: "
			    "http://%s:%d/api/0/services\r\nContent-Length: 0\r\n"
			    "Connection: close\r\n\r\n", t->host, t->trap_port);
		else if (t->trap_port && strstr(req, "GET /buildid/" HEX_B))
			snprintf(ans, sizeof(ans), "HTTP/1.1 302 Found\r\nLocation: /moved\r\n"
			    "Content-Length: 0\r\nConnection: close\r\n\r\n");
		else {
			if (strstr(req, "GET /moved"))
				atomic_fetch_add(&t->moved, 1);
			snprintf(ans, sizeof(ans), "HTTP/1.1 404 Not Found\r\nContent-Length: 0"
			    "\r\nConnection: close\r\n\r\n");
		}
		if (write(c, ans, strlen(ans)) < 0)
			break;
		close(c);
	}
	return NULL;
}

/* The trap listens on every address of this host. */
static void
tiny_start(struct tiny *t, int trap_port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);

	a.sin_addr.s_addr = htonl(trap_port ? INADDR_LOOPBACK : INADDR_ANY);
	if (gethostname(t->host, sizeof(t->host) - 1) < 0)
		snprintf(t->host, sizeof(t->host), "localhost");
	t->trap_port = trap_port;
	assert_true((t->fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(t->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(t->fd, 16), 0);
	assert_int_equal(getsockname(t->fd, (struct sockaddr *)&a, &al), 0);
	t->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&t->thread, NULL, tiny_main, t), 0);
}

static void
tiny_stop(struct tiny *t)
{
	shutdown(t->fd, SHUT_RDWR);
	pthread_join(t->thread, NULL);
	close(t->fd);
}

/* Wait (10 s at most) until d's worker has answered n lookups. */
static void
wait_gen(struct dbginfod *d, uint64_t n)
{
	int i;

	for (i = 0; i < 1000 && dbginfod_generation(d) < n; i++)
		usleep(10000);
	assert_true(dbginfod_generation(d) >= n);
}

static void
test_redirect_to_this_host(void **state)
{
	char data[] = "/tmp/test_debuginfod.XXXXXX", url[64], path[512];
	struct tiny trap = { 0 }, srv = { 0 };
	struct dbginfod *d;
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(data));
	tiny_start(&trap, 0);
	tiny_start(&srv, trap.port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d\n", srv.port);
	assert_int_equal(dbginfod_create(url, data, 0, &d), 0);
	/* To another port of this host: refused, never connected to; not found there. */
	assert_int_equal(dbginfod_lookup(d, HEX_A, true, &fd), DBGINFOD_PENDING);
	wait_gen(d, 1);
	assert_int_equal(atomic_load(&trap.conns), 0);
	assert_int_equal(dbginfod_lookup(d, HEX_A, true, &fd), DBGINFOD_NONE);
	snprintf(path, sizeof(path), "%s/debuginfo/" HEX_A ".none", data);
	assert_int_equal(stat(path, &st), 0);
	/* Within the configured server itself: followed (then 404). */
	assert_int_equal(dbginfod_lookup(d, HEX_B, true, &fd), DBGINFOD_PENDING);
	wait_gen(d, 2);
	assert_int_equal(atomic_load(&srv.moved), 1);
	assert_int_equal(atomic_load(&trap.conns), 0);
	/*
	 * To this host by its name (which resolves to one of its addresses):
	 * the name passes, the address connected to does not.
	 */
	assert_int_equal(dbginfod_lookup(d, HEX_C, true, &fd), DBGINFOD_PENDING);
	wait_gen(d, 3);
	assert_int_equal(atomic_load(&trap.conns), 0);
	assert_int_equal(dbginfod_lookup(d, HEX_C, true, &fd), DBGINFOD_NONE);
	print_message("server: %d requests, trap: %d\n", atomic_load(&srv.conns),
	    atomic_load(&trap.conns));
	dbginfod_destroy(d);
	tiny_stop(&srv);
	tiny_stop(&trap);
	unlink(path);
	snprintf(path, sizeof(path), "%s/debuginfo/" HEX_B ".none", data);
	unlink(path);
	snprintf(path, sizeof(path), "%s/debuginfo/" HEX_C ".none", data);
	unlink(path);
	snprintf(path, sizeof(path), "%s/debuginfo", data);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rmdir(data), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_urls),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_redirect_check),
		cmocka_unit_test(test_addr_local),
		cmocka_unit_test(test_redirect_to_this_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
