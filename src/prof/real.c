/*
 * real.c: the functions the profiler stands in front of, glibc's own, found
 * with dlsym(RTLD_NEXT) once, by whichever thread calls first (a library may
 * lock a mutex before the profiler's constructor has run).
 */
#include <dlfcn.h>

#include "prof.h"
#include "preload/glibc.h"
#include "preload/once.h"

struct prof_real prof_real;
atomic_int prof_real_ready;

void prof_real_resolve(void)
{
	static atomic_int state;   /* one thread resolves; the others wait for it */
	if (!pl_once_claim(&state, &prof_real_ready))
		return;
	/* No symbol version: a lock swapper preloaded after us defines the condvar
	 * functions unversioned, and dlvsym would step over it to glibc's. */
#define R(field, name, version) \
	prof_real.field = (__typeof__(prof_real.field))pl_glibc_find(#name, NULL);
	PL_GLIBC_LOCKS(R)
#undef R
#define R(field, name) prof_real.field = (__typeof__(prof_real.field))dlsym(RTLD_NEXT, name)
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
