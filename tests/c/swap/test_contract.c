/*
 * test_contract.c: what the swapper takes from the library.  Each lock's
 * properties are its ops table's flags (the swapper, the monitor and
 * `locklab list` read them, never a name); LL_ALGO_GLIBC's state is glibc's
 * own lock, which glibc's calls may take directly; and a deadline moves to
 * CLOCK_MONOTONIC by ll_clock_to_mono, saturated, a far one staying far.
 *
 *   test_contract CASE      flags, glibc-state, clock
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "bench/locks.h"
#include "harness.h"
#include "locklab/rwlock.h"

#define PARKS LL_ALGO_PARKS
#define FIFO LL_ALGO_FIFO
#define SPINS LL_ALGO_SPINS
#define GLIBC LL_ALGO_GLIBC
#define SAFE LL_ALGO_PREEMPT_SAFE

struct expect {
	int rwlock;
	const char *name;
	unsigned flags;
};

/* Every lock of the library and of the peers, as a user reads it in `locklab list`. */
static const struct expect expected[] = {
	{ 0, "pthread", PARKS | GLIBC | SAFE },
	{ 0, "pthread-adaptive", PARKS | GLIBC | SAFE },
	{ 0, "innodb56", PARKS | SAFE },
	{ 0, "spin-trylock", PARKS | SAFE },
	{ 0, "tas", SPINS },
	{ 0, "ttas", SPINS },
	{ 0, "ticket", FIFO | SPINS },
	{ 0, "mcs", FIFO | SPINS },
	{ 0, "fifo-tp", PARKS | FIFO | SAFE },
	{ 0, "futex", PARKS | SAFE },
	{ 0, "ll", PARKS | SAFE },
	{ 0, "ck-mcs", FIFO | SPINS },
	{ 0, "ck-ticket", FIFO | SPINS },
	{ 0, "ck-fas", SPINS },
	{ 0, "absl", PARKS | SAFE },
	{ 1, "pthread", PARKS | GLIBC | SAFE },
	{ 1, "ll", PARKS | SAFE },
	{ 1, "partitioned", PARKS | SAFE },
	{ 1, "innodb56-rw", PARKS | SAFE },
	{ 1, "bravo", PARKS | SAFE },
};

static const char *kind_of(int rwlock)
{
	return rwlock ? "rwlock" : "lock";
}

/*
 * Rules any table keeps, a new one too: one way to wait, glibc's lock parks,
 * and a lock that only spins survives preemption by its options, if at all.
 */
static void check_rules(int rwlock, const char *name, unsigned f)
{
	CHECK(!(f & ~(unsigned)(PARKS | FIFO | SPINS | GLIBC | SAFE)), "%s %s: unknown flags %#x",
	      kind_of(rwlock), name, f);
	CHECK(!(f & SPINS) || !(f & SAFE), "%s %s: flags %#x: a spinning lock claims preemption "
	      "safety whatever its options", kind_of(rwlock), name, f);
	CHECK(!(f & PARKS) != !(f & SPINS), "%s %s: flags %#x: one of PARKS and SPINS",
	      kind_of(rwlock), name, f);
	CHECK(!(f & GLIBC) || (f & PARKS), "%s %s: glibc's lock parks", kind_of(rwlock), name);
}

static int is_unbuilt_peer(const char *name)
{
	for (size_t i = 0; i < bench_unbuilt_lock_count; i++)
		if (!strcmp(bench_unbuilt_locks[i].name, name))
			return 1;
	return 0;
}

