/*
 * fifo.c: the FIFO slot queue with bounded barging (drawn in
 * gate_impl.h) and the `fifo` policy built on it.
 *
 * Against InnoDB's sleep-and-retry: a waiter sleeps on a futex word of its
 * own and is woken when a slot is handed to it, and otherwise at most twice
 * (to re-arm its timer, and at its deadline); waiters are admitted in
 * arrival order; nobody polls.
 *
 * Why barging: a slot handed to a sleeper is idle until the sleeper gets a
 * CPU (tens of microseconds, longer when the run queue is full), while the
 * thread that just gave it back (its transaction ended) is running and
 * wants it again within a microsecond.  With N at or below the CPU count, a
 * handoff per transaction leaves CPUs idle and serves less than InnoDB's
 * gate, which lets that thread take its slot back.
 * So a running thread may take a free slot ahead of the sleepers, as in
 * InnoDB, but only until the oldest sleeper has waited barge_us: from then
 * on slots that free go to the queue, in order.  One slot at a time: after
 * each, running threads barge again for a calm spell (calm()) in which the
 * slots that can run at once (min(N, CPUs)) serve handoff_pace times the
 * idle time a handoff costs (timed as it runs: grant to the sleeper running), then
 * the next overdue waiter gets the next slot.  So overdue waiters are
 * served strictly in order and ahead of anyone who arrives later, a free
 * slot that nobody running takes reaches a sleeper within barge_us (or the
 * spell), and handoffs never take more than 1/(handoff_pace + 1) of the
 * running slots' time, however long the queue: a wait is bounded by
 * max(barge_us, the waiters ahead x (handoff_pace + 1) x the handoff cost /
 * min(N, CPUs)).  barge_us=0 is strict FIFO: no barging, no spells.
 *
 * The defaults: barge_us = 100 ms because with a few ms the waiters of a
 * small N all become overdue together, and a shorter bound (W waiters /
 * bound handoffs a second) costs throughput where a handoff idles a CPU for
 * longer than grant-to-run shows (the woken waiter displaces an admitted
 * thread, which the spells cannot see); handoff_pace = 16 because at N = 1
 * every handoff idles the only slot, and a smaller pace hands too much of
 * it to handoffs when hundreds of clients queue.  The calm spells, rather
 * than an overdue queue drained in strict order a handoff per transaction:
 * at N = 1 with many clients such a drain never ends.
 *
 * A suspend (the thread blocks: I/O) hands its slot to the head only while
 * the slots left held are fewer than the CPUs, when the slot is a CPU that
 * would idle.  With N above the CPU count and that many others inside, it
 * frees the slot as an exit does, for a thread back from its own suspend or
 * the next to arrive: handing over would cost a wake-up per suspend and a
 * sleep in the queue per resume.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "core/cpus.h"
#include "core/futex_sys.h"
#include "gate/gate_impl.h"
#include "locklab/bits/spin.h"

#define ONE_QUEUED ((uint64_t)1 << 32)

void gate_queue_init(struct gate_queue *q, int64_t limit, const struct gate_queue_config *c)
{
	atomic_init(&q->word, 0);
	atomic_init(&q->limit, limit);
	q->barge_ns = (uint64_t)c->barge_us * 1000u;
	q->pace = (uint64_t)c->handoff_pace;
	q->resume_spin_ns = (uint64_t)c->resume_spin_us * 1000u;
	pthread_mutex_init(&q->lock, NULL);
	q->head = q->tail = NULL;
	q->cpus = ll_cpus_usable();
	atomic_init(&q->calm_until, 0);
	atomic_init(&q->handoff_ns, 0);
	atomic_init(&q->handoffs, 0);
	atomic_init(&q->barges, 0);
}

void gate_queue_destroy(struct gate_queue *q)
{
	pthread_mutex_destroy(&q->lock);
}

static int64_t queue_limit(struct gate_queue *q)
{
	return atomic_load_explicit(&q->limit, memory_order_relaxed);
}

/* Take a slot if one is free and no overdue waiter queues for it; 0 on success. */
static int try_enter(struct gate_queue *q, uint64_t *w)
{
	while (GATE_INSIDE(*w) < queue_limit(q) && (GATE_QUEUED(*w) == 0 || !(*w & GATE_DUE))) {
		/* acquire: pairs with the release of the slot's previous holder. */
		if (atomic_compare_exchange_weak_explicit(&q->word, w, *w + 1, memory_order_acquire,
							  memory_order_relaxed)) {
			if (GATE_QUEUED(*w))
				atomic_fetch_add_explicit(&q->barges, 1, memory_order_relaxed);
			return 0;
		}
	}
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
 * as soon as GRANTED is seen; the wake then finds nobody, which is harmless
 * (a futex waiter elsewhere woken by it rechecks its own word). */
static void grant(struct gate_waiter *w)
{
	w->granted_ns = ll_now_ns();
	atomic_store_explicit(&w->state, GATE_GRANTED, memory_order_release);
	ll_sys_futex_wake(&w->state, 1);
}

/* Pop the head for a slot that is already counted in `inside` (lock held);
 * chain it on *last, to be granted once the lock is dropped. */
static void pop_to(struct gate_queue *q, struct gate_waiter ***last)
{
	struct gate_waiter *x = pop_head(q);
	x->next = NULL;
	**last = x;
	*last = &x->next;
	atomic_fetch_add_explicit(&q->handoffs, 1, memory_order_relaxed);
}

/*
 * A slot went to an overdue waiter (lock held): running threads may barge
 * again for a spell in which the slots that can run at once together serve
 * handoff_pace times the time that slot will stand idle until its sleeper
 * runs.  Without it a queue whose rotation takes longer than barge_ns (1024
 * clients behind N = 1: ~1,000 x (a transaction + a wake-up)) would be
 * overdue for ever and served in strict order, a wake-up per transaction:
 * half the slot time idle, where InnoDB's gate lets the running threads
 * keep it.
 */
static void calm(struct gate_queue *q, uint64_t now)
{
	if (!q->barge_ns)
		return;   /* strict FIFO: nobody ever passes a sleeper */
	/* At most min(N, CPUs) slots run at once: beyond that a slot standing
	 * idle costs nothing, and what a handoff costs is the wake-up itself,
	 * paid by the CPUs. */
	int64_t n = queue_limit(q), run = n < q->cpus ? n : q->cpus;
	uint64_t idle = atomic_load_explicit(&q->handoff_ns, memory_order_relaxed);
	atomic_store_explicit(&q->calm_until, now + q->pace * idle / (uint64_t)(run > 0 ? run : 1),
			      memory_order_relaxed);
}

/* Pop the overdue head for a slot already counted in `inside` (lock held),
 * and let running threads barge for a calm spell after it. */
static void pop_overdue(struct gate_queue *q, struct gate_waiter ***last, uint64_t now)
{
	pop_to(q, last);
	calm(q, now);
}

/*
 * Restore the invariants after the head changed, N changed or a deadline
 * passed (lock held): due is set exactly when the head is overdue; while it
 * is, free slots go to the head in order; a head that is not overdue has a
 * timed sleep armed (one that went to sleep untimed, under due, is told to
 * re-arm), so that barging never passes it for longer than barge_ns.
 */
static void settle(struct gate_queue *q, struct gate_waiter ***last)
{
	uint64_t now = ll_now_ns();
	for (;;) {
		uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
		if (!q->head || now < q->head->deadline ||
		    now < atomic_load_explicit(&q->calm_until, memory_order_relaxed)) {
			if (w & GATE_DUE)
				atomic_fetch_and_explicit(&q->word, ~GATE_DUE, memory_order_relaxed);
			if (q->head && !atomic_load_explicit(&q->head->timed, memory_order_relaxed)) {
				atomic_store_explicit(&q->head->timed, 1, memory_order_relaxed);
				/* release: the waiter that sees REARM sees timed = 1. */
				atomic_store_explicit(&q->head->state, GATE_REARM, memory_order_release);
				ll_sys_futex_wake(&q->head->state, 1);
			}
			return;
		}
		if (!(w & GATE_DUE))
			w = atomic_fetch_or_explicit(&q->word, GATE_DUE, memory_order_relaxed) | GATE_DUE;
		if (GATE_INSIDE(w) >= queue_limit(q))
			return;
		/* One more inside, one fewer queued, in one step. */
		atomic_fetch_add_explicit(&q->word, 1 - ONE_QUEUED, memory_order_relaxed);
		pop_overdue(q, last, now);
	}
}

static void grant_all(struct gate_waiter *admit)
{
	while (admit) {
		/* Read `next` before granting: once granted, the node may be gone. */
		struct gate_waiter *x = admit;
		admit = x->next;
		grant(x);
	}
}

static struct timespec mono_at(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000u),
				  .tv_nsec = (long)(ns % 1000000000u) };
}

