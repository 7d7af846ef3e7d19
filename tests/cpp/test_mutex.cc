/*
 * test_mutex.cc: locklab/mutex.hpp with the standard library's lock tools.
 *
 *   test_mutex guards      lock_guard, unique_lock (try_to_lock, try_lock_for),
 *                          shared_lock, across threads
 *   test_mutex scoped      scoped_lock over mutexes of different algorithms,
 *                          taken in opposite orders by many threads
 *   test_mutex condvar     condition_variable_any: producers and consumers far
 *                          outnumbering the CPUs, and wait_for timing out
 *   test_mutex exclusion   every registered mutex and rwlock: counters add up
 *   test_mutex timed       try_lock_for/until on steady, system and another clock,
 *                          deadlines far in the future and past, odd durations
 *   test_mutex convert     the duration and deadline conversions, value by value
 *   test_mutex errors      bad names and options: std::system_error, the library's message
 *
 * Exits 0, or 1 after a line saying what failed.  LL_TEST_SCALE (as the C
 * tests) scales the work down under sanitizers.
 */
#include "locklab/mutex.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#define CHECK(cond, ...)                                                                      \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
				     #cond);                                                  \
			std::fprintf(stderr, __VA_ARGS__);                                    \
			std::fputc('\n', stderr);                                             \
			std::exit(1);                                                         \
		}                                                                             \
	} while (0)

namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;
using std::chrono::system_clock;

/* Like std::mutex: neither copied nor moved; the handles are the C locks. */
static_assert(!std::is_copy_constructible<locklab::mutex>::value, "mutex is copyable");
static_assert(!std::is_move_constructible<locklab::mutex>::value, "mutex is movable");
static_assert(!std::is_copy_assignable<locklab::mutex>::value, "mutex is assignable");
static_assert(!std::is_move_constructible<locklab::shared_mutex>::value, "shared_mutex is movable");
static_assert(!std::is_copy_assignable<locklab::shared_mutex>::value, "shared_mutex is assignable");
static_assert(std::is_same<locklab::mutex::native_handle_type, ll_mutex_t *>::value, "handle");
static_assert(std::is_same<locklab::shared_mutex::native_handle_type, ll_rwlock_t *>::value,
	      "handle");

/* n scaled by LL_TEST_SCALE (default 1), at least 1. */
long scaled(long n)
{
	const char *s = std::getenv("LL_TEST_SCALE");
	const double f = s ? std::atof(s) : 1.0;
	return std::max(1L, static_cast<long>(static_cast<double>(n) * f));
}

/* Threads that far outnumber the CPUs (at least 4 per CPU). */
int many_threads(int at_least)
{
	return std::max(at_least, 4 * static_cast<int>(std::thread::hardware_concurrency()));
}

/* Run fn(i) on n threads released together, and join them. */
void run_threads(int n, const std::function<void(int)> &fn)
{
	std::atomic<int> ready{0};
	std::vector<std::thread> threads;
	for (int i = 0; i < n; i++)
		threads.emplace_back([&, i] {
			ready.fetch_add(1);
			while (ready.load() < n)
				std::this_thread::yield();
			fn(i);
		});
	for (auto &t : threads)
		t.join();
}

/*
 * Run body(i) again and again on n threads released together: each thread at
 * least min_rounds times, and all until `how_long` has passed, so that the
 * threads overlap however busy the machine.  The total of rounds run.
 */
long run_for(int n, steady_clock::duration how_long, long min_rounds,
	     const std::function<void(int)> &body)
{
	std::atomic<bool> stop{false};
	std::atomic<long> total{0};
	std::thread timer([&] {
		std::this_thread::sleep_for(how_long);
		stop.store(true);
	});
	run_threads(n, [&](int i) {
		long k = 0;
		for (; k < min_rounds || !stop.load(std::memory_order_relaxed); k++)
			body(i);
		total.fetch_add(k);
	});
	timer.join();
	return total.load();
}

/* Options that let a spinning lock cope with more threads than CPUs (test_locks.c says why). */
const char *oversubscribed_opts(const struct ll_lock_ops *ops)
{
	if (ops->flags & LL_ALGO_PARKS)
		return nullptr;
	for (size_t k = 0; k < ops->nknobs; k++)
		if (!std::strcmp(ops->knobs[k].name, "spin"))
			return "spin=yield";
	return nullptr;
}

