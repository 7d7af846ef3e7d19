/*
 * locks/mcs.h: MCS queue spinlock (Mellor-Crummey & Scott 1991).
 *
 *   tail    last queue node, NULL when FREE (XCHG to enqueue)
 *   holder  the holder's node (written by the holder after acquiring,
 *           read by it at unlock: the API has no node argument); before
 *           the first lock, a node of no queue (mcs.c)
 *
 *   node { next, locked }: each waiter spins on its own node's `locked`,
 *   so a release moves one line to one waiter, not to all of them.
 *   locked: 1 WAITING, 0 GRANTED; with spin=auto also 2 ASLEEP (a waiter
 *   whose core is crowded sleeps on it: the unlock swaps in 0 and wakes it).
 *
 *   lock:   node.next = NULL, node.locked = 1; pred = XCHG(tail, node);
 *           if pred: pred.next = node; spin while node.locked
 *   unlock: if node.next == NULL: CAS(tail, node -> NULL) and done, or
 *           wait for the successor to link itself; succ.locked = 0
 *           (spin=auto: XCHG, and FUTEX_WAKE if it was ASLEEP).
 *           The CAS failing on a NULL tail (or the node of no queue): an
 *           unlock of a lock nobody holds, which leaves it as it is
 *
 * Nodes come from a per-thread pool, one per lock held, so a thread may
 * hold several MCS locks at once and release them in any order.  Timed
 * waits poll with trylock (CAS tail NULL -> node), since a queued node
 * cannot leave the queue.
 */
#ifndef LOCKLAB_MCS_H
#define LOCKLAB_MCS_H

#include "locklab/bits/api.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/spin.h"

struct ll_mcs_node {
	alignas(64) _Atomic(struct ll_mcs_node *) next;
	atomic_uint locked;
	struct ll_mcs_node *free_next;   /* per-thread free list */
	uint8_t heap;                    /* 1: allocated past the pool, freed on release */
};

typedef struct {
	_Atomic(struct ll_mcs_node *) tail;
	struct ll_mcs_node *holder;
	uint8_t spin;
} ll_mcs_t;

struct ll_mcs_config {
	int64_t spin;
};

LL_API int ll_mcs_init(ll_mcs_t *l, const struct ll_mcs_config *cfg);
LL_API void ll_mcs_lock(ll_mcs_t *l);
LL_API int ll_mcs_trylock(ll_mcs_t *l);
LL_API int ll_mcs_timedlock(ll_mcs_t *l, const struct timespec *abs_mono);
LL_API void ll_mcs_unlock(ll_mcs_t *l);
/* ops->drop: the calling thread holds l, which is abandoned: its node back to the thread. */
LL_API void ll_mcs_drop(ll_mcs_t *l);
static inline void ll_mcs_destroy(ll_mcs_t *l) { (void)l; }

#endif
