/*
 * load.c: the kernel half's life: opened, set up for one process, loaded,
 * attached, and destroyed on every way out (main.c calls attach_unload on
 * each).  Everything it loads belongs to file descriptors of this process:
 * the kernel frees programs, maps and links when they close, so even a
 * SIGKILL leaves nothing behind.  Nothing is pinned.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"
#include "attach.h"
#include "attach_bpf.skel.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449   /* x86-64, Linux 5.16 */
#endif

/* The pid namespace every id is seen from in the initial one (PROC_PID_INIT_INO). */
#define INIT_PIDNS_INO 0xEFFFFFFCu

static struct ring_buffer *ring;
static const struct attach_sinks *sinks;

static int on_sample(void *ctx, void *data, size_t size)
{
	(void)ctx;
	sinks->sample(data, size);
	return 0;
}

static int on_timed(void *ctx, void *data, size_t size)
{
	(void)ctx;
	sinks->timed(data, size);
	return 0;
}

/* libbpf's own messages: its warnings only (a refused program's verifier log
 * among them, which is what a bug report needs). */
static int libbpf_message(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

struct attach_bpf *attach_load(const struct attach_opts *o, enum attach_hook hook,
			       const struct attach_sinks *to)
{
	sinks = to;
	libbpf_set_print(libbpf_message);
	struct attach_bpf *skel = attach_bpf__open();
	if (!skel) {
		attach_say("cannot open the tracer's BPF object: %s", strerror(errno));
		return NULL;
	}
	skel->rodata->target_tgid = (__u32)o->pid;
	skel->rodata->nr_futex = SYS_futex;
	skel->rodata->nr_futex_waitv = SYS_futex_waitv;
	skel->rodata->fp_stacks = o->stacks == ATTACH_STACKS_FP;
	skel->rodata->sample_every = o->stacks == ATTACH_STACKS_DWARF ? o->sample_every : 0;
	skel->rodata->timeline = o->trace != NULL;
	struct stat ns;
	if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != INIT_PIDNS_INO) {
		skel->rodata->pidns_dev = ns.st_dev;
		skel->rodata->pidns_ino = ns.st_ino;
	}
	int syscall_tp = hook == ATTACH_HOOK_SYSCALL;
	int waitv = syscall_tp && attach_has_tracepoint("sys_enter_futex_waitv");
	bpf_program__set_autoload(skel->progs.tp_enter_futex, syscall_tp);
	bpf_program__set_autoload(skel->progs.tp_exit_futex, syscall_tp);
	bpf_program__set_autoload(skel->progs.tp_enter_futex_waitv, waitv);
	bpf_program__set_autoload(skel->progs.tp_exit_futex_waitv, waitv);
	bpf_program__set_autoload(skel->progs.raw_enter, !syscall_tp);
	bpf_program__set_autoload(skel->progs.raw_exit, !syscall_tp);
	/* The stack map serves frame-pointer stacks, the ring buffer DWARF samples:
	 * the other shrinks to its least, as the timeline's does without --trace. */
	__u32 page = (__u32)sysconf(_SC_PAGESIZE);
	if (o->stacks == ATTACH_STACKS_FP)
		bpf_map__set_max_entries(skel->maps.samples, page);
	else
		bpf_map__set_max_entries(skel->maps.stacks, 1);
	if (!o->trace)
		bpf_map__set_max_entries(skel->maps.timeline_ring, page);

	int err = attach_bpf__load(skel);
	if (err) {
		attach_say("the kernel refused the tracer's BPF programs: %s", strerror(-err));
		attach_bpf__destroy(skel);
		return NULL;
	}
	err = attach_bpf__attach(skel);
	if (err) {
		attach_say("cannot attach to the %s: %s",
			   syscall_tp ? "futex syscall tracepoints" : "raw syscall tracepoints",
			   strerror(-err));
		attach_bpf__destroy(skel);
		return NULL;
	}
	ring = ring_buffer__new(bpf_map__fd(skel->maps.samples), on_sample, NULL, NULL);
	if (ring && ring_buffer__add(ring, bpf_map__fd(skel->maps.timeline_ring), on_timed, NULL)) {
		ring_buffer__free(ring);
		ring = NULL;
	}
	if (!ring) {
		attach_say("cannot read the tracer's ring buffer: %s", strerror(errno));
		attach_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

void attach_detach(struct attach_bpf *b)
{
	attach_bpf__detach(b);
}

void attach_unload(struct attach_bpf *b)
{
	ring_buffer__free(ring);
	ring = NULL;
	attach_bpf__destroy(b);
}

int attach_samples_fd(struct attach_bpf *b)
{
	(void)b;
	return ring_buffer__epoll_fd(ring);
}

int attach_drain(struct attach_bpf *b)
{
	(void)b;
	return ring_buffer__consume(ring) < 0 ? -1 : 0;
}

int attach_map_fd(struct attach_bpf *b, const char *name)
{
	return bpf_object__find_map_fd_by_name(b->obj, name);
}
