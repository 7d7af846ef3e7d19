/*
 * real.c: the functions the profiler stands in front of, glibc's own, found
 * with dlsym(RTLD_NEXT) once, by whichever thread calls first (a library may
 * lock a mutex before the profiler's constructor has run).
 */
#include <dlfcn.h>

#include "prof.h"
#include "../preload/once.h"

struct prof_real prof_real;
atomic_int prof_real_ready;

void prof_real_resolve(void)
{
	static atomic_int state;   /* one thread resolves; the others wait for it */
	if (!pl_once_claim(&state, &prof_real_ready))
		return;
#define R(field, name) prof_real.field = (__typeof__(prof_real.field))dlsym(RTLD_NEXT, name)
	R(mutex_init, "pthread_mutex_init");
	R(mutex_destroy, "pthread_mutex_destroy");
	R(mutex_lock, "pthread_mutex_lock");
	R(mutex_trylock, "pthread_mutex_trylock");
	R(mutex_timedlock, "pthread_mutex_timedlock");
	R(mutex_clocklock, "pthread_mutex_clocklock");
	R(mutex_unlock, "pthread_mutex_unlock");
	R(rw_init, "pthread_rwlock_init");
	R(rw_destroy, "pthread_rwlock_destroy");
	R(rw_rdlock, "pthread_rwlock_rdlock");
	R(rw_tryrdlock, "pthread_rwlock_tryrdlock");
	R(rw_timedrdlock, "pthread_rwlock_timedrdlock");
	R(rw_clockrdlock, "pthread_rwlock_clockrdlock");
	R(rw_wrlock, "pthread_rwlock_wrlock");
	R(rw_trywrlock, "pthread_rwlock_trywrlock");
	R(rw_timedwrlock, "pthread_rwlock_timedwrlock");
	R(rw_clockwrlock, "pthread_rwlock_clockwrlock");
	R(rw_unlock, "pthread_rwlock_unlock");
	R(cond_wait, "pthread_cond_wait");
	R(cond_timedwait, "pthread_cond_timedwait");
	R(cond_clockwait, "pthread_cond_clockwait");
	R(cond_signal, "pthread_cond_signal");
	R(cond_broadcast, "pthread_cond_broadcast");
	R(syscall, "syscall");
	R(create, "pthread_create");
	R(sigaction, "sigaction");
	R(signal, "signal");
	R(sysv_signal, "sysv_signal");
	R(exit_, "_exit");
	R(fork, "fork");
#undef R
	/* The configuration is read before any wrapper acts on it (cond guards must
	 * be used by every waiter and signaler alike). */
	prof_config_load();
	pl_once_done(&prof_real_ready);   /* the pointers above complete before anyone sees it */
}