double ms_since(steady_clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(steady_clock::now() - t0).count();
}

/* Holds a lock's exclusive side on another thread for `hold`, or until destroyed. */
template <class Lock>
class holder {
public:
	holder(Lock &l, steady_clock::duration hold)
	{
		std::atomic<bool> taken{false};
		thread_ = std::thread([this, &l, &taken, hold] {
			l.lock();
			taken.store(true);
			const auto until = steady_clock::now() + hold;
			while (!released_.load() && steady_clock::now() < until)
				std::this_thread::sleep_for(1ms);
			l.unlock();
		});
		while (!taken.load())
			std::this_thread::yield();
	}
	~holder()
	{
		released_.store(true);
		thread_.join();
	}
	holder(const holder &) = delete;
	holder &operator=(const holder &) = delete;

private:
	std::atomic<bool> released_{false};
	std::thread thread_;
};

int test_guards()
{
	locklab::mutex m;
	CHECK(!std::strcmp(m.algorithm(), LL_DEFAULT_ALGO), "default mutex is %s", m.algorithm());
	CHECK(m.native_handle() != nullptr && !std::strcmp(ll_mutex_algo(m.native_handle()), "ll"),
	      "native_handle");
	{
		std::lock_guard<locklab::mutex> g(m);
		std::thread([&m] { CHECK(!m.try_lock(), "try_lock of a held mutex succeeded"); }).join();
	}
	std::thread([&m] {
		CHECK(m.try_lock(), "try_lock after lock_guard released failed");
		m.unlock();
	}).join();

	{
		std::unique_lock<locklab::mutex> u(m, std::defer_lock);
		CHECK(!u.owns_lock(), "defer_lock owns");
		u.lock();
		std::thread([&m] {
			std::unique_lock<locklab::mutex> t(m, std::try_to_lock);
			CHECK(!t.owns_lock(), "try_to_lock took a held mutex");
			const auto t0 = steady_clock::now();
			std::unique_lock<locklab::mutex> f(m, 20ms);
			CHECK(!f.owns_lock(), "unique_lock(m, 20ms) took a held mutex");
			CHECK(ms_since(t0) >= 20.0, "unique_lock(m, 20ms) gave up after %.2f ms",
			      ms_since(t0));
		}).join();
		u.unlock();
		std::unique_lock<locklab::mutex> t(m, std::try_to_lock);
		CHECK(t.owns_lock(), "try_to_lock of a free mutex failed");
	}
	{
		holder<locklab::mutex> h(m, 30ms);
		std::unique_lock<locklab::mutex> u(m, std::defer_lock);
		CHECK(u.try_lock_for(10s), "try_lock_for did not get the mutex when it was released");
	}

	locklab::shared_mutex s;
	CHECK(!std::strcmp(s.algorithm(), LL_DEFAULT_RWLOCK), "default rwlock is %s", s.algorithm());
	{
		std::shared_lock<locklab::shared_mutex> r(s);
		std::thread([&s] {
			std::shared_lock<locklab::shared_mutex> r2(s, std::try_to_lock);
			CHECK(r2.owns_lock(), "a second reader was refused");
			std::unique_lock<locklab::shared_mutex> w(s, std::try_to_lock);
			CHECK(!w.owns_lock(), "a writer got in beside readers");
			CHECK(!w.try_lock_for(15ms), "try_lock_for wrote beside readers");
		}).join();
	}
	{
		std::unique_lock<locklab::shared_mutex> w(s);
		std::thread([&s] {
			std::shared_lock<locklab::shared_mutex> r(s, std::try_to_lock);
			CHECK(!r.owns_lock(), "a reader got in beside a writer");
			const auto t0 = steady_clock::now();
			CHECK(!r.try_lock_for(15ms), "shared try_lock_for read beside a writer");
			CHECK(ms_since(t0) >= 15.0, "shared try_lock_for gave up after %.2f ms",
			      ms_since(t0));
		}).join();
	}
	{
		holder<locklab::shared_mutex> h(s, 30ms);
		std::shared_lock<locklab::shared_mutex> r(s, std::defer_lock);
		CHECK(r.try_lock_for(10s), "shared try_lock_for did not read once the writer left");
	}
	return 0;
}

