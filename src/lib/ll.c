/*
 * ll.c: slow paths of the `ll` mutex (word and protocol drawn in ll.h).
 *
 * Roles of a waiting thread:
 *   newcomer  arrived to a held lock; spins spin_ns if there is no heir.
 *   heir      at most one: awake or asleep on `locked`, the only waiter the
 *             unlocker ever wakes; after handoff_ns it is given the lock.
 *   parked    everyone else, asleep on `state` in FIFO order, woken one at a
 *             time to become the heir.  They neither spin nor wake on
 *             unlock: this is the concurrency restriction that keeps the
 *             holder running with few runnable threads around it.
 *
 * Invariant: parked > 0 implies HEIR (a heir exists or is being promoted),
 * so every parked thread has someone who will promote it.
 *
 * Everyone sleeps on `state`, never on `locked`: `locked` goes 1 -> 0 -> 1
 * in nanoseconds (release, fast-path CAS), so a sleeper comparing it with 1
 * could miss a whole release (ABA).  `state` cannot return to a value a
 * sleeper saw: only the heir sets SLEEPING, and the wake clears it.  Futex
 * bitsets keep the two kinds of sleeper apart: a release wakes the heir,
 * a promotion wakes the oldest parked waiter.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "locklab/ll.h"
#include "algo.h"
#include "futex_sys.h"

enum { WAKE_HEIR = 1u << 0, WAKE_PARKED = 1u << 1 };

int ll_ll_unlock_fences;
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

static void membarrier_register(void)
{
	/* Registration is per process and once; without it the unlock must fence. */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
		ll_ll_unlock_fences = 1;
}

/* Order our SLEEPING store before our next load against every unlocker's store->load. */
static void asymmetric_fence(ll_ll_t *l)
{
	if (ll_ll_unlock_fences || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		ll_ll_store_load_barrier(l, 1);
}

int ll_ll_init(ll_ll_t *l, const struct ll_ll_config *cfg)
{
	struct ll_ll_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(ll, cfg, def);
	pthread_once(&membarrier_once, membarrier_register);
	atomic_init(&l->locked, LL_LL_FREE);
	atomic_init(&l->state, 0);
	l->spin = (uint8_t)cfg->spin;
	l->spin_iters = ll_spin_iters(l->spin, cfg->spin_ns);
	l->handoff_ns = (uint64_t)cfg->handoff_ns;
	return 0;
}

/* Spin on a read of `locked` until it frees and our CAS wins; 1 when taken. */
static int spin_for_lock(ll_ll_t *l)
{
	for (uint32_t i = 0; i < l->spin_iters; i++) {
		if (atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_FREE &&
		    ll_ll_cas_free(l))
			return 1;
		ll_spin_wait(l->spin);
	}
	return 0;
}

/* Clear `bits` in state; returns the value before. */
static unsigned state_clear(ll_ll_t *l, unsigned bits)
{
	return atomic_fetch_and_explicit(&l->state, ~bits, memory_order_acq_rel);
}

/*
 * The heir leaves its role (it has the lock, or gives up): the oldest parked
 * waiter is promoted to heir, or the slot is freed.  One CAS so that the
 * parked count and HEIR change together (the invariant).
 */
static void heir_resign(ll_ll_t *l)
{
	unsigned s = atomic_load_explicit(&l->state, memory_order_relaxed), next;
	do {
		next = s & ~(LL_LL_HEIR | LL_LL_SLEEPING | LL_LL_HANDOFF);
		if (s >= LL_LL_PARKED_ONE)
			next |= LL_LL_HEIR | LL_LL_PROMOTE;
	} while (!atomic_compare_exchange_weak_explicit(&l->state, &s, next, memory_order_acq_rel,
							memory_order_relaxed));
	if (next & LL_LL_PROMOTE)
		ll_sys_futex_wake_bits(&l->state, 1, WAKE_PARKED);
}

/* Take a GRANTED lock (only the heir may): 1 when taken. */
static int take_grant(ll_ll_t *l)
{
	unsigned expect = LL_LL_GRANTED;
	return atomic_compare_exchange_strong_explicit(&l->locked, &expect, LL_LL_HELD,
						       memory_order_acquire, memory_order_relaxed);
}

/*
 * The heir's deadline passed.  If it had asked for a handoff and an unlocker
 * consumed the request first, the lock is on its way: take it.  Otherwise
 * withdraw, try once more (a release may have raced with the deadline), and
 * resign so that a parked waiter becomes the heir.
 */
static int heir_timeout(ll_ll_t *l, int asked)
{
	unsigned s = state_clear(l, LL_LL_HANDOFF | LL_LL_SLEEPING);
	int got;

	if (asked && !(s & LL_LL_HANDOFF)) {
		/* The grant's store follows its unlocker's clear within instructions. */
		while (!take_grant(l))
			ll_spin_wait(LL_SPIN_YIELD);
		got = 1;
	} else {
		got = ll_ll_cas_free(l);
	}
	heir_resign(l);
	return got ? 0 : ETIMEDOUT;
}

/* The earlier of the heir's turn and the caller's deadline, as an absolute time. */
static struct timespec nap_until(uint64_t turn_ns, const struct timespec *abs_mono)
{
	uint64_t t = turn_ns;
	if (abs_mono && ll_timespec_ns(abs_mono) < t)
		t = ll_timespec_ns(abs_mono);
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000u), .tv_nsec = (long)(t % 1000000000u) };
	return ts;
}

