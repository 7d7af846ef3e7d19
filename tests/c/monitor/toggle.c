/*
 * toggle.c: test_monitor toggle, on/off at run time, per lock, and call sites
 * built without the monitor (off.c).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

int test_toggle(void)
{
	ll_mutex_t m, n;

	ll_monitor_set_enabled(0);
	init_named(&m, "futex", "toggled");
	for (int i = 0; i < 10; i++) {
		ll_mutex_lock(&m);
		ll_mutex_unlock(&m);
	}
	struct ll_mutex_stats s = stats_of(&m);
	CHECK(!s.monitored && s.acquisitions == 0, "counted while off: %llu",
	      (unsigned long long)s.acquisitions);

	CHECK(ll_mutex_monitor(&m, 1) == 0, "per-lock switch");
	for (int i = 0; i < 10; i++) {
		ll_mutex_lock(&m);
		ll_mutex_unlock(&m);
	}
	CHECK(stats_of(&m).monitored && stats_of(&m).acquisitions == 10, "per-lock on: %llu",
	      (unsigned long long)stats_of(&m).acquisitions);

	/* Call sites built with LL_MONITOR=0 never reach the monitor, on or not. */
	off_lock_unlock(&m, 10);
	CHECK(stats_of(&m).acquisitions == 10, "a unit built without the monitor was counted");

	CHECK(ll_monitor_set_enabled(1) == 0, "the global switch was on");
	init_named(&n, "ticket", "born-on");
	ll_mutex_lock(&n);
	ll_mutex_unlock(&n);
	CHECK(stats_of(&n).acquisitions == 1 && stats_of(&n).monitored, "a new lock is not on");

	CHECK(ll_monitor_set_enabled(0) == 1, "the global switch was off");
	ll_mutex_lock(&m);
	ll_mutex_unlock(&m);
	ll_mutex_lock(&n);
	ll_mutex_unlock(&n);
	CHECK(!stats_of(&m).monitored && stats_of(&m).acquisitions == 10 &&
	      stats_of(&n).acquisitions == 1, "counted after the global switch went off");
	/* Held across a switch: the counters stay consistent. */
	ll_mutex_lock(&m);
	ll_monitor_set_enabled(1);
	ll_mutex_unlock(&m);
	ll_mutex_lock(&m);
	ll_monitor_set_enabled(0);
	ll_mutex_unlock(&m);
	s = stats_of(&m);
	CHECK(s.acquisitions == 11 && s.holder_tid == 0, "across switches: %llu, holder %d",
	      (unsigned long long)s.acquisitions, s.holder_tid);
	ll_mutex_destroy(&m);
	ll_mutex_destroy(&n);
	CHECK(ll_mutex_stats(&m, &s) == ENOENT, "stats of a destroyed lock");
	printf("toggle: global, per lock, across a held lock, and built-out call sites: ok\n");
	return 0;
}
