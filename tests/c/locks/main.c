/*
 * main.c: test_locks, correctness of every algorithm through the generic API,
 * its cases in the files of this folder by what they prove (suite.h lists them).
 *
 *   test_locks exclusion ALGO   mutual exclusion under oversubscription
 *   test_locks trylock ALGO     trylock semantics across threads
 *   test_locks timed ALGO       timedlock: times out, and succeeds on release
 *   test_locks wakeup ALGO      256 threads, tiny holds, timed and plain waits
 *   test_locks nested           locks of every algorithm and peer held at once
 *   test_locks innodb56-events  two innodb56 locks sharing an event, contended
 *   test_locks ll-pollers       ll's pollers: the knob's bounds, the count never above
 *                               it and back to 0, timed waits among the pollers
 *   test_locks ll-drain         ll's parked waiters pass a free lock without waiting
 *                               for the end of a turn
 *   test_locks ll-pause         ll's paused looks: the knob's bounds, and a holder
 *                               re-acquiring back to back turns them off
 *   test_locks ll-poll-bound    ll's poll ends after a rotation while nobody is parked,
 *                               however slowly its yields come back
 *   test_locks ll-poll-queue    ... and goes on past a rotation while others are parked
 *   test_locks fifo-tp-skip     fifo-tp passes by a queued waiter that stopped running
 *   test_locks fifo-tp-abandon  fifo-tp's queued timed waiters leave at their deadlines
 *   test_locks config           registry and option errors
 *
 * ctest runs each test for each algorithm of src/lib/locks/algorithms.def and
 * each peer lock of the benchmark (src/bench/peers/).
 */
#include "suite.h"

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "exclusion", test_exclusion, 1 }, { "trylock", test_trylock, 1 },
		{ "timed", test_timed, 1 },         { "wakeup", test_wakeup, 1 },
		{ "nested", test_nested, 0 },       { "config", test_config, 0 },
		{ "innodb56-events", test_innodb56_events, 0 },
		{ "ll-pollers", test_ll_pollers, 0 }, { "ll-drain", test_ll_drain, 0 },
		{ "ll-pause", test_ll_pause, 0 }, { "ll-poll-bound", test_ll_poll_bound, 0 },
		{ "ll-poll-queue", test_ll_poll_queue, 0 },
		{ "fifo-tp-skip", test_fifo_tp_skip, 0 }, { "fifo-tp-abandon", test_fifo_tp_abandon, 0 },
	};
	const struct test_case *t = test_pick(argc, argv, tests, sizeof(tests) / sizeof(tests[0]),
					      "exclusion|trylock|timed|wakeup ALGO | nested | config | "
					      "innodb56-events | ll-pollers | ll-drain | ll-pause | "
					      "ll-poll-bound | ll-poll-queue | fifo-tp-skip | "
					      "fifo-tp-abandon",
					      &algo);
	return t ? t->run() : 2;
}