/*
 * The heir: spin; if the lock does not come, sleep.  Two ways to sleep:
 *   SLEEPING set: the next release wakes us (the lock may be going idle);
 *   napping: nobody wakes us before our turn (handoff_ns after we became
 *     heir), chosen after a wake-up found the lock taken again, i.e. the
 *     holder re-acquires back to back and a wake per release would only
 *     burn both CPUs in the kernel.
 * When the turn comes we set HANDOFF and spin for the grant.
 */
static int heir_wait(ll_ll_t *l, const struct timespec *abs_mono)
{
	uint64_t turn = l->handoff_ns ? ll_now_ns() + l->handoff_ns : UINT64_MAX;
	int asked = 0, nap = 0;

	for (;;) {
		if (spin_for_lock(l) || take_grant(l))
			break;
		if (abs_mono && ll_deadline_passed(abs_mono))
			return heir_timeout(l, asked);
		if (!asked && ll_now_ns() >= turn) {
			/* Our turn: the holder hands the lock over at its next unlock. */
			atomic_fetch_or_explicit(&l->state, LL_LL_HANDOFF, memory_order_relaxed);
			asked = 1;
			continue;
		}
		if (nap && !asked) {
			struct timespec until = nap_until(turn, abs_mono);
			ll_sys_futex_wait(&l->locked, LL_LL_HELD, &until);
			continue;
		}
		unsigned s = atomic_fetch_or_explicit(&l->state, LL_LL_SLEEPING,
						      memory_order_acq_rel) | LL_LL_SLEEPING;
		asymmetric_fence(l);
		if (atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_HELD) {
			if (ll_sys_futex_wait_bits(&l->state, s, abs_mono, WAKE_HEIR) == ETIMEDOUT)
				return heir_timeout(l, asked);
			/* Woken by a release: if the word is HELD again, the release was fruitless. */
			nap = atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_HELD;
		}
		/* Whoever woke us cleared the bit; after an early return it is still ours. */
		state_clear(l, LL_LL_SLEEPING);
	}
	heir_resign(l);
	return 0;
}

