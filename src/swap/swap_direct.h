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

#endif
