/*
 * test_monitor.h: what test_monitor.c shares with its unit built without
 * the monitor (test_monitor_off.c).
 */
#ifndef LOCKLAB_TEST_MONITOR_H
#define LOCKLAB_TEST_MONITOR_H

#include "locklab/locklab.h"

/* n lock+unlock pairs, one trylock and one timedlock_ns, all compiled with LL_MONITOR=0. */
void off_lock_unlock(ll_mutex_t *m, int n);

#endif
