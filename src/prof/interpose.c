/*
 * interpose.c: the pthread and syscall() entry points, as the program sees them.
 *
 * Every acquisition tries the lock first (glibc's own trylock: one atomic).
 * Success is the fast path: a thread-local countdown for hold sampling and
 * nothing else.  Failure is the slow path: note the lock, capture the stack,
 * read the clock, block in glibc's own lock, read the clock again.
 *
 * Every release reads the lock's own word (its cache line is ours: we hold
 * the lock) to see whether glibc marked a sleeper; only then does it look the
 * lock up, to charge the waiting to this holder (see locks.c).
 *
 * Condvars: glibc reacquires the mutex inside pthread_cond_wait, where no one
 * can time it.  So the wait is done on an internal guard mutex instead and
 * the program's mutex is released and retaken through our own paths:
 *
 *   waiter:   lock G; unlock M; cond_wait(C, G); unlock G; lock M (timed)
 *   signaler: lock G; cond_signal(C); unlock G
 *
 * No wakeup is lost: the waiter holds G from before it releases M until glibc
 * has queued it on C and released G, and a signaler needs G to signal, so a
 * signal sent after M was released finds the waiter queued.  glibc's condvar
 * keeps no tie to the mutex it is given (its waiter queue lives in the
 * condvar), so waiting with G instead of M changes nothing else.
 * Process-shared condvars and mutexes keep glibc's own path.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prof.h"
#include "preload/handoff.h"


#define CALLER() ((uintptr_t)__builtin_return_address(0))
/* The library is built with hidden visibility; these are the program's entry points. */
#define PROF_EXPORT __attribute__((visibility("default")))

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

/* ---------------------------------------------------------------- helpers */

static uint32_t next_countdown(void)
{
	/* xorshift per thread: sampling at a fixed period could alias with a
	 * program that takes its locks in a fixed cycle. */
	uint32_t x = prof_tls.rng ? prof_tls.rng : (uint32_t)(uintptr_t)&prof_tls | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	prof_tls.rng = x;
	uint32_t n = (uint32_t)prof_cfg.hold_every;
	return n / 2 + 1 + x % n;
}

/* Called on 1 acquisition in N: remember when this lock was taken.  Kept out of
 * line so that the fast paths that call it need no stack frame of their own. */
static __attribute__((noinline, cold)) void hold_begin(const void *lock, uint8_t kind,
						      uintptr_t caller)
{
	if (prof_cfg.hold_every <= 0) {
		/* Sampling off, or the configuration not read yet: look again later. */
		prof_tls.hold_countdown = prof_cfg.loaded ? INT32_MAX : 1000;
		return;
	}
	prof_tls.hold_countdown = (int32_t)next_countdown();
	if (prof_tls.busy)
		return;
	prof_tls.busy = 1;
	int saved = errno;
	struct prof_lock *l = prof_lock_find(lock, 1);
	unsigned n = prof_tls.nheld;
	if (n == PROF_HELD) {
		/* Full: a lock released by another thread never closes its sample here.
		 * Drop the oldest rather than stop sampling (and keep every unlock slow). */
		unsigned oldest = 0;
		for (unsigned i = 1; i < n; i++)
			if (prof_tls.held[i].t < prof_tls.held[oldest].t)
				oldest = i;
		prof_tls.held[oldest] = prof_tls.held[--n];
	}
	prof_tls.held[n].lock = lock;
	prof_tls.held[n].key = lock;
	prof_tls.held[n].site = caller;
	if (l) {
		prof_tls.held[n].site = prof_lock_site(l, caller);
		prof_lock_mark_sampled(l, prof_tls.held[n].site);
		if (!prof_lock_is_static(l))
			prof_tls.held[n].key = NULL;
	}
	prof_tls.held[n].kind = kind;
	prof_tls.held[n].t = prof_now();
	prof_tls.nheld = (uint8_t)(n + 1);
	errno = saved;
	prof_tls.busy = 0;
}

static inline void acquired(const void *lock, uint8_t kind, uintptr_t caller)
{
	/* Thread-local countdown: the only work an uncontended acquisition does. */
	if (unlikely(--prof_tls.hold_countdown <= 0))
		hold_begin(lock, kind, caller);
}

