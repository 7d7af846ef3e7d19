/*
 * ll.c: slow paths of the `ll` mutex (word and protocol drawn in locklab/locks/ll.h).
 *
 * Roles of a waiting thread:
 *   poller    a newcomer that found the lock held while fewer than
 *             max_pollers poll it: looks at the lock between PAUSEs (a
 *             budget per lock, off where the holder re-acquires back to
 *             back), then between sched_yield calls for up to spin_ns (and
 *             while nobody is parked, for at most rotation_ns of wall
 *             time), and takes it when free.  Pollers stay runnable, so the
 *             scheduler spreads them over the CPUs and the work the holder
 *             does outside the lock runs beside the next critical section
 *             (work-conserving).
 *   heir      at most one (plus, for a moment, the previous one, whose grant
 *             is on its way; parities tell them apart): asleep on `state`
 *             (SLEEPING: the next release wakes it) or napping; the only
 *             waiter a release ever wakes.  The holder times its own turn
 *             and, when it is over, grants the lock to the heir.
 *   parked    everyone else, in the parking lot (park.c): FIFO, each on
 *             its own node, woken one at a time by name to become the heir.
 *             They neither spin nor wake on unlock: this is the concurrency
 *             restriction that keeps the holder running with few runnable
 *             threads around it.
 *
 * Two rules keep the pollers from undoing the restriction where the lock is
 * the bottleneck (a holder re-acquiring back to back):
 *   a thread that granted the lock at the end of its turn parks behind the
 *     queue at its next contended arrival instead of polling (it would take
 *     the lock back from the heir it just handed it to);
 *   a thread that has not parked for rotation_ns parks behind the queue at
 *     its next contended arrival when others are parked (the pollers rotate
 *     with the queue).
 *
 * Invariant: PARKED implies HEIR (a heir exists, or was just promoted), so
 * every parked thread has someone who will promote it.
 *
 * The heir sleeps on `state`, never on `locked`: `locked` goes 1 -> 0 -> 1
 * in nanoseconds (release, fast-path CAS), so a sleeper comparing it with 1
 * could miss a whole release (ABA).  `state` cannot return to a value the
 * heir saw: only the heir sets SLEEPING, and the wake clears it.  (Napping
 * on `locked` is safe: the nap ends at the turn whatever happens.)
 */
#include <limits.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "locklab/locks/ll.h"
#include "locks/algo.h"
#include "core/cpus.h"
#include "core/futex_sys.h"
#include "locks/ll/park.h"

int ll_ll_unlock_fences;
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

/* The thread's own bookkeeping of the rules above (not per lock: one each). */
static _Thread_local const ll_ll_t *granted_last __attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t active_since __attribute__((tls_model("initial-exec")));

/* The pollers a lock allows when its knob says -1: 32 per CPU the process may use, less one. */
static int auto_pollers;
static pthread_once_t auto_pollers_once = PTHREAD_ONCE_INIT;

static void count_auto_pollers(void)
{
	int cpus = ll_cpus_usable();
	auto_pollers = cpus >= 8 ? 255 : 32 * cpus - 1;
}

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

static int ns_knob_fits(int64_t ns)
{
	return ns >= 0 && ns <= LL_LL_MAX_NS;
}

