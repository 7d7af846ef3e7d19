/*
 * suite.h: the cases of test_locks (one file each) and what they share.
 */
#ifndef LOCKLAB_TEST_LOCKS_SUITE_H
#define LOCKLAB_TEST_LOCKS_SUITE_H

#include <stdatomic.h>

#include "harness.h"
#include "locklab/locklab.h"

/* The algorithm a per-algorithm case runs on (argv[2]). */
extern const char *algo;

/*
 * A lock of algorithm `name`, the library's or a peer's, with `opts`; NULL
 * opts and name the algorithm under test: LL_TEST_LOCK_OPTS (ctest runs `ll`
 * again with other knobs that way).
 */
void init_lock(ll_mutex_t *m, const char *name, const char *opts);
/* The ops table of `name` (fails the test if there is none). */
const struct ll_lock_ops *lock_ops(const char *name);
/* 1 if `name` only spins (never parks its waiters). */
int is_spinlock(const char *name);
/* 1 if spin=yield applies: the lock has a knob named "spin". */
int has_spin_knob(const char *name);
/* The options that make a spinning lock's waiters yield (suite.c says why). */
extern const char *const spin_yield;

/* The lock the trylock, timed and wakeup cases share, and the step two threads walk through. */
extern ll_mutex_t shared_lock;
extern atomic_int step;
/* Yield until step reaches s. */
void wait_step(int s);

int test_exclusion(void);
int test_trylock(void);
int test_timed(void);
int test_wakeup(void);
int test_innodb56_events(void);
int test_nested(void);
int test_config(void);
int test_ll_pollers(void);
int test_ll_drain(void);
int test_ll_pause(void);
int test_ll_poll_bound(void);
int test_ll_poll_queue(void);
int test_fifo_tp_skip(void);
int test_fifo_tp_abandon(void);

#endif
