/*
 * absl.cc: abseil's absl::Mutex (Debian libabsl-dev) as the benchmark peer
 * `absl`, behind the same C ops table as every other lock.
 *
 * The Mutex is constructed in place in the lock's state bytes and destroyed
 * there.  Its Lock() spins briefly, then queues the thread and parks it on a
 * futex; Unlock() wakes a queued waiter.  All ordering is absl's own.
 *
 * Timed acquisition: absl::Mutex has none.  LockWhenWithDeadline() and
 * LockWhenWithTimeout() bound only the wait for their Condition: they block
 * until the mutex itself can be acquired and always return holding it, so on a
 * held mutex they would wait past the deadline.  timedlock therefore polls
 * TryLock() with a sleeping exponential backoff (1 us doubling to 1 ms, every
 * sleep cut at the deadline).
 *
 * Debian builds abseil without NDEBUG, which leaves absl::Mutex's lock-order
 * deadlock detector on: every Lock() then updates a process-wide graph under a
 * global lock (a multiple of the uncontended cost, and a serialisation point
 * that is no part of the algorithm).  Production builds (NDEBUG) have it off, and so does
 * this peer, from its first init on (a process-wide absl setting; the
 * benchmark has no other absl::Mutex).
 *
 * ThreadSanitizer: the Debian library is not instrumented, so TSan would see
 * none of absl's atomics and report every critical section as a race.  The
 * inline constructor already announces the mutex to TSan
 * (ABSL_TSAN_MUTEX_CREATE, compiled into this file); sanitized builds add the
 * other annotations absl makes only in its own, here uninstrumented, mutex.cc.
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include <algorithm>
#include <new>

#include "absl/base/config.h"
#include "absl/synchronization/mutex.h"
#include "locklab/ops.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace {

// No knobs; the config is one unused field, like every knob-less lock's.
struct absl_config {
	int64_t unused;
};

static_assert(sizeof(absl::Mutex) <= LL_MUTEX_STATE_BYTES, "absl::Mutex does not fit the state");
static_assert(alignof(absl::Mutex) <= 64, "ll_mutex_t aligns its state to 64 bytes only");

constexpr long kBackoffMinNs = 1000;
constexpr long kBackoffMaxNs = 1000000;

absl::Mutex *mu(void *state)
{
	// The object placement-new created in these bytes.
	return std::launder(static_cast<absl::Mutex *>(state));
}

// a <= b.  Deadlines are compared as timespecs, never converted: any tv_sec works.
bool not_after(const struct timespec &a, const struct timespec &b)
{
	return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

int absl_init(void *state, const void *)
{
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
	new (state) absl::Mutex;
	return 0;
}

void absl_destroy(void *state)
{
	mu(state)->~Mutex();
#ifdef ABSL_HAVE_THREAD_SANITIZER
	__tsan_mutex_destroy(state, __tsan_mutex_not_static);
#endif
}

void absl_lock(void *state)
{
#ifdef ABSL_HAVE_THREAD_SANITIZER
	__tsan_mutex_pre_lock(state, 0);
#endif
	mu(state)->Lock();
#ifdef ABSL_HAVE_THREAD_SANITIZER
	__tsan_mutex_post_lock(state, 0, 0);
#endif
}

int absl_trylock(void *state)
{
#ifdef ABSL_HAVE_THREAD_SANITIZER
	__tsan_mutex_pre_lock(state, __tsan_mutex_try_lock);
#endif
	bool got = mu(state)->TryLock();
#ifdef ABSL_HAVE_THREAD_SANITIZER
	__tsan_mutex_post_lock(state, __tsan_mutex_try_lock |
			       (got ? 0 : __tsan_mutex_try_lock_failed), 0);
#endif
	return got ? 0 : EBUSY;
}

int absl_timedlock(void *state, const struct timespec *abs_mono)
{
	for (long backoff = kBackoffMinNs;; backoff = std::min(2 * backoff, kBackoffMaxNs)) {
		// Try before reading the clock: a free mutex is taken even past the deadline.
		if (absl_trylock(state) == 0)
			return 0;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (not_after(*abs_mono, now))
			return ETIMEDOUT;
		// now + backoff (under a second past a clock reading: cannot overflow), cut at the deadline.
		struct timespec until = now;
		until.tv_nsec += backoff;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (not_after(*abs_mono, until))
			until = *abs_mono;
		// An absolute wake-up: a signal (EINTR) only makes this round shorter.
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
	}
}

void absl_unlock(void *state)
{
#ifdef ABSL_HAVE_THREAD_SANITIZER
	__tsan_mutex_pre_unlock(state, 0);
#endif
	mu(state)->Unlock();
#ifdef ABSL_HAVE_THREAD_SANITIZER
	__tsan_mutex_post_unlock(state, 0);
#endif
}

}  // namespace

extern "C" const struct ll_lock_ops ll_absl_ops = {
	/* name */ "absl",
	/* summary */ "abseil's absl::Mutex: spins briefly, then queues and parks on a futex "
		      "(deadlock detection off)",
	/* flags */ LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	/* knobs */ nullptr,
	/* nknobs */ 0,
	/* config_size */ sizeof(absl_config),
	/* state_size */ sizeof(absl::Mutex),
	/* init */ absl_init,
	/* destroy */ absl_destroy,
	/* lock */ absl_lock,
	/* trylock */ absl_trylock,
	/* timedlock */ absl_timedlock,
	/* unlock */ absl_unlock,
	/* drop */ nullptr,
};