/* Parked: sleep on `state` until PROMOTE is ours; 0 when promoted, else ETIMEDOUT. */
static int park(ll_ll_t *l, unsigned s, const struct timespec *abs_mono)
{
	for (;;) {
		if (s & LL_LL_PROMOTE) {
			/* Claim the promotion and leave the parked count in one step. */
			if (atomic_compare_exchange_weak_explicit(&l->state, &s,
								  (s & ~LL_LL_PROMOTE) - LL_LL_PARKED_ONE,
								  memory_order_acq_rel,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (ll_sys_futex_wait_bits(&l->state, s, abs_mono, WAKE_PARKED) == ETIMEDOUT) {
			/* Leave the queue, unless a promotion is pending that only we could claim. */
			s = atomic_load_explicit(&l->state, memory_order_relaxed);
			while (!(s & LL_LL_PROMOTE)) {
				if (atomic_compare_exchange_weak_explicit(&l->state, &s,
									  s - LL_LL_PARKED_ONE,
									  memory_order_acq_rel,
									  memory_order_relaxed))
					return ETIMEDOUT;
			}
			continue;
		}
		s = atomic_load_explicit(&l->state, memory_order_relaxed);
	}
}

int ll_ll_lock_slow(ll_ll_t *l, const struct timespec *abs_mono)
{
	unsigned s = atomic_load_explicit(&l->state, memory_order_relaxed);

	/* Newcomers spin only while nobody is heir: with one, they would only steal its turn. */
	if (!(s & LL_LL_HEIR) && spin_for_lock(l))
		return 0;
	for (;;) {
		if (abs_mono && ll_deadline_passed(abs_mono))
			return ll_ll_cas_free(l) ? 0 : ETIMEDOUT;
		s = atomic_load_explicit(&l->state, memory_order_relaxed);
		if (!(s & LL_LL_HEIR)) {
			/* No heir means nobody parked (invariant): take the slot. */
			if (atomic_compare_exchange_weak_explicit(&l->state, &s, s | LL_LL_HEIR,
								  memory_order_acq_rel,
								  memory_order_relaxed))
				return heir_wait(l, abs_mono);
			continue;
		}
		if (!atomic_compare_exchange_weak_explicit(&l->state, &s, s + LL_LL_PARKED_ONE,
							   memory_order_acq_rel, memory_order_relaxed))
			continue;
		if (park(l, s + LL_LL_PARKED_ONE, abs_mono) == ETIMEDOUT)
			return ll_ll_cas_free(l) ? 0 : ETIMEDOUT;
		return heir_wait(l, abs_mono);
	}
}

void ll_ll_unlock_slow(ll_ll_t *l)
{
	/* Only the unlocker that clears SLEEPING wakes: one wake per sleep. */
	if (state_clear(l, LL_LL_SLEEPING) & LL_LL_SLEEPING)
		ll_sys_futex_wake_bits(&l->state, 1, WAKE_HEIR);
}

void ll_ll_unlock_grant(ll_ll_t *l)
{
	/* Consuming HANDOFF commits us: a heir that times out now waits for the grant. */
	if (!(state_clear(l, LL_LL_HANDOFF) & LL_LL_HANDOFF)) {
		/* The heir withdrew between our look and now: release normally. */
		ll_ll_release(l);
		return;
	}
	/*
	 * Grant, then look for a sleeping heir: the same store-then-load as a
	 * release, so a heir setting SLEEPING now either sees GRANTED or is
	 * seen.  Once a turn: a real fence costs nothing here.
	 */
	atomic_store_explicit(&l->locked, LL_LL_GRANTED, memory_order_release);
	ll_ll_store_load_barrier(l, 1);
	if (atomic_load_explicit(&l->state, memory_order_relaxed) & LL_LL_SLEEPING)
		ll_ll_unlock_slow(l);
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_ll_config, spin_ns, 2000, 0, 100000000,
		    "spin before sleeping, ns (newcomers without a heir, and the heir)"),
	LL_KNOB_INT(struct ll_ll_config, handoff_ns, 1000000, 0, 10000000000,
		    "the heir's wait before the lock is handed to it, ns (0: never)"),
	LL_KNOB_SPIN(struct ll_ll_config),
};

LL_OPS_ADAPTERS(ll, ll_ll_t)

const struct ll_lock_ops ll_ll_ops = {
	.name = "ll",
	.summary = "locklab's mutex: CAS + plain-store unlock, one spinning heir, FIFO parking, "
		   "handoff after a bound",
	.flags = LL_ALGO_PARKS,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_ll_config),
	LL_OPS_FUNCS(ll, ll_ll_t),
};
