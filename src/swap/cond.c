/*
 * cond.c: condvars, glibc's, waited on with a swapped mutex.
 *
 * glibc reacquires the mutex it is given inside pthread_cond_wait, so the
 * wait is done with an internal guard mutex (one of SWAP_GUARDS, chosen by
 * the condvar's address):
 *
 *   waiter:   lock G; waiters(G)++; unlock M; cond_wait(C, G); waiters(G)--;
 *             unlock G; regain M
 *   signaler: if waiters(G): lock G; cond_signal(C) or cond_broadcast(C)
 *             and broadcasts(G)++; unlock G
 *             else cond_signal(C) or cond_broadcast(C)
 *
 * A signal sent after M was released finds the waiter queued: the waiter
 * holds G from before it releases M until glibc has queued it, and a
 * signaler that could have seen M released sees waiters(G) > 0 and takes G.
 * Waiters a broadcast may have woken (broadcasts(G) moved during the wait),
 * and every woken waiter of a lock that spins, regain M one at a time, in a
 * queue (regain()): a broadcast does not send them all into M's lock at once.
 */
#include <errno.h>
#include <string.h>

#include "swap.h"

#include "core/futex_sys.h"

#define SWAP_GUARDS 256
static struct guard {
	pthread_mutex_t m;        /* glibc's, always through REAL() */
	atomic_uint waiters;      /* swapped-mutex waiters between lock G and their return */
	atomic_uint broadcasts;   /* broadcasts sent under m: changed by G's holder only */
} __attribute__((aligned(64))) guards[SWAP_GUARDS];

static inline struct guard *guard_of(const pthread_cond_t *c)
{
	uintptr_t h = (uintptr_t)c;
	h ^= h >> 7;
	h ^= h >> 13;
	return &guards[h % SWAP_GUARDS];
}

static inline int cond_pshared(pthread_cond_t *c)
{
	/* glibc keeps the process-shared flag in bit 0 of __wrefs, fixed at init. */
	return __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & 1;
}

/*
 * Regaining the mutex: woken waiters go for M one at a time.
 *
 * A broadcast wakes every waiter of C (glibc's), and each would go straight
 * for M: a thousand threads spinning on it or parking in it at once.  So a
 * woken waiter tries M once and, finding it busy, queues for it in a FIFO
 * regain queue (one of REGAIN_BUCKETS, by M's address; the node on its
 * stack).  Only the queue's first regainer of M, the one with the turn, calls
 * M's lock; when it has M it passes the turn to the next regainer of M, who
 * wakes while M is held and is first in line (in M's lock) when it is
 * released.  So at most one such waiter per mutex is inside its lock, and
 * the next one's wakeup overlaps the holder's critical section.
 *
 * Who queues: a waiter that a broadcast may have woken (G's broadcast count
 * moved while it waited), and any woken waiter of a lock that spins.  A
 * waiter of a lock that parks (LL_ALGO_PARKS) woken by a signal, a timeout or
 * spuriously goes into M's lock as before: signals wake one waiter each, a
 * parked thread costs nothing while it waits, and queueing those made each
 * sleep twice (for the turn, then in M's lock behind the program's own
 * lockers) on a busy producer-consumer mutex.
 *
 * No lost wakeup: a regainer of M that finds another in the queue waits for
 * the turn, and the regainer with the turn passes it as soon as it has M,
 * whatever else happens (it needs nothing but M).
 *
 * No deadlock: the bucket lock (glibc's) is a leaf, held for a list
 * operation only; its holder takes no other lock, waits for nothing and runs
 * none of the program's code.  A queued regainer waits, holding no internal
 * lock, for the regainers ahead of it to acquire M, and those wait only for
 * M.  So a regainer waits for M's holders and nothing else, as it would in
 * M's own lock: whatever other mutexes it holds (POSIX lets a waiter hold
 * others), it adds no edge to the program's own lock order.
 */
#define REGAIN_BUCKETS 256

struct regainer {
	struct regainer *prev, *next;
	const struct swap_mutex *m;
	atomic_uint turn;   /* futex word: 0 queued, 1 its turn to lock M */
};

static struct regain_bucket {
	pthread_mutex_t lock;   /* glibc's, always through REAL() */
	struct regainer *head, *tail;
} __attribute__((aligned(64))) regains[REGAIN_BUCKETS];

