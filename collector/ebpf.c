/* ebpf: placeholder until the eBPF sampler lands; refuses --ebpf clearly. */
#include <errno.h>

#include "collector.h"

int
ebpf_start(struct store *st, const struct ebpf_opts *o, struct ebpf_sampler **out)
{
	(void)st;
	(void)o;
	*out = NULL;
	log_warnx("--ebpf: the eBPF sampler is not part of this build yet");
	return -ENOSYS;
}

void
ebpf_stop(struct ebpf_sampler *e)
{
	(void)e;
}