int ll_ll_init(ll_ll_t *l, const struct ll_ll_config *cfg)
{
	struct ll_ll_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(ll, cfg, def);
	/* A config built without the knob table (a C caller's) must still fit the fields. */
	if (!ns_knob_fits(cfg->handoff_ns) || !ns_knob_fits(cfg->rotation_ns) ||
	    !ns_knob_fits(cfg->min_turn_ns) || cfg->turn_cost_ratio < 0 ||
	    cfg->turn_cost_ratio > UINT16_MAX || cfg->pollers < -1 || cfg->pollers > UINT8_MAX ||
	    cfg->pause_ns < 0 || cfg->pause_ns > LL_LL_MAX_PAUSE_NS)
		return EINVAL;
	pthread_once(&membarrier_once, membarrier_register);
	pthread_once(&auto_pollers_once, count_auto_pollers);
	memset(l, 0, sizeof(*l));   /* the holder's bookkeeping starts at zero */
	atomic_init(&l->locked, LL_LL_FREE);
	atomic_init(&l->state, 0);
	l->spin = (uint8_t)cfg->spin;
	l->spin_iters = ll_spin_iters(l->spin, cfg->spin_ns);
	uint32_t pause_looks = ll_spin_iters(LL_SPIN_PAUSE, cfg->pause_ns);
	l->max_pause_looks = (uint16_t)(pause_looks > UINT16_MAX ? UINT16_MAX : pause_looks);
	atomic_init(&l->pause_looks, l->max_pause_looks);
	l->handoff_ns = (uint32_t)cfg->handoff_ns;
	l->rotation_ns = (uint32_t)cfg->rotation_ns;
	l->min_turn_ns = (uint32_t)cfg->min_turn_ns;
	l->max_pollers = (uint8_t)(cfg->pollers < 0 ? auto_pollers : cfg->pollers);
	atomic_init(&l->pollers, 0);
	l->turn_cost_ratio = (uint16_t)cfg->turn_cost_ratio;
	atomic_init(&l->handoff_cost, 0);
	return 0;
}

static unsigned parity_of(unsigned s)
{
	return (s & LL_LL_PARITY) ? 1 : 0;
}

/* The heir is the one of this parity (who >= 0), or there is a heir at all (who < 0). */
static int heir_is(unsigned s, int who)
{
	return (s & LL_LL_HEIR) && (who < 0 || parity_of(s) == (unsigned)who);
}

/* Clear `bits` in state; returns the value before. */
static unsigned state_clear(ll_ll_t *l, unsigned bits)
{
	return atomic_fetch_and_explicit(&l->state, ~bits, memory_order_acq_rel);
}

/*
 * However costly handoffs are, the handoff floor never stretches a rotation past
 * this (fairness over a second); min_turn_ns still holds for the longest queues.
 */
enum { MAX_ROTATION_NS = 125000000 };

/*
 * The shortest turn: min_turn_ns, or turn_cost_ratio handoffs' worth of
 * time if that is longer.  A handoff leaves the lock idle until the grantee
 * runs (ll_ll_t.handoff_cost, timed as the lock runs), and what that costs
 * depends on the machine: a wake-up's latency on a quiet host, far more
 * where a woken thread lands behind the holder on its CPU.  The floor keeps the idle share of a turn
 * under 1 / turn_cost_ratio wherever it runs.
 */
static uint64_t min_turn(const ll_ll_t *l)
{
	uint64_t cost = atomic_load_explicit(&l->handoff_cost, memory_order_relaxed);
	uint64_t least = cost * l->turn_cost_ratio;
	return least > l->min_turn_ns ? least : l->min_turn_ns;
}

/*
 * The heir's turn, the time a holder keeps the lock once a heir waits.  With
 * `queued` waiters behind the heir, a whole rotation of the queue should take
 * about rotation_ns, so the turn shrinks as the queue grows, but never below
 * min_turn() nor above handoff_ns.
 */
static uint64_t turn_ns(const ll_ll_t *l, uint32_t queued)
{
	uint64_t t = l->handoff_ns;
	if (queued && l->rotation_ns) {
		uint64_t share = l->rotation_ns / ((uint64_t)queued + 1);
		uint64_t least = min_turn(l), fair = MAX_ROTATION_NS / ((uint64_t)queued + 1);
		if (least > fair)
			least = fair > l->min_turn_ns ? fair : l->min_turn_ns;
		if (share < t)
			t = share > least ? share : least;
		if (t > l->handoff_ns)
			t = l->handoff_ns;
	}
	return t;
}

