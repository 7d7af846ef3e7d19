/*
 * gate_impl.h: what the admission gate's policies implement (gate.h is the
 * public side), and the FIFO slot queue that fifo and auto share.
 *
 * gate.c owns tickets, suspend/resume and the policy registry; a policy
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
#define LL_GATE_KNOB_TICKETS(type)                                                         \
	{ "tickets", "enters one admission covers after the first (innodb_concurrency_tickets)", \
	  offsetof(type, common.tickets), 5000, 0, INT64_MAX / 2, NULL }

struct ll_gate_policy {
	struct ll_gate_policy_info info;
	size_t config_size;                 /* <= sizeof(int64_t[16]) */
	/* State for a config filled from the knobs; NULL when out of memory. */
	void *(*create)(const void *config);
	void (*destroy)(void *state);
	/* Take a slot, waiting as the policy does; 1 if it could not go straight in. */
	int (*acquire)(void *state);
	void (*release)(void *state);
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
 * The FIFO slot queue (gate_fifo.c).  One 64-bit word tells the fast paths
 * whether they may bypass the lock:
 *
 *   word = queued << 32 | inside
 *     inside  slots held (may exceed limit for a while after it shrinks)
 *     queued  threads asleep in the queue
 *
 *   enter, fast:  queued == 0 && inside < limit  -> CAS inside + 1
 *   enter, slow:  under `lock`, the same test, else CAS queued + 1 and
 *                 append a waiter; sleep until the slot is handed over
 *   exit, fast:   queued == 0                    -> CAS inside - 1
 *   exit, slow:   under `lock`: inside > limit or nobody queued -> inside - 1;
 *                 else queued - 1 and the head's `granted` = 1: the slot
 *                 passes to it directly (inside unchanged), one wake
 *
 * Both fast paths CAS the whole word, so neither can race past a waiter
 * that has announced itself (queued > 0): after every step under `lock`,
 * queued == 0 or inside >= limit, and no waiter sleeps beside a free slot.
 */
struct gate_waiter {
	atomic_uint granted;        /* futex word: 1 once the slot is ours */
	struct gate_waiter *next;   /* guarded by the queue's lock */
};

struct gate_queue {
	alignas(64) _Atomic uint64_t word;
	atomic_int_fast64_t limit;
	pthread_mutex_t lock;
	struct gate_waiter *head, *tail;
};

#define GATE_INSIDE(w) ((uint32_t)(w))
#define GATE_QUEUED(w) ((uint32_t)((w) >> 32))

void gate_queue_init(struct gate_queue *q, int64_t limit);
void gate_queue_destroy(struct gate_queue *q);
int gate_queue_acquire(struct gate_queue *q);
void gate_queue_release(struct gate_queue *q);
/* A new N: a larger one admits queued threads at once, a smaller one lets slots drain. */
void gate_queue_set_limit(struct gate_queue *q, int64_t limit);

/* CPUs this process may run on. */
int ll_gate_cpus(void);

#endif