static inline struct regain_bucket *bucket_of(const struct swap_mutex *s)
{
	uintptr_t h = (uintptr_t)s;
	h ^= h >> 9;
	h ^= h >> 17;
	return &regains[h % REGAIN_BUCKETS];
}

/* The first regainer of M from r on (the bucket's lock held). */
static struct regainer *regainer_of(struct regainer *r, const struct swap_mutex *s)
{
	while (r && r->m != s)
		r = r->next;
	return r;
}

/* Lock M after a wait: at once if it is free (one try, no herd); else, after
 * a broadcast or for a lock that spins, in turn (above), and otherwise (woken
 * by a signal, a lock that parks) in M's lock.  Not a cancellation point;
 * errno is kept. */
static void regain(pthread_mutex_t *m, int broadcast)
{
	struct swap_mutex *s = SM(m);
	if (!swap_acquire(m, swap_kind_of(m), H_TRY, 0, NULL))
		return;
	int saved = errno;
	if (!broadcast && (swap_class_of(s)->ops->flags & LL_ALGO_PARKS)) {
		while (swap_acquire(m, swap_kind_of(m), H_LOCK, 0, NULL))
			;
		errno = saved;
		return;
	}
	struct regain_bucket *b = bucket_of(s);
	struct regainer me = { .m = s };
	REAL(mutex_lock)(&b->lock);
	/* The first regainer of M in the queue has the turn. */
	atomic_store_explicit(&me.turn, !regainer_of(b->head, s), memory_order_relaxed);
	me.prev = b->tail;
	if (b->tail)
		b->tail->next = &me;
	else
		b->head = &me;
	b->tail = &me;
	REAL(mutex_unlock)(&b->lock);
	/* Acquire: pairs with the release store that passed us the turn. */
	while (!atomic_load_explicit(&me.turn, memory_order_acquire))
		ll_sys_futex_wait(&me.turn, 0, NULL);
	while (swap_acquire(m, swap_kind_of(m), H_LOCK, 0, NULL))
		;
	/* M is ours: leave the queue, and the next regainer of M has the turn. */
	REAL(mutex_lock)(&b->lock);
	struct regainer *next = regainer_of(me.next, s);
	if (me.prev)
		me.prev->next = me.next;
	else
		b->head = me.next;
	if (me.next)
		me.next->prev = me.prev;
	else
		b->tail = me.prev;
	if (next)   /* Release: pairs with next's acquire load of its turn. */
		atomic_store_explicit(&next->turn, 1, memory_order_release);
	REAL(mutex_unlock)(&b->lock);
	/* Out of the lock, which others wait for: next may be gone by now (it saw
	 * its turn, took M and left), and then the wake is a spurious one at a dead
	 * address, which every futex waiter rechecks anyway. */
	if (next)
		ll_sys_futex_wake(&next->turn, 1);
	errno = saved;
}

struct cond_wait {
	struct guard *g;
	pthread_mutex_t *m;
	unsigned depth;
	unsigned broadcasts;   /* G's count when the wait began */
};

/* G held (glibc gave it back): a broadcast on one of G's condvars since the
 * wait began may have woken a crowd, which regains M in turn. */
static void cond_regain(struct cond_wait *w)
{
	int broadcast = atomic_load_explicit(&w->g->broadcasts, memory_order_relaxed) !=
			w->broadcasts;
	atomic_fetch_sub_explicit(&w->g->waiters, 1, memory_order_relaxed);
	REAL(mutex_unlock)(&w->g->m);
	regain(w->m, broadcast);
	SM(w->m)->count = w->depth;
}

/* Cancelled inside the wait: glibc has retaken the guard; give the program its mutex. */
static void cond_cancelled(void *p)
{
	cond_regain(p);
}

enum cond_how { C_WAIT, C_TIMED, C_CLOCK };