/*
 * Move the heir role on, if the heir is `who` (a parity; -1: whoever it is):
 * to the oldest parked waiter, promoted by name with the other parity, or
 * nowhere (HEIR cleared).  0 when the heir is not `who`.  Otherwise 1,
 * *was = the state it left (its parity), *queued = the waiters still parked.
 *
 * HEIR is cleared only while PARKED is clear (the invariant); PARKED changes
 * only with the bucket held, so under the bucket the queue and the bit agree.
 *
 * *wake: the promoted waiter's word, for the caller to ll_park_wake() (a
 * grantor first publishes the grant); NULL when nobody was promoted.
 */
static int pass_heir_wake_later(ll_ll_t *l, int who, unsigned *was, uint32_t *queued,
				atomic_uint **wake)
{
	unsigned s = atomic_load_explicit(&l->state, memory_order_relaxed);

	*queued = 0;
	*wake = NULL;
	for (;;) {
		if (!heir_is(s, who))
			return 0;
		if (s & LL_LL_PARKED)
			break;
		if (atomic_compare_exchange_weak_explicit(&l->state, &s,
							  s & ~(LL_LL_HEIR | LL_LL_SLEEPING),
							  memory_order_acq_rel, memory_order_relaxed)) {
			*was = s;
			return 1;
		}
	}

	struct ll_park_bucket *b = ll_park_lock(l);
	struct ll_park_node *next;
	int more;
	s = atomic_load_explicit(&l->state, memory_order_relaxed);
	for (;;) {
		if (!heir_is(s, who)) {
			ll_park_unlock(b);
			return 0;
		}
		next = ll_park_first(b, l, &more);
		unsigned to = next ? (s & ~(LL_LL_SLEEPING | LL_LL_PARKED)) ^ LL_LL_PARITY
				   : s & ~(LL_LL_HEIR | LL_LL_SLEEPING);
		if (next && more)
			to |= LL_LL_PARKED;
		if (atomic_compare_exchange_weak_explicit(&l->state, &s, to, memory_order_acq_rel,
							  memory_order_relaxed))
			break;
	}
	*was = s;
	if (!next) {
		/* The last waiter timed out since our look: PARKED was already clear. */
		ll_park_unlock(b);
		return 1;
	}
	ll_park_remove(b, next);
	*queued = ll_park_count(b);
	next->queue_len = *queued;
	next->parity = parity_of(s) ^ 1;
	/* From this store on the node may be gone: keep its address only. */
	*wake = &next->word;
	atomic_store_explicit(*wake, 1, memory_order_release);
	ll_park_unlock(b);
	return 1;
}

static int pass_heir(ll_ll_t *l, int who, unsigned *was, uint32_t *queued)
{
	atomic_uint *wake;
	if (!pass_heir_wake_later(l, who, was, queued, &wake))
		return 0;
	if (wake)
		ll_park_wake(wake);
	return 1;
}

/*
 * The next holder's turn (plain fields: only the holder writes them).  A
 * grantor sets the length, the grantee the start when it takes the lock:
 * the time the grantee took to run is not its turn.
 */
static void set_turn(ll_ll_t *l, uint32_t queued)
{
	l->turn_len = (uint32_t)turn_ns(l, queued);  /* <= handoff_ns */
}

static void start_turn(ll_ll_t *l)
{
	l->turn_start = ll_now_ns();
}

/*
 * A granted lock taken: the turn starts, and the time the lock stood granted
 * but idle joins the handoff cost's running average (weight 1/8).  The
 * grantor's grant_ts is ours to read: our acquire of the grant follows its
 * release store.
 */
static void start_granted_turn(ll_ll_t *l)
{
	start_turn(l);
	uint64_t avg = atomic_load_explicit(&l->handoff_cost, memory_order_relaxed);
	atomic_store_explicit(&l->handoff_cost, (unsigned)ll_handoff_avg(avg, l->grant_ts, l->turn_start),
			      memory_order_relaxed);
}

/*
 * Set and clear the heir-owned bit (SLEEPING) while we are the heir of
 * `parity`; the new state, or 0 when we are not the heir any more.
 */