/*
 * Each thread takes the same four locks, of four algorithms, through
 * scoped_lock, listed in an order of its own; std::lock's back-off keeps
 * that free of deadlock.  The counters, written only under all four, add up.
 */
int test_scoped()
{
	locklab::mutex a("futex"), b("ticket", "spin=yield"), c("innodb56");
	locklab::shared_mutex d("bravo");
	long counts[2] = {0, 0};
	const long rounds = run_for(many_threads(8), 300ms, scaled(50), [&](int i) {
		if (i % 2) {
			std::scoped_lock all(a, b, c, d);
			counts[0]++;
			counts[1]++;
		} else {
			std::scoped_lock all(d, c, b, a);
			counts[1]++;
			counts[0]++;
		}
	});
	CHECK(counts[0] == rounds && counts[1] == rounds, "counts %ld, %ld, wanted %ld", counts[0],
	      counts[1], rounds);
	std::printf("scoped: futex, ticket, innodb56, bravo: %ld rounds: ok\n", rounds);
	return 0;
}

/*
 * A bounded queue on one locklab::mutex and two condition variables:
 * producers push 1..per_producer each, then one 0 per consumer ends them.
 * The consumers' count and sum, kept under the mutex, must come out exact.
 */
void producers_and_consumers(const char *algo, const char *opts)
{
	locklab::mutex m(algo, opts);
	std::condition_variable_any not_empty, not_full;
	std::deque<long> queue;
	const std::size_t capacity = 8;
	const int producers = many_threads(16), consumers = many_threads(16);
	const long per_producer = scaled(150);
	long consumed = 0, sum = 0;

	std::vector<std::thread> eaters;
	for (int i = 0; i < consumers; i++)
		eaters.emplace_back([&] {
			for (;;) {
				std::unique_lock<locklab::mutex> l(m);
				not_empty.wait(l, [&] { return !queue.empty(); });
				const long v = queue.front();
				queue.pop_front();
				not_full.notify_one();
				if (v == 0)
					return;
				consumed++;
				sum += v;
			}
		});
	auto push = [&](long v) {
		std::unique_lock<locklab::mutex> l(m);
		not_full.wait(l, [&] { return queue.size() < capacity; });
		queue.push_back(v);
		not_empty.notify_one();
	};
	run_threads(producers, [&](int) {
		for (long k = 1; k <= per_producer; k++)
			push(k);
	});
	for (int i = 0; i < consumers; i++)
		push(0);
	for (auto &t : eaters)
		t.join();
	CHECK(consumed == producers * per_producer, "%s: %ld consumed, wanted %ld", algo, consumed,
	      producers * per_producer);
	CHECK(sum == producers * (per_producer * (per_producer + 1) / 2), "%s: sum %ld", algo, sum);
	std::printf("condvar: %s: %d producers, %d consumers, %ld items: ok\n", algo, producers,
		    consumers, consumed);
}

int test_condvar()
{
	producers_and_consumers("ll", nullptr);
	producers_and_consumers("innodb56", nullptr);
	producers_and_consumers("mcs", "spin=yield");

	locklab::mutex m("futex");
	std::condition_variable_any cv;
	std::unique_lock<locklab::mutex> l(m);
	auto t0 = steady_clock::now();
	CHECK(!cv.wait_for(l, 30ms, [] { return false; }), "wait_for returned true");
	CHECK(ms_since(t0) >= 30.0, "wait_for timed out after %.2f ms", ms_since(t0));
	CHECK(l.owns_lock(), "wait_for returned without the lock");
	const auto until = system_clock::now() + 20ms;
	CHECK(!cv.wait_until(l, until, [] { return false; }), "wait_until returned true");
	CHECK(system_clock::now() >= until, "wait_until returned before its time");
	/* A timeout with nobody notifying: the status says so. */
	t0 = steady_clock::now();
	std::cv_status st;
	do
		st = cv.wait_for(l, 10ms);
	while (st == std::cv_status::no_timeout && ms_since(t0) < 10.0);
	CHECK(st == std::cv_status::timeout, "wait_for said no_timeout after %.2f ms", ms_since(t0));
	return 0;
}

