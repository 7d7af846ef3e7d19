/*
 * mutex.hpp: the library's locks as C++ standard-library mutex types (C++17).
 *
 *	locklab::mutex m;                           // `ll`, the library's default
 *	locklab::mutex t("ticket", "spin=yield");   // any algorithm, with its options
 *	locklab::shared_mutex s("bravo");
 *	{ std::lock_guard<locklab::mutex> g(m); ... }
 *	{ std::shared_lock<locklab::shared_mutex> r(s); ... }
 *	std::condition_variable_any cv;  // waits with a std::unique_lock<locklab::mutex>
 *
 * locklab::mutex is an ll_mutex_t (locklab/locklab.h) and meets the standard's
 * Lockable and TimedLockable requirements: lock_guard, unique_lock,
 * scoped_lock, std::lock and condition_variable_any take it.
 * locklab::shared_mutex is an ll_rwlock_t (locklab/rwlock.h) and meets
 * SharedTimedLockable besides: shared_lock takes it too.
 *
 * Construction: no arguments gives the library's default (LL_DEFAULT_ALGO,
 * LL_DEFAULT_RWLOCK: `ll`); (name, options) any registered algorithm
 * (`locklab list`) with its "k=v,..." options, options nullptr for the
 * defaults.  An unknown name, a bad option or a failed init throws
 * std::system_error: code() is the library's errno value in
 * std::generic_category() (std::errc::invalid_argument for a bad name or
 * option), what() holds the library's one-line message ("unknown lock 'x'
 * (valid: ...)").  Like std::mutex, neither type is copyable nor movable:
 * the lock lives where it was constructed.  Destroying a lock that is held
 * or waited on is undefined, as for std::mutex.
 *
 * Locking: lock, try_lock and unlock never throw.  shared_mutex's lock and
 * lock_shared throw std::system_error where the algorithm refuses
 * (EAGAIN: too many readers; EDEADLK: the caller already holds it, where the
 * algorithm detects that); its try_ and timed calls return false instead.
 * Unlocking a lock the calling thread does not hold, or locking one it
 * already holds, is a precondition violation (undefined, as for std::mutex).
 *
 * Timed calls: try_lock_for(d) waits on the steady clock (CLOCK_MONOTONIC);
 * try_lock_until(t) takes a time point of any clock.  steady_clock's is a
 * CLOCK_MONOTONIC deadline, exact to the nanosecond; system_clock's is
 * turned into one once, from the time left when the call starts (a later
 * step of the realtime clock does not move it, as in ll_clock_to_mono);
 * another clock's is waited for by the time left on that clock, read again
 * after each wait until it has passed.  Any duration (a count of 64 bits
 * at most) converts without overflow: integral counts exactly (rounded up
 * to a nanosecond), floating-point ones rounded up, a NaN as zero;
 * durations beyond the library's range saturate, so a far-future deadline
 * waits as long as it takes and a past one (or a negative duration) does
 * not wait.  A lock that is free is taken even when the deadline has
 * passed (a try), as std::timed_mutex does.
 *
 * The lock monitor (locklab/monitor.h) sees a locklab::mutex like any
 * ll_mutex_t; it records this header as the call site.  native_handle()
 * gives the C lock, for ll_mutex_set_name() and the rest of the C API.
 */
#ifndef LOCKLAB_MUTEX_HPP
#define LOCKLAB_MUTEX_HPP

/*
 * The C API names a struct and a function ll_mutex_stats, which C++'s
 * -Wshadow reports (the function hides the struct's constructor); both are
 * meant, and C code names the struct `struct ll_mutex_stats`.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#include "locklab/locklab.h"
#include "locklab/rwlock.h"
#pragma GCC diagnostic pop

#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <ratio>
#include <system_error>
#include <type_traits>

#ifndef __SIZEOF_INT128__
#error "locklab/mutex.hpp converts durations in 128-bit integers (GCC or Clang, a 64-bit target)"
#endif

namespace locklab {

namespace detail {

/*
 * Nanoseconds in 128 bits: a count of 64 bits at most times any ratio to
 * nanoseconds a std::ratio can hold (under 2^63) fits without overflow.
 */
__extension__ typedef __int128 wide_ns;