static unsigned heir_mark(ll_ll_t *l, unsigned parity, unsigned set, unsigned clear)
{
	unsigned s = atomic_load_explicit(&l->state, memory_order_relaxed), to;
	do {
		if (!heir_is(s, (int)parity))
			return 0;
		to = (s | set) & ~clear;
	} while (to != s && !atomic_compare_exchange_weak_explicit(&l->state, &s, to,
								   memory_order_acq_rel,
								   memory_order_relaxed));
	return to;
}

/*
 * The heir left the role by a grant: wait for the lock that is on its way
 * (its store follows the grantor's state change within instructions, unless
 * the grantor is preempted in between: then give it the CPU).
 */
static void take_grant(ll_ll_t *l, unsigned parity)
{
	for (uint32_t i = 0;; i++) {
		unsigned expect = LL_LL_GRANTED + parity;
		if (atomic_compare_exchange_weak_explicit(&l->locked, &expect, LL_LL_HELD,
							  memory_order_acquire, memory_order_relaxed)) {
			start_granted_turn(l);
			return;
		}
		ll_spin_wait(i < 100 ? LL_SPIN_PAUSE : LL_SPIN_YIELD);
	}
}

/* The previous heir's grant is still to be taken. */
static int grant_pending(ll_ll_t *l, unsigned parity)
{
	return atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_GRANTED + (parity ^ 1);
}

/* The earlier of t and the caller's deadline, as an absolute time. */
static struct timespec until_ns(uint64_t t, const struct timespec *abs_mono)
{
	if (abs_mono && ll_timespec_ns(abs_mono) < t)
		t = ll_timespec_ns(abs_mono);
	return ll_ns_timespec(t);
}

/*
 * Wait for the previous heir to take its grant: yield (it may share our
 * CPU), and if it does not come, nap on `locked` in short steps (nobody
 * wakes us when it is taken).
 */
static void wait_grant_taken(ll_ll_t *l, unsigned parity)
{
	for (int i = 0; grant_pending(l, parity); i++) {
		if (i < 8) {
			sched_yield();
		} else {
			struct timespec step = until_ns(ll_now_ns() + 50000, NULL);
			ll_sys_futex_wait(&l->locked, LL_LL_GRANTED + (parity ^ 1), &step);
		}
	}
}

/*
 * The heir's deadline passed: leave the role, unless a grant made us the
 * holder.  Not while the previous heir's grant waits: our successor would
 * have that heir's parity, and one bit could no longer tell them apart.
 */
static int heir_timeout(ll_ll_t *l, unsigned parity)
{
	unsigned was;
	uint32_t queued;

	wait_grant_taken(l, parity);
	if (pass_heir(l, (int)parity, &was, &queued))
		return ll_ll_cas_free(l) ? 0 : ETIMEDOUT;
	take_grant(l, parity);
	return 0;
}

enum { NOT_YET, TAKEN, GRANTED };

/* Look at the lock once: take it if free, or if it was granted to us. */
static int heir_look(ll_ll_t *l, unsigned parity)
{
	unsigned v = atomic_load_explicit(&l->locked, memory_order_relaxed);
	if (v == LL_LL_FREE && ll_ll_cas_free(l))
		return TAKEN;
	if (v == LL_LL_GRANTED + parity &&
	    atomic_compare_exchange_strong_explicit(&l->locked, &v, LL_LL_HELD,
						    memory_order_acquire, memory_order_relaxed))
		return GRANTED;
	return NOT_YET;
}

