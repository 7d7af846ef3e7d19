/*
 * own.c: the project's own rwlock (word, records and bounds drawn in
 * locklab/rw_own.h): per-thread reader slots shared by every lock, a
 * writer-first futex rwlock underneath, BRAVO's bias revocation between them.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>

#include "core/futex_sys.h"
#include "core/mem.h"
#include "locklab/rw_own.h"
#include "locklab/spin.h"
#include "rwlocks/rwalgo.h"

_Static_assert(sizeof(ll_rw_own_t) == 48, "ll_rw_own_t is drawn as 48 bytes in rw_own.h");

#define SLOTS 8
#define ALL_SLOTS ((1u << SLOTS) - 1)
/* A slow hold, recorded in a slot for recursion: writers look for the bare address. */
#define SLOW_TAG ((uintptr_t)1)
/* A revoking writer sleeps at most this long between looks at a slot (a fast
 * unlock's wake can pass its release store, rw_own.h). */
#define REVOKE_TICK_NS 100000u

/* One thread's slots (the line writers scan) and its recursion counts. */
struct rec {
	alignas(64) _Atomic uintptr_t held[SLOTS];
	alignas(64) uint32_t count[SLOTS];
	uint32_t used;                 /* bit i: held[i] is not 0 (the owner's own view) */
	struct rec *next;              /* every record ever made, never unlinked */
	atomic_int taken;              /* a live thread owns it */
};

static _Atomic(struct rec *) records;
static _Thread_local struct rec *self __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* At thread exit: the record goes to the next thread, unless a fast hold is still in it. */
static void thread_gone(void *p)
{
	struct rec *r = p;
	if (r->used)
		return;
	self = NULL;
	atomic_store_explicit(&r->taken, 0, memory_order_release);
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, thread_gone);
}

/* The calling thread's record: a free one, or a new one; NULL when out of memory. */
static __attribute__((noinline)) struct rec *self_register(void)
{
	struct rec *r;
	for (r = atomic_load(&records); r; r = r->next) {
		int free_rec = 0;
		if (atomic_compare_exchange_strong(&r->taken, &free_rec, 1))
			break;
	}
	if (!r) {
		r = ll_mem_alloc(sizeof(*r));
		if (!r)
			return NULL;
		atomic_init(&r->taken, 1);
		struct rec *head = atomic_load(&records);
		do
			r->next = head;
		while (!atomic_compare_exchange_weak(&records, &head, r));
	}
	pthread_once(&exit_key_once, make_exit_key);
	pthread_setspecific(exit_key, r);
	self = r;
	return r;
}

static inline struct rec *self_get(void)
{
	struct rec *r = self;
	return __builtin_expect(r != NULL, 1) ? r : self_register();
}

int ll_rw_own_init(ll_rw_own_t *l, const struct ll_rw_own_config *cfg)
{
	struct ll_rw_own_config def;
	cfg = LL_RW_CONFIG_OR_DEFAULTS(own, cfg, def);
	if (cfg->bias < 0 || cfg->bias > 1 || cfg->inhibit < 0 || cfg->inhibit > UINT16_MAX ||
	    cfg->spin_ns < 0 || cfg->spin_ns > 100000000)
		return EINVAL;
	atomic_init(&l->word, 0);
	atomic_init(&l->bias, cfg->bias ? 1 : 0);
	atomic_init(&l->rseq, 0);
	atomic_init(&l->wseq, 0);
	atomic_init(&l->rwaiting, 0);
	atomic_init(&l->bias_after, 0);
	l->spin_iters = ll_spin_iters(LL_SPIN_PAUSE, cfg->spin_ns);
	l->inhibit = (uint16_t)cfg->inhibit;
	l->bias_on = (uint8_t)cfg->bias;
	return ll_futex_init(&l->wmx, NULL);
}

/* ---- readers ---- */

static void wake_writer(ll_rw_own_t *l)
{
	atomic_fetch_add(&l->wseq, 1);
	ll_sys_futex_wake(&l->wseq, 1);
}

/* A reader counted in rwaiting has entered or given up. */
static void leave_waiting(ll_rw_own_t *l)
{
	if (atomic_fetch_sub(&l->rwaiting, 1) == 1 && (atomic_load(&l->word) & LL_RW_OWN_G))
		wake_writer(l);
}

/* A slow reader leaves. */
static int rd_release(ll_rw_own_t *l)
{
	unsigned v = atomic_fetch_sub_explicit(&l->word, 1, memory_order_release);
	if ((v & LL_RW_OWN_READERS) == 1 && (v & LL_RW_OWN_P))
		wake_writer(l);
	return 0;
}

