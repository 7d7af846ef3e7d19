/*
 * bravo.c: BRAVO's reader bias over an underlying rwlock of the library
 * (fields, table and protocol drawn in locklab/rwlocks/bravo.h).
 */
#include <errno.h>
#include <stdalign.h>

#include "core/futex_sys.h"
#include "core/mem.h"
#include "locklab/rwlocks/bravo.h"
#include "locklab/bits/spin.h"
#include "rwlocks/rwalgo.h"

_Static_assert(sizeof(ll_rw_bravo_t) == 40, "ll_rw_bravo_t is drawn as 40 bytes in rwlocks/bravo.h");

enum { BIAS_OFF = 0, BIAS_ON = 1, BIAS_SLEEP = 2, BIAS_WOKEN = 3 };

#define TABLE_BITS 12
_Static_assert(LL_RW_BRAVO_TABLE_SLOTS == 1u << TABLE_BITS, "table size");

/* The visible-readers table: slot i holds the lock one reader holds through it. */
static alignas(64) _Atomic uintptr_t table[LL_RW_BRAVO_TABLE_SLOTS];

/* The calling thread's table holds: lock, slot, count (`used`: bit i in use). */
#define HOLDS 8
#define ALL_HOLDS ((1u << HOLDS) - 1)
struct holds {
	const ll_rw_bravo_t *lock[HOLDS];
	uint16_t slot[HOLDS];
	uint32_t count[HOLDS];
	uint32_t used;
};
_Static_assert(sizeof(struct holds) == 120, "drawn as 120 bytes of TLS in rwlocks/bravo.h");
static _Thread_local struct holds mine __attribute__((tls_model("initial-exec")));

/*
 * The knob `under`: every rwlock of rwlocks.def but bravo, in that order.
 * UNDER_SKIP_<id> exists only for bravo and shifts UNDER_CHOOSE's arguments,
 * so that bravo's entry expands to nothing and every other to `name,`.
 */
#define UNDER_SKIP_bravo ~, UNDER_DROP
#define UNDER_KEEP(name) name,
#define UNDER_DROP(name)
#define UNDER_SECOND(a, b, ...) b
#define UNDER_CHOOSE(...) UNDER_SECOND(__VA_ARGS__)
static const char *const under_names[] = {
#define LL_RWLOCK(id, name) UNDER_CHOOSE(UNDER_SKIP_##id, UNDER_KEEP, ~)(name)
#include "rwlocks.def"
#undef LL_RWLOCK
	NULL
};

/* The slot of (this thread, l): the thread's TLS address and the lock's, mixed. */
static inline uint32_t slot_of(const ll_rw_bravo_t *l)
{
	uint64_t h = (uint64_t)(uintptr_t)&mine * 0x9e3779b97f4a7c15u;
	h ^= (uint64_t)(uintptr_t)l * 0xc2b2ae3d27d4eb4fu;
	h ^= h >> 31;
	return (uint32_t)(h >> (64 - TABLE_BITS));
}

int ll_rw_bravo_init(ll_rw_bravo_t *l, const struct ll_rw_bravo_config *cfg)
{
	struct ll_rw_bravo_config def;
	int64_t ucfg[LL_CONFIG_MAX];
	cfg = LL_RW_CONFIG_OR_DEFAULTS(bravo, cfg, def);
	if (cfg->under < 0 || cfg->under >= (int64_t)LL_COUNT(under_names) - 1 ||
	    cfg->inhibit < 0 || cfg->inhibit > 1000 || cfg->spin_ns < 0 ||
	    cfg->spin_ns > 100000000)
		return EINVAL;
	const struct ll_rwlock_ops *ops = ll_rwlock_algo_find(under_names[cfg->under], NULL);
	if (!ops || ops->state_size > LL_RWLOCK_STATE_BYTES)
		return EINVAL;
	l->under = ll_mem_alloc(ops->state_size);
	if (!l->under)
		return ENOMEM;
	ll_rwlock_config_defaults(ops, ucfg);
	int rc = ops->init(l->under, ucfg);
	if (rc) {
		ll_mem_free(l->under, ops->state_size);
		return rc;
	}
	l->under_ops = ops;
	atomic_init(&l->bias, BIAS_ON);
	atomic_init(&l->bias_after, 0);
	l->inhibit = (uint32_t)cfg->inhibit;
	l->spin_iters = ll_spin_iters(LL_SPIN_PAUSE, cfg->spin_ns);
	return 0;
}