/* One thread in the mutex at a time, for every registered mutex, under lock_guard. */
void exclusion_mutex(const struct ll_lock_ops *ops, int n)
{
	locklab::mutex m(ops->name, oversubscribed_opts(ops));
	CHECK(!std::strcmp(m.algorithm(), ops->name), "asked for %s, got %s", ops->name,
	      m.algorithm());
	long count = 0;
	std::atomic<int> inside{0};
	const long rounds = run_for(n, 100ms, scaled(200), [&](int) {
		std::lock_guard<locklab::mutex> g(m);
		CHECK(inside.fetch_add(1, std::memory_order_relaxed) == 0, "%s: two threads inside",
		      ops->name);
		count++;
		inside.fetch_sub(1, std::memory_order_relaxed);
	});
	CHECK(count == rounds, "%s: count %ld, wanted %ld", ops->name, count, rounds);
	std::printf("exclusion: mutex %s: %d threads, %ld rounds: ok\n", ops->name, n, rounds);
}

/*
 * Writers alone, readers together, for every registered rwlock: no reader
 * sees a writer's two counters apart, and they add up.
 */
void exclusion_rwlock(const struct ll_rwlock_ops *ops, int n)
{
	locklab::shared_mutex s(ops->name);
	CHECK(!std::strcmp(s.algorithm(), ops->name), "asked for %s, got %s", ops->name,
	      s.algorithm());
	long first = 0, second = 0;
	std::atomic<int> writers{0}, readers{0};
	std::atomic<long> reads{0};
	const long rounds = run_for(n, 100ms, scaled(200), [&](int i) {
		if (i % 4 == 0) {
			std::unique_lock<locklab::shared_mutex> w(s);
			CHECK(writers.fetch_add(1) == 0 && readers.load() == 0, "%s: a writer not alone",
			      ops->name);
			first++;
			second++;
			writers.fetch_sub(1);
		} else {
			std::shared_lock<locklab::shared_mutex> r(s);
			readers.fetch_add(1);
			CHECK(writers.load() == 0, "%s: a reader beside a writer", ops->name);
			CHECK(first == second, "%s: a write seen half done", ops->name);
			readers.fetch_sub(1);
			reads.fetch_add(1, std::memory_order_relaxed);
		}
	});
	CHECK(first == second && first + reads.load() == rounds,
	      "%s: %ld, %ld writes, %ld reads, %ld rounds", ops->name, first, second, reads.load(),
	      rounds);
	std::printf("exclusion: rwlock %s: %d threads, %ld writes, %ld reads: ok\n", ops->name, n,
		    first, reads.load());
}

int test_exclusion()
{
	const int n = many_threads(8);
	CHECK(ll_algo_count() > 0 && ll_rwlock_algo_count() > 0, "no algorithms registered");
	for (std::size_t i = 0; i < ll_algo_count(); i++)
		exclusion_mutex(ll_algo_at(i), n);
	for (std::size_t i = 0; i < ll_rwlock_algo_count(); i++)
		exclusion_rwlock(ll_rwlock_algo_at(i), n);
	return 0;
}

/* A clock of its own: another zero than steady_clock's, counted in milliseconds. */
struct coarse_clock {
	using duration = std::chrono::milliseconds;
	using rep = duration::rep;
	using period = duration::period;
	using time_point = std::chrono::time_point<coarse_clock>;
	static constexpr bool is_steady = true;
	static time_point now()
	{
		return time_point(std::chrono::duration_cast<duration>(
			steady_clock::now().time_since_epoch() + std::chrono::hours(1000)));
	}
};

/* The timed calls of one side of a lock: exclusive or shared. */
struct exclusive_side {
	static constexpr const char *name = "exclusive";
	template <class L, class D> static bool try_for(L &l, const D &d) { return l.try_lock_for(d); }
	template <class L, class T> static bool try_until(L &l, const T &t) { return l.try_lock_until(t); }
	template <class L> static void unlock(L &l) { l.unlock(); }
};

struct shared_side {
	static constexpr const char *name = "shared";
	template <class L, class D> static bool try_for(L &l, const D &d)
	{
		return l.try_lock_shared_for(d);
	}
	template <class L, class T> static bool try_until(L &l, const T &t)
	{
		return l.try_lock_shared_until(t);
	}
	template <class L> static void unlock(L &l) { l.unlock_shared(); }
};

/*
 * Call f(try) with try(lock) making one timed call for each deadline that
 * has passed (or a duration of none), by every clock and odd duration.
 */
