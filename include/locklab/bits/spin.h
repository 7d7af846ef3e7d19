/* Support header: users include locklab/locklab.h and the other entry headers, not bits/. */
/*
 * bits/spin.h: how a spinning thread waits, and what that wait costs here.
 *
 * Every spinning algorithm takes the spin-wait instruction as a policy:
 *   pause  the x86 PAUSE hint (yield on arm64): frees the pipeline for the
 *          sibling hyper-thread and avoids the memory-order machine clear
 *          when the awaited line changes.
 *   none   a compiler barrier only: the tightest loop.
 *   tas    a dummy atomic test-and-set on a private line: the spin-loop study's SPARC
 *          choice, a serialising instruction that keeps the core idle.
 *   yield  sched_yield(): gives the core to a runnable thread, such as a
 *          preempted lock holder or the waiter whose turn it is in a FIFO
 *          lock.
 *   auto   PAUSE while the wait is short, then sched_yield: a wait that
 *          outlasts a few microseconds of PAUSEs means the holder, or the
 *          waiter whose turn it is, is not running, and the core is better
 *          given to it.  A yield that comes back at once says nobody else
 *          wanted this core: PAUSE again.  One that another thread's run
 *          delayed says the core is crowded: the thread's waits for the next
 *          millisecond yield from their first look.  A lock that can wake
 *          its waiters parks them once their core is crowded or they have
 *          yielded a while (ll_spinner_parks): a FIFO lock's next owner
 *          then finds its CPU free of spinners.  Only a wait that keeps
 *          its state (struct ll_spinner) changes; a lone
 *          ll_spin_wait(LL_SPIN_AUTO) is a PAUSE.
 *
 *   yield and auto are the policies that cope when threads outnumber cores
 *   (ll_spin_preempt_safe).
 *
 * PAUSE's cost differs by an order of magnitude between CPU generations: a
 * budget counted in PAUSEs means another time on another machine.
 * ll_spin_calibrate() measures the cost of one wait per policy once per
 * process so budgets can be given in nanoseconds and turned into iteration
 * counts here.
 */
#ifndef LOCKLAB_SPIN_H
#define LOCKLAB_SPIN_H

#include "locklab/bits/api.h"

#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "locklab/bits/monitor_hooks.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ll_spin_policy {
	LL_SPIN_PAUSE = 0, LL_SPIN_NONE = 1, LL_SPIN_TAS = 2, LL_SPIN_YIELD = 3, LL_SPIN_AUTO = 4
};
#define LL_SPIN_POLICIES 5
/* The policies that give the core away when a wait is long (a bit per policy). */
#define LL_SPIN_PREEMPT_SAFE ((1u << LL_SPIN_YIELD) | (1u << LL_SPIN_AUTO))

/* Names of the policies in enum order, NULL-terminated (knob choices). */
extern LL_API const char *const ll_spin_policy_names[];

