/*
 * gate_fifo.c: the FIFO slot queue (drawn in gate_impl.h) and the `fifo`
 * policy built on it.
 *
 * Against InnoDB's sleep-and-retry: a waiter sleeps once, on a futex word
 * of its own, and is woken exactly when a slot is handed to it; slots go in
 * arrival order, so no thread waits longer than the threads ahead of it
 * take; nobody polls.  The price is one wake-up per slot that changes
 * hands while threads queue, where InnoDB lets the thread that just left
 * take its slot back for free; tickets make that price once per
 * transaction rather than once per enter.
 */
#include <stdlib.h>

#include "futex_sys.h"
#include "gate_impl.h"

#define ONE_QUEUED ((uint64_t)1 << 32)

void gate_queue_init(struct gate_queue *q, int64_t limit)
{
	atomic_init(&q->word, 0);
	atomic_init(&q->limit, limit);
	pthread_mutex_init(&q->lock, NULL);
	q->head = q->tail = NULL;
}

void gate_queue_destroy(struct gate_queue *q)
{
	pthread_mutex_destroy(&q->lock);
}

static int64_t queue_limit(struct gate_queue *q)
{
	return atomic_load_explicit(&q->limit, memory_order_relaxed);
}

/* Take a slot if one is free and nobody queues for it; 0 on success. */
static int try_enter(struct gate_queue *q, uint64_t *w)
{
	while (GATE_QUEUED(*w) == 0 && GATE_INSIDE(*w) < queue_limit(q)) {
		/* acquire: pairs with the release of the slot's previous holder. */
		if (atomic_compare_exchange_weak_explicit(&q->word, w, *w + 1, memory_order_acquire,
							  memory_order_relaxed))
			return 0;
	}
	return 1;
}

int gate_queue_acquire(struct gate_queue *q)
{
	uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
	if (!try_enter(q, &w))
		return 0;

	struct gate_waiter me;
	atomic_init(&me.granted, 0);
	me.next = NULL;
	pthread_mutex_lock(&q->lock);
	w = atomic_load_explicit(&q->word, memory_order_relaxed);
	for (;;) {
		if (!try_enter(q, &w)) {
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		/* Announce ourselves in the word: from now on no fast path passes us. */
		if (atomic_compare_exchange_weak_explicit(&q->word, &w, w + ONE_QUEUED,
							  memory_order_relaxed, memory_order_relaxed))
			break;
	}
	if (q->tail)
		q->tail->next = &me;
	else
		q->head = &me;
	q->tail = &me;
	pthread_mutex_unlock(&q->lock);

	/* acquire: the granter's release hands us what the slot's last holder did. */
	while (!atomic_load_explicit(&me.granted, memory_order_acquire))
		ll_sys_futex_wait(&me.granted, 0, NULL);
	return 1;
}

/* Unlink the head; the queue lock is held and the queue is not empty. */
static struct gate_waiter *pop_head(struct gate_queue *q)
{
	struct gate_waiter *w = q->head;
	q->head = w->next;
	if (!q->head)
		q->tail = NULL;
	return w;
}

/* Hand a slot to a popped waiter.  Its node is on its stack and may be gone
 * as soon as `granted` is seen; the wake then finds nobody, which is harmless
 * (a futex waiter elsewhere woken by it rechecks its own word). */
static void grant(struct gate_waiter *w)
{
	atomic_store_explicit(&w->granted, 1, memory_order_release);
	ll_sys_futex_wake(&w->granted, 1);
}

void gate_queue_release(struct gate_queue *q)
{
	uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
	while (GATE_QUEUED(w) == 0) {
		if (atomic_compare_exchange_weak_explicit(&q->word, &w, w - 1, memory_order_release,
							  memory_order_relaxed))
			return;
	}

	struct gate_waiter *next = NULL;
	pthread_mutex_lock(&q->lock);
	w = atomic_load_explicit(&q->word, memory_order_relaxed);
	if (GATE_QUEUED(w) == 0 || GATE_INSIDE(w) > queue_limit(q)) {
		/* Nobody left to hand to (another exit took the last), or N shrank. */
		atomic_fetch_sub_explicit(&q->word, 1, memory_order_release);
	} else {
		/* The slot passes to the head as it is: inside stays, queued - 1. */
		next = pop_head(q);
		atomic_fetch_sub_explicit(&q->word, ONE_QUEUED, memory_order_relaxed);
	}
	pthread_mutex_unlock(&q->lock);
	if (next)
		grant(next);
}

void gate_queue_set_limit(struct gate_queue *q, int64_t limit)
{
	struct gate_waiter *admit = NULL, **last = &admit;

	atomic_store_explicit(&q->limit, limit, memory_order_relaxed);
	pthread_mutex_lock(&q->lock);
	uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
	while (GATE_QUEUED(w) > 0 && GATE_INSIDE(w) < limit) {
		struct gate_waiter *x = pop_head(q);
		x->next = NULL;
		*last = x;
		last = &x->next;
		/* One more inside, one fewer queued, in one step. */
		w = atomic_fetch_add_explicit(&q->word, 1 - ONE_QUEUED, memory_order_relaxed) +
		    (1 - ONE_QUEUED);
	}
	pthread_mutex_unlock(&q->lock);
	while (admit) {
		/* Read `next` before granting: once granted, the node may be gone. */
		struct gate_waiter *x = admit;
		admit = x->next;
		grant(x);
	}
}

/* The fifo policy: the queue with a fixed N. */

struct fifo_config {
	struct ll_gate_common_config common;
};

struct fifo_gate {
	struct gate_queue q;
	int64_t n;
};

static void *fifo_create(const void *config)
{
	const struct fifo_config *c = config;
	struct fifo_gate *g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return NULL;
	gate_queue_init(&g->q, c->common.n);
	g->n = c->common.n;
	return g;
}

static void fifo_destroy(void *state)
{
	struct fifo_gate *g = state;
	gate_queue_destroy(&g->q);
	free(g);
}

static int fifo_acquire(void *state)
{
	return gate_queue_acquire(&((struct fifo_gate *)state)->q);
}

static void fifo_release(void *state)
{
	gate_queue_release(&((struct fifo_gate *)state)->q);
}

static int64_t fifo_limit(void *state)
{
	return ((struct fifo_gate *)state)->n;
}

static void fifo_stats(void *state, struct ll_gate_stats *s)
{
	struct fifo_gate *g = state;
	s->limit = s->limit_min = s->limit_max = g->n;
	s->limit_mean = (double)g->n;
}

static const struct ll_knob fifo_knobs[] = {
	LL_GATE_KNOB_N(struct fifo_config, 8, 1, "threads inside at once"),
	LL_GATE_KNOB_TICKETS(struct fifo_config),
};

const struct ll_gate_policy ll_gate_fifo_policy = {
	.info = { "fifo", "FIFO queue, wake-one direct handoff of the slot, no polling",
		  fifo_knobs, LL_COUNT(fifo_knobs) },
	.config_size = sizeof(struct fifo_config),
	.create = fifo_create,
	.destroy = fifo_destroy,
	.acquire = fifo_acquire,
	.release = fifo_release,
	.limit = fifo_limit,
	.stats = fifo_stats,
};