/*
 * Back from a suspend, with sleepers queued and no free slot: wait running,
 * for at most resume_spin_us (0: never), for a slot that a
 * suspending thread frees instead of handing it to a sleeper (it does so
 * while spin is set).  One thread spins at a time.  0: got a slot; 1: spin
 * is clear again and the caller queues (its next try, under the lock, still
 * finds a slot freed while spin was set).
 */
static int spin_for_slot(struct gate_queue *q, uint64_t w)
{
	uint64_t budget = q->resume_spin_ns;
	if (!q->barge_ns || !budget || (w & (GATE_SPIN | GATE_DUE)) || !GATE_QUEUED(w))
		return 1;
	if (!atomic_compare_exchange_strong_explicit(&q->word, &w, w | GATE_SPIN,
						     memory_order_relaxed, memory_order_relaxed))
		return 1;
	uint64_t until = ll_now_ns() + budget;
	for (;;) {
		w = atomic_load_explicit(&q->word, memory_order_relaxed);
		while (GATE_INSIDE(w) < queue_limit(q) && !(w & GATE_DUE)) {
			/* One step: the slot, and spin cleared for the next resumer. */
			if (atomic_compare_exchange_weak_explicit(&q->word, &w, (w + 1) & ~GATE_SPIN,
								  memory_order_acquire,
								  memory_order_relaxed)) {
				if (GATE_QUEUED(w))
					atomic_fetch_add_explicit(&q->barges, 1, memory_order_relaxed);
				return 0;
			}
		}
		if ((w & GATE_DUE) || ll_now_ns() >= until)
			break;
		sched_yield();   /* on few CPUs, the threads inside need them more */
	}
	atomic_fetch_and_explicit(&q->word, ~GATE_SPIN, memory_order_relaxed);
	return 1;
}