/*
 * The heir: wait until the lock is free or granted to us.  It does not
 * spin (the pollers keep the CPUs busy).  Two ways to sleep:
 *   SLEEPING set: the next release wakes us (the lock may be going idle);
 *   napping: the holder's grant at the end of its turn wakes us, and after
 *     a turn and 50 us we look anyway.  A heir naps only after a wake-up
 *     found the lock taken again: the holder re-acquires back to back, and
 *     waking on its releases would only burn CPU.  Every heir starts
 *     asleep with SLEEPING, a promoted one too: where the lock goes free
 *     between turns (its holders block outside it), the release wakes the
 *     heir, which takes the lock and promotes the next, so the queue drains
 *     at the pace of releases and not of one grant per turn.  (A promoted
 *     heir that napped from the start, taking the queue to mean a busy
 *     lock, would feed the active threads one waiter per turn: too few to
 *     keep the CPUs busy when the holders block outside the lock.)
 */
static int heir_wait(ll_ll_t *l, unsigned parity, const struct timespec *abs_mono,
		     uint32_t queued)
{
	const uint64_t nap_ns = turn_ns(l, queued) + 50000;
	int nap = 0;

	for (;;) {
		int got = heir_look(l, parity);
		if (got == GRANTED) {
			start_granted_turn(l);
			return 0;
		}
		if (got == TAKEN)
			break;
		if (abs_mono && ll_deadline_passed(abs_mono))
			return heir_timeout(l, parity);
		unsigned s = heir_mark(l, parity, 0, 0);   /* still the heir? */
		if (!s) {
			take_grant(l, parity);
			return 0;
		}
		if (nap) {
			struct timespec until = until_ns(ll_now_ns() + nap_ns, abs_mono);
			ll_sys_futex_wait(&l->state, s, &until);
			continue;
		}
		if (grant_pending(l, parity)) {
			/* The previous heir's grant, not yet taken: let it run (it may share our CPU). */
			wait_grant_taken(l, parity);
			continue;
		}
		/* SLEEPING, only while we are still the heir (it is the heir's bit). */
		s = heir_mark(l, parity, LL_LL_SLEEPING, 0);
		if (!s)
			continue;
		asymmetric_fence(l);
		if (atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_HELD) {
			if (ll_sys_futex_wait(&l->state, s, abs_mono) == ETIMEDOUT) {
				heir_mark(l, parity, 0, LL_LL_SLEEPING);
				return heir_timeout(l, parity);
			}
			/* Woken: if the word is HELD again, the release was fruitless. */
			nap = atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_HELD;
		}
		/* Whoever woke us cleared the bit; if we did not sleep it is still ours. */
		heir_mark(l, parity, 0, LL_LL_SLEEPING);
	}
	/* Taken while free: nobody passed the role on for us. */
	unsigned was;
	pass_heir(l, (int)parity, &was, &queued);
	set_turn(l, queued);
	start_turn(l);
	return 0;
}

/*
 * A poll's first looks, between PAUSEs: a poller on another CPU than the
 * holder's takes the lock as it is released, without giving its CPU away
 * (a sched_yield that finds another thread to run is a context switch, a
 * few hundred ns of CPU each, once per look).
 *
 * Where the holder re-acquires back to back (one hot lock and no work
 * outside it), such looks lose: each pulls the lock's line from the
 * running holder, and one that finds the word free in the instant of a
 * release takes the lock to another CPU, where the old holder's next
 * acquisition must fetch it back.  Pollers see this happen: the holder's
 * `unlocks` counter moves twice within PAUSE_BACK_TO_BACK looks.  Then the
 * lock's paused looks are off for PAUSE_OFF_US (pause_off, in 1024-ns
 * units of the monotonic clock, modulo 2^32).
 *
 * Otherwise each lock keeps a budget of looks that adapts to what they win
 * (glibc's adaptive mutex keeps a spin count per mutex too, but grows it
 * when spins fail): taken at look k, the budget moves an eighth of the way
 * to 2k; not taken, it loses a quarter.  Every poll takes at least
 * PAUSE_PROBE looks, so a budget at 0 learns again when the lock's pattern
 * changes.  1 when taken.
 */
enum { PAUSE_PROBE = 8, PAUSE_BACK_TO_BACK = 4, PAUSE_OFF_US = 1000 };