/* Twice, or on a zeroed lock: no underlying lock, nothing to free. */
void ll_rw_bravo_destroy(ll_rw_bravo_t *l)
{
	if (!l->under_ops)
		return;
	l->under_ops->destroy(l->under);
	ll_mem_free(l->under, l->under_ops->state_size);
	l->under = NULL;
	l->under_ops = NULL;
}

/* ---- readers ---- */

/* Index of the thread's table hold of l, or -1. */
static inline int hold_of(const ll_rw_bravo_t *l)
{
	for (uint32_t u = mine.used; u; u &= u - 1) {
		int i = __builtin_ctz(u);
		if (mine.lock[i] == l)
			return i;
	}
	return -1;
}

/* Empty the slot; a writer asleep on bias learns of it. */
static inline void slot_release(ll_rw_bravo_t *l, uint32_t s)
{
	atomic_store(&table[s], 0);
	unsigned b = atomic_load(&l->bias);
	if (__builtin_expect(b == BIAS_SLEEP, 0) &&
	    atomic_compare_exchange_strong(&l->bias, &b, BIAS_WOKEN))
		ll_sys_futex_wake(&l->bias, 1);
}

/* try: do not wait; else dl: the deadline of a timed wait, or NULL. */
static inline int rd(ll_rw_bravo_t *l, const struct timespec *dl, int try)
{
	int i = hold_of(l);
	if (i >= 0) {
		mine.count[i]++;
		return 0;
	}
	if (atomic_load_explicit(&l->bias, memory_order_relaxed) == BIAS_ON &&
	    mine.used != ALL_HOLDS) {
		uint32_t s = slot_of(l);
		uintptr_t empty = 0;
		/* Seen by a revoking writer's scan, or we see its bias cleared. */
		if (atomic_compare_exchange_strong(&table[s], &empty, (uintptr_t)l)) {
			if (__builtin_expect(atomic_load(&l->bias) == BIAS_ON, 1)) {
				i = __builtin_ctz(~mine.used & ALL_HOLDS);
				mine.lock[i] = l;
				mine.slot[i] = (uint16_t)s;
				mine.count[i] = 1;
				mine.used |= 1u << i;
				return 0;
			}
			slot_release(l, s);
		}
	}
	const struct ll_rwlock_ops *u = l->under_ops;
	int rc = try ? u->tryrdlock(l->under) : dl ? u->timedrdlock(l->under, dl)
						   : u->rdlock(l->under);
	if (rc)
		return rc;
	/* In through the underlying lock: no writer is inside, bias is 0 or 1. */
	if (atomic_load_explicit(&l->bias, memory_order_relaxed) == BIAS_OFF &&
	    ll_now_ns() >= atomic_load_explicit(&l->bias_after, memory_order_relaxed))
		atomic_store(&l->bias, BIAS_ON);
	return 0;
}

/* ---- writers ---- */

/* Until slot s no longer holds l: 0, ETIMEDOUT or EINVAL (bias left at BIAS_OFF). */
static int wait_slot(ll_rw_bravo_t *l, _Atomic uintptr_t *slot, const struct timespec *dl)
{
	const uintptr_t me = (uintptr_t)l;
	for (uint32_t n = 0; n < l->spin_iters; n++) {
		if (atomic_load(slot) != me)
			return 0;
		ll_spin_wait(LL_SPIN_PAUSE);
	}
	int rc = 0;
	for (;;) {
		atomic_store(&l->bias, BIAS_SLEEP);
		if (atomic_load(slot) != me)
			break;
		int w = ll_sys_futex_wait(&l->bias, BIAS_SLEEP, dl);
		if (w && atomic_load(slot) == me) {
			rc = w;
			break;
		}
	}
	atomic_store(&l->bias, BIAS_OFF);
	return rc;
}

/*
 * The writer holds the underlying lock: turn bias off and wait for every
 * table reader of l.  try: EBUSY at the first one found.  On failure bias
 * is back on (the table readers still hold the lock: a writer that saw bias
 * off would not look for them).
 */
