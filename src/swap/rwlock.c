/*
 * rwlock.c: the pthread_rwlock_* entry points.
 *
 * Without LOCKLAB_SWAP_RWLOCK or _RWLOCK_FOR, pthread_rwlock_t stays glibc's:
 * each call goes to glibc's function, and with the stats on, inits and
 * successful acquisitions are counted (per thread, like the mutexes').  With
 * them, every pthread_rwlock_t but a process-shared one gets an rwlock class
 * (swap.h): LOCKLAB_SWAP_RWLOCK's, a site's of LOCKLAB_SWAP_RWLOCK_FOR, or, with
 * sites alone, glibc's mark (glibc's for its life); a swapped one is served
 * by its class's rwlock of liblocklab, in a slot of the slab (one 64-byte
 * line: every rwlock's state is 40 to 56 bytes, and glibc's 56 must keep room
 * for what POSIX needs):
 *
 *   offset  glibc's field        ours
 *    0      __readers, __writers the slot: NULL until first use, CASed in once
 *    8      __wrphase_futex      fork generation (as a mutex's __nusers)
 *   24      __cur_writer         the write holder's swap thread id, 0 when none
 *                                (written by the holder only): EDEADLK, EBUSY
 *   28      __shared             glibc's, never written: a process-shared lock
 *                                is glibc's for its life
 *   40      __pad2               its class with sites: NULL until chosen (at
 *                                init, or at first use), then set once
 *   48      __flags              glibc's kind, never written: a
 *                                writer-nonrecursive lock gets its class's
 *                                recipe[1]
 *
 * pthread_rwlock_init is glibc's (it zeroes the rest), then with sites names
 * the lock and sets its class: no slot until first use, so a static
 * initializer's lock and an initialised one start alike.  Without sites every
 * rwlock's class is the rest's, and the lock's class word is not used.
 * A call from inside an algorithm (partitioned's and pthread's glibc
 * rwlocks) or our set-up is glibc's (swap_tls.busy), the latter answered
 * with success before glibc's function is known (GLIBC_CALL).
 */
#include <errno.h>

#include "swap.h"

#include "preload/handoff.h"

#pragma weak locklab_prof_init_caller

struct swap_rwlock {
	void *slot;
	unsigned gen;
	unsigned glibc_writers_futex, glibc_pad3, glibc_pad4;
	int writer;
	int shared;
	unsigned char glibc_elision[8];
	struct swap_rwclass *cls;
	unsigned flags;
	unsigned glibc_pad5;
};
_Static_assert(sizeof(struct swap_rwlock) == sizeof(pthread_rwlock_t), "glibc's rwlock layout");
_Static_assert(offsetof(struct swap_rwlock, writer) ==
	       offsetof(pthread_rwlock_t, __data.__cur_writer), "__cur_writer where glibc keeps it");
_Static_assert(offsetof(struct swap_rwlock, shared) ==
	       offsetof(pthread_rwlock_t, __data.__shared), "__shared where glibc keeps it");
_Static_assert(offsetof(struct swap_rwlock, flags) ==
	       offsetof(pthread_rwlock_t, __data.__flags), "__flags where glibc keeps it");
_Static_assert(offsetof(struct swap_rwlock, cls) ==
	       offsetof(pthread_rwlock_t, __data.__pad2), "__pad2 where glibc zeroes it");

static inline struct swap_rwlock *SR(pthread_rwlock_t *l) { return (struct swap_rwlock *)l; }

static inline struct swap_lockref lockref(struct swap_rwlock *s)
{
	return (struct swap_lockref){ &s->slot, &s->gen };
}

/* The class of a lock getting one at its first use (a static initializer's,
 * or zeroed memory's): racing first users agree by CAS. */
