/*
 * glibc.h: glibc's pthread lock and condvar functions, as both preloaded
 * libraries keep them to call past their own wrappers.  One list, three uses:
 *
 *   struct { PL_GLIBC_LOCKS(PL_GLIBC_FIELD) ... } real;     the table's fields
 *   PL_GLIBC_LOCKS(R)   with R(field, symbol, version)     finding them
 *
 * A field has the type of the function it holds (__typeof__ of glibc's own
 * declaration).  version: the symbol version to ask for first (the condvar
 * functions exist at two), or NULL.
 */
#ifndef LOCKLAB_PRELOAD_GLIBC_H
#define LOCKLAB_PRELOAD_GLIBC_H

#include <dlfcn.h>
#include <pthread.h>

#define PL_GLIBC_LOCKS(X)                                                        \
	X(mutex_init, pthread_mutex_init, NULL)                                  \
	X(mutex_destroy, pthread_mutex_destroy, NULL)                            \
	X(mutex_lock, pthread_mutex_lock, NULL)                                  \
	X(mutex_trylock, pthread_mutex_trylock, NULL)                            \
	X(mutex_timedlock, pthread_mutex_timedlock, NULL)                        \
	X(mutex_clocklock, pthread_mutex_clocklock, NULL)                        \
	X(mutex_unlock, pthread_mutex_unlock, NULL)                              \
	X(rw_init, pthread_rwlock_init, NULL)                                    \
	X(rw_destroy, pthread_rwlock_destroy, NULL)                              \
	X(rw_rdlock, pthread_rwlock_rdlock, NULL)                                \
	X(rw_tryrdlock, pthread_rwlock_tryrdlock, NULL)                          \
	X(rw_timedrdlock, pthread_rwlock_timedrdlock, NULL)                      \
	X(rw_clockrdlock, pthread_rwlock_clockrdlock, NULL)                      \
	X(rw_wrlock, pthread_rwlock_wrlock, NULL)                                \
	X(rw_trywrlock, pthread_rwlock_trywrlock, NULL)                          \
	X(rw_timedwrlock, pthread_rwlock_timedwrlock, NULL)                      \
	X(rw_clockwrlock, pthread_rwlock_clockwrlock, NULL)                      \
	X(rw_unlock, pthread_rwlock_unlock, NULL)                                \
	X(cond_wait, pthread_cond_wait, "GLIBC_2.3.2")                           \
	X(cond_timedwait, pthread_cond_timedwait, "GLIBC_2.3.2")                 \
	X(cond_clockwait, pthread_cond_clockwait, NULL)                          \
	X(cond_signal, pthread_cond_signal, "GLIBC_2.3.2")                       \
	X(cond_broadcast, pthread_cond_broadcast, "GLIBC_2.3.2")

#define PL_GLIBC_FIELD(field, symbol, version) __typeof__(symbol) *field;

/* The next definition of `name` after ours: at `version` if given and found. */
static inline void *pl_glibc_find(const char *name, const char *version)
{
	void *f = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
	return f ? f : dlsym(RTLD_NEXT, name);
}

#endif
