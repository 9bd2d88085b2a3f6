/*
 * kaddr: kernel text addresses in profiles, and who may see them (see
 * query.h). The eBPF sampler keeps a kernel frame's address beside its
 * name; served to a reader to whom /proc/kallsyms shows zeros, such
 * addresses would undo KASLR. Both views of the store apply the rule
 * here: the HTTP API never serves them, the tree serves them only to a
 * caller the kernel itself would show them to. Where they are hidden,
 * frames keep their names (the symbolized lines) and lose their address,
 * kernel mappings their bounds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "query.h"

/* Where the kernel's half of a 64-bit address space starts (x86-64, arm64). */
#define KERNEL_HALF	0xffff800000000000ULL
#define CAP_SYSLOG_BIT	34

static bool
kernel_location(const struct pf_location *l)
{
	return l->address >= KERNEL_HALF;
}

static bool
kernel_mapping(const struct pf_mapping *m)
{
	return m->start >= KERNEL_HALF || m->limit >= KERNEL_HALF;
}

size_t
kaddr_hide(struct profile *p)
{
	size_t i, n = 0;

	for (i = 0; i < p->nlocations; i++)
		if (kernel_location(&p->locations[i])) {
			p->locations[i].address = 0;
			n++;
		}
	for (i = 0; i < p->nmappings; i++)
		if (kernel_mapping(&p->mappings[i])) {
			p->mappings[i].start = p->mappings[i].limit = p->mappings[i].offset = 0;
			n++;
		}
	return n;
}

bool
kaddr_any(const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nlocations; i++)
		if (kernel_location(&p->locations[i]))
			return true;
	for (i = 0; i < p->nmappings; i++)
		if (kernel_mapping(&p->mappings[i]))
			return true;
	return false;
}

int
kaddr_hidden_copy(const struct profile *p, struct profile **out)
{
	struct profile *c;
	size_t lb = p->nlocations * sizeof(*p->locations);
	size_t mb = p->nmappings * sizeof(*p->mappings);

	*out = NULL;
	if (!kaddr_any(p))
		return 0;
	if (budget_reserve(sizeof(*c) + lb + mb) < 0)
		return -ENOMEM;
	c = malloc(sizeof(*c));
	if (c != NULL) {
		*c = *p;
		c->arena = NULL;	/* everything else stays p's */
		c->locations = malloc(lb ? lb : 1);
		c->mappings = malloc(mb ? mb : 1);
	}
	if (c == NULL || c->locations == NULL || c->mappings == NULL) {
		if (c) {
			free(c->locations);
			free(c->mappings);
		}
		free(c);
		budget_release(sizeof(*c) + lb + mb);
		return -ENOMEM;
	}
	if (lb)
		memcpy(c->locations, p->locations, lb);
	if (mb)
		memcpy(c->mappings, p->mappings, mb);
	kaddr_hide(c);
	*out = c;
	return 0;
}

void
kaddr_copy_free(struct profile *c)
{
	if (c == NULL)
		return;
	budget_release(sizeof(*c) + c->nlocations * sizeof(*c->locations) +
	    c->nmappings * sizeof(*c->mappings));
	free(c->locations);
	free(c->mappings);
	free(c);
}

/* The integer in a one-line file (a sysctl), or def when it cannot be read. */
static long
read_long(const char *path, long def)
{
	char line[32];
	FILE *f;
	long v = def;

	if ((f = fopen(path, "re")) == NULL)
		return def;
	if (fgets(line, sizeof(line), f) != NULL)
		v = strtol(line, NULL, 10);
	fclose(f);
	return v;
}

/* Whether thread tid holds CAP_SYSLOG in its effective set. */
static bool
has_syslog(int tid)
{
	char path[64], line[128];
	unsigned long long caps = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0) {
			found = sscanf(line + 7, "%llx", &caps) == 1;
			break;
		}
	fclose(f);
	return found && (caps >> CAP_SYSLOG_BIT & 1);
}

/*
 * Whether thread tid is in the initial user namespace, where CAP_SYSLOG
 * counts: its namespace is ours (the sampler runs in the initial one), or,
 * where we may not look at it, it maps every uid to itself as the initial
 * one does.
 */
static bool
init_userns(int tid)
{
	char path[64], line[128];
	struct stat a, b;
	unsigned long long in, to, n;
	int rows = 0;
	bool full = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", tid);
	if (stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0)
		return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	snprintf(path, sizeof(path), "/proc/%d/uid_map", tid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f)) {
		rows++;
		if (sscanf(line, "%llu %llu %llu", &in, &to, &n) == 3 && in == 0 && to == 0 &&
		    n == 4294967295ULL)
			full = true;
	}
	fclose(f);
	return full && rows == 1;
}

/*
 * The answer is asked at every stat and open of a generated file (du and
 * find ask it per entry), so each FUSE thread keeps its last one for a
 * second: the two sysctls, and the last caller's. A caller's capabilities
 * or a sysctl changed are seen within that second; a thread id is not
 * reused by another process within it.
 */
#define VISIBLE_TTL_NS	INT64_C(1000000000)

static _Thread_local struct {
	int64_t	 until;		/* mono ns: the sysctls below hold until then */
	long	 restrict_, paranoid;
	int	 tid;		/* the last caller asked of, 0: none */
	int64_t	 tid_until;
	bool	 tid_visible;
} kv;

bool
kaddr_visible(int tid)
{
	int64_t now = clock_mono_ns();

	if (now >= kv.until) {
		kv.restrict_ = read_long("/proc/sys/kernel/kptr_restrict", 2);
		kv.paranoid = read_long("/proc/sys/kernel/perf_event_paranoid", 2);
		kv.until = now + VISIBLE_TTL_NS;
	}
	/* kallsyms_show_value(): as the kernel decides what /proc/kallsyms shows. */
	if (kv.restrict_ >= 2)
		return false;
	if (kv.restrict_ == 0 && kv.paranoid <= 1)
		return true;
	if (tid <= 0)
		return false;
	if (tid != kv.tid || now >= kv.tid_until) {
		kv.tid_visible = has_syslog(tid) && init_userns(tid);
		kv.tid = tid;
		kv.tid_until = now + VISIBLE_TTL_NS;
	}
	return kv.tid_visible;
}