/* A fast reader leaves its slot (or a fast attempt backs out of it). */
static inline void fast_release(ll_rw_own_t *l, struct rec *r, int i)
{
	r->used &= ~(1u << i);
	atomic_store_explicit(&r->held[i], 0, memory_order_release);
	if (__builtin_expect(atomic_load_explicit(&l->bias, memory_order_relaxed) == 2, 0))
		ll_sys_futex_wake(&l->bias, 1);
}

/* Enter through the word: 0, EBUSY (try), ETIMEDOUT, EAGAIN (reader count full), EINVAL. */
static int rd_slow(ll_rw_own_t *l, const struct timespec *dl, int try)
{
	int waiting = 0, rc = 0;
	uint32_t spun = 0;
	for (;;) {
		unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
		if (!(v & LL_RW_OWN_P)) {
			if ((v & LL_RW_OWN_READERS) == LL_RW_OWN_READERS) {
				rc = EAGAIN;
				break;
			}
			if (atomic_compare_exchange_weak_explicit(&l->word, &v, v + 1,
								  memory_order_acquire,
								  memory_order_relaxed))
				break;
			continue;
		}
		if (try) {
			rc = EBUSY;
			break;
		}
		if (!waiting && spun < l->spin_iters) {
			/* A writer's section is often shorter than a sleep and a wake. */
			spun++;
			ll_spin_wait(LL_SPIN_PAUSE);
			continue;
		}
		if (!waiting) {
			/* Counted before the last look: the next writer lets us in first. */
			atomic_fetch_add(&l->rwaiting, 1);
			waiting = 1;
			continue;
		}
		unsigned s = atomic_load(&l->rseq);
		if (!(atomic_load(&l->word) & LL_RW_OWN_P))
			continue;
		int w = ll_sys_futex_wait(&l->rseq, s, dl);
		if (w == EINVAL) {
			rc = EINVAL;
			break;
		}
		if (w == ETIMEDOUT && (atomic_load(&l->word) & LL_RW_OWN_P)) {
			rc = ETIMEDOUT;
			break;
		}
	}
	if (waiting)
		leave_waiting(l);
	return rc;
}

/* After a slow entry: bias back on once the last revocation's inhibit time is over. */
static void bias_maybe_on(ll_rw_own_t *l)
{
	if (l->bias_on && atomic_load_explicit(&l->bias, memory_order_relaxed) == 0 &&
	    ll_now_ns() >= atomic_load_explicit(&l->bias_after, memory_order_relaxed))
		atomic_store(&l->bias, 1);
}

static inline int rd(ll_rw_own_t *l, const struct timespec *dl, int try)
{
	const uintptr_t me = (uintptr_t)l;
	struct rec *r = self_get();
	int free_i = -1;
	if (__builtin_expect(r != NULL, 1)) {
		/* Recursion: only the slots in use can hold this lock. */
		for (uint32_t u = r->used; u; u &= u - 1) {
			int i = __builtin_ctz(u);
			uintptr_t v = atomic_load_explicit(&r->held[i], memory_order_relaxed);
			if (v == me) {
				r->count[i]++;
				return 0;
			}
			if (v == (me | SLOW_TAG)) {
				/* Held already: enter even past a waiting writer. */
				if ((atomic_load_explicit(&l->word, memory_order_relaxed) &
				     LL_RW_OWN_READERS) == LL_RW_OWN_READERS)
					return EAGAIN;
				atomic_fetch_add_explicit(&l->word, 1, memory_order_relaxed);
				r->count[i]++;
				return 0;
			}
		}
		uint32_t free_mask = ~r->used & ALL_SLOTS;
		free_i = free_mask ? __builtin_ctz(free_mask) : -1;
		if (free_i >= 0 && atomic_load_explicit(&l->bias, memory_order_relaxed) == 1) {
			/* Seen by a revoking writer's scan, or we see its bias cleared. */
			r->used |= 1u << free_i;
			atomic_store(&r->held[free_i], me);
			if (__builtin_expect(atomic_load(&l->bias) == 1, 1)) {
				r->count[free_i] = 1;
				return 0;
			}
			fast_release(l, r, free_i);
		}
	}
	int rc = rd_slow(l, dl, try);
	if (rc)
		return rc;
	if (free_i >= 0) {
		r->used |= 1u << free_i;
		atomic_store_explicit(&r->held[free_i], me | SLOW_TAG, memory_order_relaxed);
		r->count[free_i] = 1;
	}
	bias_maybe_on(l);
	return 0;
}

