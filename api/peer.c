/*
 * peer: who is at the other end of an HTTP connection, so that the API
 * follows the mount's access rules (owner, --group, --allow-other) without a
 * token. A loopback client's socket belongs to a local user: the kernel's
 * socket diagnostics (NETLINK_SOCK_DIAG, what ss(8) reads) look the client's
 * socket up by its exact address pair and give its owner. No /proc scan, no
 * privilege needed. A peer on another host has no local socket: -ENOENT.
 * Group membership is the user database's (getgrouplist), as login uses.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "api_int.h"

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
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h;
	ssize_t n;
	int s, rc = -ENOENT;

	if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&self, &sl) < 0)
		return -errno;
	if (peer.ss_family != self.ss_family ||
	    (peer.ss_family != AF_INET && peer.ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	memset(&q, 0, sizeof(q));
	q.nh.nlmsg_len = sizeof(q);
	q.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nh.nlmsg_flags = NLM_F_REQUEST;
	q.req.sdiag_family = (unsigned char)peer.ss_family;
	q.req.sdiag_protocol = IPPROTO_TCP;
	q.req.idiag_states = ~0U;
	q.req.id.idiag_cookie[0] = q.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	/* The client's socket: its source is our peer, its destination us. */
	if (peer.ss_family == AF_INET) {
		struct sockaddr_in *p4 = (struct sockaddr_in *)&peer, *s4 = (struct sockaddr_in *)&self;

		q.req.id.idiag_sport = p4->sin_port;
		q.req.id.idiag_dport = s4->sin_port;
		memcpy(q.req.id.idiag_src, &p4->sin_addr, 4);
		memcpy(q.req.id.idiag_dst, &s4->sin_addr, 4);
	} else {
		struct sockaddr_in6 *p6 = (struct sockaddr_in6 *)&peer,
		    *s6 = (struct sockaddr_in6 *)&self;

		q.req.id.idiag_sport = p6->sin6_port;
		q.req.id.idiag_dport = s6->sin6_port;
		memcpy(q.req.id.idiag_src, &p6->sin6_addr, 16);
		memcpy(q.req.id.idiag_dst, &s6->sin6_addr, 16);
	}
	if ((s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) < 0)
		return -errno;
	if (sendto(s, &q, sizeof(q), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
		rc = -errno;
		goto out;
	}
	if ((n = recv(s, &ans, sizeof(ans), 0)) < 0) {
		rc = -errno;
		goto out;
	}
	for (h = &ans.nh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE)
			break;
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			*uid = m->idiag_uid;
			rc = 0;
			break;
		}
	}
out:
	close(s);
	return rc;
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
