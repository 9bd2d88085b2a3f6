/*
 * test_peer: the owner of an HTTP client's socket (api/peer.c). The
 * kernel's answers are built by hand (a TIME_WAIT or orphaned socket
 * reported as uid 0 without inode, a listener the lookup fell back to, an
 * error), then real loopback connections are looked up: open (our uid),
 * closed by the client (no owner) and reset (gone).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "peer.h"

/* One answer message: a socket of family with id, state, uid and inode. */
struct answer {
	struct nlmsghdr		nh;
	struct inet_diag_msg	m;
};

static void
answer_make(struct answer *a, int family, const struct inet_diag_sockid *id, unsigned state,
    uid_t uid, unsigned inode)
{
	memset(a, 0, sizeof(*a));
	a->nh.nlmsg_len = NLMSG_LENGTH(sizeof(a->m));
	a->nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	a->m.idiag_family = (unsigned char)family;
	a->m.idiag_state = (unsigned char)state;
	a->m.id = *id;
	a->m.idiag_uid = uid;
	a->m.idiag_inode = inode;
}

static void
id4(struct inet_diag_sockid *id, const char *src, unsigned sport, const char *dst,
    unsigned dport)
{
	memset(id, 0, sizeof(*id));
	inet_pton(AF_INET, src, id->idiag_src);
	inet_pton(AF_INET, dst, id->idiag_dst);
	id->idiag_sport = htons((uint16_t)sport);
	id->idiag_dport = htons((uint16_t)dport);
}

static void
test_parse(void **state)
{
	struct inet_diag_sockid id, other;
	struct answer a;
	uid_t uid = 4242;

	(void)state;
	id4(&id, "127.0.0.1", 40000, "127.0.0.1", 8080);
	/* An open client socket of uid 65534. */
	answer_make(&a, AF_INET, &id, TCP_ESTABLISHED, 65534, 777);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), 0);
	assert_int_equal(uid, 65534);
	/* Half-closed by the client, still held by its process. */
	answer_make(&a, AF_INET, &id, TCP_FIN_WAIT2, 1000, 778);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), 0);
	assert_int_equal(uid, 1000);

	/* The closing client: uid 0 and no inode is "unknown", never root. */
	uid = 4242;
	answer_make(&a, AF_INET, &id, TCP_TIME_WAIT, 0, 0);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOTCONN);
	answer_make(&a, AF_INET, &id, TCP_FIN_WAIT2, 0, 0);	/* a timewait's FIN_WAIT2 */
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOTCONN);
	answer_make(&a, AF_INET, &id, TCP_FIN_WAIT1, 0, 0);	/* an orphan */
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOTCONN);
	/* An inode but a state no open connection has. */
	answer_make(&a, AF_INET, &id, TCP_TIME_WAIT, 0, 99);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOTCONN);
	answer_make(&a, AF_INET, &id, TCP_CLOSE, 0, 99);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOTCONN);
	assert_int_equal(uid, 4242);

	/* A root listener on the client's port, which the kernel's lookup falls back to. */
	id4(&other, "0.0.0.0", 40000, "0.0.0.0", 0);
	answer_make(&a, AF_INET, &other, TCP_LISTEN, 0, 12345);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOENT);
	/* Any one of the four wrong. */
	id4(&other, "127.0.0.1", 40001, "127.0.0.1", 8080);
	answer_make(&a, AF_INET, &other, TCP_ESTABLISHED, 0, 1);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOENT);
	id4(&other, "127.0.0.1", 40000, "127.0.0.1", 8081);
	answer_make(&a, AF_INET, &other, TCP_ESTABLISHED, 0, 1);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOENT);
	id4(&other, "127.0.0.2", 40000, "127.0.0.1", 8080);
	answer_make(&a, AF_INET, &other, TCP_ESTABLISHED, 0, 1);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOENT);
	id4(&other, "127.0.0.1", 40000, "127.0.0.2", 8080);
	answer_make(&a, AF_INET, &other, TCP_ESTABLISHED, 0, 1);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOENT);
	/* Another family. */
	answer_make(&a, AF_INET6, &id, TCP_ESTABLISHED, 0, 1);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -ENOENT);
	assert_int_equal(uid, 4242);
}

static void
test_parse_v6(void **state)
{
	struct inet_diag_sockid id, other;
	struct answer a;
	uid_t uid = 4242;

	(void)state;
	memset(&id, 0, sizeof(id));
	inet_pton(AF_INET6, "::1", id.idiag_src);
	inet_pton(AF_INET6, "::1", id.idiag_dst);
	id.idiag_sport = htons(40000);
	id.idiag_dport = htons(8080);
	answer_make(&a, AF_INET6, &id, TCP_ESTABLISHED, 65534, 5);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET6, &id, &uid), 0);
	assert_int_equal(uid, 65534);
	answer_make(&a, AF_INET6, &id, TCP_TIME_WAIT, 0, 0);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET6, &id, &uid), -ENOTCONN);
	/* The last byte of the address differs: compared over all 16. */
	other = id;
	other.idiag_src[3] ^= htonl(1);
	answer_make(&a, AF_INET6, &other, TCP_ESTABLISHED, 0, 5);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET6, &id, &uid), -ENOENT);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_UNIX, &id, &uid), -EAFNOSUPPORT);
}