template <class Side, class Lock, class F>
void for_each_past(Lock &l, F f)
{
	const double nan = std::numeric_limits<double>::quiet_NaN();
	const double inf = std::numeric_limits<double>::infinity();
	f("0ns", [&] { return Side::try_for(l, 0ns); });
	f("-1s", [&] { return Side::try_for(l, -1s); });
	f("hours::min()", [&] { return Side::try_for(l, std::chrono::hours::min()); });
	f("nanoseconds::min()", [&] { return Side::try_for(l, std::chrono::nanoseconds::min()); });
	f("-inf s", [&] { return Side::try_for(l, std::chrono::duration<double>(-inf)); });
	f("NaN s", [&] { return Side::try_for(l, std::chrono::duration<double>(nan)); });
	f("steady min", [&] { return Side::try_until(l, steady_clock::time_point::min()); });
	f("steady -1s", [&] { return Side::try_until(l, steady_clock::now() - 1s); });
	f("system min", [&] { return Side::try_until(l, system_clock::time_point::min()); });
	f("system -1h", [&] { return Side::try_until(l, system_clock::now() - 1h); });
	f("system hours min", [&] {
		return Side::try_until(
			l, std::chrono::time_point<system_clock, std::chrono::hours>::min());
	});
	f("coarse min", [&] { return Side::try_until(l, coarse_clock::time_point::min()); });
	f("coarse -1ms", [&] { return Side::try_until(l, coarse_clock::now() - 1ms); });
}

/* The same for deadlines far in the future: hundreds of years, or past what a clock can count. */
template <class Side, class Lock, class F>
void for_each_far(Lock &l, F f)
{
	using thirds = std::chrono::duration<long long, std::ratio<1, 3>>;
	using picos = std::chrono::duration<unsigned long long, std::pico>;
	const double inf = std::numeric_limits<double>::infinity();
	f("hours::max()", [&] { return Side::try_for(l, std::chrono::hours::max()); });
	f("nanoseconds::max()", [&] { return Side::try_for(l, std::chrono::nanoseconds::max()); });
	f("thirds::max()", [&] { return Side::try_for(l, thirds::max()); });
	f("picos::max()", [&] { return Side::try_for(l, picos::max()); });
	f("inf s", [&] { return Side::try_for(l, std::chrono::duration<double>(inf)); });
	f("1e300 years", [&] {
		return Side::try_for(l, std::chrono::duration<double, std::ratio<31556952>>(1e300));
	});
	f("steady max", [&] { return Side::try_until(l, steady_clock::time_point::max()); });
	f("system max", [&] { return Side::try_until(l, system_clock::time_point::max()); });
	f("system hours max", [&] {
		return Side::try_until(
			l, std::chrono::time_point<system_clock, std::chrono::hours>::max());
	});
	f("coarse max", [&] { return Side::try_until(l, coarse_clock::time_point::max()); });
}

template <class Side, class Lock>
void timed_cases(const char *what, Lock &l)
{
	/* Free: a passed deadline still takes it. */
	for_each_past<Side>(l, [&](const char *deadline, auto try_it) {
		CHECK(try_it(), "%s %s: a free lock not taken by %s", what, Side::name, deadline);
		Side::unlock(l);
	});
	{
		/* Held: every passed deadline gives up at once. */
		holder<Lock> h(l, 1h);
		const auto t0 = steady_clock::now();
		for_each_past<Side>(l, [&](const char *deadline, auto try_it) {
			CHECK(!try_it(), "%s %s: a held lock taken by %s", what, Side::name, deadline);
		});
		CHECK(ms_since(t0) < 2000.0, "%s %s: past deadlines took %.0f ms", what, Side::name,
		      ms_since(t0));

		/* ... and a near one waits until it has passed, on its own clock. */
		auto t1 = steady_clock::now();
		CHECK(!Side::try_for(l, 10ms), "%s %s: try_for(10ms) took a held lock", what, Side::name);
		CHECK(ms_since(t1) >= 10.0, "%s %s: try_for(10ms) gave up after %.2f ms", what,
		      Side::name, ms_since(t1));
		const auto steady_dl = steady_clock::now() + 10ms;
		CHECK(!Side::try_until(l, steady_dl), "%s %s: steady deadline", what, Side::name);
		CHECK(steady_clock::now() >= steady_dl, "%s %s: steady deadline early", what, Side::name);
		const auto system_dl = system_clock::now() + 10ms;
		CHECK(!Side::try_until(l, system_dl), "%s %s: system deadline", what, Side::name);
		/* Converted from the time left: both clocks were read, so allow their readings' skew. */
		CHECK(system_clock::now() >= system_dl - 1ms, "%s %s: system deadline early", what,
		      Side::name);
		const auto coarse_dl = coarse_clock::now() + 10ms;
		CHECK(!Side::try_until(l, coarse_dl), "%s %s: coarse deadline", what, Side::name);
		CHECK(coarse_clock::now() >= coarse_dl, "%s %s: coarse deadline early", what, Side::name);
	}
	/* Far: each waits for a holder that leaves after 10 ms. */
	for_each_far<Side>(l, [&](const char *deadline, auto try_it) {
		holder<Lock> h(l, 10ms);
		CHECK(try_it(), "%s %s: %s gave up on a lock released after 10 ms", what, Side::name,
		      deadline);
		Side::unlock(l);
	});
	std::printf("timed: %s %s: ok\n", what, Side::name);
}