/* At release, with busy set: close this lock's sampled hold, if one is open. */
static void hold_end(const void *lock, uintptr_t caller)
{
	for (unsigned i = 0; i < prof_tls.nheld; i++) {
		if (prof_tls.held[i].lock != lock)
			continue;
		uint64_t ns = prof_now() - prof_tls.held[i].t;
		prof_record(PROF_EV_HOLD, prof_tls.held[i].kind, prof_tls.held[i].key,
			    prof_tls.held[i].site, caller, 0, ns, 1);
		prof_tls.held[i] = prof_tls.held[--prof_tls.nheld];
		return;
	}
}

/* After a release that had waiters: charge their waiting to this holder's stack. */
static void charge_holder(struct prof_lock *l, const void *lock, uint8_t kind, uintptr_t caller,
			  uint64_t ns)
{
	uint32_t stack = prof_stack_capture(caller);
	/* Relaxed: a hint for the next waiter to leave (locks.c); any recent value will do. */
	atomic_store_explicit(&l->last_holder, stack, memory_order_relaxed);
	prof_record(PROF_EV_BLAME, kind, lock, prof_lock_site(l, caller), caller, stack, ns, 1);
}

/* A waiter left last with waiter-ns nobody was charged for: the last holder's. */
static void charge_leftover(struct prof_lock *l, const void *lock, uint8_t kind, uint64_t ns)
{
	int depth = 0;
	/* Relaxed: whichever recent holder this reads is a fair owner of the hand-over. */
	uint32_t stack = atomic_load_explicit(&l->last_holder, memory_order_relaxed);
	const uintptr_t *pcs = stack ? prof_stack_get(stack, &depth) : NULL;
	prof_record(PROF_EV_BLAME, kind, lock, prof_lock_site(l, 0), depth ? pcs[0] : 0, stack, ns,
		    0);
}

/*
 * The slow path shared by every blocking call: block() is glibc's call,
 * between two clock reads.  Returns block()'s result.
 */
struct wait_call {
	int (*block)(struct wait_call *);
	void *lock;
	clockid_t clock;
	const struct timespec *abs;
	void *extra;
};

/*
 * No malloc and no lock of the program's here or below: this may run inside the
 * allocator's own critical section (jemalloc locks with pthread mutexes), so every
 * table is pre-mapped memory and every shared slot is claimed with CAS.
 */
static int wait_slow(struct wait_call *w, uint8_t event, uint8_t kind, uintptr_t caller)
{
	if (prof_tls.busy)
		return w->block(w);
	prof_tls.busy = 1;
	int saved = errno;
	uint64_t t0 = prof_now();
	struct prof_thread *t = prof_thread_get();
	if (kind == PROF_MUTEX && t &&
	    __atomic_load_n(&((pthread_mutex_t *)w->lock)->__data.__owner, __ATOMIC_RELAXED) ==
		    t->tid) {
		/* Our own lock: EDEADLK or the program's own deadlock, not contention.
		 * (Relaxed: only we can have written our tid there.) */
		prof_tls.busy = 0;
		errno = saved;
		return w->block(w);
	}
	struct prof_lock *l = prof_lock_find(w->lock, 1);
	uintptr_t site = l ? prof_lock_site(l, caller) : caller;
	uint32_t stack = prof_stack_capture(caller);
	if (l)
		prof_lock_wait_begin(l, t0);
	int r = w->block(w);
	uint64_t t1 = prof_now();
	uint64_t left = l ? prof_lock_wait_end(l, t1) : 0;
	if (r == 0 || r == ETIMEDOUT || r == EOWNERDEAD) {
		prof_record(event, kind, w->lock, site, caller, stack, t1 - t0, 1);
		prof_trace_wait(event, kind, w->lock, site, t0, t1 - t0);
	}
	if (left)
		charge_leftover(l, w->lock, kind, left);
	errno = saved;
	prof_tls.busy = 0;
	if (r == 0 || r == EOWNERDEAD)
		acquired(w->lock, kind, caller);
	return r;
}

/* ------------------------------------------------------------------ mutex */

/*
 * glibc's mutex word (nptl): 0 free, 1 held, 2 held and someone may sleep;
 * robust and PI mutexes hold the owner's tid, bit 31 (FUTEX_WAITERS) set
 * when someone sleeps.  A stale 2 costs one table lookup, no more.
 */
static inline int mutex_may_have_waiters(pthread_mutex_t *m)
{
	/* Relaxed: a hint read while we own the lock; the line is already ours. */
	int w = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
	return w == 2 || w < 0;
}

