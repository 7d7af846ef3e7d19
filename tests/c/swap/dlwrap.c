/*
 * dlwrap.c: a preloaded library of the kind that wraps dl functions (as
 * tracers and other preload tools do), taking a pthread mutex inside
 * dlvsym.  Preloaded after liblocklab-swap.so, it receives the swapper's
 * own dlvsym calls, made while the swapper is still finding glibc's
 * functions: the mutex calls come back to the swapper from inside its set-up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t wrap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wrap_rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static long calls;

__attribute__((visibility("default"))) void *dlvsym(void *handle, const char *name,
						   const char *version)
{
	static void *(*next)(void *, const char *, const char *);
	pthread_mutex_lock(&wrap_rec);
	pthread_mutex_lock(&wrap_lock);
	calls++;
	if (!next)
		next = (void *(*)(void *, const char *, const char *))dlsym(RTLD_NEXT, "dlvsym");
	pthread_mutex_unlock(&wrap_lock);
	pthread_mutex_unlock(&wrap_rec);
	return next(handle, name, version);
}

__attribute__((destructor)) static void report(void)
{
	/* The same mutexes, now through the swapped path. */
	pthread_mutex_lock(&wrap_rec);
	pthread_mutex_lock(&wrap_lock);
	fprintf(stderr, "dlwrap calls %ld\n", calls);
	pthread_mutex_unlock(&wrap_lock);
	pthread_mutex_unlock(&wrap_rec);
}
