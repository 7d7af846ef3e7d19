/* Support header: users include locklab/locklab.h and the other entry headers, not bits/. */
/*
 * bits/monitor_hooks.h: the build-time switch of the lock monitor, and the two
 * counters the library's wait helpers feed (locklab/monitor.h has the API).
 *
 *   LL_MONITOR  1 (default): ll_mutex_lock() and friends test one bit of
 *               the lock's `mon` word and, when it is set, go through the
 *               monitor; 0: they compile straight to the ops calls and the
 *               wait helpers count nothing.  CMake's LL_MONITOR option sets it
 *               for the library and everything linked to it; a translation
 *               unit may build it out on its own calls with `#undef
 *               LL_MONITOR` and `#define LL_MONITOR 0` before any locklab
 *               header.
 *
 * The monitored slow path sets `active` in the waiting thread's counters;
 * while it is set, ll_spin_wait() counts spin waits and the futex helpers
 * (and the library's pthread waits) count OS waits.  Only the owning thread
 * writes them (relaxed atomic stores, no locked instruction); the monitor
 * reads them from other threads to show what a waiter has done so far.
 */
#ifndef LOCKLAB_MONITOR_HOOKS_H
#define LOCKLAB_MONITOR_HOOKS_H

#include "locklab/bits/api.h"

#include <stdint.h>

#ifndef LL_MONITOR
#define LL_MONITOR 1
#endif

#if LL_MONITOR && !defined(__cplusplus)

struct ll_mon_counting {
	unsigned active;     /* inside a monitored wait: count */
	uint64_t spins;      /* spin waits (ll_spin_wait calls) */
	uint64_t parks;      /* OS waits (futex waits, blocking pthread calls) */
};

/* Initial-exec: one %fs-relative load, even from a shared library. */
extern LL_API _Thread_local struct ll_mon_counting ll_mon_counting
	__attribute__((tls_model("initial-exec")));

static inline void ll_mon_note_spin(void)
{
	if (__builtin_expect(ll_mon_counting.active, 0))
		__atomic_store_n(&ll_mon_counting.spins, ll_mon_counting.spins + 1, __ATOMIC_RELAXED);
}

static inline void ll_mon_note_park(void)
{
	if (__builtin_expect(ll_mon_counting.active, 0))
		__atomic_store_n(&ll_mon_counting.parks, ll_mon_counting.parks + 1, __ATOMIC_RELAXED);
}

#else

static inline void ll_mon_note_spin(void) {}
static inline void ll_mon_note_park(void) {}

#endif
#endif
