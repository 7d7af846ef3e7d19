/*
 * attach.bpf.c: locklab-attach's kernel half: the futex waits and wakes of
 * one process, counted per futex word and thread (maps and unit drawn in
 * attach.h).  CO-RE: compiled once, relocated by libbpf against the running
 * kernel's BTF; no kernel headers are needed where it runs.
 *
 * Entry points, one pair per way of attaching (the user half loads one):
 *   tp/syscalls/sys_{enter,exit}_futex{,_waitv}  the syscall tracepoints
 *                                      (tracefs), which fire for these calls only;
 *   raw_tp/sys_{enter,exit}            every syscall of the machine, filtered here
 *                                      by process and number first.
 *
 * Cost: only contended lock operations make these calls.  Per call: a hash
 * lookup of the thread; an acquisition's first call also looks up its key
 * (and with frame-pointer stacks walks the stack); a sampled one copies up to
 * ATTACH_STACK_BYTES of user stack into the ring buffer.  No strings, no
 * symbols here: the user half names everything.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/futex.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "attach.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* x86-64's saved user registers, as far as they are read here; CO-RE finds the
 * fields in the running kernel's struct by name. */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, di, si, orig_ax, ip, sp;
} __attribute__((preserve_access_index));

/* The syscall tracepoints' records (their format files): common fields, the
 * syscall number, then the arguments or the return value. */
struct syscall_enter {
	__u64 common;
	long nr;
	unsigned long args[6];
};
struct syscall_exit {
	__u64 common;
	long nr;
	long ret;
};

/* Set by the user half before loading. */
const volatile __u32 target_tgid;
/* The traced process's pid namespace when it is not the initial one (0: it is):
 * its ids are then those seen from there. */
const volatile __u64 pidns_dev, pidns_ino;
const volatile long nr_futex = -1, nr_futex_waitv = -1;   /* raw tracepoints only */
const volatile __u32 sample_every;   /* a stack sample every N acquisitions (0: none) */
const volatile __u8 fp_stacks;       /* key acquisitions by frame-pointer stack */
const volatile __u8 timeline;        /* send each closing acquisition (--trace) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct attach_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct attach_key);
	__type(value, struct attach_wait);
} waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct attach_key);
	__type(value, struct attach_wake);
} wakes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);   /* ATTACH_WAKER */
} wakers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} timeline_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ATTACH_FP_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ATTACH_NDROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void drop(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &what);
	if (n)
		(*n)++;   /* this CPU's own counter */
}

/* The calling thread's tid, or 0 when it is not of the traced process. */
static __always_inline __u32 traced_tid(void)
{
	if (!pidns_ino) {
		__u64 id = bpf_get_current_pid_tgid();
		return (__u32)(id >> 32) == target_tgid ? (__u32)id : 0;
	}
	struct bpf_pidns_info ns;
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	return ns.tgid == target_tgid ? ns.pid : 0;
}

/* Bucket of the power-of-two histogram: the highest bit set, as records.c's bucket(). */
static __always_inline __u32 bucket_of(__u64 ns)
{
	__u32 b = 0;
	if (ns >> 32) {
		ns >>= 32;
		b += 32;
	}
	if (ns >> 16) {
		ns >>= 16;
		b += 16;
	}
	if (ns >> 8) {
		ns >>= 8;
		b += 8;
	}
	if (ns >> 4) {
		ns >>= 4;
		b += 4;
	}
	if (ns >> 2) {
		ns >>= 2;
		b += 2;
	}
	if (ns >> 1)
		b += 1;
	return b < ATTACH_HIST ? b : ATTACH_HIST - 1;
}

/* The key's stack part: the frame-pointer stack's id + 1, or 0 (sampled stacks, or
 * the walk failed). */
static __always_inline __s32 key_stack(void *ctx)
{
	if (!fp_stacks)
		return 0;
	long id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	return id < 0 ? 0 : (__s32)id + 1;
}

/* The entry of key in map (waits or wakes), made zero if new; NULL when full. */
static __always_inline void *entry_of(void *map, struct attach_key *key, void *zero)
{
	void *e = bpf_map_lookup_elem(map, key);
	if (e)
		return e;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	e = bpf_map_lookup_elem(map, key);
	if (!e)
		drop(ATTACH_DROP_KEYS);
	return e;
}

/* The user registers and the stack above them, for the user half's DWARF
 * unwinder.  0, or -1 when the ring buffer is full (counted). */
