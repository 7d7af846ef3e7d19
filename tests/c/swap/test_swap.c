/*
 * test_swap.c: POSIX mutex, condvar and rwlock semantics, as a program sees
 * them with liblocklab-swap.so preloaded (CMakeLists.txt runs every case
 * under several algorithms; the cases are in the files swap_test.h lists).
 * Nothing here knows about the swapper but `preloaded`, which refuses to pass
 * a run where the library was not loaded, and `herd`, which reads the
 * swapper's statistics (LOCKLAB_SWAP_STATS_JSON).
 *
 *   test_swap CASE [N]
 *
 * Exit status 77: the case cannot run on this machine (it says why).
 */
#include "swap_test.h"

static const struct test_case cases[] = {
	{ "preloaded", preloaded, 0 },
	{ "recursive", recursive, 0 },
	{ "errorcheck", errorcheck, 0 },
	{ "trylock", trylock, 0 },
	{ "timedlock", timedlock, 0 },
	{ "exclusion", exclusion, 0 },
	{ "broadcast", broadcast, 0 },
	{ "pingpong", pingpong, 0 },
	{ "condtimed", condtimed, 0 },
	{ "herd", herd, 0 },
	{ "condstress", condstress, 0 },
	{ "fork", forking, 0 },
	{ "forkqueue", forkqueue, 0 },
	{ "forkheld", forkheld, 0 },
	{ "manythreads", manythreads, 0 },
	{ "allocs", allocs, 0 },
	{ "glibc", glibc_kept, 0 },
	{ "rwcount", rwcount, 0 },
	{ "rwerrors", rwerrors, 0 },
	{ "rwsites", rwsites, 0 },
	{ "rwfork", rwfork, 0 },
	{ "rwforkheld", rwforkheld, 0 },
};

int main(int argc, char **argv)
{
	const struct test_case *c = test_pick(argc, argv, cases, sizeof(cases) / sizeof(cases[0]),
					      "CASE [N]", &arg);
	if (!c)
		return 2;
	test_watchdog(c->name, 120);
	return c->run();
}