int gate_queue_acquire(struct gate_queue *q, int back)
{
	uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
	if (!try_enter(q, &w))
		return 0;
	if (back && !spin_for_slot(q, w))
		return 1;

	struct gate_waiter me;
	atomic_init(&me.state, GATE_WAITING);
	me.next = NULL;
	pthread_mutex_lock(&q->lock);
	w = atomic_load_explicit(&q->word, memory_order_relaxed);
	for (;;) {
		if (!try_enter(q, &w)) {
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		/* Announce ourselves in the word: the fast paths see queued > 0.  In
		 * strict FIFO we are overdue the moment we queue, and due goes up in
		 * the same step: were it left to settle() below, a release and an
		 * enter on the fast paths could slip in between and pass us. */
		uint64_t to = (w + ONE_QUEUED) | (q->barge_ns ? 0 : GATE_DUE);
		if (atomic_compare_exchange_weak_explicit(&q->word, &w, to, memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}
	struct gate_waiter *admit = NULL, **last = &admit;
	me.deadline = ll_now_ns() + q->barge_ns;
	/* Under due the queue is served in order and we need no timer of our own:
	 * settle() re-arms us if we are the head when due is cleared. */
	atomic_init(&me.timed, !(w & GATE_DUE));
	if (q->tail)
		q->tail->next = &me;
	else
		q->head = &me;
	q->tail = &me;
	settle(q, &last);
	pthread_mutex_unlock(&q->lock);
	grant_all(admit);

	for (;;) {
		admit = NULL;
		last = &admit;
		/* acquire: the granter's release hands us what the slot's last holder did. */
		unsigned s = atomic_load_explicit(&me.state, memory_order_acquire);
		if (s == GATE_GRANTED) {
			/* Our slot stood idle from the grant until now. */
			uint64_t avg = atomic_load_explicit(&q->handoff_ns, memory_order_relaxed);
			atomic_store_explicit(&q->handoff_ns,
					      ll_handoff_avg(avg, me.granted_ns, ll_now_ns()),
					      memory_order_relaxed);
			return 1;
		}
		if (s == GATE_REARM) {
			atomic_compare_exchange_strong_explicit(&me.state, &s, GATE_WAITING,
								memory_order_relaxed, memory_order_relaxed);
			continue;
		}

		uint64_t calm_until = atomic_load_explicit(&q->calm_until, memory_order_relaxed);
		struct timespec at = mono_at(me.deadline > calm_until ? me.deadline : calm_until);
		int timed = atomic_load_explicit(&me.timed, memory_order_relaxed);
		if (ll_sys_futex_wait(&me.state, GATE_WAITING, timed ? &at : NULL) != ETIMEDOUT)
			continue;
		/* Our deadline: we, and everyone ahead of us, are overdue; slots left
		 * free by barging go to the queue now (after a calm spell, if one is
		 * on: settle() re-arms us then), and we sleep untimed. */
		pthread_mutex_lock(&q->lock);
		if (atomic_load_explicit(&me.state, memory_order_relaxed) != GATE_GRANTED) {
			atomic_store_explicit(&me.timed, 0, memory_order_relaxed);
			settle(q, &last);
		}
		pthread_mutex_unlock(&q->lock);
		grant_all(admit);
	}
}

/*
 * Does a suspend, which will not be back for a while, hand its slot to the
 * head?  Only when the slots left held are fewer than the CPUs: then the
 * slot is a CPU that would idle until a sleeper's deadline.  With that many
 * held or more (N above the CPU count), the slot is taken by a thread back
 * from its own suspend, or by the next to arrive, as InnoDB's gate lets it,
 * and the wake-up and the resuming thread's sleep in the queue are saved.
 */
static int suspend_hands_over(const struct gate_queue *q, uint64_t w)
{
	return GATE_INSIDE(w) - 1 < (uint32_t)q->cpus;
}

/* Is a slot given back (away: by a suspend) freed, not handed to the head? */
static int release_frees(const struct gate_queue *q, uint64_t w, int away)
{
	return GATE_QUEUED(w) == 0 ||
	       (!(w & GATE_DUE) && (!away || (w & GATE_SPIN) || !suspend_hands_over(q, w)));
}

void gate_queue_release(struct gate_queue *q, int away)
{
	uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
	/* A suspend frees the slot as an exit does (nobody overdue) while a
	 * resuming thread spins for one, or while the others inside are enough
	 * to keep every CPU busy: a running thread takes it, no wake-up. */
	while (release_frees(q, w, away)) {
		if (atomic_compare_exchange_weak_explicit(&q->word, &w, w - 1, memory_order_release,
							  memory_order_relaxed))
			return;
	}

	struct gate_waiter *admit = NULL, **last = &admit;
	pthread_mutex_lock(&q->lock);
	w = atomic_load_explicit(&q->word, memory_order_relaxed);
	if (GATE_QUEUED(w) == 0 || GATE_INSIDE(w) > queue_limit(q) ||
	    (away && release_frees(q, w, away))) {
		/* Nobody left to hand to (another exit took the last), N shrank, or
		 * what made a suspend hand over changed meanwhile. */
		atomic_fetch_sub_explicit(&q->word, 1, memory_order_release);
	} else {
		/* The slot passes to the head as it is: inside stays, queued - 1. */
		atomic_fetch_sub_explicit(&q->word, ONE_QUEUED, memory_order_relaxed);
		if (w & GATE_DUE)
			pop_overdue(q, &last, ll_now_ns());
		else
			pop_to(q, &last);   /* a suspend hands over, due or not */
	}
	settle(q, &last);
	pthread_mutex_unlock(&q->lock);
	grant_all(admit);
}

void gate_queue_set_limit(struct gate_queue *q, int64_t limit)
{
	struct gate_waiter *admit = NULL, **last = &admit;

	atomic_store_explicit(&q->limit, limit, memory_order_relaxed);
	pthread_mutex_lock(&q->lock);
	/* A larger N admits waiters at once, due or not: the slots are new. */
	uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
	while (GATE_QUEUED(w) > 0 && GATE_INSIDE(w) < limit) {
		w = atomic_fetch_add_explicit(&q->word, 1 - ONE_QUEUED, memory_order_relaxed) +
		    (1 - ONE_QUEUED);
		pop_to(q, &last);
	}
	settle(q, &last);
	pthread_mutex_unlock(&q->lock);
	grant_all(admit);
}

/* The fifo policy: the queue with a fixed N. */

struct fifo_config {
	struct ll_gate_common_config common;
	struct gate_queue_config queue;
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
	gate_queue_init(&g->q, c->common.n, &c->queue);
	g->n = c->common.n;
	return g;
}

static void fifo_destroy(void *state)
{
	struct fifo_gate *g = state;
	gate_queue_destroy(&g->q);
	free(g);
}

static int fifo_acquire(void *state, int back)
{
	return gate_queue_acquire(&((struct fifo_gate *)state)->q, back);
}

static void fifo_release(void *state, int away)
{
	gate_queue_release(&((struct fifo_gate *)state)->q, away);
}

static int64_t fifo_limit(void *state)
{
	return ((struct fifo_gate *)state)->n;
}

void gate_queue_stats(struct gate_queue *q, struct ll_gate_stats *s)
{
	uint64_t w = atomic_load_explicit(&q->word, memory_order_relaxed);
	s->waiting = GATE_QUEUED(w);
	s->spinning = !!(w & GATE_SPIN);
	s->handoffs = atomic_load_explicit(&q->handoffs, memory_order_relaxed);
	s->barges = atomic_load_explicit(&q->barges, memory_order_relaxed);
}

void gate_queue_reset_stats(struct gate_queue *q)
{
	atomic_store_explicit(&q->handoffs, 0, memory_order_relaxed);
	atomic_store_explicit(&q->barges, 0, memory_order_relaxed);
}

static void fifo_stats(void *state, struct ll_gate_stats *s)
{
	struct fifo_gate *g = state;
	s->limit = s->limit_min = s->limit_max = g->n;
	s->limit_mean = (double)g->n;
	gate_queue_stats(&g->q, s);
}

static void fifo_reset_stats(void *state)
{
	gate_queue_reset_stats(&((struct fifo_gate *)state)->q);
}

static const struct ll_knob fifo_knobs[] = {
	LL_GATE_KNOB_N(struct fifo_config, 8, 1, "threads inside at once"),
	LL_GATE_KNOB_TICKETS(struct fifo_config),
	LL_GATE_KNOBS_QUEUE(struct fifo_config),
};

const struct ll_gate_policy ll_gate_fifo_policy = {
	.info = { "fifo", "FIFO queue, wake-one handoff; running threads barge until a waiter is overdue",
		  fifo_knobs, LL_COUNT(fifo_knobs) },
	.config_size = sizeof(struct fifo_config),
	.create = fifo_create,
	.destroy = fifo_destroy,
	.acquire = fifo_acquire,
	.release = fifo_release,
	.limit = fifo_limit,
	.stats = fifo_stats,
	.reset_stats = fifo_reset_stats,
};