static int revoke_bias(ll_rw_bravo_t *l, const struct timespec *dl, int try)
{
	const uintptr_t me = (uintptr_t)l;
	uint64_t t0 = ll_now_ns();
	atomic_store(&l->bias, BIAS_OFF);
	for (uint32_t s = 0; s < LL_RW_BRAVO_TABLE_SLOTS; s++) {
		if (atomic_load(&table[s]) != me)
			continue;
		int rc = try ? EBUSY : wait_slot(l, &table[s], dl);
		if (rc) {
			atomic_store(&l->bias, BIAS_ON);
			return rc;
		}
	}
	uint64_t now = ll_now_ns(), off;
	if (__builtin_mul_overflow(now - t0, (uint64_t)l->inhibit, &off))
		off = UINT64_MAX;
	atomic_store_explicit(&l->bias_after, ll_ns_add_sat(now, off), memory_order_relaxed);
	return 0;
}

static int wr(ll_rw_bravo_t *l, const struct timespec *dl, int try)
{
	if (hold_of(l) >= 0)
		return EDEADLK;
	const struct ll_rwlock_ops *u = l->under_ops;
	int rc = try ? u->trywrlock(l->under) : dl ? u->timedwrlock(l->under, dl)
						   : u->wrlock(l->under);
	if (rc)
		return rc;
	/* Only a writer holding the underlying lock moves bias off 1. */
	if (atomic_load_explicit(&l->bias, memory_order_relaxed) == BIAS_ON) {
		rc = revoke_bias(l, dl, try);
		if (rc) {
			u->unlock(l->under);
			return rc;
		}
	}
	return 0;
}

static inline int unlock(ll_rw_bravo_t *l)
{
	int i = hold_of(l);
	if (i < 0)
		return l->under_ops->unlock(l->under);
	if (--mine.count[i] == 0) {
		mine.used &= ~(1u << i);
		slot_release(l, mine.slot[i]);
	}
	return 0;
}

unsigned ll_rw_bravo_table_holds(const ll_rw_bravo_t *l)
{
	unsigned n = 0;
	for (uint32_t s = 0; s < LL_RW_BRAVO_TABLE_SLOTS; s++)
		n += atomic_load_explicit(&table[s], memory_order_relaxed) == (uintptr_t)l;
	return n;
}

int ll_rw_bravo_rdlock(ll_rw_bravo_t *l) { return rd(l, NULL, 0); }
int ll_rw_bravo_tryrdlock(ll_rw_bravo_t *l) { return rd(l, NULL, 1); }
int ll_rw_bravo_timedrdlock(ll_rw_bravo_t *l, const struct timespec *t) { return rd(l, t, 0); }
int ll_rw_bravo_wrlock(ll_rw_bravo_t *l) { return wr(l, NULL, 0); }
int ll_rw_bravo_trywrlock(ll_rw_bravo_t *l) { return wr(l, NULL, 1); }
int ll_rw_bravo_timedwrlock(ll_rw_bravo_t *l, const struct timespec *t) { return wr(l, t, 0); }
int ll_rw_bravo_unlock(ll_rw_bravo_t *l) { return unlock(l); }

static const struct ll_knob knobs[] = {
	/* def 0: pthread, the first line of rwlocks.def (test_rwlocks' config checks it). */
	{ "under", "the underlying rwlock: any registered rwlock but bravo",
	  offsetof(struct ll_rw_bravo_config, under), 0, 0, 0, under_names },
	LL_KNOB_INT(struct ll_rw_bravo_config, inhibit, 9, 0, 1000,
		    "after a revocation taking T, no table reads for inhibit x T (BRAVO's N)"),
	LL_KNOB_INT(struct ll_rw_bravo_config, spin_ns, 2000, 0, 100000000,
		    "nanoseconds a revoking writer polls a reader's slot before it sleeps"),
};

LL_RW_STATIC_ADAPTERS(ll_rw_bravo_init, ll_rw_bravo_destroy)

const struct ll_rwlock_ops ll_rw_bravo_ops = {
	.name = "bravo",
	.summary = "BRAVO (ATC'19): readers CAS a slot of a shared 4096-slot table while "
		   "biased, over an underlying rwlock (under=pthread)",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_rw_bravo_config),
	LL_RW_STATIC_FUNCS(ll_rw_bravo_t),
};