static int poll_paused(ll_ll_t *l, uint64_t now, const struct timespec *abs_mono)
{
	uint32_t max = l->max_pause_looks;
	uint32_t now_us = (uint32_t)(now >> 10);
	/* Off when 1..PAUSE_OFF_US units are left: a stale time reads as expired, however old. */
	uint32_t left = atomic_load_explicit(&l->pause_off, memory_order_relaxed) - now_us;
	if (!max || left - 1 < PAUSE_OFF_US)
		return 0;
	uint32_t budget = atomic_load_explicit(&l->pause_looks, memory_order_relaxed);
	uint32_t limit = budget + PAUSE_PROBE < max ? budget + PAUSE_PROBE : max;
	uint32_t k = 0;
	unsigned char u0 = atomic_load_explicit(&l->unlocks, memory_order_relaxed);
	for (uint32_t i = 1; i <= limit; i++) {
		unsigned locked = atomic_load_explicit(&l->locked, memory_order_relaxed);
		unsigned char seen = (unsigned char)(atomic_load_explicit(&l->unlocks, memory_order_relaxed) - u0);
		if (seen >= 2) {
			/* Released and taken again while we looked. */
			if (i <= PAUSE_BACK_TO_BACK)
				atomic_store_explicit(&l->pause_off, now_us + PAUSE_OFF_US, memory_order_relaxed);
			break;
		}
		if (locked == LL_LL_FREE && ll_ll_cas_free(l)) {
			k = i;
			break;
		}
		if ((i & 63) == 0 && abs_mono && ll_deadline_passed(abs_mono))
			break;
		ll_spin_wait(LL_SPIN_PAUSE);
	}
	int32_t b = (int32_t)budget;
	uint32_t next = (uint32_t)(k ? b + (2 * (int32_t)k - b) / 8 : b - (b + 3) / 4);
	if (next > max)
		next = max;
	if (next != budget)
		atomic_store_explicit(&l->pause_looks, (unsigned short)next, memory_order_relaxed);
	return k != 0;
}

/*
 * A poll that has lasted rotation_ns while nobody is parked is over.  On a
 * CPU crowded with runnable threads one sched_yield can give the CPU away
 * for a whole scheduler slice, so spin_ns worth of looks can take hundreds
 * of milliseconds; if every waiter kept polling, nobody would park, the
 * rotation rule (which needs a queue) would never act, and the scheduler
 * alone would share the lock out, unevenly: it charges a yielding thread
 * for the rest of its slice.  This starts the queue; once one exists, the
 * rotation rule moves the pollers through it.
 */
static int poll_overdue(const ll_ll_t *l, uint64_t start)
{
	return l->rotation_ns &&
	       !(atomic_load_explicit(&l->state, memory_order_relaxed) & LL_LL_PARKED) &&
	       ll_now_ns() - start > l->rotation_ns;
}

/*
 * Poll for the lock as one of at most max_pollers: first the paused looks
 * above, then looks between waits of `spin` (sched_yield by default: a
 * poller sharing the holder's CPU gives it the CPU, and on a CPU of its own
 * looks every few hundred ns) for up to spin_ns or the deadline, and while
 * nobody is parked for at most rotation_ns.  1 when taken; 0 when the
 * pollers are full, one of the rules of the file's head sends us to the
 * queue, or the lock stayed held.
 */