int test_timed()
{
	for (const char *algo : {"ll", "futex", "pthread", "innodb56", "ticket"}) {
		locklab::mutex m(algo, std::strcmp(algo, "ticket") ? nullptr : "spin=yield");
		timed_cases<exclusive_side>(algo, m);
	}
	for (std::size_t i = 0; i < ll_rwlock_algo_count(); i++) {
		const char *algo = ll_rwlock_algo_at(i)->name;
		locklab::shared_mutex s(algo);
		timed_cases<exclusive_side>(algo, s);
		timed_cases<shared_side>(algo, s);
	}
	return 0;
}

/* Durations to nanoseconds (rounded up) and nanoseconds to timespecs, exactly. */
int test_convert()
{
	using locklab::detail::to_timespec;
	using locklab::detail::to_wide_ns;
	using locklab::detail::wide_ns;
	using thirds = std::chrono::duration<int, std::ratio<1, 3>>;
	using picos = std::chrono::duration<unsigned long long, std::pico>;
	const wide_ns far = wide_ns(1) << 100;
	const double inf = std::numeric_limits<double>::infinity();
	CHECK(to_wide_ns(1s) == 1000000000, "1s");
	CHECK(to_wide_ns(-1500ms) == -1500000000, "-1500ms");
	CHECK(to_wide_ns(std::chrono::hours::max()) ==
		      wide_ns(std::numeric_limits<std::int64_t>::max()) * 3600000000000,
	      "hours::max()");
	CHECK(to_wide_ns(std::chrono::hours::min()) ==
		      wide_ns(std::numeric_limits<std::int64_t>::min()) * 3600000000000,
	      "hours::min()");
	CHECK(to_wide_ns(picos::max()) == wide_ns(18446744073709552), "picos::max()");
	CHECK(to_wide_ns(thirds(1)) == 333333334, "1/3 s rounds up");
	CHECK(to_wide_ns(thirds(-1)) == -333333333, "-1/3 s rounds up");
	CHECK(to_wide_ns(std::chrono::duration<double>(1.5e-9)) == 2, "1.5 ns");
	CHECK(to_wide_ns(std::chrono::duration<double>(-1.5e-9)) == -1, "-1.5 ns");
	CHECK(to_wide_ns(std::chrono::duration<float, std::milli>(2.5f)) == 2500000, "2.5 ms");
	CHECK(to_wide_ns(std::chrono::duration<double>(inf)) == far, "inf");
	CHECK(to_wide_ns(std::chrono::duration<double>(-inf)) == -far, "-inf");
	CHECK(to_wide_ns(std::chrono::duration<double>(1e300)) == far, "1e300 s");
	CHECK(to_wide_ns(std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN())) == 0,
	      "NaN");

	struct timespec ts = to_timespec(-1);
	CHECK(ts.tv_sec == -1 && ts.tv_nsec == 999999999, "-1 ns: %lld.%09ld", (long long)ts.tv_sec,
	      ts.tv_nsec);
	ts = to_timespec(1999999999);
	CHECK(ts.tv_sec == 1 && ts.tv_nsec == 999999999, "1999999999 ns");
	ts = to_timespec(-3000000000);
	CHECK(ts.tv_sec == -3 && ts.tv_nsec == 0, "-3 s");
	ts = to_timespec(far);
	CHECK(ts.tv_sec == std::numeric_limits<std::time_t>::max() && ts.tv_nsec >= 0 &&
		      ts.tv_nsec < 1000000000,
	      "far");
	ts = to_timespec(-far);
	CHECK(ts.tv_sec == std::numeric_limits<std::time_t>::min() && ts.tv_nsec >= 0 &&
		      ts.tv_nsec < 1000000000,
	      "-far");

	/* steady_clock's deadlines go to the library as CLOCK_MONOTONIC ones: the same clock. */
	struct timespec mono;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	const wide_ns gap = to_wide_ns(steady_clock::now().time_since_epoch()) -
			    (wide_ns(mono.tv_sec) * 1000000000 + mono.tv_nsec);
	CHECK(gap >= 0 && gap < 1000000000, "steady_clock is %lld ns from CLOCK_MONOTONIC",
	      (long long)gap);
	return 0;
}

