/*
 * suite.h: the cases of test_api_contract (one file each) and what they share.
 * The contract they hold the library to is written in locklab/locklab.h
 * and locklab/rwlock.h; every algorithm is taken from the registry, so one
 * registered later is held to it the moment it is.
 */
#ifndef LOCKLAB_TEST_CONTRACT_SUITE_H
#define LOCKLAB_TEST_CONTRACT_SUITE_H

#include "harness.h"

/*
 * Run fn(arg) in a forked child with its stderr to a pipe: 1 when the child
 * died of signal `sig` having written a line containing `says`.
 */
int dies_saying(void (*fn)(void *), void *arg, int sig, const char *says);

/*
 * Run fn(arg) on a thread of its own, joined: what it returned.  A lock
 * another thread must be able to take is the point of most checks here (a
 * lock whose state an unlock corrupted wedges, or serves one thread only).
 */
int on_other_thread(int (*fn)(void *), void *arg);

int test_mutex(void);
int test_rwlock(void);
int test_api(void);

#endif