static int flags(void)
{
	for (size_t i = 0; i < bench_lock_count(); i++)
		check_rules(0, bench_lock_at(i)->name, bench_lock_at(i)->flags);
	for (size_t i = 0; i < ll_rwlock_algo_count(); i++)
		check_rules(1, ll_rwlock_algo_at(i)->name, ll_rwlock_algo_at(i)->flags);
	for (size_t i = 0; i < LL_COUNT(expected); i++) {
		const struct expect *e = &expected[i];
		struct ll_error err;
		unsigned f;
		if (e->rwlock) {
			const struct ll_rwlock_ops *o = ll_rwlock_algo_find(e->name, &err);
			CHECK(o, "%s", err.msg);
			f = o->flags;
		} else {
			const struct ll_lock_ops *o = bench_lock_find(e->name, &err);
			if (!o && is_unbuilt_peer(e->name))
				continue;
			CHECK(o, "%s", err.msg);
			f = o->flags;
		}
		CHECK(f == e->flags, "%s %s: flags %#x, expected %#x", kind_of(e->rwlock), e->name, f,
		      e->flags);
	}
	return 0;
}

/*
 * A glibc-backed state, taken and released by glibc's calls and by the
 * table's alike: glibc's trylock (trywrlock) and unlock, and the table's
 * try, lock and unlock (a mutex's through these, on mutex_ops).
 */
static const struct ll_lock_ops *mutex_ops;
static int glibc_mutex_try(void *s) { return pthread_mutex_trylock(s); }
static int glibc_mutex_unlock(void *s) { return pthread_mutex_unlock(s); }
static int glibc_rw_try(void *s) { return pthread_rwlock_trywrlock(s); }
static int glibc_rw_unlock(void *s) { return pthread_rwlock_unlock(s); }
static int table_mutex_lock(void *s) { mutex_ops->lock(s); return 0; }
static int table_mutex_unlock(void *s) { mutex_ops->unlock(s); return 0; }

struct both {
	const char *kind, *name;
	int (*glibc_try)(void *), (*glibc_unlock)(void *);
	int (*table_try)(void *), (*table_lock)(void *), (*table_unlock)(void *);
};

static void glibc_and_table(const struct both *b, void *state)
{
	CHECK(b->glibc_try(state) == 0, "%s %s: glibc's call on a free state", b->kind, b->name);
	CHECK(b->table_try(state) == EBUSY, "%s %s: held by glibc's call", b->kind, b->name);
	CHECK(b->glibc_unlock(state) == 0, "%s %s: glibc's unlock", b->kind, b->name);
	CHECK(b->table_lock(state) == 0, "%s %s: the table's lock", b->kind, b->name);
	CHECK(b->glibc_try(state) == EBUSY, "%s %s: held by the table", b->kind, b->name);
	CHECK(b->table_unlock(state) == 0, "%s %s: the table's unlock", b->kind, b->name);
}

static int glibc_state(void)
{
	_Alignas(64) unsigned char state[LL_MUTEX_STATE_BYTES + LL_RWLOCK_STATE_BYTES];
	int64_t config[LL_CONFIG_MAX];
	int mutexes = 0, rwlocks = 0;
	for (size_t i = 0; i < bench_lock_count(); i++) {
		mutex_ops = bench_lock_at(i);
		if (!(mutex_ops->flags & GLIBC))
			continue;
		struct both b = { "lock", mutex_ops->name, glibc_mutex_try, glibc_mutex_unlock,
				  mutex_ops->trylock, table_mutex_lock, table_mutex_unlock };
		ll_config_defaults(mutex_ops, config);
		CHECK(mutex_ops->init(state, config) == 0, "lock %s: init", b.name);
		glibc_and_table(&b, state);
		mutex_ops->destroy(state);
		mutexes++;
	}
	for (size_t i = 0; i < ll_rwlock_algo_count(); i++) {
		const struct ll_rwlock_ops *rw_ops = ll_rwlock_algo_at(i);
		if (!(rw_ops->flags & GLIBC))
			continue;
		struct both b = { "rwlock", rw_ops->name, glibc_rw_try, glibc_rw_unlock,
				  rw_ops->tryrdlock, rw_ops->rdlock, rw_ops->unlock };
		ll_rwlock_config_defaults(rw_ops, config);
		CHECK(rw_ops->init(state, config) == 0, "rwlock %s: init", b.name);
		glibc_and_table(&b, state);
		rw_ops->destroy(state);
		rwlocks++;
	}
	CHECK(mutexes == 2 && rwlocks == 1, "%d glibc-backed mutexes and %d rwlocks", mutexes,
	      rwlocks);
	return 0;
}

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static int64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ns_of(&ts);
}

