/*
 * gate_impl.h: what the admission gate's policies implement (gate.h is the
 * public side), and the FIFO slot queue that fifo and auto share.
 *
 * gate.c owns tickets, suspend/resume and the table of policies; a policy
 * only takes and gives back slots.
 */
#ifndef LOCKLAB_GATE_IMPL_H
#define LOCKLAB_GATE_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "locklab/gate.h"

/* Every policy's config starts with these two knobs, in this order. */
struct ll_gate_common_config {
	int64_t n;
	int64_t tickets;
};

#define LL_GATE_KNOB_N(type, def_, min_, help_) \
	{ "n", help_, offsetof(type, common.n), def_, min_, 1 << 20, NULL }
/* fifo's and auto's queue (fifo.c): how long a running thread may pass
 * a sleeper, and how much barging each handoff to an overdue one buys. */
struct gate_queue_config {
	int64_t barge_us;
	int64_t handoff_pace;
	int64_t resume_spin_us;
};
#define LL_GATE_KNOBS_QUEUE(type)                                                          \
	{ "barge_us", "us a waiter may be passed by running threads, 0 = strict FIFO",     \
	  offsetof(type, queue.barge_us), 100000, 0, 10000000, NULL },                         \
	{ "handoff_pace", "handoffs to overdue waiters idle at most 1/(pace+1) of the slots", \
	  offsetof(type, queue.handoff_pace), 16, 1, 1000, NULL },                             \
	{ "resume_spin_us", "us a resuming thread waits running for a suspend's slot, 0 = off", \
	  offsetof(type, queue.resume_spin_us), 0, 0, 10000000, NULL }
#define LL_GATE_KNOB_TICKETS(type)                                                         \
	{ "tickets", "enters one admission covers after the first (innodb_concurrency_tickets)", \
	  offsetof(type, common.tickets), 5000, 0, INT64_MAX / 2, NULL }

struct ll_gate_policy {
	struct ll_gate_policy_info info;
	size_t config_size;                 /* <= LL_CONFIG_MAX * sizeof(int64_t) */
	/* State for a config filled from the knobs; NULL when out of memory. */
	void *(*create)(const void *config);
	void (*destroy)(void *state);
	/* Take a slot, waiting as the policy does; 1 if it could not go straight in.
	 * back: the thread returns from ll_gate_suspend (it blocked, it did not end a
	 * transaction). */
	int (*acquire)(void *state, int back);
	/* away: given back to block (ll_gate_suspend), not at a transaction's end. */
	void (*release)(void *state, int away);
	/* Optional: every ll_gate_exit, slot kept or not (auto counts throughput here). */
	void (*exited)(void *state);
	int64_t (*limit)(void *state);
	/* Fill what the policy knows (limit..adjustments); optional reset and trace. */
	void (*stats)(void *state, struct ll_gate_stats *s);
	void (*reset_stats)(void *state);
	size_t (*trace)(void *state, struct ll_gate_sample *out, size_t max);
};

extern const struct ll_gate_policy ll_gate_innodb_policy;
extern const struct ll_gate_policy ll_gate_fifo_policy;
extern const struct ll_gate_policy ll_gate_auto_policy;

/*
 * The FIFO slot queue with bounded barging (fifo.c).  One 64-bit word
 * tells the fast paths whether they may bypass the lock:
 *
 *   word = due << 63 | spin << 62 | queued << 32 | inside
 *     inside  slots held (may exceed limit for a while after it shrinks)
 *     queued  threads asleep in the queue
 *     spin    a thread back from a suspend waits, running, for a slot
 *     due     the oldest waiter has waited barge_ns: slots go to the queue
 *
 *   enter, fast:  inside < limit && (queued == 0 || !due)  -> CAS inside + 1
 *                 (a running thread takes a free slot ahead of the sleepers,
 *                 as InnoDB lets it, while none of them is overdue)
 *   enter, slow:  under `lock`, the same test, else CAS queued + 1 and append
 *                 a waiter; sleep until granted or until its own deadline
 *   exit, fast:   queued == 0 || !due                   -> CAS inside - 1
 *   exit, slow:   under `lock`: inside > limit or nobody queued -> inside - 1;
 *                 else queued - 1 and the head's `state` = GRANTED: the slot
 *                 passes to it directly (inside unchanged), one wake
 *   deadline:     a waiter whose deadline passes sets due (under `lock`) and
 *                 hands every free slot to the head of the queue
 *
 * due is cleared (under `lock`) when the queue empties or its new head is
 * not yet overdue, and after each slot handed to an overdue head for a calm
 * spell, in which running threads barge again: `pace` handoffs' worth of
 * idle slot time, spread over the min(N, CPUs) slots that can run at
 * once.  So overdue waiters are served in order, one per spell, and at most
 * 1/(pace + 1) of the running slots' time goes idle waiting for woken
 * sleepers, however long the queue.  A thread that gives its slot back to
 * block (suspend) hands it over when due is set, or when fewer than the
 * CPU count would be left inside (the slot is an idle CPU otherwise); with
 * that many left and due clear, or while spin is set, the slot is freed as an exit
 * frees it, for a running thread, no wake-up paid (spin: the middle
 * path, off by default: a resuming thread spins for a slot for at most
 * resume_spin_us, and clears spin in the same CAS that takes a
 * slot or when it gives up and queues, so a suspend that saw spin set
 * freed a slot that thread's next try under the lock still finds).
 *
 * Invariants after every step under `lock`: queued == 0 implies !due; due
 * and queued > 0 imply inside >= limit (no overdue waiter sleeps beside a
 * free slot); while due is clear the head has a timed sleep armed for the
 * later of its deadline and calm_until, so a free slot that no running
 * thread takes waits at most that long for a sleeper.
 */
