/*
 * peer: who is at the other end of an HTTP connection, so that the API
 * follows the mount's access rules (owner, --group, --allow-other) without a
 * token. A loopback client's socket belongs to a local user: the kernel's
 * socket diagnostics (NETLINK_SOCK_DIAG, what ss(8) reads) look the client's
 * socket up by its exact address pair and give its owner. No /proc scan, no
 * privilege needed. A peer on another host has no local socket: -ENOENT.
 * Group membership is the user database's (getgrouplist), as login uses.
 *
 * The owner is known only while a process holds the client's socket. Once
 * the client closes it, the kernel keeps a TIME_WAIT mini-socket, or an
 * orphan finishing its FIN exchange, and reports either as uid 0 with inode
 * 0: a client that sends its request and closes at once would pass as root.
 * So an answer counts only when it is the client's own socket (the exact
 * address pair, not a listener the kernel's lookup fell back to), held by a
 * process (inode != 0), in a state of an open connection; anything else is
 * "unknown", never "root". The caller asks once per connection, as it
 * starts (http.c), when an honest client is waiting for its answer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "peer.h"

/* The query's sequence number, checked in the answer. */
#define PEER_SEQ	0x70656572u
/* Messages from other senders dropped before giving up. */
#define PEER_RECV_TRIES	8

/* Whether the socket m describes is the one asked for: family, ports, addresses. */
static bool
peer_same(const struct inet_diag_msg *m, int family, const struct inet_diag_sockid *id)
{
	size_t alen = family == AF_INET ? 4 : 16;

	return m->idiag_family == family && m->id.idiag_sport == id->idiag_sport &&
	    m->id.idiag_dport == id->idiag_dport &&
	    memcmp(m->id.idiag_src, id->idiag_src, alen) == 0 &&
	    memcmp(m->id.idiag_dst, id->idiag_dst, alen) == 0;
}

/*
 * Whether a socket in state st, held by a process, is an open connection's
 * end: established, or half-closed by either side (the client may shut down
 * its sending side after a request and still read the answer).
 */
static bool
peer_state_open(unsigned st)
{
	switch (st) {
	case TCP_ESTABLISHED:
	case TCP_FIN_WAIT1:
	case TCP_FIN_WAIT2:
	case TCP_CLOSE_WAIT:
		return true;
	default:
		return false;
	}
}

int
peer_parse(const void *msg, size_t n, int family, const struct inet_diag_sockid *id, uid_t *uid)
{
	const struct nlmsghdr *h = msg;
	const struct inet_diag_msg *m;
	int len = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		if (h->nlmsg_type == NLMSG_DONE)
			break;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EPROTO;
			/* No such socket is -ENOENT; an error >= 0 is no answer at all. */
			return e->error < 0 ? e->error : -EPROTO;
		}
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			continue;
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
			return -EPROTO;
		m = NLMSG_DATA(h);
		/* Another socket (a listener on the client's port): not the client. */
		if (!peer_same(m, family, id))
			continue;
		/* Closed: TIME_WAIT, an orphan: its uid 0 means "nobody knows". */
		if (m->idiag_inode == 0 || !peer_state_open(m->idiag_state))
			return -ENOTCONN;
		*uid = m->idiag_uid;
		return 0;
	}
	return -ENOENT;
}