/* The duration in nanoseconds, rounded up so that a wait never ends early. */
template <class Rep, class Period>
wide_ns to_wide_ns(const std::chrono::duration<Rep, Period> &d) noexcept
{
	static_assert(std::is_floating_point<Rep>::value ||
			      (std::is_integral<Rep>::value && sizeof(Rep) <= sizeof(std::int64_t)),
		      "locklab: a duration's count is a floating-point number or an integer of 64 bits at most");
	using to_ns = std::ratio_divide<Period, std::nano>;
	if constexpr (std::is_floating_point<Rep>::value) {
		const long double ns = std::ceil(static_cast<long double>(d.count()) * to_ns::num /
						 to_ns::den);
		if (std::isnan(ns))
			return 0;
		/* Converting a value beyond the type's range is undefined: cap far beyond any deadline. */
		const long double far = 0x1p100L;
		if (ns >= far)
			return wide_ns(1) << 100;
		if (ns <= -far)
			return -(wide_ns(1) << 100);
		return static_cast<wide_ns>(ns);
	} else {
		const wide_ns scaled = static_cast<wide_ns>(d.count()) * to_ns::num;
		/* Division truncates toward zero: up for a negative value already, add one for a positive. */
		return scaled / to_ns::den + (scaled % to_ns::den > 0 ? 1 : 0);
	}
}

/* ns since a clock's zero as the library's timespec, tv_sec saturated to time_t. */
inline struct timespec to_timespec(wide_ns ns) noexcept
{
	wide_ns sec = ns / 1000000000;
	wide_ns nsec = ns % 1000000000;
	if (nsec < 0) {
		nsec += 1000000000;
		sec -= 1;
	}
	struct timespec ts;
	ts.tv_nsec = static_cast<long>(nsec);
	if (sec > std::numeric_limits<std::time_t>::max()) {
		ts.tv_sec = std::numeric_limits<std::time_t>::max();
	} else if (sec < std::numeric_limits<std::time_t>::min()) {
		ts.tv_sec = std::numeric_limits<std::time_t>::min();
	} else {
		ts.tv_sec = static_cast<std::time_t>(sec);
	}
	return ts;
}

/* The CLOCK_MONOTONIC deadline `rel` from now (<= 0: now; the library saturates the far end). */
inline struct timespec deadline_after(wide_ns rel) noexcept
{
	const std::int64_t max = std::numeric_limits<std::int64_t>::max();
	return ll_deadline_after_ns(rel > max ? max : rel < 0 ? 0 : static_cast<std::int64_t>(rel));
}

/*
 * try_lock_until for every lock and side: wait(abs_mono) tries until a
 * CLOCK_MONOTONIC deadline and says whether it took the lock.
 */
template <class Clock, class Duration, class Wait>
bool wait_until(const std::chrono::time_point<Clock, Duration> &t, Wait wait)
{
	if constexpr (std::is_same<Clock, std::chrono::steady_clock>::value) {
		/* libstdc++ and libc++ read steady_clock from CLOCK_MONOTONIC on Linux. */
		return wait(to_timespec(to_wide_ns(t.time_since_epoch())));
	} else if constexpr (std::is_same<Clock, std::chrono::system_clock>::value) {
		const struct timespec abs = to_timespec(to_wide_ns(t.time_since_epoch()));
		struct timespec abs_mono;
		/* Cannot fail: the clock is one it knows and tv_nsec is in range. */
		(void)ll_clock_to_mono(CLOCK_REALTIME, &abs, &abs_mono);
		return wait(abs_mono);
	} else {
		/* Its rate and zero are the clock's own: wait for the time left, then read it again. */
		for (;;) {
			const wide_ns left = to_wide_ns(t.time_since_epoch()) -
					     to_wide_ns(Clock::now().time_since_epoch());
			if (wait(deadline_after(left)))
				return true;
			if (left <= 0)
				return false;
		}
	}
}

/* An init's refusal (the library fills err whenever it returns non-zero) as the exception. */
inline void throw_if_refused(int rc, const struct ll_error &err)
{
	if (rc != 0)
		throw std::system_error(rc, std::generic_category(), err.msg);
}

} // namespace detail

