/*
 * counts.c: test_monitor counts LOCK, exact counters: uncontended and
 * contended acquisitions, trylock failures, time-outs, the wait histogram,
 * sampled holds, last locker, holder, waiters.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "bench/locks.h"

enum { UNCONTENDED = 1000, CONTENDED = 20, TRYLOCK_FAILS = 5, TIMEOUTS = 3, TRYLOCK_OK = 2 };

int test_counts(void)
{
	ll_mutex_t m;
	int opaque = waits_opaque(algo), parking = parks(algo);
	int me = ll_monitor_thread_id();

	test_watchdog("counts", 600);
	ll_monitor_set_enabled(1);
	init_named(&m, algo, "counted");
	struct ll_mutex_stats s = stats_of(&m);
	CHECK(s.monitored && s.acquisitions == 0 && s.contended == 0 && !s.last_file,
	      "%s: a new lock has counts", algo);
	CHECK(!strcmp(s.name, "counted") && !strcmp(s.algo, algo), "name '%s' algo '%s'", s.name,
	      s.algo);
	CHECK(s.created_file && strstr(s.created_file, "locks.c") && s.created_tid == me,
	      "created at %s by %d", s.created_file ? s.created_file : "?", s.created_tid);

	/* Contended: the helper waits while we hold, is listed, then gets the lock. */
	for (int round = 0; round < CONTENDED; round++) {
		struct helper h;
		ll_mutex_lock(&m); const int held_line = __LINE__;
		helper_start(&h, &m, DO_LOCK, 0, NULL);
		struct ll_waiter w = wait_listed(&m, &h, !opaque);
		CHECK(w.file && !strcmp(w.file, h.file) && w.line > 0, "waiter at %s:%d",
		      w.file ? w.file : "?", w.line);
		s = stats_of(&m);
		CHECK(s.holder_tid == me && s.last_tid == me && s.last_line == held_line &&
		      !strcmp(s.last_file, __FILE__), "%s: holder %d at %s:%d, expected %d at line %d",
		      algo, s.holder_tid, s.last_file, s.last_line, me, held_line);
		CHECK(s.waiters == 1, "stats count %zu waiters", s.waiters);
		ll_mutex_unlock(&m);
		pthread_join(h.thread, NULL);
		CHECK(w.line == h.line, "waiter line %d, helper locked at %d", w.line, h.line);
		s = stats_of(&m);
		CHECK(s.holder_tid == 0 && s.last_tid == atomic_load(&h.tid) && s.last_line == h.line,
		      "%s: after the helper: holder %d, last %d at %d", algo, s.holder_tid,
		      s.last_tid, s.last_line);
		CHECK(ll_mutex_waiters(&m, &w, 1) == 0, "a waiter listed after the wait");
	}
	s = stats_of(&m);
	CHECK(s.acquisitions == 2 * CONTENDED && s.contended == CONTENDED,
	      "%s: %llu acquisitions, %llu contended; expected %d and %d", algo,
	      (unsigned long long)s.acquisitions, (unsigned long long)s.contended, 2 * CONTENDED,
	      CONTENDED);
	uint64_t in_hist = 0;
	for (int b = 0; b < LL_MON_HIST_BUCKETS; b++)
		in_hist += s.wait_hist[b];
	CHECK(in_hist == CONTENDED && s.wait_ns_max > 0 && s.wait_ns_sum >= s.wait_ns_max,
	      "%s: histogram holds %llu waits", algo, (unsigned long long)in_hist);
	if (opaque) {
		/* glibc's or a peer's wait: one OS wait per wait when the lock parks. */
		CHECK(s.spins == 0 && s.parks == (parking ? CONTENDED : 0),
		      "%s: spins %llu parks %llu", algo, (unsigned long long)s.spins,
		      (unsigned long long)s.parks);
	} else {
		/* Each helper was seen spinning or parked before the release. */
		CHECK(s.spins + s.parks >= CONTENDED, "%s: %llu spins + %llu parks for %d waits",
		      algo, (unsigned long long)s.spins, (unsigned long long)s.parks, CONTENDED);
		if (!parking)
			CHECK(s.parks == 0 && s.spins >= CONTENDED, "%s: spinlock parked", algo);
	}
	uint64_t spins = s.spins, parks_seen = s.parks;

	/* Uncontended. */
	for (int i = 0; i < UNCONTENDED; i++) {
		ll_mutex_lock(&m);
		ll_mutex_unlock(&m);
	}
	for (int i = 0; i < TRYLOCK_OK; i++) {
		CHECK(ll_mutex_trylock(&m) == 0, "%s: trylock of a free lock failed", algo);
		ll_mutex_unlock(&m);
	}
	s = stats_of(&m);
	CHECK(s.acquisitions == 2 * CONTENDED + UNCONTENDED + TRYLOCK_OK &&
	      s.contended == CONTENDED && s.spins == spins && s.parks == parks_seen,
	      "%s: after uncontended pairs: %llu acquisitions, %llu contended", algo,
	      (unsigned long long)s.acquisitions, (unsigned long long)s.contended);

	/* Failures while we hold it: trylocks and timed waits of the helper. */
	struct helper h;
	ll_mutex_lock(&m); const int held_line = __LINE__;
	helper_start(&h, &m, DO_TRYLOCKS, TRYLOCK_FAILS, NULL);
	pthread_join(h.thread, NULL);
	for (int i = 0; i < TRYLOCK_FAILS; i++)
		CHECK(h.results[i] == EBUSY, "%s: trylock on a held lock returned %d", algo,
		      h.results[i]);
	helper_start(&h, &m, DO_TIMEOUTS, TIMEOUTS, NULL);
	pthread_join(h.thread, NULL);
	for (int i = 0; i < TIMEOUTS; i++)
		CHECK(h.results[i] == ETIMEDOUT, "%s: timedlock on a held lock returned %d", algo,
		      h.results[i]);
	s = stats_of(&m);
	CHECK(s.holder_tid == me && s.last_line == held_line, "%s: holder %d at line %d", algo,
	      s.holder_tid, s.last_line);
	ll_mutex_unlock(&m);
	/* A timedlock of a free lock, deadline passed: taken, not contended. */
	struct timespec past = ll_deadline_after_ns(0);
	CHECK(ll_mutex_timedlock(&m, &past) == 0, "%s: timedlock of a free lock", algo);
	ll_mutex_unlock(&m); const int last_line = __LINE__ - 1;

	s = stats_of(&m);
	uint64_t expect = 2 * CONTENDED + UNCONTENDED + TRYLOCK_OK + 2;
	CHECK(s.acquisitions == expect && s.contended == CONTENDED &&
	      s.trylock_failures == TRYLOCK_FAILS && s.timeouts == TIMEOUTS,
	      "%s: acquisitions %llu (expected %llu), contended %llu, trylock failures %llu (%d), "
	      "timeouts %llu (%d)", algo, (unsigned long long)s.acquisitions,
	      (unsigned long long)expect, (unsigned long long)s.contended,
	      (unsigned long long)s.trylock_failures, TRYLOCK_FAILS,
	      (unsigned long long)s.timeouts, TIMEOUTS);
	CHECK(s.last_tid == me && s.last_line == last_line && s.holder_tid == 0,
	      "%s: last locker %d at line %d, holder %d", algo, s.last_tid, s.last_line,
	      s.holder_tid);
	/* One acquisition in LL_MON_HOLD_SAMPLE, and every one was released through the monitor. */
	CHECK(s.hold_samples == expect / LL_MON_HOLD_SAMPLE && s.hold_ns_sum >= s.hold_ns_max,
	      "%s: %llu hold samples of %llu acquisitions", algo,
	      (unsigned long long)s.hold_samples, (unsigned long long)expect);
	ll_mutex_destroy(&m);
	printf("counts %s: %llu acquisitions, %d contended (spins %llu, os waits %llu), %d trylock "
	       "failures, %d time-outs, %llu hold samples: exact\n", algo,
	       (unsigned long long)expect, CONTENDED, (unsigned long long)s.spins,
	       (unsigned long long)s.parks, TRYLOCK_FAILS, TIMEOUTS,
	       (unsigned long long)s.hold_samples);
	return 0;
}
