/*
 * main.c: test_monitor, the lock monitor (locklab/monitor.h), in scenarios whose
 * answers are known exactly: no timing thresholds, waits are made certain
 * by holding a lock on purpose and polling the registry until the waiter is
 * listed.
 *
 *   test_monitor counts LOCK     exact counters: uncontended and contended
 *                                acquisitions, trylock failures, time-outs,
 *                                the wait histogram, sampled holds, last
 *                                locker, holder, waiters
 *   test_monitor watchdog LOCK   a held lock: the watchdog reports the
 *                                waiter, the holder and its file:line
 *   test_monitor dump            JSON (checked by a parser) and text, from
 *                                the API and on a signal
 *   test_monitor registry        concurrent create/destroy against dumps
 *                                and switches (run under ThreadSanitizer)
 *   test_monitor toggle          on/off at run time, per lock, and call
 *                                sites built without the monitor
 *
 * Exit 77 (skipped) when the library was built with LL_MONITOR=OFF.
 */
#include <pthread.h>
#include <stdio.h>

#include "suite.h"

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "counts", test_counts, 1 },     { "watchdog", test_watchdog_fires, 1 },
		{ "dump", test_dump, 0 },         { "registry", test_registry, 0 },
		{ "toggle", test_toggle, 0 },
	};
	pthread_setname_np(pthread_self(), "test_monitor");
	const struct test_case *t = test_pick(argc, argv, tests, sizeof(tests) / sizeof(tests[0]),
					      "counts|watchdog LOCK | dump | registry | toggle", &algo);
	if (!t)
		return 2;
	if (!ll_monitor_available()) {
		printf("%s: skipped: the library was built with LL_MONITOR=OFF\n", argv[1]);
		return TEST_SKIPPED;
	}
	return t->run();
}
