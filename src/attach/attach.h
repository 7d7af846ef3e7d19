/*
 * attach.h: what the kernel half (attach.bpf.c) and the user half of
 * locklab-attach share: the maps' keys and values, and the stack samples.
 *
 * Unit of counting: an acquisition, not a futex call.  A thread woken from a
 * lock's futex that loses the race for the lock calls futex_wait again on the
 * same word at once; waits of one thread on one word that follow each other
 * within ATTACH_MERGE_NS are one acquisition, from its first call to its last
 * return, as the profiler times a lock call that blocked.  The kernel keeps
 * the acquisition open in the thread's entry (`acq_*`) until the thread makes
 * another futex call, and only then adds it to the counts ("closes" it); the
 * user half closes the ones still open when the trace ends.  Stack samples
 * are taken as an acquisition begins, before the thread sleeps (the lock is
 * held by another then: the copy delays no one), and after a wake, once the
 * waiter is on its way.  futex_waitv counts under its first word.
 *
 *   map        key                     written by                         read by
 *   threads    tid                     that thread's futex calls          user half, at the end
 *   waits      (word, tid, fp stack)   that thread (its closing call)     user half, each report
 *   wakes      (word, tid, fp stack)   that thread; blame_ns: the waiters user half, each report
 *                                      it woke (atomic add)
 *   wakers     word                    the threads that wake              the waiters it woke
 *   samples    ring buffer             the sampled waits and wakes        user half (unwinds)
 *   timeline   ring buffer             each closing acquisition (--trace) user half
 *   stacks     stack id                bpf_get_stackid (frame pointers)   user half
 *   drops      ATTACH_DROP_*           anyone (per CPU)                   user half
 */
#ifndef LOCKLAB_ATTACH_H
#define LOCKLAB_ATTACH_H

#include <linux/types.h>

#define ATTACH_HIST 40          /* bucket b counts waits in [2^b, 2^(b+1)) ns: PROF_HIST */
#define ATTACH_MERGE_NS 100000    /* a wait again this soon after waking: the same acquisition */
#define ATTACH_FP_DEPTH 64      /* frames bpf_get_stackid keeps: PROF_MAX_DEPTH */
/* The user stack copied per sample, from the stack pointer up, in chunks: a
 * chunk that crosses the stack's top cannot be read, and the chunks are
 * aligned so that none does (the top is page-aligned). */
#define ATTACH_STACK_BYTES 16384
#define ATTACH_STACK_CHUNK 512

struct attach_key {
	__u64 uaddr;     /* the futex word, in the traced process */
	__u32 tid;
	__s32 stack;     /* frame-pointer stack id; 0 when stacks are sampled (DWARF) */
};

/* waits: the acquisitions of one thread that waited on one word. */
struct attach_wait {
	__u64 count, total_ns, max_ns;
	__u64 begun;       /* acquisitions begun: a sample falls due by this count */
	__u64 next_sample; /* the `begun` at which the next sample is due */
	__u32 hist[ATTACH_HIST];
};

/* wakes: one thread's futex wakes of one word that woke someone. */
struct attach_wake {
	__u64 count;       /* wake calls that woke at least one waiter */
	__u64 woken;       /* waiters they woke */
	__u64 blame_ns;    /* the acquisitions those waiters closed (their wait) */
	__u64 next_sample; /* the `count` at which the next sample is due */
};

/* threads: one thread's futex call under way, and its open acquisition. */
struct attach_thread {
	__u64 call_uaddr;
	__u32 call_op;      /* ATTACH_CALL_* */
	__u32 call_cmd;     /* the futex command (FUTEX_WAKE, ...) */
	__s32 call_stack;   /* a wake's key stack */
	__s32 acq_stack;
	__u64 acq_uaddr;    /* 0: none open */
	__u64 acq_start;
	__u64 acq_end;      /* its last return (0: none yet: still in its first wait) */
	__u32 acq_waker;    /* the tid whose wake ended its last wait (0: not seen) */
	__s32 acq_waker_stack;
};

enum { ATTACH_CALL_NONE, ATTACH_CALL_WAIT, ATTACH_CALL_WAKE };

/* wakers: who woke a word last: tid << 32 | (__u32)stack, one word so that a
 * waiter never reads one wake's tid with another's stack. */
#define ATTACH_WAKER(tid, stack) ((__u64)(tid) << 32 | (__u32)(stack))

enum { ATTACH_SAMPLE_WAIT, ATTACH_SAMPLE_WAKE };

/* The user registers a DWARF unwinder starts from, in this order. */
enum { ATTACH_REG_IP, ATTACH_REG_SP, ATTACH_REG_BP, ATTACH_REG_BX, ATTACH_REG_R12,
       ATTACH_REG_R13, ATTACH_REG_R14, ATTACH_REG_R15, ATTACH_NREGS };

/* samples: a sampled wait's or wake's registers and the user stack above them. */
struct attach_sample {
	struct attach_key key;
	__u32 what;         /* ATTACH_SAMPLE_* */
	__u32 size;         /* bytes of stack[] read: from `base` up */
	__u64 base;         /* the address of stack[0]: the stack pointer, chunk-aligned down */
	__u64 regs[ATTACH_NREGS];
	__u8 stack[ATTACH_STACK_BYTES];
};

/* timeline: one acquisition, when it closes (--trace). */
struct attach_timed {
	__u64 uaddr, start_ns, wait_ns;
	__u32 tid, pad;
};

enum {
	ATTACH_DROP_SAMPLES,  /* the ring buffer was full */
	ATTACH_DROP_TIMELINE, /* the timeline's ring buffer was full */
	ATTACH_DROP_KEYS,     /* waits or wakes was full: acquisitions not counted */
	ATTACH_DROP_THREADS,  /* threads was full: a thread's calls not seen */
	ATTACH_NDROPS
};

#endif