static int poll_for_lock(ll_ll_t *l, const struct timespec *abs_mono)
{
	uint64_t now = ll_now_ns();
	if (granted_last == l) {
		/* We ended our turn by a grant: the lock is the heir's now; queue. */
		granted_last = NULL;
		return 0;
	}
	if (!active_since)
		active_since = now;
	if (l->rotation_ns && now - active_since > l->rotation_ns &&
	    (atomic_load_explicit(&l->state, memory_order_relaxed) & LL_LL_PARKED))
		return 0;   /* our time among the pollers is up: behind the queue */

	unsigned short n = atomic_load_explicit(&l->pollers, memory_order_relaxed);
	do {
		if (n >= l->max_pollers)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&l->pollers, &n, (unsigned short)(n + 1),
							memory_order_relaxed, memory_order_relaxed));
	int got = poll_paused(l, now, abs_mono);
	struct ll_spinner s = ll_spinner_start(l->spin);
	uint64_t end = ll_ns_add_sat(now, (uint64_t)((double)l->spin_iters * ll_spin_ns(l->spin)));
	for (uint32_t i = 1; !got; i++) {
		if (atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_FREE &&
		    ll_ll_cas_free(l)) {
			got = 1;
			break;
		}
		/* The clock every 8 looks; at least spin_iters looks (a wait can be longer). */
		if ((i & 7) == 0 && ((i >= l->spin_iters && ll_now_ns() > end) ||
				     (abs_mono && ll_deadline_passed(abs_mono))))
			break;
		if (poll_overdue(l, now))
			break;
		ll_spinner_wait(&s);
	}
	atomic_fetch_sub_explicit(&l->pollers, 1, memory_order_relaxed);
	return got;
}

enum { PROMOTED, TIMEDOUT, RETRY };

/*
 * Queue behind the heir and sleep until promoted (*parity, *queued: ours as
 * heir, and the waiters left behind us then).  RETRY: the heir left before
 * we could queue.
 */
static int park(ll_ll_t *l, const struct timespec *abs_mono, unsigned *parity, uint32_t *queued)
{
	struct ll_park_node node = { .lock = l };
	atomic_init(&node.word, 0);

	struct ll_park_bucket *b = ll_park_lock(l);
	unsigned s = atomic_load_explicit(&l->state, memory_order_relaxed);
	do {
		if (!(s & LL_LL_HEIR)) {
			ll_park_unlock(b);
			return RETRY;
		}
	} while (!atomic_compare_exchange_weak_explicit(&l->state, &s, s | LL_LL_PARKED,
							memory_order_acq_rel, memory_order_relaxed));
	ll_park_enqueue(b, &node);
	ll_park_unlock(b);

	if (ll_park_sleep(&node, abs_mono) == ETIMEDOUT) {
		b = ll_park_lock(l);
		if (!atomic_load_explicit(&node.word, memory_order_acquire)) {
			if (!ll_park_remove(b, &node))
				state_clear(l, LL_LL_PARKED);
			ll_park_unlock(b);
			return TIMEDOUT;
		}
		/* Promoted as the deadline passed: the role is ours to leave. */
		ll_park_unlock(b);
	}
	active_since = ll_now_ns();   /* a fresh time among the pollers */
	*parity = node.parity;
	*queued = node.queue_len;
	return PROMOTED;
}

int ll_ll_lock_slow(ll_ll_t *l, const struct timespec *abs_mono)
{
	unsigned s, parity;
	uint32_t queued;

	if (poll_for_lock(l, abs_mono))
		return 0;
	for (;;) {
		if (abs_mono && ll_deadline_passed(abs_mono))
			return ll_ll_cas_free(l) ? 0 : ETIMEDOUT;
		s = atomic_load_explicit(&l->state, memory_order_relaxed);
		if (!(s & LL_LL_HEIR)) {
			/* No heir means nobody parked (invariant): take the slot, a new parity. */
			unsigned to = (s | LL_LL_HEIR) ^ LL_LL_PARITY;
			if (atomic_compare_exchange_weak_explicit(&l->state, &s, to,
								  memory_order_acq_rel,
								  memory_order_relaxed))
				return heir_wait(l, parity_of(to), abs_mono, 0);
			continue;
		}
		switch (park(l, abs_mono, &parity, &queued)) {
		case PROMOTED:
			return heir_wait(l, parity, abs_mono, queued);
		case TIMEDOUT:
			return ll_ll_cas_free(l) ? 0 : ETIMEDOUT;
		}
	}
}

