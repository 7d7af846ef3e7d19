/*
 * ck.c: Concurrency Kit's spinlocks (Debian libck-dev) as benchmark peers.
 *
 *   ck-mcs     ck_spinlock_mcs: MCS queue, each waiter spins on its own node
 *   ck-ticket  ck_spinlock_ticket: FIFO by fetch-and-add on one word
 *   ck-fas     ck_spinlock_fas: fetch-and-store (XCHG), ck's default spinlock
 *
 * ck's lock paths are inline functions of its headers: each runs as ck wrote
 * it (its own PAUSE stall, its own fences), behind the one indirect call every
 * lock of the benchmark pays.  ck's lock functions end with ck_pr_fence_lock()
 * and its unlock functions begin with ck_pr_fence_unlock(), the acquire and
 * release that order one holder's critical section before the next; this file
 * adds no ordering of its own.
 *
 * ck has no timed acquisition and a queued ticket or MCS node cannot leave the
 * queue, so timedlock polls the trylock (ll_spin_poll_until) with PAUSE, the
 * stall ck's own wait loops use (ck_pr_stall).
 *
 * ThreadSanitizer: ck's atomics are inline assembly (gcc/x86_64/ck_pr.h), which
 * TSan does not instrument.  It would see no ordering between one holder and
 * the next and report every critical section as a race, so sanitized builds
 * declare the lock's acquire and release on the state's address.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <ck_spinlock.h>

#include "locklab/ops.h"
#include "locklab/bits/spin.h"

#ifndef CK_F_SPINLOCK_TICKET_TRYLOCK
#error "ck-ticket needs ck_spinlock_ticket_trylock, which Concurrency Kit provides on x86 only"
#endif

#if defined(__SANITIZE_THREAD__)
#define CK_PEER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CK_PEER_TSAN 1
#endif
#endif

#ifdef CK_PEER_TSAN
#include <sanitizer/tsan_interface.h>
/* After taking the lock: see everything the previous holder did. */
#define TSAN_ACQUIRED(state) __tsan_acquire(state)
/* Before releasing it: publish this critical section to the next holder. */
#define TSAN_RELEASING(state) __tsan_release(state)
#else
#define TSAN_ACQUIRED(state) ((void)(state))
#define TSAN_RELEASING(state) ((void)(state))
#endif

/* No knobs; C has no empty struct, so the config is one unused field. */
struct ck_config {
	int64_t unused;
};

static void no_destroy(void *state)
{
	(void)state;
}

/* ---- ck-mcs ---- */

/* Locks one thread may hold at once before nodes come from the heap. */
#define MCS_POOL_NODES 32

struct mcs_node {
	/* A line of its own: its waiter spins on ctx.locked, its predecessor writes ctx.next. */
	alignas(64) ck_spinlock_mcs_context_t ctx;
	struct mcs_node *free_next;   /* per-thread free list */
	bool heap;                    /* allocated past the pool: freed on release */
};

typedef struct {
	ck_spinlock_mcs_t queue;      /* ck's tail pointer, NULL when free */
	/* The holder's node: written once it holds, read by it at unlock (the API has no
	 * node argument).  A plain field: the lock itself orders successive holders. */
	struct mcs_node *holder;
} ck_mcs_state;

_Static_assert(sizeof(ck_mcs_state) <= LL_MUTEX_STATE_BYTES, "ck-mcs state too large");

/* Thread-private: only the owning thread takes nodes from or returns them to its pool. */
static _Thread_local struct mcs_node mcs_pool[MCS_POOL_NODES];
static _Thread_local struct mcs_node *mcs_free;
static _Thread_local unsigned mcs_pool_used;   /* pool nodes handed out at least once */

static struct mcs_node *node_get(void)
{
	struct mcs_node *n = mcs_free;
	if (n) {
		mcs_free = n->free_next;
		return n;
	}
	if (mcs_pool_used < MCS_POOL_NODES)
		return &mcs_pool[mcs_pool_used++];
	n = aligned_alloc(64, sizeof(*n));
	if (!n) {
		fputs("locklab: ck-mcs: out of memory for a queue node\n", stderr);
		abort();
	}
	n->heap = true;
	return n;
}

/* Only once ck is done with the node: after the handoff, or a trylock that never queued. */
static void node_put(struct mcs_node *n)
{
	if (n->heap) {
		free(n);
		return;
	}
	n->free_next = mcs_free;
	mcs_free = n;
}

static int mcs_init(void *state, const void *config)
{
	ck_mcs_state *l = state;
	ck_spinlock_mcs_init(&l->queue);
	l->holder = NULL;
	(void)config;
	return 0;
}