int
peer_uid(int fd, uid_t *uid)
{
	struct sockaddr_storage peer, self;
	socklen_t pl = sizeof(peer), sl = sizeof(self);
	struct {
		struct nlmsghdr		nh;
		struct inet_diag_req_v2	req;
	} q;
	union {
		struct nlmsghdr		nh;
		char			raw[8192];
	} ans;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK }, from;
	struct timeval tv = { .tv_sec = 1 };
	socklen_t fl;
	ssize_t n;
	int s, family, tries, rc;

	if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&self, &sl) < 0)
		return errno == ENOTCONN ? -ENOTCONN : -errno;
	if (peer.ss_family != self.ss_family ||
	    (peer.ss_family != AF_INET && peer.ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	memset(&q, 0, sizeof(q));
	q.nh.nlmsg_len = sizeof(q);
	q.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nh.nlmsg_flags = NLM_F_REQUEST;
	q.nh.nlmsg_seq = PEER_SEQ;
	q.req.sdiag_protocol = IPPROTO_TCP;
	q.req.idiag_states = ~0U;
	q.req.id.idiag_cookie[0] = q.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	/* The client's socket: its source is our peer, its destination us. */
	if (peer.ss_family == AF_INET) {
		struct sockaddr_in *p4 = (struct sockaddr_in *)&peer, *s4 = (struct sockaddr_in *)&self;

		family = AF_INET;
		q.req.id.idiag_sport = p4->sin_port;
		q.req.id.idiag_dport = s4->sin_port;
		memcpy(q.req.id.idiag_src, &p4->sin_addr, 4);
		memcpy(q.req.id.idiag_dst, &s4->sin_addr, 4);
	} else {
		struct sockaddr_in6 *p6 = (struct sockaddr_in6 *)&peer,
		    *s6 = (struct sockaddr_in6 *)&self;

		q.req.id.idiag_sport = p6->sin6_port;
		q.req.id.idiag_dport = s6->sin6_port;
		if (IN6_IS_ADDR_V4MAPPED(&p6->sin6_addr) && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			/* A dual-stack listener's IPv4 client: its socket is an IPv4 one. */
			family = AF_INET;
			memcpy(q.req.id.idiag_src, &p6->sin6_addr.s6_addr[12], 4);
			memcpy(q.req.id.idiag_dst, &s6->sin6_addr.s6_addr[12], 4);
		} else {
			family = AF_INET6;
			memcpy(q.req.id.idiag_src, &p6->sin6_addr, 16);
			memcpy(q.req.id.idiag_dst, &s6->sin6_addr, 16);
			q.req.id.idiag_if = p6->sin6_scope_id;
		}
	}
	q.req.sdiag_family = (unsigned char)family;
	if ((s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(s, &q, sizeof(q), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
		rc = -errno;
		goto out;
	}
	/*
	 * The kernel answers during sendto(). Another process may send to this
	 * socket too: only the kernel's message (port 0, our seq) counts.
	 */
	rc = -EPROTO;
	for (tries = 0; tries < PEER_RECV_TRIES; tries++) {
		fl = sizeof(from);
		n = recvfrom(s, &ans, sizeof(ans), 0, (struct sockaddr *)&from, &fl);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
			break;
		}
		if (fl < sizeof(from) || from.nl_family != AF_NETLINK || from.nl_pid != 0 ||
		    (size_t)n < sizeof(struct nlmsghdr) || ans.nh.nlmsg_seq != PEER_SEQ)
			continue;
		rc = peer_parse(&ans, (size_t)n, family, &q.req.id, uid);
		break;
	}
out:
	close(s);
	return rc;
}

const char *
peer_strerror(int rc)
{
	switch (rc) {
	case -ENOENT:
		return "this client's socket has no local owner (a client on another host, or one "
		    "whose socket is gone)";
	case -ENOTCONN:
		return "the client's socket was closed before its owner could be identified (a "
		    "closed socket has no owner: keep the connection open until the answer)";
	case -EAFNOSUPPORT:
		return "the client is not on a TCP/IP socket whose owner can be looked up";
	default:
		return "the owner of this client's socket could not be looked up";
	}
}

bool
peer_in_group(uid_t uid, gid_t group)
{
	struct passwd pw, *pp = NULL;
	gid_t groups[256];
	int n = 256, i;
	char *sbuf;
	long sz = sysconf(_SC_GETPW_R_SIZE_MAX);
	bool in = false;

	if (sz <= 0 || sz > 1 << 20)
		sz = 16384;
	if ((sbuf = malloc((size_t)sz)) == NULL)
		return false;
	if (getpwuid_r(uid, &pw, sbuf, (size_t)sz, &pp) == 0 && pp != NULL) {
		if (pw.pw_gid == group)
			in = true;
		else if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) >= 0)
			for (i = 0; i < n && !in; i++)
				in = groups[i] == group;
	}
	free(sbuf);
	return in;
}
