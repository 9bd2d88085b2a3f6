/*
 * ttl: how long the kernel may keep the attributes of the directories a
 * reply describes, chosen per request -- libfuse's high-level API has one
 * attr_timeout for every reply, and the tree's is 0 (fs.c: a generated
 * file's size changes with new data, and the kernel must ask before it
 * trusts it). With attributes kept by nothing, each stat of an entry is also
 * a GETATTR of its directory (the kernel checks search permission with
 * fresh attributes under default_permissions): du of a week, 344,000
 * entries, was twice that many requests.
 *
 * A handler that answers for a directory whose attributes do not change
 * while it exists (a range directory, its profiles/ and vs/: their mode and
 * owner are the mount's, their mtime the time of the stat) calls
 * ttl_keep_dirs(); the reply of that request (GETATTR, LOOKUP, READDIRPLUS)
 * then carries TTL_DIR_NS for each directory it holds, files keeping 0.
 * The session's reads and writes go through io_read() and io_writev()
 * (fuse_session_custom_io(), on the descriptor libfuse opened): a worker
 * thread reads a request and sends its reply before it reads the next
 * (libfuse's loop), so the request a reply answers is the thread's last
 * one, matched by its unique id. A reply it cannot match is sent as it is
 * (timeout 0): the failure is only a slower walk.
 *
 * What is given up: a range directory deleted by another way than the mount
 * (the HTTP API, retention) may still be stat'ed for TTL_DIR_NS; its
 * listing and files are gone at once. rm -r through the mount drops the
 * kernel's entry itself.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs_int.h"

#include <fuse_lowlevel.h>

#define TTL_DIR_SEC	1

/* The request this thread read last, and whether its reply may keep directories. */
static __thread uint64_t t_unique;
static __thread uint32_t t_opcode;
static __thread bool t_keep;

void
ttl_keep_dirs(void)
{
	t_keep = true;
}

static ssize_t
io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);

	(void)userdata;
	t_keep = false;
	t_unique = 0;
	if (n >= (ssize_t)sizeof(struct fuse_in_header)) {
		const struct fuse_in_header *in = buf;

		t_unique = in->unique;
		t_opcode = in->opcode;
	}
	return n;
}

static void
keep_attr(uint64_t *valid, uint32_t *nsec, const struct fuse_attr *a)
{
	if (S_ISDIR(a->mode) && *valid == 0 && *nsec == 0)
		*valid = TTL_DIR_SEC;
}

/* The attribute timeouts of the directories in reply body p (n bytes) to the thread's request. */
static void
keep_dirs(char *p, size_t n)
{
	switch (t_opcode) {
	case FUSE_GETATTR:
		if (n >= sizeof(struct fuse_attr_out)) {
			struct fuse_attr_out *o = (struct fuse_attr_out *)p;

			keep_attr(&o->attr_valid, &o->attr_valid_nsec, &o->attr);
		}
		break;
	case FUSE_LOOKUP:
		if (n >= sizeof(struct fuse_entry_out)) {
			struct fuse_entry_out *o = (struct fuse_entry_out *)p;

			if (o->nodeid != 0)
				keep_attr(&o->attr_valid, &o->attr_valid_nsec, &o->attr);
		}
		break;
	case FUSE_READDIRPLUS:
		while (n >= FUSE_NAME_OFFSET_DIRENTPLUS) {
			struct fuse_direntplus *d = (struct fuse_direntplus *)p;
			size_t sz = FUSE_DIRENTPLUS_SIZE(d);

			if (sz > n)
				break;
			if (d->entry_out.nodeid != 0)
				keep_attr(&d->entry_out.attr_valid, &d->entry_out.attr_valid_nsec,
				    &d->entry_out.attr);
			p += sz;
			n -= sz;
		}
		break;
	}
}

static ssize_t
io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	if (t_keep && count == 2 && iov[0].iov_len >= sizeof(struct fuse_out_header)) {
		const struct fuse_out_header *out = iov[0].iov_base;

		if (out->unique == t_unique && t_unique != 0 && out->error == 0)
			keep_dirs(iov[1].iov_base, iov[1].iov_len);
	}
	if (count > 0 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique == t_unique)
		t_keep = false;
	return writev(fd, iov, count);
}

int
ttl_attach(struct fuse_session *se)
{
	static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev };

	if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0)
		return -EIO;
	return 0;
}