void ll_ll_unlock_slow(ll_ll_t *l)
{
	/* Only the unlocker that clears SLEEPING wakes: one wake per sleep. */
	if (state_clear(l, LL_LL_SLEEPING) & LL_LL_SLEEPING)
		ll_sys_futex_wake(&l->state, INT_MAX);
}

/*
 * Hand the lock to the heir: the role passes to the next in line, then the
 * word says GRANTED to the old heir's parity, and a sleeping grantee is
 * woken.  0 when the heir left first.
 */
static int grant(ll_ll_t *l)
{
	unsigned was;
	uint32_t queued;
	atomic_uint *promoted;

	if (!pass_heir_wake_later(l, -1, &was, &queued, &promoted))
		return 0;
	/* The grantee's turn, published by the grant's release store. */
	set_turn(l, queued);
	l->grant_ts = ll_now_ns();
	atomic_store_explicit(&l->locked, LL_LL_GRANTED + parity_of(was), memory_order_release);
	ll_sys_futex_wake(&l->state, INT_MAX);
	granted_last = l;   /* our next contended arrival queues (the rules, above) */
	/* The next heir after the grant: the lock is not idle while we wake it. */
	if (promoted)
		ll_park_wake(promoted);
	return 1;
}

void ll_ll_unlock_heir(ll_ll_t *l)
{
	/*
	 * FREE: an unlock by a thread that does not hold the lock (ops.h: the
	 * contract).  A grant would hand the heir a lock a newcomer may take
	 * meanwhile; nothing is released, nothing granted.
	 */
	if (atomic_load_explicit(&l->locked, memory_order_relaxed) == LL_LL_FREE)
		return;
	/* Every 8th unlock with a heir waiting (locklab/locks/ll.h): at the turn's end,
	 * grant it the lock. */
	if (l->handoff_ns && ll_now_ns() - l->turn_start >= l->turn_len && grant(l))
		return;
	ll_ll_release(l);
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_ll_config, spin_ns, 50000, 0, 100000000,
		    "how long a poller polls before it queues, ns"),
	LL_KNOB_INT(struct ll_ll_config, handoff_ns, 1000000, 0, LL_LL_MAX_NS,
		    "longest turn a holder keeps the lock while a heir waits, ns, <= 4 s (0: no handoff)"),
	LL_KNOB_INT(struct ll_ll_config, rotation_ns, 5000000, 0, LL_LL_MAX_NS,
		    "target time for every parked waiter to have a turn, and the longest poll while "
		    "nobody is parked, ns, <= 4 s (0: turns of handoff_ns, polls of spin_ns)"),
	LL_KNOB_INT(struct ll_ll_config, min_turn_ns, 200000, 0, LL_LL_MAX_NS,
		    "shortest turn however long the queue, ns, <= 4 s"),
	LL_KNOB_INT(struct ll_ll_config, pollers, -1, -1, 255,
		    "newcomers that may poll at once instead of queueing (0: none; "
		    "-1: 32 per CPU the process may use, less one, at most 255)"),
	LL_KNOB_INT(struct ll_ll_config, turn_cost_ratio, 100, 0, 1000,
		    "a turn lasts at least this many times a handoff's measured idle time (0: off)"),
	LL_KNOB_SPIN_DEFAULT(struct ll_ll_config, LL_SPIN_YIELD),
	LL_KNOB_INT(struct ll_ll_config, pause_ns, 2000, 0, LL_LL_MAX_PAUSE_NS,
		    "the most a poller looks between PAUSEs before its waits of `spin`, ns "
		    "(each lock adapts its budget below it; 0: none)"),
};

LL_OPS_ADAPTERS(ll, ll_ll_t)

const struct ll_lock_ops ll_ll_ops = {
	.name = "ll",
	.summary = "locklab's mutex: CAS + plain-store unlock, bounded yielding pollers, one heir, "
		   "FIFO parking lot, handoff after a turn scaled to the queue",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_ll_config),
	LL_OPS_FUNCS(ll, ll_ll_t),
};
