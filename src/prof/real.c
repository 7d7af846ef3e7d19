/*
 * real.c: the functions the profiler stands in front of, glibc's own, found
 * with dlsym(RTLD_NEXT) once, by whichever thread calls first (a library may
 * lock a mutex before the profiler's constructor has run).
 */
#include <dlfcn.h>
#include <sched.h>

#include "prof.h"

struct prof_real prof_real;
atomic_int prof_real_ready;

void prof_real_resolve(void)
{
	static atomic_int state;   /* 0 nobody, 1 resolving, 2 done */
	int expect = 0;

	/* One thread resolves; the others wait for its release store below. */
	if (!atomic_compare_exchange_strong_explicit(&state, &expect, 1, memory_order_acq_rel,
						     memory_order_acquire)) {
		while (!atomic_load_explicit(&prof_real_ready, memory_order_acquire))
			sched_yield();
		return;
	}
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
	/* Release: the pointers above are complete before anyone sees ready. */
	atomic_store_explicit(&prof_real_ready, 1, memory_order_release);
	atomic_store_explicit(&state, 2, memory_order_release);
}