int ll_rw_own_rdlock(ll_rw_own_t *l)
{
	return rd(l, NULL, 0);
}

int ll_rw_own_tryrdlock(ll_rw_own_t *l)
{
	return rd(l, NULL, 1);
}

int ll_rw_own_timedrdlock(ll_rw_own_t *l, const struct timespec *abs_mono)
{
	return rd(l, abs_mono, 0);
}

/* ---- writers ---- */

typedef int (*wr_cond)(ll_rw_own_t *l);

static int no_waiting_readers(ll_rw_own_t *l)
{
	return atomic_load(&l->rwaiting) == 0;
}

static int no_slow_readers(ll_rw_own_t *l)
{
	return (atomic_load_explicit(&l->word, memory_order_acquire) & LL_RW_OWN_READERS) == 0;
}

/* The wmx holder waits on wseq until cond: 0, ETIMEDOUT or EINVAL. */
static int writer_wait(ll_rw_own_t *l, wr_cond cond, const struct timespec *dl)
{
	for (uint32_t i = 0; i < l->spin_iters; i++) {
		if (cond(l))
			return 0;
		ll_spin_wait(LL_SPIN_PAUSE);
	}
	for (;;) {
		unsigned s = atomic_load(&l->wseq);
		if (cond(l))
			return 0;
		int w = ll_sys_futex_wait(&l->wseq, s, dl);
		if (w == EINVAL)
			return EINVAL;
		if (w == ETIMEDOUT)
			return cond(l) ? 0 : ETIMEDOUT;
	}
}

/* Until the fast reader in slot has left: 0 (bias 0), or ETIMEDOUT. */
static int wait_fast_reader(ll_rw_own_t *l, _Atomic uintptr_t *slot, const struct timespec *dl)
{
	const uintptr_t me = (uintptr_t)l;
	for (uint32_t i = 0; i < l->spin_iters; i++) {
		if (atomic_load(slot) != me)
			return 0;
		ll_spin_wait(LL_SPIN_PAUSE);
	}
	uint64_t end = dl ? ll_timespec_ns(dl) : UINT64_MAX;
	for (;;) {
		atomic_store(&l->bias, 2);
		if (atomic_load(slot) != me)
			break;
		uint64_t now = ll_now_ns();
		if (now >= end)
			return ETIMEDOUT;
		struct timespec tick = ll_ns_timespec(end - now < REVOKE_TICK_NS ? end
						      : now + REVOKE_TICK_NS);
		ll_sys_futex_wait(&l->bias, 2, &tick);
	}
	atomic_store(&l->bias, 0);
	return 0;
}

/*
 * The writer holds P with no slow reader inside: turn bias off and wait for
 * every fast reader of this lock to leave.  try: EBUSY at the first one
 * found; a failure leaves bias on.
 */
static int revoke_bias(ll_rw_own_t *l, const struct timespec *dl, int try)
{
	const uintptr_t me = (uintptr_t)l;
	uint64_t t0 = ll_now_ns();
	atomic_store(&l->bias, 0);
	for (struct rec *r = atomic_load(&records); r; r = r->next)
		for (int i = 0; i < SLOTS; i++) {
			if (atomic_load(&r->held[i]) != me)
				continue;
			int rc = try ? EBUSY : wait_fast_reader(l, &r->held[i], dl);
			if (rc) {
				/*
				 * Bias back on: the fast readers still in their slots
				 * hold the lock, and a writer that saw bias off would
				 * not look for them.  None got in while it was off.
				 */
				atomic_store(&l->bias, 1);
				return rc;
			}
		}
	uint64_t now = ll_now_ns();
	atomic_store_explicit(&l->bias_after, now + (uint64_t)l->inhibit * (now - t0),
			      memory_order_relaxed);
	return 0;
}

/* Give P up (a writer's release, or one that gave up): wake the readers it blocked. */
static void release_p(ll_rw_own_t *l)
{
	atomic_fetch_and_explicit(&l->word, ~LL_RW_OWN_P, memory_order_seq_cst);
	if (atomic_load(&l->rwaiting)) {
		atomic_fetch_add(&l->rseq, 1);
		ll_sys_futex_wake(&l->rseq, INT_MAX);
	}
}