static int cond_call(pthread_cond_t *c, pthread_mutex_t *m, enum cond_how how, clockid_t clk,
		     const struct timespec *abs)
{
	/* A wait inside our own set-up returns at once: a spurious wakeup. */
	switch (how) {
	case C_TIMED:
		return GLIBC_CALL(cond_timedwait, 0, c, m, abs);
	case C_CLOCK:
		if (swap_can_call_real() && !swap_real.cond_clockwait)
			return ENOSYS;
		return GLIBC_CALL(cond_clockwait, 0, c, m, clk, abs);
	default:
		return GLIBC_CALL(cond_wait, 0, c, m);
	}
}

static int cond_wait_common(pthread_cond_t *c, pthread_mutex_t *m, enum cond_how how,
			    clockid_t clk, const struct timespec *abs)
{
	if (GLIBC(m))
		return cond_call(c, m, how, clk, abs);
	struct swap_mutex *s = SM(m);
	int type = s->kind & K_TYPE;
	if ((type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK) &&
	    swap_owner_of(s) != swap_self())
		return EPERM;
	struct cond_wait w = { guard_of(c), m, s->count, 0 };
	REAL(mutex_lock)(&w.g->m);
	w.broadcasts = atomic_load_explicit(&w.g->broadcasts, memory_order_relaxed);
	/* Relaxed: signalers that must see it reach it through M's release
	 * (below) and their own acquire of M, or through G. */
	atomic_fetch_add_explicit(&w.g->waiters, 1, memory_order_relaxed);
	s->count = 1;   /* a recursive mutex is released whole */
	int r = swap_release(m, s->kind);
	if (r) {
		s->count = w.depth;
		atomic_fetch_sub_explicit(&w.g->waiters, 1, memory_order_relaxed);
		REAL(mutex_unlock)(&w.g->m);
		return r;
	}
	if (swap_counting())
		swap_note_cond_wait();
	pthread_cleanup_push(cond_cancelled, &w);
	r = cond_call(c, &w.g->m, how, clk, abs);
	pthread_cleanup_pop(0);
	cond_regain(&w);
	return r;
}

EXPORT int SWAPPED(pthread_cond_wait)(pthread_cond_t *c, pthread_mutex_t *m)
{
	return cond_wait_common(c, m, C_WAIT, 0, NULL);
}

EXPORT int SWAPPED(pthread_cond_timedwait)(pthread_cond_t *c, pthread_mutex_t *m,
					   const struct timespec *abs)
{
	return cond_wait_common(c, m, C_TIMED, 0, abs);
}

EXPORT int SWAPPED(pthread_cond_clockwait)(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
				  const struct timespec *abs)
{
	return cond_wait_common(c, m, C_CLOCK, clk, abs);
}

static int wake(pthread_cond_t *c, int all)
{
	if (unlikely(swap_tls.busy))
		return all ? GLIBC_CALL(cond_broadcast, 0, c) : GLIBC_CALL(cond_signal, 0, c);
	int (*f)(pthread_cond_t *) = all ? REAL(cond_broadcast) : REAL(cond_signal);
	if (cond_pshared(c))
		return f(c);
	struct guard *g = guard_of(c);
	/* Relaxed: see cond_wait_common; a stale nonzero only costs taking G. */
	if (!atomic_load_explicit(&g->waiters, memory_order_relaxed))
		return f(c);
	REAL(mutex_lock)(&g->m);
	int r = f(c);
	if (all)   /* G held: each waiter reads it before and after its wait, under G */
		atomic_store_explicit(&g->broadcasts,
				      atomic_load_explicit(&g->broadcasts, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	REAL(mutex_unlock)(&g->m);
	return r;
}

EXPORT int SWAPPED(pthread_cond_signal)(pthread_cond_t *c)
{
	return wake(c, 0);
}

EXPORT int SWAPPED(pthread_cond_broadcast)(pthread_cond_t *c)
{
	return wake(c, 1);
}

/* Only this thread exists in a forked child: no guard is held, no waiter is
 * left, nobody queues to regain a mutex. */
void swap_cond_after_fork(void)
{
	for (int i = 0; i < SWAP_GUARDS; i++) {
		memset(&guards[i].m, 0, sizeof(guards[i].m));
		atomic_store_explicit(&guards[i].waiters, 0, memory_order_relaxed);
	}
	for (int i = 0; i < REGAIN_BUCKETS; i++) {
		memset(&regains[i].lock, 0, sizeof(regains[i].lock));
		regains[i].head = regains[i].tail = NULL;
	}
}
