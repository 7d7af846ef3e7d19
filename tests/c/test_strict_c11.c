/*
 * test_strict_c11: a user of the public headers compiled as strict ISO C11
 * (-std=c11, no _GNU_SOURCE or _POSIX_C_SOURCE), where <time.h> hides the
 * POSIX clocks: every header must still compile, and the lock must work.
 */
#include <stdio.h>

#include "locklab/gate.h"
#include "locklab/locks/ll.h"
#include "locklab/locklab.h"
#include "locklab/monitor.h"

int main(void)
{
	ll_mutex_t m;
	struct ll_error err;
	if (ll_mutex_init(&m, NULL, NULL, &err)) {
		fprintf(stderr, "init: %s\n", err.msg);
		return 1;
	}
	uint64_t t0 = ll_now_ns();
	ll_mutex_lock(&m);
	int busy = ll_mutex_trylock(&m);
	ll_mutex_unlock(&m);
	ll_mutex_destroy(&m);
	if (busy != EBUSY || ll_now_ns() < t0) {
		fprintf(stderr, "trylock of a held lock returned %d\n", busy);
		return 1;
	}
	puts("strict C11: headers compile, lock/trylock/unlock work");
	return 0;
}