static __always_inline int sample(struct attach_key *key, __u32 what)
{
	struct attach_sample *s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		drop(ATTACH_DROP_SAMPLES);
		return -1;
	}
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	s->key = *key;
	s->what = what;
	s->regs[ATTACH_REG_IP] = BPF_CORE_READ(regs, ip);
	s->regs[ATTACH_REG_SP] = BPF_CORE_READ(regs, sp);
	s->regs[ATTACH_REG_BP] = BPF_CORE_READ(regs, bp);
	s->regs[ATTACH_REG_BX] = BPF_CORE_READ(regs, bx);
	s->regs[ATTACH_REG_R12] = BPF_CORE_READ(regs, r12);
	s->regs[ATTACH_REG_R13] = BPF_CORE_READ(regs, r13);
	s->regs[ATTACH_REG_R14] = BPF_CORE_READ(regs, r14);
	s->regs[ATTACH_REG_R15] = BPF_CORE_READ(regs, r15);
	__u64 base = s->regs[ATTACH_REG_SP] & ~(__u64)(ATTACH_STACK_CHUNK - 1);
	__u32 size = 0;
	s->base = base;
	for (int i = 0; i < ATTACH_STACK_BYTES / ATTACH_STACK_CHUNK; i++) {
		if (bpf_probe_read_user(s->stack + i * ATTACH_STACK_CHUNK, ATTACH_STACK_CHUNK,
					(void *)(base + i * ATTACH_STACK_CHUNK)))
			break;   /* past the stack's top */
		size += ATTACH_STACK_CHUNK;
	}
	s->size = size;
	bpf_ringbuf_submit(s, 0);
	return 0;
}

/* The thread's acquisition is over: add it to its key's counts, and its wait to
 * the blame of the wake that ended it. */
static __always_inline void close_acq(struct attach_thread *t, __u32 tid)
{
	if (!t->acq_end) {   /* it never came back from its first wait: not counted */
		t->acq_uaddr = 0;
		return;
	}
	__u64 ns = t->acq_end - t->acq_start;
	struct attach_key key = { t->acq_uaddr, tid, t->acq_stack };
	struct attach_wait *w = bpf_map_lookup_elem(&waits, &key);
	if (w) {
		/* Only this thread writes its keys' counts: no atomics. */
		w->count++;
		w->total_ns += ns;
		if (ns > w->max_ns)
			w->max_ns = ns;
		w->hist[bucket_of(ns)]++;
	} else {
		drop(ATTACH_DROP_KEYS);
	}
	if (timeline) {
		struct attach_timed *e = bpf_ringbuf_reserve(&timeline_ring, sizeof(*e), 0);
		if (e) {
			*e = (struct attach_timed){ t->acq_uaddr, t->acq_start, ns, tid, 0 };
			bpf_ringbuf_submit(e, 0);
		} else {
			drop(ATTACH_DROP_TIMELINE);
		}
	}
	if (t->acq_waker) {
		struct attach_key wk = { t->acq_uaddr, t->acq_waker, t->acq_waker_stack };
		struct attach_wake *b = bpf_map_lookup_elem(&wakes, &wk);
		if (b)   /* the waker's entry, which every thread it wakes adds to */
			__sync_fetch_and_add(&b->blame_ns, ns);
	}
	t->acq_uaddr = 0;
}

static __always_inline int on_enter(void *ctx, __u32 tid, __u64 uaddr, __u32 op, __u32 cmd)
{
	struct attach_thread *t = bpf_map_lookup_elem(&threads, &tid);
	if (!t) {
		struct attach_thread fresh = {};
		bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&threads, &tid);
		if (!t) {
			drop(ATTACH_DROP_THREADS);
			return 0;
		}
	}
	__u64 now = bpf_ktime_get_ns();
	/* Waiting again on the same word at once: lost the race after a wake, the
	 * same acquisition (attach.h).  Anything else ends the open one. */
	if (t->acq_uaddr && (op != ATTACH_CALL_WAIT || t->acq_uaddr != uaddr || !t->acq_end ||
			     now - t->acq_end > ATTACH_MERGE_NS))
		close_acq(t, tid);
	t->call_op = op;
	t->call_cmd = cmd;
	t->call_uaddr = uaddr;
	if (op == ATTACH_CALL_WAKE) {
		struct attach_key key = { uaddr, tid, key_stack(ctx) };
		struct attach_wake zero = {};
		__u64 me = ATTACH_WAKER(tid, key.stack);
		t->call_stack = key.stack;
		entry_of(&wakes, &key, &zero);
		/* Named before the wake: the waiter it wakes may look before this call
		 * returns.  Written in place, one word (an update would allocate). */
		__u64 *last = bpf_map_lookup_elem(&wakers, &uaddr);
		if (last)
			*last = me;
		else
			bpf_map_update_elem(&wakers, &uaddr, &me, BPF_NOEXIST);
		return 0;
	}
	if (t->acq_uaddr)
		return 0;
	/* A new acquisition: its key, and maybe a stack sample while the lock is held
	 * by another (the copy delays no one). */
	struct attach_key key = { uaddr, tid, key_stack(ctx) };
	struct attach_wait zero = {};
	struct attach_wait *w = entry_of(&waits, &key, &zero);
	if (w) {
		w->begun++;
		if (sample_every && w->begun >= w->next_sample &&
		    !sample(&key, ATTACH_SAMPLE_WAIT))
			w->next_sample = w->begun + sample_every;
	}
	t->acq_uaddr = uaddr;
	t->acq_start = now;
	t->acq_end = 0;
	t->acq_stack = key.stack;
	t->acq_waker = 0;
	return 0;
}