static void
test_parse_malformed(void **state)
{
	struct inet_diag_sockid id;
	struct {
		struct nlmsghdr	nh;
		struct nlmsgerr	e;
	} err;
	struct answer a;
	uid_t uid = 4242;

	(void)state;
	id4(&id, "127.0.0.1", 40000, "127.0.0.1", 8080);
	/* The kernel found no socket. */
	memset(&err, 0, sizeof(err));
	err.nh.nlmsg_len = NLMSG_LENGTH(sizeof(err.e));
	err.nh.nlmsg_type = NLMSG_ERROR;
	err.e.error = -ENOENT;
	assert_int_equal(peer_parse(&err, sizeof(err), AF_INET, &id, &uid), -ENOENT);
	err.e.error = -EPERM;
	assert_int_equal(peer_parse(&err, sizeof(err), AF_INET, &id, &uid), -EPERM);
	err.e.error = 0;	/* an acknowledgement is no answer */
	assert_int_equal(peer_parse(&err, sizeof(err), AF_INET, &id, &uid), -EPROTO);
	err.nh.nlmsg_len = NLMSG_LENGTH(2);
	assert_int_equal(peer_parse(&err, sizeof(err), AF_INET, &id, &uid), -EPROTO);
	/* Cut short: the message claims more than was received, or less than a socket. */
	answer_make(&a, AF_INET, &id, TCP_ESTABLISHED, 0, 1);
	assert_int_equal(peer_parse(&a, sizeof(a) - 4, AF_INET, &id, &uid), -ENOENT);
	a.nh.nlmsg_len = NLMSG_LENGTH(8);
	assert_int_equal(peer_parse(&a, sizeof(a), AF_INET, &id, &uid), -EPROTO);
	assert_int_equal(peer_parse(&a, 3, AF_INET, &id, &uid), -ENOENT);
	assert_int_equal(peer_parse(&a, 0, AF_INET, &id, &uid), -ENOENT);
	assert_int_equal(uid, 4242);
}

/* A listener on the loopback of family, its port into *port. */
static int
listener(int family, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = socket(family, SOCK_STREAM, 0);

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = (sa_family_t)family;
	if (family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, family == AF_INET ?
	    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port;
	return fd;
}

/* A connected pair on the loopback of family: the client in *c, ours in *s. */
static int
connect_pair(int lfd, int family, uint16_t port, int *c, int *s)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = (sa_family_t)family;
	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		((struct sockaddr_in *)&ss)->sin_port = port;
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
		((struct sockaddr_in6 *)&ss)->sin6_port = port;
	}
	if ((*c = socket(family, SOCK_STREAM, 0)) < 0)
		return -1;
	if (connect(*c, (struct sockaddr *)&ss, family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6)) < 0 || (*s = accept(lfd, NULL, NULL)) < 0) {
		close(*c);
		return -1;
	}
	return 0;
}

static void
live(int family)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	uint16_t port;
	uid_t uid = 4242;
	int lfd, c, s, i, rc;

	if ((lfd = listener(family, &port)) < 0) {
		printf("# no %s loopback here: skipped\n", family == AF_INET ? "IPv4" : "IPv6");
		return;
	}
	/* Open: the client's owner is us. */
	assert_int_equal(connect_pair(lfd, family, port, &c, &s), 0);
	assert_int_equal(peer_uid(s, &uid), 0);
	assert_int_equal(uid, geteuid());
	/* The client sent its request and closed: its socket has no owner any more. */
	assert_int_equal(write(c, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	close(c);
	uid = 4242;
	for (i = 0; i < 100 && (rc = peer_uid(s, &uid)) == 0; i++)
		usleep(10000);	/* the FIN crosses the loopback at once; the wait is a bound */
	assert_int_equal(rc, -ENOTCONN);
	assert_int_equal(uid, 4242);
	close(s);
	/* Reset: the client's socket is gone. */
	assert_int_equal(connect_pair(lfd, family, port, &c, &s), 0);
	setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c);
	for (i = 0; i < 100 && (rc = peer_uid(s, &uid)) == 0; i++)
		usleep(10000);
	assert_true(rc == -ENOENT || rc == -ENOTCONN);
	assert_int_equal(uid, 4242);
	close(s);
	close(lfd);
	printf("# %s: open client identified, closed and reset ones refused\n",
	    family == AF_INET ? "127.0.0.1" : "[::1]");
}

static void
test_live(void **state)
{
	(void)state;
	live(AF_INET);
	live(AF_INET6);
	assert_string_not_equal(peer_strerror(-ENOTCONN), peer_strerror(-ENOENT));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_v6),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
