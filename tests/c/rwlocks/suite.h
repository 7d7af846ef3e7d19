/*
 * suite.h: the cases of test_rwlocks (a file each, or per rwlock) and what
 * they share.
 */
#ifndef LOCKLAB_TEST_RWLOCKS_SUITE_H
#define LOCKLAB_TEST_RWLOCKS_SUITE_H

#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"
#include "locklab/locklab.h"

/* The rwlock a per-rwlock case runs on (argv[2]; revocation: bravo's underlying one). */
extern const char *algo;

/* rw as an `algo` rwlock with `opts` (fails the test if it cannot be made). */
void init_rw(ll_rwlock_t *rw, const char *opts);
/* The options that make `algo` prefer writers, where a knob chooses it; else NULL. */
const char *writer_first_opts(void);
void sleep_ms(long ms);

/* The lock most cases work on, and the step two threads walk through. */
extern ll_rwlock_t shared;
extern atomic_int step;
/* Yield until step reaches s. */
void wait_step(int s);

/* revoking.c: readers that hold `shared` until readers_go passes their number
 * (table_reader, argument: that number), a writer that takes it (revoking_writer);
 * overlap counts a reader and the writer seen inside together. */
extern atomic_int readers_in, readers_go, writer_done, overlap;
void *table_reader(void *p);
void *revoking_writer(void *p);
/* One try of `shared` in a new thread, the read side (write 0) or the write side: its result. */
int in_other_thread(int write);

int test_exclusion(void);
int test_try(void);
int test_timed(void);
int test_wakeup(void);
int test_starvation(void);
int test_recursion(void);
int test_realtime(void);
int test_revocation(void);
int test_config(void);
int test_innodb56(void);
int test_ll(void);
int test_ll_poll(void);
int test_ll_table(void);

#endif