static __always_inline int on_exit(__u32 tid, long ret)
{
	struct attach_thread *t = bpf_map_lookup_elem(&threads, &tid);
	if (!t || t->call_op == ATTACH_CALL_NONE)
		return 0;   /* a call begun before the trace */
	__u64 uaddr = t->call_uaddr;
	if (t->call_op == ATTACH_CALL_WAIT) {
		t->acq_end = bpf_ktime_get_ns();
		__u64 *wk = ret == 0 ? bpf_map_lookup_elem(&wakers, &uaddr) : NULL;
		__u64 who = wk ? *wk : 0;
		if (who) {
			t->acq_waker = (__u32)(who >> 32);
			t->acq_waker_stack = (__s32)(__u32)who;
		}
	} else if (ret > 0 || (t->call_cmd == FUTEX_UNLOCK_PI && ret == 0)) {
		/* Woke someone (an unlock_pi reaches the kernel only with waiters). */
		struct attach_key key = { uaddr, tid, t->call_stack };
		struct attach_wake *w = bpf_map_lookup_elem(&wakes, &key);
		if (w) {
			w->count++;
			w->woken += ret > 0 ? ret : 1;
			/* Sampled after the wake: the waiter is on its way already. */
			if (sample_every && w->count >= w->next_sample &&
			    !sample(&key, ATTACH_SAMPLE_WAKE))
				w->next_sample = w->count + sample_every;
		}
	}
	t->call_op = ATTACH_CALL_NONE;
	return 0;
}

static __always_inline int futex_enter(void *ctx, __u32 tid, __u64 uaddr, __u64 op)
{
	__u32 cmd = (__u32)op & FUTEX_CMD_MASK;
	switch (cmd) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
	case FUTEX_WAIT_REQUEUE_PI:
		return on_enter(ctx, tid, uaddr, ATTACH_CALL_WAIT, cmd);
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET:
	case FUTEX_WAKE_OP:
	case FUTEX_UNLOCK_PI:
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE:
	case FUTEX_CMP_REQUEUE_PI:
		return on_enter(ctx, tid, uaddr, ATTACH_CALL_WAKE, cmd);
	}
	return 0;
}

static __always_inline int waitv_enter(void *ctx, __u32 tid, __u64 waiters)
{
	__u64 uaddr = 0;
	bpf_probe_read_user(&uaddr, sizeof(uaddr),
			    (void *)(waiters + __builtin_offsetof(struct futex_waitv, uaddr)));
	return on_enter(ctx, tid, uaddr, ATTACH_CALL_WAIT, FUTEX_WAIT);
}

SEC("tp/syscalls/sys_enter_futex")
int tp_enter_futex(struct syscall_enter *ctx)
{
	__u32 tid = traced_tid();
	return tid ? futex_enter(ctx, tid, ctx->args[0], ctx->args[1]) : 0;
}

SEC("tp/syscalls/sys_exit_futex")
int tp_exit_futex(struct syscall_exit *ctx)
{
	__u32 tid = traced_tid();
	return tid ? on_exit(tid, ctx->ret) : 0;
}

SEC("tp/syscalls/sys_enter_futex_waitv")
int tp_enter_futex_waitv(struct syscall_enter *ctx)
{
	__u32 tid = traced_tid();
	return tid ? waitv_enter(ctx, tid, ctx->args[0]) : 0;
}

SEC("tp/syscalls/sys_exit_futex_waitv")
int tp_exit_futex_waitv(struct syscall_exit *ctx)
{
	__u32 tid = traced_tid();
	return tid ? on_exit(tid, ctx->ret) : 0;
}

/* raw sys_enter: (struct pt_regs *regs, long id); the arguments in the registers. */
SEC("raw_tp/sys_enter")
int raw_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = traced_tid();
	if (!tid)
		return 0;
	long nr = (long)ctx->args[1];
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	if (nr == nr_futex)
		return futex_enter(ctx, tid, BPF_CORE_READ(regs, di), BPF_CORE_READ(regs, si));
	if (nr == nr_futex_waitv)
		return waitv_enter(ctx, tid, BPF_CORE_READ(regs, di));
	return 0;
}

/* raw sys_exit: (struct pt_regs *regs, long ret); the number in orig_ax. */
SEC("raw_tp/sys_exit")
int raw_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = traced_tid();
	if (!tid)
		return 0;
	long nr = (long)BPF_CORE_READ((struct pt_regs *)ctx->args[0], orig_ax);
	if (nr != nr_futex && nr != nr_futex_waitv)
		return 0;
	return on_exit(tid, (long)ctx->args[1]);
}