static inline int mutex_pshared(pthread_mutex_t *m)
{
	return m->__data.__kind & 128;   /* PTHREAD_MUTEX_PSHARED_BIT */
}

static int block_lock(struct wait_call *w) { return REAL(mutex_lock)(w->lock); }
static int block_timed(struct wait_call *w) { return REAL(mutex_timedlock)(w->lock, w->abs); }
static int block_clock(struct wait_call *w)
{
	if (!prof_real.mutex_clocklock)
		return ENOSYS;
	return REAL(mutex_clocklock)(w->lock, w->clock, w->abs);
}

static __attribute__((noinline)) int mutex_contended(pthread_mutex_t *m, uint8_t event,
						     int (*block)(struct wait_call *),
						     clockid_t clk, const struct timespec *abs,
						     uintptr_t caller)
{
	struct wait_call w = { block, m, clk, abs, NULL };
	int r = wait_slow(&w, event, PROF_MUTEX, caller);
	/* Held by us with glibc's word 0: not glibc's lock but liblocklab-swap's, which
	 * leaves the word alone (locklab profile --lock).  Mark it as glibc marks a lock
	 * with sleepers, so that its releases charge their holders (relaxed: a hint). */
	if (r == 0 && __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&m->__data.__lock, 2, __ATOMIC_RELAXED);
	return r;
}

/* Inlined into each entry point: the uncontended lock is the trylock, a
 * countdown and a return, with the slow path's frame set up only when needed. */
static inline __attribute__((always_inline)) int
mutex_acquire(pthread_mutex_t *m, uint8_t event, int (*block)(struct wait_call *), clockid_t clk,
	      const struct timespec *abs, uintptr_t caller)
{
	int r = REAL(mutex_trylock)(m);
	if (likely(r == 0 || r == EOWNERDEAD)) {
		acquired(m, PROF_MUTEX, caller);
		return r;
	}
	if (r != EBUSY)
		return r;
	return mutex_contended(m, event, block, clk, abs, caller);
}

PROF_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	return mutex_acquire(m, PROF_EV_MUTEX, block_lock, 0, NULL, CALLER());
}

PROF_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
	return mutex_acquire(m, PROF_EV_MUTEX, block_timed, 0, abs, CALLER());
}

PROF_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	return mutex_acquire(m, PROF_EV_MUTEX, block_clock, clk, abs, CALLER());
}

PROF_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	int r = REAL(mutex_trylock)(m);
	if (r == 0 || r == EOWNERDEAD)
		acquired(m, PROF_MUTEX, CALLER());
	return r;
}

static int mutex_release_slow(pthread_mutex_t *m, uintptr_t caller)
{
	if (prof_tls.busy)
		return REAL(mutex_unlock)(m);
	prof_tls.busy = 1;
	int saved = errno;
	/* A recursive mutex still held after this unlock is not released. */
	int releases = (m->__data.__kind & 3) != PTHREAD_MUTEX_RECURSIVE_NP || m->__data.__count <= 1;
	if (prof_tls.nheld && releases)
		hold_end(m, caller);
	struct prof_lock *l = NULL;
	uint64_t blame = 0;
	if (releases && mutex_may_have_waiters(m) && (l = prof_lock_find(m, 0)))
		blame = prof_lock_take_blame(l, prof_now());
	int r = REAL(mutex_unlock)(m);
	/* The stack is taken after the release: the waiters need not wait for it. */
	if (blame)
		charge_holder(l, m, PROF_MUTEX, caller, blame);
	errno = saved;
	prof_tls.busy = 0;
	return r;
}

static inline int mutex_release(pthread_mutex_t *m, uintptr_t caller)
{
	if (likely(!prof_tls.nheld) && likely(!mutex_may_have_waiters(m)))
		return REAL(mutex_unlock)(m);
	return mutex_release_slow(m, caller);
}

PROF_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	return mutex_release(m, CALLER());
}

/*
 * A lock's birth and death, noted unless we are already inside the
 * profiler (its own bookkeeping may create locks through libc).
 */
static void note_init(const void *lock, uintptr_t caller)
{
	if (prof_tls.busy)
		return;
	prof_tls.busy = 1;
	prof_lock_note_init(lock, caller);
	prof_tls.busy = 0;
}

static void note_destroy(const void *lock)
{
	if (prof_tls.busy)
		return;
	prof_tls.busy = 1;
	prof_lock_note_destroy(lock);
	prof_tls.busy = 0;
}

