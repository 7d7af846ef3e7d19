/*
 * handoff.h: what the two preloaded libraries tell each other when both are
 * loaded (`locklab profile --lock`: LD_PRELOAD="liblocklab-prof.so
 * liblocklab-swap.so", the profiler in front).  Each defines its own function
 * and refers to the other's weakly: a null address means that library is not
 * loaded.  Neither links the other.
 */
#ifndef LOCKLAB_PRELOAD_HANDOFF_H
#define LOCKLAB_PRELOAD_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#define LL_HANDOFF __attribute__((visibility("default")))

/*
 * liblocklab-prof.so: the program's call site of the pthread_mutex_init this
 * thread is inside of now, 0 when none.  The swapper behind the profiler is
 * called by the profiler, so its own return address names no site of the
 * program's.
 */
LL_HANDOFF uintptr_t locklab_prof_init_caller(void);

/*
 * liblocklab-swap.so: which locks serve the program's mutexes, for the
 * profiler's report header.  json 0: one line of text ("ttas (spin=yield)",
 * "tas for planted`hot_lock; glibc for the rest"); json 1: a JSON object
 * {"lock": NAME or null, "lock_opts": "...", "lock_for": [{"site", "lock",
 * "lock_opts"}, ...]}.  Writes at most len bytes, NUL included; no malloc.
 */
LL_HANDOFF void locklab_swap_describe(int json, char *buf, size_t len);

#endif
