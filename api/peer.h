/*
 * peer: the local user at the other end of an HTTP connection (peer.c), so
 * that the API follows the mount's access rules without a token.
 */
#ifndef PROFILEFS_PEER_H
#define PROFILEFS_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <linux/inet_diag.h>

/*
 * The uid owning the client socket at the other end of the connected TCP
 * socket fd. Ask while the connection is established (http.c asks once, as
 * it starts): the owner is known only while a process holds the client's
 * socket. 0 and *uid; -ENOENT when no local socket has the connection's
 * address pair (a client on another host, or one whose socket is gone);
 * -ENOTCONN when the client's socket is closed (TIME_WAIT, or an orphan no
 * process holds), which the kernel reports as uid 0 with no owner; another
 * -errno when the lookup itself failed.
 */
int	peer_uid(int fd, uid_t *uid);
/*
 * The kernel's answer msg[0..n) to the lookup of the client socket id
 * (idiag_src is the client's address) of family (AF_INET, AF_INET6): as
 * peer_uid(). Apart from peer_uid() for the unit tests.
 */
int	peer_parse(const void *msg, size_t n, int family, const struct inet_diag_sockid *id,
	    uid_t *uid);
/* Why a peer_uid() result < 0 leaves the client unidentified, for a refusal. */
const char *peer_strerror(int rc);
/* Whether uid's user is a member of group (primary or supplementary). */
bool	peer_in_group(uid_t uid, gid_t group);

#endif