PROF_EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	/* The swapper behind us (locklab profile --lock) names the mutex by this call. */
	uintptr_t outer = prof_tls.init_caller;
	prof_tls.init_caller = CALLER();
	int r = REAL(mutex_init)(m, a);
	prof_tls.init_caller = outer;
	if (r == 0)
		note_init(m, CALLER());
	return r;
}

uintptr_t locklab_prof_init_caller(void)
{
	return prof_tls.init_caller;
}

PROF_EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
	int r = REAL(mutex_destroy)(m);
	if (r == 0)
		note_destroy(m);
	return r;
}

/* ----------------------------------------------------------------- rwlock */

/*
 * glibc's rwlock (nptl/pthread_rwlock_common.c): __readers bit 2 is
 * "readers waiting"; __wrphase_futex and __writers_futex have bit 1 set
 * when someone sleeps on them; __writers counts waiting writers below its
 * top (handover) bit.
 */
static inline int rw_may_have_waiters(pthread_rwlock_t *rw)
{
	/* Relaxed: hints only, as for the mutex word. */
	unsigned readers = __atomic_load_n(&rw->__data.__readers, __ATOMIC_RELAXED);
	unsigned writers = __atomic_load_n(&rw->__data.__writers, __ATOMIC_RELAXED);
	unsigned wrphase = __atomic_load_n(&rw->__data.__wrphase_futex, __ATOMIC_RELAXED);
	unsigned wfutex = __atomic_load_n(&rw->__data.__writers_futex, __ATOMIC_RELAXED);
	return (readers & 4) || ((wrphase | wfutex) & 2) || (writers & 0x7fffffffu);
}

static int block_rd(struct wait_call *w) { return REAL(rw_rdlock)(w->lock); }
static int block_wr(struct wait_call *w) { return REAL(rw_wrlock)(w->lock); }
static int block_timedrd(struct wait_call *w) { return REAL(rw_timedrdlock)(w->lock, w->abs); }
static int block_timedwr(struct wait_call *w) { return REAL(rw_timedwrlock)(w->lock, w->abs); }
static int block_clockrd(struct wait_call *w)
{
	if (!prof_real.rw_clockrdlock)
		return ENOSYS;
	return REAL(rw_clockrdlock)(w->lock, w->clock, w->abs);
}
static int block_clockwr(struct wait_call *w)
{
	if (!prof_real.rw_clockwrlock)
		return ENOSYS;
	return REAL(rw_clockwrlock)(w->lock, w->clock, w->abs);
}

static __attribute__((noinline)) int rw_contended(pthread_rwlock_t *rw, int write,
						  int (*block)(struct wait_call *), clockid_t clk,
						  const struct timespec *abs, uintptr_t caller)
{
	struct wait_call w = { block, rw, clk, abs, NULL };
	return wait_slow(&w, write ? PROF_EV_WRITE : PROF_EV_READ, PROF_RWLOCK, caller);
}

/* Inlined, as mutex_acquire. */
static inline __attribute__((always_inline)) int
rw_acquire(pthread_rwlock_t *rw, int write, int (*block)(struct wait_call *), clockid_t clk,
	   const struct timespec *abs, uintptr_t caller)
{
	int r = write ? REAL(rw_trywrlock)(rw) : REAL(rw_tryrdlock)(rw);
	if (likely(r == 0)) {
		acquired(rw, PROF_RWLOCK, caller);
		return 0;
	}
	if (r != EBUSY)
		return r;
	return rw_contended(rw, write, block, clk, abs, caller);
}

PROF_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	return rw_acquire(rw, 0, block_rd, 0, NULL, CALLER());
}

PROF_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	return rw_acquire(rw, 1, block_wr, 0, NULL, CALLER());
}

PROF_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *abs)
{
	return rw_acquire(rw, 0, block_timedrd, 0, abs, CALLER());
}

PROF_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *abs)
{
	return rw_acquire(rw, 1, block_timedwr, 0, abs, CALLER());
}

PROF_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t clk, const struct timespec *abs)
{
	return rw_acquire(rw, 0, block_clockrd, clk, abs, CALLER());
}

PROF_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t clk, const struct timespec *abs)
{
	return rw_acquire(rw, 1, block_clockwr, clk, abs, CALLER());
}

PROF_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	int r = REAL(rw_tryrdlock)(rw);
	if (r == 0)
		acquired(rw, PROF_RWLOCK, CALLER());
	return r;
}