class mutex {
public:
	using native_handle_type = ll_mutex_t *;

	mutex() : mutex(nullptr) {}

	/* algo: a registered name (nullptr: LL_DEFAULT_ALGO); opts: "k=v,..." or nullptr. */
	explicit mutex(const char *algo, const char *opts = nullptr)
	{
		struct ll_error err;
		detail::throw_if_refused(ll_mutex_init(&m_, algo, opts, &err), err);
	}

	~mutex() { ll_mutex_destroy(&m_); }

	mutex(const mutex &) = delete;
	mutex &operator=(const mutex &) = delete;

	void lock() noexcept { ll_mutex_lock(&m_); }
	bool try_lock() noexcept { return ll_mutex_trylock(&m_) == 0; }
	void unlock() noexcept { ll_mutex_unlock(&m_); }

	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return lock_by(detail::deadline_after(detail::to_wide_ns(rel)));
	}

	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &abs)
	{
		return detail::wait_until(abs, [this](const struct timespec &abs_mono) {
			return lock_by(abs_mono);
		});
	}

	native_handle_type native_handle() noexcept { return &m_; }
	/* The algorithm's registered name ("ll", "ticket", ...). */
	const char *algorithm() const noexcept { return ll_mutex_algo(&m_); }

private:
	bool lock_by(const struct timespec &abs_mono) noexcept
	{
		return ll_mutex_timedlock(&m_, &abs_mono) == 0;
	}

	ll_mutex_t m_;
};

class shared_mutex {
public:
	using native_handle_type = ll_rwlock_t *;

	shared_mutex() : shared_mutex(nullptr) {}

	/* algo: a registered rwlock (nullptr: LL_DEFAULT_RWLOCK); opts: "k=v,..." or nullptr. */
	explicit shared_mutex(const char *algo, const char *opts = nullptr)
	{
		struct ll_error err;
		detail::throw_if_refused(ll_rwlock_init(&rw_, algo, opts, &err), err);
	}

	~shared_mutex() { ll_rwlock_destroy(&rw_); }

	shared_mutex(const shared_mutex &) = delete;
	shared_mutex &operator=(const shared_mutex &) = delete;

	void lock() { check(ll_rwlock_wrlock(&rw_), "locklab::shared_mutex::lock"); }
	bool try_lock() noexcept { return ll_rwlock_trywrlock(&rw_) == 0; }
	/* The rwlock releases whichever side the caller holds; an unheld one is the caller's error. */
	void unlock() noexcept { (void)ll_rwlock_unlock(&rw_); }

	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return write_by(detail::deadline_after(detail::to_wide_ns(rel)));
	}

	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &abs)
	{
		return detail::wait_until(abs, [this](const struct timespec &abs_mono) {
			return write_by(abs_mono);
		});
	}

	void lock_shared() { check(ll_rwlock_rdlock(&rw_), "locklab::shared_mutex::lock_shared"); }
	bool try_lock_shared() noexcept { return ll_rwlock_tryrdlock(&rw_) == 0; }
	void unlock_shared() noexcept { (void)ll_rwlock_unlock(&rw_); }

	template <class Rep, class Period>
	bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return read_by(detail::deadline_after(detail::to_wide_ns(rel)));
	}

	template <class Clock, class Duration>
	bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &abs)
	{
		return detail::wait_until(abs, [this](const struct timespec &abs_mono) {
			return read_by(abs_mono);
		});
	}

	native_handle_type native_handle() noexcept { return &rw_; }
	/* The rwlock's registered name ("ll", "bravo", ...). */
	const char *algorithm() const noexcept { return ll_rwlock_algo(&rw_); }

private:
	static void check(int rc, const char *what)
	{
		if (rc != 0)
			throw std::system_error(rc, std::generic_category(), what);
	}

	bool write_by(const struct timespec &abs_mono) noexcept
	{
		return ll_rwlock_timedwrlock(&rw_, &abs_mono) == 0;
	}

	bool read_by(const struct timespec &abs_mono) noexcept
	{
		return ll_rwlock_timedrdlock(&rw_, &abs_mono) == 0;
	}

	ll_rwlock_t rw_;
};

} // namespace locklab

#endif