enum { GATE_WAITING, GATE_GRANTED, GATE_REARM };

struct gate_waiter {
	atomic_uint state;          /* futex word: GATE_WAITING / GRANTED / REARM */
	atomic_int timed;           /* sleeps until `deadline`; set under `lock` */
	uint64_t deadline;          /* ll_now_ns() when it becomes overdue */
	uint64_t granted_ns;        /* when the slot was handed to it (the grantor's clock) */
	struct gate_waiter *next;   /* guarded by the queue's lock */
};

struct gate_queue {
	alignas(64) _Atomic uint64_t word;
	atomic_int_fast64_t limit;
	uint64_t barge_ns;          /* 0: strict FIFO, a running thread never passes a sleeper */
	uint64_t pace;              /* handoff_pace */
	uint64_t resume_spin_ns;    /* resume_spin_us; 0: a resume never spins */
	pthread_mutex_t lock;
	struct gate_waiter *head, *tail;
	/* Pacing of the handoffs to overdue waiters (see settle()): none is made
	 * before calm_until; handoff_ns averages how long a handed slot waited
	 * for its sleeper to run.  Written under `lock`, read relaxed. */
	_Atomic uint64_t calm_until, handoff_ns;
	int cpus;                   /* CPUs this process may use, at init */
	/* Statistics, under `lock` or relaxed: slots handed to a sleeper, and
	 * admissions that passed a sleeper (a running thread's barge). */
	atomic_uint_fast64_t handoffs, barges;
};

#define GATE_DUE ((uint64_t)1 << 63)
#define GATE_SPIN ((uint64_t)1 << 62)
#define GATE_INSIDE(w) ((uint32_t)(w))
#define GATE_QUEUED(w) ((uint32_t)((w) >> 32) & 0x3fffffffu)

void gate_queue_init(struct gate_queue *q, int64_t limit, const struct gate_queue_config *c);
void gate_queue_destroy(struct gate_queue *q);
/* back: returning from a suspend, it may spin for a slot a suspend frees. */
int gate_queue_acquire(struct gate_queue *q, int back);
/* away: the thread gives the slot back to block (suspend): a sleeper gets it at once. */
void gate_queue_release(struct gate_queue *q, int away);
void gate_queue_stats(struct gate_queue *q, struct ll_gate_stats *s);
void gate_queue_reset_stats(struct gate_queue *q);
/* A new N: a larger one admits queued threads at once, a smaller one lets slots drain. */
void gate_queue_set_limit(struct gate_queue *q, int64_t limit);

/*
 * auto's controller (auto_ctl.c), apart from its measurements so that a test
 * can feed it synthetic ones: auto.c measures each interval and applies the N
 * that auto_ctl_step returns.  The state is the caller's; one thread at a time.
 */
struct auto_ctl {
	int64_t n, min, max;
	int probing;                 /* 0: holding N; 1: a probe of N' against N */
	int intervals, dir, rejects;
	uint64_t seen;
	int queued, starved_probe;   /* anyone queued this hold / probe; a starved probe */
	uint32_t inside_peak;        /* the most seen inside this hold */
	int64_t from, to;            /* a probe: N and N', taken in turns */
	int starved_off;             /* a starved probe failed; idle CPUs have not gone since */
	double x_to;                 /* X at N' in this pair's first block */
	int pairs;
	double r_sum, r_sq;          /* log(X at N' / X at N), summed over pairs */
};

/* N to start from, clamped to [min, max] (max raised to min if below it). */
void auto_ctl_init(struct auto_ctl *c, int64_t n, int64_t min, int64_t max);
/* One interval's measurements: X (exits per second), the idle CPUs, whether
 * anybody queued, the threads inside now.  Returns the N to apply. */
int64_t auto_ctl_step(struct auto_ctl *c, double x, double idle, int queued, uint32_t inside);

#endif