static inline void ll_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/* One wait of the given policy (counted while a monitored wait is under way). */
static inline void ll_spin_wait(unsigned policy)
{
	ll_mon_note_spin();
	if (policy == LL_SPIN_PAUSE || policy == LL_SPIN_AUTO) {
		ll_cpu_relax();
	} else if (policy == LL_SPIN_TAS) {
		/* A stack byte: the locked instruction never leaves this core's cache. */
		unsigned char dummy = 0;
		(void)__atomic_exchange_n(&dummy, 1, __ATOMIC_RELAXED);
	} else if (policy == LL_SPIN_YIELD) {
		sched_yield();
	} else {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

/*
 * One wait that lasts: the policy's wait at every look, except auto's, which
 * changes with the looks this wait has taken.  Start one per wait.
 */
struct ll_spinner {
	uint32_t waits;
	uint8_t policy;
};

static inline struct ll_spinner ll_spinner_start(unsigned policy)
{
	struct ll_spinner s = { 0, (uint8_t)policy };
	return s;
}

/* auto's paused looks before it yields: set by the calibration, which a wait's first look runs. */
extern LL_API uint32_t ll_spin_auto_pauses;
/* auto's first look of a wait: no paused looks where the core was crowded just now. */
LL_API void ll_spin_auto_begin(struct ll_spinner *s);
/* auto past its paused looks. */
LL_API void ll_spin_auto_wait(struct ll_spinner *s);

/* Yields of an auto wait before a lock that can park its waiter parks it. */
#define LL_SPIN_AUTO_PARK_YIELDS 8

/*
 * For a lock that can wake a sleeping waiter: 1 when its auto wait should
 * sleep now (crowded core, or LL_SPIN_AUTO_PARK_YIELDS yields); never for
 * the other policies.
 */
static inline int ll_spinner_parks(const struct ll_spinner *s)
{
	return s->policy == LL_SPIN_AUTO && s->waits &&
	       s->waits >= ll_spin_auto_pauses + LL_SPIN_AUTO_PARK_YIELDS;
}

static inline void ll_spinner_wait(struct ll_spinner *s)
{
	if (s->policy != LL_SPIN_AUTO) {
		ll_spin_wait(s->policy);
		return;
	}
	if (s->waits == 0)
		ll_spin_auto_begin(s);
	if (s->waits < ll_spin_auto_pauses) {
		s->waits++;
		ll_spin_wait(LL_SPIN_PAUSE);
	} else {
		ll_spin_auto_wait(s);
	}
}

/* Measure every policy's cost; idempotent, thread-safe, ~1 ms the first time. */
LL_API void ll_spin_calibrate(void);

/*
 * Nanoseconds one ll_spin_wait(policy) takes on this machine (calibrates on
 * first use); auto's is PAUSE's, its first waits: budgets count looks.
 */
LL_API double ll_spin_ns(unsigned policy);

/* Waits of `policy` that take about `ns` nanoseconds; at least 1 when ns > 0. */
LL_API uint32_t ll_spin_iters(unsigned policy, int64_t ns);

/* CLOCK_MONOTONIC in ns: inline (vDSO) where <time.h> shows POSIX clocks. */
LL_API uint64_t ll_now_ns_call(void);
#ifdef CLOCK_MONOTONIC
static inline uint64_t ll_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#else
/* Strict ISO C (-std=c11 without _POSIX_C_SOURCE) hides the clocks: the library's copy. */
static inline uint64_t ll_now_ns(void)
{
	return ll_now_ns_call();
}
#endif

/* a + b, UINT64_MAX where it would wrap: deadlines computed from now. */
static inline uint64_t ll_ns_add_sat(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/*
 * A timespec (tv_nsec in [0, 1e9)) in ns on ll_now_ns()'s scale, saturated
 * rather than wrapped: a time before the clock's zero (tv_sec < 0) is 0,
 * long past; one beyond UINT64_MAX ns (18446744073.709551615 s, ~584 years
 * of uptime) is UINT64_MAX, which the clock never reaches.  So every
 * representable deadline keeps its side of now.  Timed paths only: the
 * lock fast paths never convert.
 */
static inline uint64_t ll_timespec_ns(const struct timespec *ts)
{
	const uint64_t max_sec = UINT64_MAX / 1000000000u;
	if (ts->tv_sec < 0)
		return 0;
	if ((uint64_t)ts->tv_sec > max_sec)
		return UINT64_MAX;
	/* Only max_sec itself can carry past UINT64_MAX (its first 709551615 ns fit). */
	return ll_ns_add_sat((uint64_t)ts->tv_sec * 1000000000u, (uint64_t)ts->tv_nsec);
}

/* The inverse: ns on ll_now_ns()'s scale as a timespec (every uint64_t fits a 64-bit time_t). */
static inline struct timespec ll_ns_timespec(uint64_t ns)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	return ts;
}

/* 1 if the CLOCK_MONOTONIC deadline has passed. */
static inline int ll_deadline_passed(const struct timespec *abs_mono)
{
	return ll_now_ns() >= ll_timespec_ns(abs_mono);
}

/*
 * timedlock for locks that cannot abandon a queued wait (ticket, MCS) or
 * have nothing to abandon (TAS): poll try_fn(state) with spin waits of one
 * spinner until it returns 0, or ETIMEDOUT once the deadline has passed.
 */
LL_API int ll_spin_poll_until(int (*try_fn)(void *), void *state, unsigned policy,
			      const struct timespec *abs_mono);

/* Per-thread xorshift generator for randomised backoff and delays. */
LL_API uint32_t ll_rand32(void);

#ifdef __cplusplus
}
#endif
#endif
