/*
 * mutex.c: the pthread_mutex_* entry points (overlay drawn in swap.h).
 *
 * The common case, a normal mutex whose slot is made and current with the
 * stats off, is inline in lock and unlock (fast_slot): the mutex's kind, gen,
 * slot and class words, and one call into its class's algorithm.  Everything
 * else (first use, recursive and errorcheck types, try and timed, a mutex
 * from before a fork, stats) takes the general path, swap_acquire and
 * swap_release.
 */
#include <errno.h>
#include <string.h>

#include "config.h"

#include "preload/handoff.h"

#pragma weak locklab_prof_init_caller

static inline struct swap_lockref lockref(struct swap_mutex *s)
{
	return (struct swap_lockref){ &s->slot, &s->gen };
}

/* The class of a mutex whose slot is made: set before the slot, which the
 * caller loaded with acquire (slot_of_made), so relaxed. */
static inline struct swap_class *class_of_made(const struct swap_mutex *s)
{
	return __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
}

/* The mutex's class, chosen now when it has none (a static initializer or
 * zeroed memory, at its first use). */
struct swap_class *swap_class_of(struct swap_mutex *s)
{
	/* Relaxed: a class is a pointer to configuration complete since the set-up;
	 * first users that race agree by the CAS (the winner's class holds). */
	struct swap_class *c = __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
	if (likely(c))
		return c;
	swap_configured();
	struct swap_class *mine = swap_choose(s, 0);
	if (__atomic_compare_exchange_n(&s->cls, &c, mine, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		c = mine;
		swap_chosen(c);
	}
	return c;
}

/* The slot, or NULL before the first lock.  A slot exists only once the
 * configuration is loaded: no check of it here. */
static inline void *slot_of_made(struct swap_mutex *s)
{
	/* Acquire pairs with swap_slot_create's CAS: the slot's state is initialised. */
	return __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
}

/* The slot of a mutex of a swapped class (c), made now at its first use. */
static inline void *slot_of(struct swap_mutex *s, const struct swap_class *c)
{
	void *p = slot_of_made(s);
	return likely(p != NULL) ? p : swap_slot_create(lockref(s), &c->recipe);
}

static inline void set_owner(struct swap_mutex *s, unsigned id)
{
	__atomic_store_n(&s->owner, id, __ATOMIC_RELAXED);
}

static inline int owned_type(int kind)
{
	int type = kind & K_TYPE;
	return unlikely(type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK);
}

/* A mutex whose class is glibc's (chosen at its init, or at its first use). */
static int glibc_acquire(pthread_mutex_t *m, enum swap_how how, clockid_t clk,
			 const struct timespec *abs)
{
	switch (how) {
	case H_TRY:
		return REAL(mutex_trylock)(m);
	case H_TIMED:
		if (clk == CLOCK_REALTIME || !swap_real.mutex_clocklock)
			return REAL(mutex_timedlock)(m, abs);
		return REAL(mutex_clocklock)(m, clk, abs);
	default:
		return REAL(mutex_lock)(m);
	}
}

/* The call into the class's algorithm; try, timed and counted locks start
 * with a trylock. */
static int acquire_op(const struct swap_class *c, void *p, enum swap_how how, clockid_t clk,
		      const struct timespec *abs)
{
	const struct ll_lock_ops *ops = c->ops;
	int rc = 0, contended = 0;
	swap_tls.busy++;
	switch (how) {
	case H_TRY:
		rc = ops->trylock(p);
		break;
	case H_LOCK:
		if (!swap_counting())
			c->lock(p);
		else if (ops->trylock(p)) {
			contended = 1;
			swap_waiting_enter();
			c->lock(p);
			swap_waiting_leave();
		}
		break;
	case H_TIMED:
		if (!ops->trylock(p))
			break;
		contended = 1;
		struct timespec mono;
		rc = ll_clock_to_mono(clk, abs, &mono);
		if (rc)
			break;
		if (swap_counting())
			swap_waiting_enter();
		rc = ops->timedlock(p, &mono);
		if (swap_counting())
			swap_waiting_leave();
		break;
	}
	swap_tls.busy--;
	if (!rc && swap_counting())
		swap_count(contended);
	return rc;
}

__attribute__((noinline)) int swap_acquire(pthread_mutex_t *m, int kind, enum swap_how how,
					   clockid_t clk, const struct timespec *abs)
{
	struct swap_mutex *s = SM(m);
	/* The class first: a mutex that turns out glibc's keeps glibc's owner
	 * field and __nusers. */
	struct swap_class *c = swap_class_of(s);
	if (unlikely(c == GLIBC_CLASS))
		return glibc_acquire(m, how, clk, abs);
	unsigned me = 0;
	if (owned_type(kind)) {
		me = swap_self();
		if (swap_owner_of(s) == me) {
			if ((kind & K_TYPE) == PTHREAD_MUTEX_ERRORCHECK)
				return how == H_TRY ? EBUSY : EDEADLK;
			if (s->count == UINT32_MAX)
				return EAGAIN;
			s->count++;
			return 0;
		}
	}
	if (unlikely(c->pure_spin) && !swap_tls.met_spinlock && swap_watching())
		swap_spin_meet(c);
	if (swap_stale(&s->gen)) {
		int rc = swap_slot_repair(lockref(s), &c->recipe, how, clk, abs);
		if (rc)
			return rc;
	}
	int rc = acquire_op(c, slot_of(s, c), how, clk, abs);
	if (rc)
		return rc;
	if (me) {
		set_owner(s, me);
		s->count = 1;
	}
	return 0;
}

__attribute__((noinline)) int swap_release(pthread_mutex_t *m, int kind)
{
	struct swap_mutex *s = SM(m);
	/* Relaxed: the class is set once, at init or first use (swap_class_of). */
	struct swap_class *c = __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
	if (unlikely(c == GLIBC_CLASS))
		return REAL(mutex_unlock)(m);
	if (unlikely(!c))
		return EPERM;   /* never locked: no class yet, so no slot */
	if (owned_type(kind)) {
		if (swap_owner_of(s) != swap_self())
			return EPERM;
		if (--s->count)
			return 0;
		set_owner(s, 0);
	}
	if (swap_stale(&s->gen)) {
		int rc = swap_slot_release_stale(lockref(s), &c->recipe, 1);
		if (rc >= 0)
			return rc;
	}
	void *p = slot_of_made(s);
	if (unlikely(!p))
		return EPERM;   /* never locked */
	swap_tls.busy++;
	c->unlock(p);
	swap_tls.busy--;
	return 0;
}

/*
 * The common case, inline in lock and unlock: a normal (or adaptive) mutex,
 * its slot made and current since any fork, statistics off.  Its slot, or
 * NULL for the general path (which also serves a glibc-class mutex: it has
 * no slot, and a pure spinlock's while its threads are watched).  The caller
 * then calls its class's lock or unlock: the class word (offset 32) is
 * beside the slot's (24), one dependent load more.
 */
static inline void *fast_slot(struct swap_mutex *s, int kind)
{
	if (owned_type(kind) || swap_stale(&s->gen) || unlikely(swap_general()))
		return NULL;
	return slot_of_made(s);
}

EXPORT int SWAPPED(pthread_mutex_init)(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	if (unlikely(swap_tls.setup) && !swap_real.mutex_init) {
		memset(m, 0, sizeof(*m));   /* our set-up, re-entered: a normal mutex */
		return 0;
	}
	int rc = GLIBC_CALL(mutex_init, 0, m, a);
	if (rc || swap_tls.busy)
		return rc;
	int k = SM(m)->kind;
	/* glibc sets the process-shared bit on every robust mutex too: robust first. */
	int why = k & K_ROBUST ? PASS_ROBUST : k & K_PI ? PASS_PI : k & K_PP ? PASS_PP
		: k & K_PSHARED ? PASS_PSHARED : -1;
	if (why >= 0)
		swap_note_passthrough((enum swap_pass)why);
	swap_configured();
	if (why < 0 && swap_nsites) {
		/* Behind the profiler, our caller is the profiler: it says whose call this is. */
		uintptr_t pc = locklab_prof_init_caller ? locklab_prof_init_caller() : 0;
		struct swap_class *c = swap_choose(m, pc ? pc : (uintptr_t)__builtin_return_address(0));
		/* Relaxed: the program publishes the mutex after its init. */
		__atomic_store_n(&SM(m)->cls, c, __ATOMIC_RELAXED);
		swap_chosen(c);
	}
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_destroy)(pthread_mutex_t *m)
{
	if (GLIBC(m))
		return GLIBC_CALL(mutex_destroy, 0, m);
	struct swap_mutex *s = SM(m);
	if (swap_owner_of(s))
		return EBUSY;
	const struct swap_class *c = class_of_made(s);
	if (c)   /* no class, no slot: the class is set before the slot */
		swap_slot_destroy(lockref(s), &c->recipe);
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_lock)(pthread_mutex_t *m)
{
	int k = swap_kind_of(m);
	if (swap_glibcs(k))
		return GLIBC_CALL(mutex_lock, 0, m);
	struct swap_mutex *s = SM(m);
	void *p = fast_slot(s, k);
	if (unlikely(!p))
		return swap_acquire(m, k, H_LOCK, 0, NULL);
	swap_tls.busy++;
	class_of_made(s)->lock(p);
	swap_tls.busy--;
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_trylock)(pthread_mutex_t *m)
{
	int k = swap_kind_of(m);
	if (swap_glibcs(k))
		return GLIBC_CALL(mutex_trylock, 0, m);
	return swap_acquire(m, k, H_TRY, 0, NULL);
}

EXPORT int SWAPPED(pthread_mutex_timedlock)(pthread_mutex_t *m, const struct timespec *abs)
{
	int k = swap_kind_of(m);
	if (swap_glibcs(k))
		return GLIBC_CALL(mutex_timedlock, 0, m, abs);
	return swap_acquire(m, k, H_TIMED, CLOCK_REALTIME, abs);
}

EXPORT int SWAPPED(pthread_mutex_clocklock)(pthread_mutex_t *m, clockid_t clk,
					    const struct timespec *abs)
{
	int k = swap_kind_of(m);
	if (swap_glibcs(k))
		return GLIBC_CALL(mutex_clocklock, 0, m, clk, abs);
	return swap_acquire(m, k, H_TIMED, clk, abs);
}

EXPORT int SWAPPED(pthread_mutex_unlock)(pthread_mutex_t *m)
{
	int k = swap_kind_of(m);
	if (swap_glibcs(k))
		return GLIBC_CALL(mutex_unlock, 0, m);
	struct swap_mutex *s = SM(m);
	void *p = fast_slot(s, k);
	if (unlikely(!p))
		return swap_release(m, k);
	swap_tls.busy++;
	class_of_made(s)->unlock(p);
	swap_tls.busy--;
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_consistent)(pthread_mutex_t *m)
{
	if (GLIBC(m))
		return GLIBC_CALL(mutex_consistent, 0, m);
	return EINVAL;   /* only robust mutexes can be made consistent, and they are glibc's */
}