PROF_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	int r = REAL(rw_trywrlock)(rw);
	if (r == 0)
		acquired(rw, PROF_RWLOCK, CALLER());
	return r;
}

static int rw_release_slow(pthread_rwlock_t *rw, uintptr_t caller)
{
	if (prof_tls.busy)
		return REAL(rw_unlock)(rw);
	prof_tls.busy = 1;
	int saved = errno;
	if (prof_tls.nheld)
		hold_end(rw, caller);
	struct prof_lock *l = NULL;
	uint64_t blame = 0;
	if (rw_may_have_waiters(rw) && (l = prof_lock_find(rw, 0)))
		blame = prof_lock_take_blame(l, prof_now());
	int r = REAL(rw_unlock)(rw);
	if (blame)
		charge_holder(l, rw, PROF_RWLOCK, caller, blame);
	errno = saved;
	prof_tls.busy = 0;
	return r;
}

PROF_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	if (likely(!prof_tls.nheld) && likely(!rw_may_have_waiters(rw)))
		return REAL(rw_unlock)(rw);
	return rw_release_slow(rw, CALLER());
}

PROF_EXPORT int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *a)
{
	/* The swapper behind us names the rwlock by this call, as a mutex's. */
	uintptr_t outer = prof_tls.init_caller;
	prof_tls.init_caller = CALLER();
	int r = REAL(rw_init)(rw, a);
	prof_tls.init_caller = outer;
	if (r == 0)
		note_init(rw, CALLER());
	return r;
}

PROF_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *rw)
{
	int r = REAL(rw_destroy)(rw);
	if (r == 0)
		note_destroy(rw);
	return r;
}

/* ---------------------------------------------------------------- condvar */

#define COND_GUARDS 256
/* All-zero is PTHREAD_MUTEX_INITIALIZER in glibc; spelled out for the reader. */
static pthread_mutex_t cond_guards[COND_GUARDS] = { [0 ... COND_GUARDS - 1] =
							    PTHREAD_MUTEX_INITIALIZER };

static inline pthread_mutex_t *cond_guard(const pthread_cond_t *c)
{
	uintptr_t h = (uintptr_t)c;
	h ^= h >> 7;
	h ^= h >> 13;
	return &cond_guards[h % COND_GUARDS];
}

static inline int cond_guarded(pthread_cond_t *c)
{
	/* glibc keeps the process-shared flag in bit 0 of __wrefs (pthread_cond_init); it
	 * never changes after init, so a relaxed read of the word is enough. */
	return prof_cfg.cond && !(__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & 1);
}

struct cond_cancel {
	pthread_mutex_t *guard, *m;
};

/* Cancelled inside the wait: glibc has retaken the guard; give the program its mutex. */
static void cond_cancelled(void *p)
{
	struct cond_cancel *cc = p;
	REAL(mutex_unlock)(cc->guard);
	REAL(mutex_lock)(cc->m);
}

enum cond_how { COND_WAIT, COND_TIMED, COND_CLOCK };

static int cond_call(pthread_cond_t *c, pthread_mutex_t *m, enum cond_how how, clockid_t clk,
		     const struct timespec *abs)
{
	switch (how) {
	case COND_TIMED:
		return REAL(cond_timedwait)(c, m, abs);
	case COND_CLOCK:
		if (!prof_real.cond_clockwait)
			return ENOSYS;
		return REAL(cond_clockwait)(c, m, clk, abs);
	default:
		return REAL(cond_wait)(c, m);
	}
}

static int cond_wait_common(pthread_cond_t *c, pthread_mutex_t *m, enum cond_how how,
			    clockid_t clk, const struct timespec *abs, uintptr_t caller)
{
	(void)REAL(cond_wait);   /* resolves the table, and with it the configuration */
	if (prof_tls.busy || !cond_guarded(c) || mutex_pshared(m))
		return cond_call(c, m, how, clk, abs);
	struct cond_cancel cc = { cond_guard(c), m };
	REAL(mutex_lock)(cc.guard);
	int r = mutex_release(m, caller);
	if (r) {
		REAL(mutex_unlock)(cc.guard);
		return r;
	}
	pthread_cleanup_push(cond_cancelled, &cc);
	r = cond_call(c, cc.guard, how, clk, abs);
	pthread_cleanup_pop(0);
	REAL(mutex_unlock)(cc.guard);
	int r2 = mutex_acquire(m, PROF_EV_COND, block_lock, 0, NULL, caller);
	return r2 ? r2 : r;
}

