/*
 * suite.h: the cases of test_monitor (a file each) and what they share.
 */
#ifndef LOCKLAB_TEST_MONITOR_SUITE_H
#define LOCKLAB_TEST_MONITOR_SUITE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "harness.h"
#include "locklab/locklab.h"

/* The lock a per-lock case runs on (argv[2]). */
extern const char *algo;

/* m as a `name` lock (the library's or a peer's), named lock_name in the monitor. */
void init_named(ll_mutex_t *m, const char *name, const char *lock_name);
/* m's statistics (fails the test if it has no monitor record). */
struct ll_mutex_stats stats_of(const ll_mutex_t *m);
void pause_ms(int ms);
/* Locks whose waits run in code that does not report spins and OS waits. */
int waits_opaque(const char *name);
/* 1 if `name` parks its waiters. */
int parks(const char *name);

/* A helper thread that waits on the lock. */
enum { DO_LOCK, DO_TRYLOCKS, DO_TIMEOUTS };

struct helper {
	pthread_t thread;
	ll_mutex_t *m;
	int what, times;
	const char *name;          /* thread name, or NULL */
	atomic_int tid;            /* published before it waits */
	const char *file;          /* the file and line of its lock call */
	int line;
	int results[8];
};

/* Start h on m: `what` (DO_*) `times` times, the thread named `name` (or not). */
void helper_start(struct helper *h, ll_mutex_t *m, int what, int times, const char *name);
/*
 * Poll until the helper is listed as the one waiter on m; with `active`,
 * until it has also spun or parked at least once.  Returns its entry.
 */
struct ll_waiter wait_listed(ll_mutex_t *m, struct helper *h, int active);

/* 1 when text is one JSON value and nothing else (json_check.c). */
int json_valid(const char *text);
/* How many times `what` occurs in text. */
size_t count_of(const char *text, const char *what);
/* A dump into a string (free it). */
char *dump_string(enum ll_dump_format format);

/* off.c: n lock+unlock pairs, one trylock and one timedlock_ns, all compiled with LL_MONITOR=0. */
void off_lock_unlock(ll_mutex_t *m, int n);

int test_counts(void);
int test_watchdog_fires(void);
int test_dump(void);
int test_registry(void);
int test_toggle(void);

#endif
