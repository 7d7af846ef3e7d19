/*
 * mcs.c: MCS queue spinlock (word and queue drawn in locklab/locks/mcs.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/futex_sys.h"
#include "core/mem.h"
#include "locklab/locks/mcs.h"
#include "locks/algo.h"

/* Locks one thread may hold at once before nodes come from the heap. */
#define POOL_NODES 32

/* A node's `locked` (drawn in mcs.h). */
enum { NODE_GRANTED = 0, NODE_WAITING = 1, NODE_ASLEEP = 2 };

/*
 * One thread-local block, initial-exec: in a shared library every separate
 * TLS variable would cost a __tls_get_addr call on each lock and unlock.
 */
static _Thread_local struct {
	struct ll_mcs_node nodes[POOL_NODES];
	struct ll_mcs_node *free_list;
	int ready;
} pool __attribute__((tls_model("initial-exec")));

static struct ll_mcs_node *node_get(void)
{
	if (!pool.ready) {
		for (int i = 0; i < POOL_NODES; i++)
			pool.nodes[i].free_next = i + 1 < POOL_NODES ? &pool.nodes[i + 1] : NULL;
		pool.free_list = &pool.nodes[0];
		pool.ready = 1;
	}
	struct ll_mcs_node *n = pool.free_list;
	if (n) {
		pool.free_list = n->free_next;
		return n;
	}
	n = ll_mem_alloc(sizeof(*n));
	if (!n) {
		fputs("locklab: mcs: out of memory for a queue node\n", stderr);
		abort();
	}
	n->heap = 1;
	return n;
}

/* Only after the handoff: nobody else reads or writes the node any more. */
static void node_put(struct ll_mcs_node *n)
{
	if (n->heap) {
		ll_mem_free(n, sizeof(*n));
		return;
	}
	n->free_next = pool.free_list;
	pool.free_list = n;
}

/*
 * The holder of a lock never taken (and of one dropped): a node in no queue,
 * whose next nobody links, so that an unlock of such a lock reaches the
 * checks of unlock's slow part instead of a NULL node.
 */
static struct ll_mcs_node never_held;

int ll_mcs_init(ll_mcs_t *l, const struct ll_mcs_config *cfg)
{
	atomic_init(&l->tail, NULL);
	l->holder = &never_held;
	struct ll_mcs_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(mcs, cfg, def);
	l->spin = (uint8_t)cfg->spin;
	return 0;
}

void ll_mcs_lock(ll_mcs_t *l)
{
	struct ll_mcs_node *me = node_get();

	atomic_store_explicit(&me->next, NULL, memory_order_relaxed);
	atomic_store_explicit(&me->locked, NODE_WAITING, memory_order_relaxed);
	/* acq_rel: publish our node's init to the successor; see pred's init. */
	struct ll_mcs_node *pred = atomic_exchange_explicit(&l->tail, me, memory_order_acq_rel);
	if (pred) {
		struct ll_spinner s = ll_spinner_start(l->spin);
		/* Release: pred's holder reads our node only after seeing this link. */
		atomic_store_explicit(&pred->next, me, memory_order_release);
		unsigned v;
		while ((v = atomic_load_explicit(&me->locked, memory_order_acquire)) != NODE_GRANTED) {
			/* WAITING -> ASLEEP: the unlock that grants us sees it and wakes us. */
			if (v == NODE_ASLEEP ||
			    (ll_spinner_parks(&s) &&
			     atomic_compare_exchange_strong_explicit(&me->locked, &v, NODE_ASLEEP,
								     memory_order_relaxed,
								     memory_order_relaxed)))
				ll_sys_futex_wait(&me->locked, NODE_ASLEEP, NULL);
			else
				ll_spinner_wait(&s);
		}
	}
	l->holder = me;
}

int ll_mcs_trylock(ll_mcs_t *l)
{
	struct ll_mcs_node *me = node_get();
	struct ll_mcs_node *expect = NULL;

	atomic_store_explicit(&me->next, NULL, memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&l->tail, &expect, me, memory_order_acq_rel,
						     memory_order_relaxed)) {
		node_put(me);
		return EBUSY;
	}
	l->holder = me;
	return 0;
}

static int try_fn(void *l) { return ll_mcs_trylock(l); }

int ll_mcs_timedlock(ll_mcs_t *l, const struct timespec *abs_mono)
{
	return ll_spin_poll_until(try_fn, l, l->spin, abs_mono);
}

void ll_mcs_unlock(ll_mcs_t *l)
{
	struct ll_mcs_node *me = l->holder;
	struct ll_mcs_node *succ = atomic_load_explicit(&me->next, memory_order_acquire);

	if (!succ) {
		struct ll_mcs_node *expect = me;
		/* No successor visible: if we are still the tail, the lock is FREE. */
		if (atomic_compare_exchange_strong_explicit(&l->tail, &expect, NULL,
							    memory_order_release, memory_order_relaxed)) {
			node_put(me);
			return;
		}
		/*
		 * An unlock by a thread that does not hold the lock (ops.h: the
		 * contract): FREE (no tail), or a lock never taken (its node
		 * queues nowhere).  Nothing is released, nothing goes back to
		 * the pool: the lock stays as it is.
		 */
		if (!expect || me == &never_held)
			return;
		/* A successor swapped the tail but has not linked itself yet. */
		struct ll_spinner s = ll_spinner_start(l->spin);
		while (!(succ = atomic_load_explicit(&me->next, memory_order_acquire)))
			ll_spinner_wait(&s);
	}
	/* Release: the critical section happens-before the successor's. */
	if (l->spin != LL_SPIN_AUTO)
		atomic_store_explicit(&succ->locked, NODE_GRANTED, memory_order_release);
	else if (atomic_exchange_explicit(&succ->locked, NODE_GRANTED, memory_order_release) ==
		 NODE_ASLEEP)
		ll_sys_futex_wake(&succ->locked, 1);   /* its address only: the node may be in use again */
	node_put(me);
}

/*
 * The holder's node goes back to where it came from: the heap, or this
 * thread's pool when it is one of its nodes (a thread dropping a lock
 * another thread holds would otherwise take that thread's node).
 */
void ll_mcs_drop(ll_mcs_t *l)
{
	struct ll_mcs_node *me = l->holder;
	uintptr_t at = (uintptr_t)me, mine = (uintptr_t)pool.nodes;
	if (me && (me->heap || (at >= mine && at < mine + sizeof(pool.nodes))))
		node_put(me);
	l->holder = &never_held;
}

static void mcs_op_drop(void *s) { ll_mcs_drop(s); }

static const struct ll_knob knobs[] = {
	LL_KNOB_SPIN(struct ll_mcs_config),
};

LL_OPS_ADAPTERS(mcs, ll_mcs_t)

const struct ll_lock_ops ll_mcs_ops = {
	.name = "mcs",
	.summary = "MCS queue spinlock: FIFO, each waiter spins on its own node",
	.flags = LL_ALGO_FIFO | LL_ALGO_SPINS,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_mcs_config),
	LL_OPS_FUNCS(mcs, ll_mcs_t),
	.drop = mcs_op_drop,
};
