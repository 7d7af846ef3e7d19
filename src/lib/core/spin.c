/*
 * spin.c: calibration of the spin-wait policies, and the per-thread PRNG.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "locklab/bits/spin.h"

const char *const ll_spin_policy_names[] = { "pause", "none", "tas", "yield", "auto", NULL };

/*
 * auto pauses for this long before it yields: several handoffs of a lock
 * whose holder runs, well under a scheduler's time slice.
 */
#define AUTO_PAUSE_NS 10000
uint32_t ll_spin_auto_pauses;
/*
 * A yield that took this many calibrated yields ran another thread: the
 * core is crowded, and the thread's waits yield at once for CROWDED_NS.
 */
#define CROWDED_YIELDS 4
#define CROWDED_NS 1000000
static _Thread_local uint64_t crowded_until __attribute__((tls_model("initial-exec")));

static double spin_ns_per_wait[LL_SPIN_POLICIES];
static pthread_once_t calibrate_once = PTHREAD_ONCE_INIT;

/* Best of several short trials: the minimum is the cost without interference. */
static double measure(unsigned policy)
{
	/* sched_yield is a syscall: fewer of them. */
	int waits = policy == LL_SPIN_YIELD ? 200 : 2000;
	enum { TRIALS = 15 };
	double best = 1e9;

	for (int t = 0; t < TRIALS; t++) {
		uint64_t t0 = ll_now_ns();
		for (int i = 0; i < waits; i++)
			ll_spin_wait(policy);
		uint64_t dt = ll_now_ns() - t0;
		double per = (double)dt / waits;
		if (per < best)
			best = per;
	}
	/* A floor keeps budgets finite where the clock is coarser than the wait. */
	return best < 0.05 ? 0.05 : best;
}

static void calibrate(void)
{
	for (unsigned p = 0; p < LL_SPIN_POLICIES; p++)
		spin_ns_per_wait[p] = p == LL_SPIN_AUTO ? spin_ns_per_wait[LL_SPIN_PAUSE] : measure(p);
	double pauses = AUTO_PAUSE_NS / spin_ns_per_wait[LL_SPIN_PAUSE];
	ll_spin_auto_pauses = pauses < 1 ? 1 : pauses > 1e9 ? 1000000000u : (uint32_t)pauses;
}

void ll_spin_calibrate(void)
{
	pthread_once(&calibrate_once, calibrate);
}

double ll_spin_ns(unsigned policy)
{
	ll_spin_calibrate();
	return spin_ns_per_wait[policy < LL_SPIN_POLICIES ? policy : LL_SPIN_PAUSE];
}

uint32_t ll_spin_iters(unsigned policy, int64_t ns)
{
	if (ns <= 0)
		return 0;
	double n = (double)ns / ll_spin_ns(policy);
	if (n < 1)
		return 1;
	return n > 4e9 ? UINT32_MAX : (uint32_t)n;
}

void ll_spin_auto_begin(struct ll_spinner *s)
{
	/* Calibrated before this thread reads ll_spin_auto_pauses (pthread_once orders it). */
	ll_spin_calibrate();
	s->waits = ll_now_ns() < crowded_until ? ll_spin_auto_pauses : 1;
}

void ll_spin_auto_wait(struct ll_spinner *s)
{
	uint64_t t0 = ll_now_ns();
	ll_spin_wait(LL_SPIN_YIELD);
	uint64_t t1 = ll_now_ns();
	if ((double)(t1 - t0) > CROWDED_YIELDS * ll_spin_ns(LL_SPIN_YIELD)) {
		crowded_until = t1 + CROWDED_NS;
		/* A lock that can park its waiter parks it now (ll_spinner_parks). */
		s->waits = ll_spin_auto_pauses + LL_SPIN_AUTO_PARK_YIELDS;
	} else if (t1 >= crowded_until) {
		s->waits = 1;   /* nobody else wanted the core: pause again */
	} else {
		s->waits++;
	}
}

int ll_spin_poll_until(int (*try_fn)(void *), void *state, unsigned policy,
		       const struct timespec *abs_mono)
{
	struct ll_spinner s = ll_spinner_start(policy);
	for (unsigned i = 0;; i++) {
		if (try_fn(state) == 0)
			return 0;
		/* The clock costs more than an attempt: look at it once every 64. */
		if ((i & 63) == 63 && ll_deadline_passed(abs_mono))
			return ETIMEDOUT;
		ll_spinner_wait(&s);
	}
}

uint32_t ll_rand32(void)
{
	static _Thread_local uint32_t state __attribute__((tls_model("initial-exec")));

	if (state == 0) {
		/* Seed from the thread's stack address and the clock: distinct per thread. */
		uintptr_t a = (uintptr_t)&state;
		state = (uint32_t)(a ^ (a >> 32) ^ ll_now_ns()) | 1u;
	}
	state ^= state << 13;
	state ^= state >> 17;
	state ^= state << 5;
	return state;
}

uint64_t ll_now_ns_call(void)
{
	return ll_now_ns();
}
