/*
 * swap_test.h: what test_swap's cases share (helpers.c), and the cases
 * themselves, one file per concern: mutexes.c, conds.c, forks.c, load.c,
 * rwlocks.c; test_swap.c runs the one its command line names.
 */
#ifndef LOCKLAB_TEST_SWAP_H
#define LOCKLAB_TEST_SWAP_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#ifdef LL_SWAP_DIRECT
/* Built with the swapper linked in (the ThreadSanitizer build): every mutex,
 * condvar and rwlock call of the cases goes to its entry points by their own
 * names. */
#define SWAP_DIRECT_CALLS
#include "swap/swap_direct.h"
#endif

/* The case's argument (argv[2]), or NULL. */
extern const char *arg;

int64_t now_ns(clockid_t clk);
struct timespec after_ns(clockid_t clk, int64_t ns);
void spawn(void *(*fn)(void *), void *p, pthread_t *t);
void *join(pthread_t t);
/* pthread_mutex_init with a mutex of TYPE (the dynamic twin of a static initializer). */
int init_typed(pthread_mutex_t *m, int type);
/* pthread_mutex_trylock(p)'s result, for another thread to give. */
void *try_is_busy(void *p);
/* The child pid must exit 0; what names the case in the failure. */
void wait_child_ok(pid_t pid, const char *what);
/* The number after KEY's first appearance ("KEY": N) in the JSON line process
 * pid wrote to path at its exit (the swapper's records); -1 if there is none. */
long swap_record_number(const char *path, pid_t pid, const char *key);

/* rwlocks.c: what another thread gets from one call (op) on rw_subject. */
extern pthread_rwlock_t *rw_subject;
extern const struct timespec rw_far;   /* the latest representable deadline */
enum { RW_TRYRD, RW_TRYWR, RW_TIMEDRD_50MS, RW_CLOCKWR_50MS, RW_CLOCKRD_PAST,
       RW_TIMEDWR_PAST, RW_TIMEDWR_FAR };
void *rw_other(void *op);

/* The cases, by file. */
int preloaded(void);
int recursive(void);
int errorcheck(void);
int trylock(void);
int timedlock(void);
int exclusion(void);
int glibc_kept(void);
int broadcast(void);
int pingpong(void);
int condtimed(void);
int condstress(void);
int herd(void);
int forking(void);
int forkqueue(void);
int forkheld(void);
int rwfork(void);
int rwforkheld(void);
int manythreads(void);
int allocs(void);
int rwcount(void);
int rwerrors(void);
int rwsites(void);

#endif
