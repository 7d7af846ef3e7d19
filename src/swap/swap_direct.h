/*
 * swap_direct.h: liblocklab-swap linked into a program instead of preloaded
 * (LL_SWAP_DIRECT: the ThreadSanitizer build, whose runtime interposes the
 * very functions the swapper does).  Its entry points are then
 * swap_pthread_*, with glibc's types; glibc's own functions (through the
 * sanitizer) are what the swapper calls for the mutexes glibc keeps.
 */
#ifndef LOCKLAB_SWAP_DIRECT_H
#define LOCKLAB_SWAP_DIRECT_H

#include <pthread.h>

#define SWAP_ENTRY_POINTS(X) \
	X(pthread_mutex_init) X(pthread_mutex_destroy) X(pthread_mutex_lock) \
	X(pthread_mutex_trylock) X(pthread_mutex_timedlock) X(pthread_mutex_clocklock) \
	X(pthread_mutex_unlock) X(pthread_mutex_consistent) X(pthread_cond_wait) \
	X(pthread_cond_timedwait) X(pthread_cond_clockwait) X(pthread_cond_signal) \
	X(pthread_cond_broadcast) X(pthread_rwlock_init) X(pthread_rwlock_rdlock) \
	X(pthread_rwlock_tryrdlock) X(pthread_rwlock_timedrdlock) X(pthread_rwlock_clockrdlock) \
	X(pthread_rwlock_wrlock) X(pthread_rwlock_trywrlock) X(pthread_rwlock_timedwrlock) \
	X(pthread_rwlock_clockwrlock) X(pthread_rwlock_destroy) X(pthread_rwlock_unlock)

#define SWAP_DIRECT_DECLARE(f) __typeof__(f) swap_##f;
SWAP_ENTRY_POINTS(SWAP_DIRECT_DECLARE)
#undef SWAP_DIRECT_DECLARE

/* SWAP_DIRECT_CALLS defined before the include (the test program): its calls
 * by glibc's names go to the swapper's entry points, one line per name of
 * SWAP_ENTRY_POINTS. */
#ifdef SWAP_DIRECT_CALLS
#define pthread_mutex_init swap_pthread_mutex_init
#define pthread_mutex_destroy swap_pthread_mutex_destroy
#define pthread_mutex_lock swap_pthread_mutex_lock
#define pthread_mutex_trylock swap_pthread_mutex_trylock
#define pthread_mutex_timedlock swap_pthread_mutex_timedlock
#define pthread_mutex_clocklock swap_pthread_mutex_clocklock
#define pthread_mutex_unlock swap_pthread_mutex_unlock
#define pthread_mutex_consistent swap_pthread_mutex_consistent
#define pthread_cond_wait swap_pthread_cond_wait
#define pthread_cond_timedwait swap_pthread_cond_timedwait
#define pthread_cond_clockwait swap_pthread_cond_clockwait
#define pthread_cond_signal swap_pthread_cond_signal
#define pthread_cond_broadcast swap_pthread_cond_broadcast
#define pthread_rwlock_init swap_pthread_rwlock_init
#define pthread_rwlock_rdlock swap_pthread_rwlock_rdlock
#define pthread_rwlock_tryrdlock swap_pthread_rwlock_tryrdlock
#define pthread_rwlock_timedrdlock swap_pthread_rwlock_timedrdlock
#define pthread_rwlock_clockrdlock swap_pthread_rwlock_clockrdlock
#define pthread_rwlock_wrlock swap_pthread_rwlock_wrlock
#define pthread_rwlock_trywrlock swap_pthread_rwlock_trywrlock
#define pthread_rwlock_timedwrlock swap_pthread_rwlock_timedwrlock
#define pthread_rwlock_clockwrlock swap_pthread_rwlock_clockwrlock
#define pthread_rwlock_destroy swap_pthread_rwlock_destroy
#define pthread_rwlock_unlock swap_pthread_rwlock_unlock
#endif

#endif