PROF_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return cond_wait_common(c, m, COND_WAIT, 0, NULL, CALLER());
}

PROF_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
	return cond_wait_common(c, m, COND_TIMED, 0, abs, CALLER());
}

PROF_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
			   const struct timespec *abs)
{
	return cond_wait_common(c, m, COND_CLOCK, clk, abs, CALLER());
}

PROF_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	(void)REAL(cond_signal);
	if (!cond_guarded(c))
		return REAL(cond_signal)(c);
	pthread_mutex_t *g = cond_guard(c);
	REAL(mutex_lock)(g);
	int r = REAL(cond_signal)(c);
	REAL(mutex_unlock)(g);
	return r;
}

PROF_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	(void)REAL(cond_broadcast);
	if (!cond_guarded(c))
		return REAL(cond_broadcast)(c);
	pthread_mutex_t *g = cond_guard(c);
	REAL(mutex_lock)(g);
	int r = REAL(cond_broadcast)(c);
	REAL(mutex_unlock)(g);
	return r;
}

/* ------------------------------------------------------------------ futex */

static int futex_is_wait(int cmd)
{
	return cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET || cmd == FUTEX_LOCK_PI ||
	       cmd == FUTEX_LOCK_PI2 || cmd == FUTEX_WAIT_REQUEUE_PI;
}

static int futex_is_wake(int cmd)
{
	return cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET || cmd == FUTEX_WAKE_OP ||
	       cmd == FUTEX_UNLOCK_PI || cmd == FUTEX_REQUEUE || cmd == FUTEX_CMP_REQUEUE;
}

static long futex_profiled(long a1, long a2, long a3, long a4, long a5, long a6,
			   uintptr_t caller)
{
	int cmd = (int)a2 & FUTEX_CMD_MASK;
	const void *word = (const void *)a1;
	long r;

	if (futex_is_wait(cmd)) {
		prof_tls.busy = 1;
		uint64_t t0 = prof_now();
		struct prof_lock *l = prof_lock_find(word, 1);
		/* Named by its waiter, before it sleeps: a wake while it sleeps would
		 * otherwise name the word after the waker's call site. */
		uintptr_t site = l ? prof_lock_site(l, caller) : caller;
		if (l)
			prof_lock_wait_begin(l, t0);
		r = REAL(syscall)(SYS_futex, a1, a2, a3, a4, a5, a6);
		int e = errno;
		uint64_t t1 = prof_now();
		uint64_t left = l ? prof_lock_wait_end(l, t1) : 0;
		/* EAGAIN: the word changed before we slept: no wait, no event. */
		if (r == 0 || e == ETIMEDOUT || e == EINTR) {
			/* The stack after the wait: taking it before would delay every
			 * EAGAIN, and no lock of ours is held here. */
			prof_record(PROF_EV_FUTEX, PROF_FUTEX, word, site, caller,
				    prof_stack_capture(caller), t1 - t0, 1);
			prof_trace_wait(PROF_EV_FUTEX, PROF_FUTEX, word, site, t0, t1 - t0);
		}
		if (left)
			charge_leftover(l, word, PROF_FUTEX, left);
		prof_tls.busy = 0;
		errno = e;
		return r;
	}
	if (futex_is_wake(cmd)) {
		prof_tls.busy = 1;
		struct prof_lock *l = prof_lock_find(word, 0);
		uint64_t blame = l ? prof_lock_take_blame(l, prof_now()) : 0;
		r = REAL(syscall)(SYS_futex, a1, a2, a3, a4, a5, a6);
		int e = errno;
		if (blame)
			charge_holder(l, word, PROF_FUTEX, caller, blame);
		prof_tls.busy = 0;
		errno = e;
		return r;
	}
	return REAL(syscall)(SYS_futex, a1, a2, a3, a4, a5, a6);
}

PROF_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	/* Six arguments, as glibc's own syscall() passes on whatever was given. */
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (nr != SYS_futex || prof_tls.busy || !prof_cfg.futex)
		return REAL(syscall)(nr, a1, a2, a3, a4, a5, a6);
	return futex_profiled(a1, a2, a3, a4, a5, a6, CALLER());
}

/* ---------------------------------------------------------------- threads */

PROF_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	/* The program is going multi-threaded: start the dump thread if one is wanted
	 * (never in a single-threaded program, which glibc runs without atomics). */
	prof_start_helper();
	return REAL(create)(t, a, fn, arg);
}