static void mcs_lock(void *state)
{
	ck_mcs_state *l = state;
	struct mcs_node *me = node_get();

	ck_spinlock_mcs_lock(&l->queue, &me->ctx);
	TSAN_ACQUIRED(l);
	l->holder = me;
}

static int mcs_trylock(void *state)
{
	ck_mcs_state *l = state;
	struct mcs_node *me = node_get();

	if (!ck_spinlock_mcs_trylock(&l->queue, &me->ctx)) {
		node_put(me);
		return EBUSY;
	}
	TSAN_ACQUIRED(l);
	l->holder = me;
	return 0;
}

static int mcs_timedlock(void *state, const struct timespec *abs_mono)
{
	return ll_spin_poll_until(mcs_trylock, state, LL_SPIN_PAUSE, abs_mono);
}

static void mcs_unlock(void *state)
{
	ck_mcs_state *l = state;
	struct mcs_node *me = l->holder;

	TSAN_RELEASING(l);
	ck_spinlock_mcs_unlock(&l->queue, &me->ctx);
	/* Back from unlock, nobody reads the node: the successor spins on its own. */
	node_put(me);
}

const struct ll_lock_ops ll_ck_mcs_ops = {
	.name = "ck-mcs",
	.summary = "Concurrency Kit's MCS queue spinlock: FIFO, each waiter spins on its own node",
	.flags = LL_ALGO_FIFO | LL_ALGO_SPINS,
	.config_size = sizeof(struct ck_config),
	.state_size = sizeof(ck_mcs_state),
	.init = mcs_init, .destroy = no_destroy, .lock = mcs_lock, .trylock = mcs_trylock,
	.timedlock = mcs_timedlock, .unlock = mcs_unlock,
};

/* ---- ck-ticket and ck-fas: plain words, no per-acquisition context ---- */

/*
 * The entry points of a ck spinlock whose API is ck_spinlock_<kind>_{init,
 * lock,trylock,unlock}(ck_spinlock_<kind>_t *): the same for both kinds.
 */
#define CK_WORD_LOCK(kind)                                                              \
	_Static_assert(sizeof(ck_spinlock_##kind##_t) <= LL_MUTEX_STATE_BYTES,           \
		       "ck-" #kind " state too large");                                  \
	static int kind##_init(void *state, const void *config)                         \
	{                                                                               \
		(void)config;                                                           \
		ck_spinlock_##kind##_init(state);                                       \
		return 0;                                                               \
	}                                                                               \
	static void kind##_lock(void *state)                                            \
	{                                                                               \
		ck_spinlock_##kind##_lock(state);                                       \
		TSAN_ACQUIRED(state);                                                   \
	}                                                                               \
	static int kind##_trylock(void *state)                                          \
	{                                                                               \
		if (!ck_spinlock_##kind##_trylock(state))                               \
			return EBUSY;                                                   \
		TSAN_ACQUIRED(state);                                                   \
		return 0;                                                               \
	}                                                                               \
	/* Spinlocks have no queue to leave: poll trylock until the deadline. */        \
	static int kind##_timedlock(void *state, const struct timespec *abs_mono)       \
	{                                                                               \
		return ll_spin_poll_until(kind##_trylock, state, LL_SPIN_PAUSE, abs_mono); \
	}                                                                               \
	static void kind##_unlock(void *state)                                          \
	{                                                                               \
		/* Announced before the release: after it another thread may own it. */ \
		TSAN_RELEASING(state);                                                  \
		ck_spinlock_##kind##_unlock(state);                                     \
	}

CK_WORD_LOCK(ticket)
CK_WORD_LOCK(fas)

const struct ll_lock_ops ll_ck_ticket_ops = {
	.name = "ck-ticket",
	.summary = "Concurrency Kit's ticket spinlock: FIFO by fetch-and-add on one word",
	.flags = LL_ALGO_FIFO | LL_ALGO_SPINS,
	.config_size = sizeof(struct ck_config),
	.state_size = sizeof(ck_spinlock_ticket_t),
	.init = ticket_init, .destroy = no_destroy, .lock = ticket_lock,
	.trylock = ticket_trylock, .timedlock = ticket_timedlock, .unlock = ticket_unlock,
};

const struct ll_lock_ops ll_ck_fas_ops = {
	.name = "ck-fas",
	.summary = "Concurrency Kit's fetch-and-store spinlock (its default ck_spinlock): XCHG, "
		   "then spin on loads",
	.flags = LL_ALGO_SPINS,
	.config_size = sizeof(struct ck_config),
	.state_size = sizeof(ck_spinlock_fas_t),
	.init = fas_init, .destroy = no_destroy, .lock = fas_lock, .trylock = fas_trylock,
	.timedlock = fas_timedlock, .unlock = fas_unlock,
};