/* A realtime deadline ns from now, converted: the monotonic deadline, checked
 * to be as far from now (within the time the conversion took). */
static void realtime_ahead(int64_t ns)
{
	struct timespec rt, mono;
	int64_t before = mono_now();
	clock_gettime(CLOCK_REALTIME, &rt);
	int64_t t = ns_of(&rt) + ns;
	rt.tv_sec = (time_t)(t / 1000000000LL);
	rt.tv_nsec = (long)(t % 1000000000LL);
	CHECK(ll_clock_to_mono(CLOCK_REALTIME, &rt, &mono) == 0, "realtime in %lld ns", (long long)ns);
	int64_t after = mono_now();
	CHECK(ns_of(&mono) <= after + ns && ns_of(&mono) >= before + ns - (after - before),
	      "realtime in %lld ns is %lld ns from now on the monotonic clock", (long long)ns,
	      (long long)(ns_of(&mono) - after));
}

static int clock_case(void)
{
	struct timespec out, far = { INT64_MAX, 999999999 };
	const struct timespec bad[] = { { 1, -1 }, { 1, 1000000000L } };
	const int clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	for (int c = 0; c < 2; c++) {
		CHECK(ll_clock_to_mono(clocks[c], NULL, &out) == EINVAL, "no deadline, clock %d", c);
		for (int b = 0; b < 2; b++)
			CHECK(ll_clock_to_mono(clocks[c], &bad[b], &out) == EINVAL, "tv_nsec %ld",
			      bad[b].tv_nsec);
	}
	CHECK(ll_clock_to_mono(CLOCK_PROCESS_CPUTIME_ID, &far, &out) == EINVAL, "a CPU-time clock");
	/* Monotonic as it is, however far or past. */
	const struct timespec as_is[] = { { INT64_MAX, 999999999 }, { -5, 0 }, { 12, 345 } };
	for (int i = 0; i < 3; i++) {
		CHECK(ll_clock_to_mono(CLOCK_MONOTONIC, &as_is[i], &out) == 0 &&
		      out.tv_sec == as_is[i].tv_sec && out.tv_nsec == as_is[i].tv_nsec,
		      "monotonic deadline %d moved", i);
	}
	realtime_ahead(1000000000LL);
	realtime_ahead(0);
	/* The latest realtime deadline stays centuries away; past ones stay past. */
	CHECK(ll_clock_to_mono(CLOCK_REALTIME, &far, &out) == 0, "the latest deadline");
	CHECK(out.tv_nsec >= 0 && out.tv_nsec < 1000000000L &&
	      out.tv_sec > mono_now() / 1000000000LL + 100LL * 365 * 86400,
	      "the latest realtime deadline is %lld s on the monotonic clock", (long long)out.tv_sec);
	const struct timespec past[] = { { INT64_MIN, 0 }, { -1, 999999999 }, { 0, 0 }, { 1, 0 } };
	for (int i = 0; i < 4; i++) {
		CHECK(ll_clock_to_mono(CLOCK_REALTIME, &past[i], &out) == 0, "past deadline %d", i);
		CHECK(out.tv_sec >= 0 && ns_of(&out) <= mono_now(),
		      "past deadline %d is %lld ns on the monotonic clock", i, (long long)ns_of(&out));
	}
	return 0;
}

static const struct test_case cases[] = {
	{ "flags", flags, 0 },
	{ "glibc-state", glibc_state, 0 },
	{ "clock", clock_case, 0 },
};

int main(int argc, char **argv)
{
	const char *arg;
	const struct test_case *c = test_pick(argc, argv, cases, LL_COUNT(cases), "CASE", &arg);
	if (!c)
		return 2;
	return c->run();
}