/*
 * The library refused (algo, opts) with rc and err, err's message holding
 * fragment; Lock's constructor must throw std::system_error with both.
 */
template <class Lock>
void refused(const char *algo, const char *opts, const char *fragment, int rc,
	     const struct ll_error &err)
{
	CHECK(rc != 0, "the library took %s with '%s'", algo, opts ? opts : "");
	CHECK(std::strstr(err.msg, fragment), "library's message '%s' lacks '%s'", err.msg, fragment);
	try {
		Lock l(algo, opts);
	} catch (const std::system_error &e) {
		CHECK(e.code() == std::error_code(rc, std::generic_category()),
		      "%s: code %d (%s), wanted %d", algo, e.code().value(),
		      e.code().category().name(), rc);
		CHECK(std::strstr(e.what(), err.msg), "%s: what() is '%s', wanted '%s' in it", algo,
		      e.what(), err.msg);
		std::printf("errors: %s: %s\n", algo, e.what());
		return;
	}
	CHECK(false, "%s with '%s' constructed", algo, opts ? opts : "");
}

void mutex_refused(const char *algo, const char *opts, const char *fragment)
{
	ll_mutex_t raw;
	struct ll_error err;
	refused<locklab::mutex>(algo, opts, fragment, ll_mutex_init(&raw, algo, opts, &err), err);
}

void rwlock_refused(const char *algo, const char *opts, const char *fragment)
{
	ll_rwlock_t raw;
	struct ll_error err;
	refused<locklab::shared_mutex>(algo, opts, fragment, ll_rwlock_init(&raw, algo, opts, &err),
				       err);
}

int test_errors()
{
	mutex_refused("no-such-lock", nullptr, "unknown lock 'no-such-lock'");
	mutex_refused("ticket", "spin=bogus", "bogus");
	mutex_refused("ll", "no_such_knob=1", "no_such_knob");
	rwlock_refused("no-such-rwlock", nullptr, "unknown rwlock 'no-such-rwlock'");
	rwlock_refused("bravo", "under=bravo", "bravo");
	try {
		locklab::mutex m("no-such-lock");
	} catch (const std::system_error &e) {
		CHECK(e.code() == std::errc::invalid_argument, "a bad name is not EINVAL");
	}
	locklab::mutex t("ticket", "spin=yield");
	CHECK(!std::strcmp(t.algorithm(), "ticket"), "ticket is %s", t.algorithm());
	locklab::shared_mutex b("bravo");
	CHECK(!std::strcmp(b.algorithm(), "bravo"), "bravo is %s", b.algorithm());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	struct test_case {
		const char *name;
		int (*run)();
	};
	static const test_case cases[] = {
		{"guards", test_guards},
		{"scoped", test_scoped},
		{"condvar", test_condvar},
		{"exclusion", test_exclusion},
		{"timed", test_timed},
		{"convert", test_convert},
		{"errors", test_errors},
	};
	for (const auto &c : cases)
		if (argc == 2 && !std::strcmp(argv[1], c.name))
			return c.run();
	std::fprintf(stderr, "usage: %s guards|scoped|condvar|exclusion|timed|convert|errors\n",
		     argv[0]);
	return 2;
}