/* 1 if the calling thread holds a read lock of l that its slots know of. */
static int reads_it(ll_rw_own_t *l)
{
	struct rec *r = self;
	for (uint32_t u = r ? r->used : 0; u; u &= u - 1)
		if ((atomic_load_explicit(&r->held[__builtin_ctz(u)], memory_order_relaxed) &
		     ~SLOW_TAG) == (uintptr_t)l)
			return 1;
	return 0;
}

static int wr(ll_rw_own_t *l, const struct timespec *dl, int try)
{
	if (reads_it(l))
		return EDEADLK;
	int rc;
	if (try)
		rc = ll_futex_trylock(&l->wmx);
	else if (dl)
		rc = ll_futex_timedlock(&l->wmx, dl);
	else
		rc = (ll_futex_lock(&l->wmx), 0);
	if (rc)
		return rc;
	if (try) {
		unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
		if ((v & LL_RW_OWN_READERS) ||
		    !atomic_compare_exchange_strong(&l->word, &v, v | LL_RW_OWN_P)) {
			ll_futex_unlock(&l->wmx);
			return EBUSY;
		}
	} else {
		if (atomic_load(&l->rwaiting)) {
			/* The readers the last writer blocked go first (rw_own.h: bounds). */
			atomic_fetch_or(&l->word, LL_RW_OWN_G);
			rc = writer_wait(l, no_waiting_readers, dl);
			atomic_fetch_and(&l->word, ~LL_RW_OWN_G);
			if (rc) {
				ll_futex_unlock(&l->wmx);
				return rc;
			}
		}
		atomic_fetch_or(&l->word, LL_RW_OWN_P);
		rc = writer_wait(l, no_slow_readers, dl);
		if (rc)
			goto give_up;
	}
	if (atomic_load_explicit(&l->bias, memory_order_relaxed) != 0) {
		rc = revoke_bias(l, dl, try);
		if (rc)
			goto give_up;
	}
	return 0;
give_up:
	release_p(l);
	ll_futex_unlock(&l->wmx);
	return rc;
}

int ll_rw_own_wrlock(ll_rw_own_t *l)
{
	return wr(l, NULL, 0);
}

int ll_rw_own_trywrlock(ll_rw_own_t *l)
{
	return wr(l, NULL, 1);
}

int ll_rw_own_timedwrlock(ll_rw_own_t *l, const struct timespec *abs_mono)
{
	return wr(l, abs_mono, 0);
}

static inline int unlock(ll_rw_own_t *l)
{
	const uintptr_t me = (uintptr_t)l;
	struct rec *r = self;
	for (uint32_t u = r ? r->used : 0; u; u &= u - 1) {
		int i = __builtin_ctz(u);
		uintptr_t v = atomic_load_explicit(&r->held[i], memory_order_relaxed);
		if (v == me) {
			if (--r->count[i] == 0)
				fast_release(l, r, i);
			return 0;
		}
		if (v == (me | SLOW_TAG)) {
			if (--r->count[i] == 0) {
				r->used &= ~(1u << i);
				atomic_store_explicit(&r->held[i], 0, memory_order_relaxed);
			}
			return rd_release(l);
		}
	}
	unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
	if (v & LL_RW_OWN_READERS)
		return rd_release(l);   /* a slow hold no slot recorded (all 8 were in use) */
	if (!(v & LL_RW_OWN_P))
		return EPERM;
	release_p(l);
	ll_futex_unlock(&l->wmx);
	return 0;
}

int ll_rw_own_unlock(ll_rw_own_t *l)
{
	return unlock(l);
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_rw_own_config, bias, 1, 0, 1,
		    "1: readers take per-thread slots while no writer is active; 0: never"),
	LL_KNOB_INT(struct ll_rw_own_config, inhibit, 9, 0, UINT16_MAX,
		    "after a revocation taking T, no fast reads for inhibit x T"),
	LL_KNOB_INT(struct ll_rw_own_config, spin_ns, 2000, 0, 100000000,
		    "nanoseconds a waiting writer or reader polls before it sleeps"),
};

LL_RW_STATIC_ADAPTERS(ll_rw_own_init, ll_rw_own_destroy)

const struct ll_rwlock_ops ll_rw_own_ops = {
	.name = "ll",
	.summary = "per-thread reader slots while no writer (BRAVO bias), writer-first futex "
		   "rwlock underneath, 48 bytes",
	.flags = LL_ALGO_PARKS,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_rw_own_config),
	LL_RW_STATIC_FUNCS(ll_rw_own_t),
};
