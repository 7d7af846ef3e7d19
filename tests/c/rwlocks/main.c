/*
 * main.c: test_rwlocks, correctness of every rwlock through the generic API,
 * its cases in the files of this folder by what they prove (suite.h lists them).
 *
 *   test_rwlocks exclusion ALGO    readers and writers: a writer never sees anyone
 *                                  inside, readers never see a writer, counters add up
 *   test_rwlocks try ALGO          tryrdlock / trywrlock semantics across threads
 *   test_rwlocks timed ALGO        timed read and write waits, every representable
 *                                  deadline, both clocks
 *   test_rwlocks wakeup ALGO       256 threads mixing readers, writers and timed waits
 *   test_rwlocks starvation ALGO   a writer gets in under a continuous stream of readers
 *   test_rwlocks recursion ALGO    a reader locks again past a waiting writer; a thread
 *                                  holds 12 locks twice each
 *   test_rwlocks realtime ALGO     SCHED_FIFO: no reader enters while a writer of its
 *                                  priority or above waits (root or RLIMIT_RTPRIO)
 *   test_rwlocks config            registry and option errors
 *   test_rwlocks ll-table          ll's table of visible readers: readers crowded on
 *                                  one CPU fill its line and grow the table, and every
 *                                  hold keeps writers out; a reader that moves to
 *                                  another CPU leaves the slot it took
 *   test_rwlocks innodb56          innodb56-rw's lock_word step by step: x recursion,
 *                                  wait_ex keeps new readers out, a timed-out wait_ex
 *                                  writer gives the reservation back and wakes readers
 *   test_rwlocks revocation UNDER  bravo over UNDER: table readers hold off a revoking
 *                                  writer, a timed revocation gives up with the bias
 *                                  back on, inhibit keeps it off; a stress with the
 *                                  bias flipping where counters add up
 *
 * ctest runs each test for each rwlock of src/lib/rwlocks/rwlocks.def.
 */
#include "suite.h"

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "exclusion", test_exclusion, 1 }, { "try", test_try, 1 },
		{ "timed", test_timed, 1 },         { "wakeup", test_wakeup, 1 },
		{ "starvation", test_starvation, 1 }, { "recursion", test_recursion, 1 },
		{ "realtime", test_realtime, 1 },
		{ "revocation", test_revocation, 1 }, { "config", test_config, 0 },
		{ "innodb56", test_innodb56, 0 }, { "ll", test_ll, 0 }, { "ll-poll", test_ll_poll, 0 },
		{ "ll-table", test_ll_table, 0 },
	};
	const struct test_case *t = test_pick(argc, argv, tests, LL_COUNT(tests),
					      "exclusion|try|timed|wakeup|starvation|recursion|realtime ALGO | revocation UNDER | config | innodb56 | ll | ll-table",
					      &algo);
	return t ? t->run() : 2;
}