static __attribute__((noinline)) struct swap_rwclass *class_chosen_now(struct swap_rwlock *s)
{
	/* Relaxed: a class is a pointer to configuration complete since the set-up. */
	struct swap_rwclass *c = NULL, *mine = swap_rw_choose(s, 0);
	if (__atomic_compare_exchange_n(&s->cls, &c, mine, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		swap_rw_chosen(mine);
		return mine;
	}
	return c;
}

/* The lock's class: the rest's without sites, else its own. */
static inline struct swap_rwclass *class_of(struct swap_rwlock *s)
{
	if (likely(!swap_hot.rw_nsites))
		return swap_hot.rw_rest;
	struct swap_rwclass *c = __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
	return likely(c != NULL) ? c : class_chosen_now(s);
}

/* The lock's recipe in its class C, by its kind (written by init before the
 * lock is shared). */
static inline const struct swap_recipe *recipe_of(const struct swap_rwlock *s,
						  const struct swap_rwclass *c)
{
	int nonrec = __atomic_load_n(&s->flags, __ATOMIC_RELAXED) ==
		     PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
	return &c->recipe[nonrec];
}

/* The class serving the lock, or NULL where glibc does: no rwlock swapped,
 * inside an algorithm or our set-up, process-shared (__shared is written by
 * init before the lock is shared), or of glibc's class.  Each entry point
 * asks once and hands the class on. */
static inline struct swap_rwclass *rw_class(pthread_rwlock_t *l)
{
	if (unlikely(!atomic_load_explicit(&swap_config_ready, memory_order_acquire)) &&
	    !swap_tls.busy)
		swap_config_load();
	struct swap_rwclass *rest = swap_hot.rw_rest;
	if (!rest || swap_tls.busy || __atomic_load_n(&SR(l)->shared, __ATOMIC_RELAXED))
		return NULL;
	if (likely(!swap_hot.rw_nsites))
		return rest;   /* without sites, never glibc's mark */
	struct swap_rwclass *c = class_of(SR(l));
	return c != RW_GLIBC_CLASS ? c : NULL;
}

static inline int rw_counted(int r)
{
	if (r == 0 && !swap_tls.busy && swap_counting())   /* not an algorithm's own glibc rwlock */
		swap_rw_count(0);
	return r;
}

/* The slot, made now at the first use (racing first users agree by CAS). */
static void *slot_of(struct swap_rwlock *s, const struct swap_rwclass *c)
{
	/* Acquire pairs with swap_slot_create's release: the state is initialised. */
	void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
	return likely(p != NULL) ? p : swap_slot_create(lockref(s), recipe_of(s, c));
}

static inline unsigned rw_writer(const struct swap_rwlock *s)
{
	return (unsigned)__atomic_load_n(&s->writer, __ATOMIC_RELAXED);
}

static inline void rw_set_writer(struct swap_rwlock *s, unsigned id)
{
	__atomic_store_n(&s->writer, (int)id, __ATOMIC_RELAXED);
}

/* The wait of a lock call that found the lock busy: plain or to a deadline. */
static int rw_wait(const struct ll_rwlock_ops *o, void *p, int write, enum swap_how how,
		   clockid_t clk, const struct timespec *abs)
{
	if (how == H_LOCK)
		return write ? o->wrlock(p) : o->rdlock(p);
	struct timespec mono;
	int rc = ll_clock_to_mono(clk, abs, &mono);
	if (rc)
		return rc;
	return write ? o->timedwrlock(p, &mono) : o->timedrdlock(p, &mono);
}

/*
 * Any lock of a swapped rwlock.  As glibc's: a bad deadline (tv_nsec out of
 * range, a clock neither CLOCK_REALTIME nor CLOCK_MONOTONIC) is EINVAL even
 * when the lock is free; a thread holding the write lock gets EDEADLK from
 * rdlock and wrlock (plain, timed, clock) and EBUSY from their try.
 */
static int rw_acquire(pthread_rwlock_t *l, const struct swap_rwclass *c, int write,
		      enum swap_how how, clockid_t clk, const struct timespec *abs)
{
	struct swap_rwlock *s = SR(l);
	if (how == H_TIMED && (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L ||
			       (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)))
		return EINVAL;
	unsigned me = swap_self();
	if (rw_writer(s) == me)
		return how == H_TRY ? EBUSY : EDEADLK;
	if (swap_stale(&s->gen))
		swap_slot_repair(lockref(s), recipe_of(s, c), how, clk, abs);
	void *p = slot_of(s, c);
	const struct ll_rwlock_ops *o = c->ops;
	int rc, contended = 0;
	swap_tls.busy++;
	if (how == H_TRY) {
		rc = write ? o->trywrlock(p) : o->tryrdlock(p);
	} else if (how == H_LOCK && !swap_counting()) {
		rc = write ? o->wrlock(p) : o->rdlock(p);
	} else {
		rc = write ? o->trywrlock(p) : o->tryrdlock(p);
		if (rc == EBUSY) {
			contended = 1;
			if (swap_counting())
				swap_waiting_enter();
			rc = rw_wait(o, p, write, how, clk, abs);
			if (swap_counting())
				swap_waiting_leave();
		}
	}
	swap_tls.busy--;
	if (rc)
		return rc;
	if (write)
		rw_set_writer(s, me);
	if (swap_counting())
		swap_rw_count(contended);
	return 0;
}

EXPORT int SWAPPED(pthread_rwlock_init)(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
	int r = GLIBC_CALL(rw_init, 0, l, a);
	if (r || swap_tls.busy)
		return r;
	struct swap_rwlock *s = SR(l);
	swap_configured();
	swap_note_rwlock_init(s->shared);
	if (swap_hot.rw_nsites && !s->shared) {
		/* Behind the profiler, our caller is the profiler: it says whose call this is. */
		uintptr_t pc = locklab_prof_init_caller ? locklab_prof_init_caller() : 0;
		struct swap_rwclass *c =
			swap_rw_choose(l, pc ? pc : (uintptr_t)__builtin_return_address(0));
		/* Relaxed: the program publishes the lock after its init. */
		__atomic_store_n(&s->cls, c, __ATOMIC_RELAXED);
		swap_rw_chosen(c);
	}
	return 0;
}

EXPORT int SWAPPED(pthread_rwlock_destroy)(pthread_rwlock_t *l)
{
	const struct swap_rwclass *c = rw_class(l);
	if (!c)
		return GLIBC_CALL(rw_destroy, 0, l);
	struct swap_rwlock *s = SR(l);
	swap_slot_destroy(lockref(s), recipe_of(s, c));
	rw_set_writer(s, 0);
	return 0;
}

EXPORT int SWAPPED(pthread_rwlock_unlock)(pthread_rwlock_t *l)
{
	const struct swap_rwclass *c = rw_class(l);
	if (!c)
		return GLIBC_CALL(rw_unlock, 0, l);
	struct swap_rwlock *s = SR(l);
	int mine = rw_writer(s) == swap_self();
	if (swap_stale(&s->gen)) {
		int rc = swap_slot_release_stale(lockref(s), recipe_of(s, c), mine);
		if (rc >= 0) {
			if (mine)
				rw_set_writer(s, 0);
			return rc;
		}
	}
	void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
	if (unlikely(!p))
		return EPERM;   /* never locked */
	if (mine)
		rw_set_writer(s, 0);
	swap_tls.busy++;
	int rc = c->ops->unlock(p);
	swap_tls.busy--;
	return rc;
}

/* The four lock calls of one side, rd or wr: plain, try, timed, clock; each
 * glibc's when the lock is (counted with the stats on), else its class's. */
#define RW_CALL(l, glibc_call, ...)                                              \
	({                                                                       \
		const struct swap_rwclass *c_ = rw_class(l);                     \
		c_ ? rw_acquire(l, c_, __VA_ARGS__) : rw_counted(glibc_call);    \
	})
#define RWLOCK_SIDE(side, write)                                                             \
	EXPORT int SWAPPED(pthread_rwlock_##side##lock)(pthread_rwlock_t *l)                 \
	{                                                                                    \
		return RW_CALL(l, GLIBC_CALL(rw_##side##lock, 0, l), write, H_LOCK, 0,       \
			       NULL);                                                        \
	}                                                                                    \
	EXPORT int SWAPPED(pthread_rwlock_try##side##lock)(pthread_rwlock_t *l)              \
	{                                                                                    \
		return RW_CALL(l, GLIBC_CALL(rw_try##side##lock, 0, l), write, H_TRY, 0,     \
			       NULL);                                                        \
	}                                                                                    \
	EXPORT int SWAPPED(pthread_rwlock_timed##side##lock)(pthread_rwlock_t *l,            \
							       const struct timespec *abs)   \
	{                                                                                    \
		return RW_CALL(l, GLIBC_CALL(rw_timed##side##lock, 0, l, abs), write,        \
			       H_TIMED, CLOCK_REALTIME, abs);                                \
	}                                                                                    \
	EXPORT int SWAPPED(pthread_rwlock_clock##side##lock)(pthread_rwlock_t *l, clockid_t clk, \
							       const struct timespec *abs)   \
	{                                                                                    \
		if (!rw_class(l) && swap_can_call_real() && !swap_real.rw_clock##side##lock) \
			return ENOSYS;                                                       \
		return RW_CALL(l, GLIBC_CALL(rw_clock##side##lock, 0, l, clk, abs), write,   \
			       H_TIMED, clk, abs);                                           \
	}

RWLOCK_SIDE(rd, 0)
RWLOCK_SIDE(wr, 1)
#undef RWLOCK_SIDE
#undef RW_CALL
