/*
 * off.c: lock calls compiled with the monitor built out
 * (LL_MONITOR=0 for this unit alone), linked beside monitored ones.
 */
#undef LL_MONITOR
#define LL_MONITOR 0

#include "suite.h"

void off_lock_unlock(ll_mutex_t *m, int n)
{
	for (int i = 0; i < n; i++) {
		ll_mutex_lock(m);
		ll_mutex_unlock(m);
	}
	if (ll_mutex_trylock(m) == 0)
		ll_mutex_unlock(m);
	if (ll_mutex_timedlock_ns(m, 0) == 0)
		ll_mutex_unlock(m);
}
