/*
 * monitor_impl.h: the lock monitor's records, shared by monitor.c (records,
 * the table of live locks, the monitored lock paths), dump.c (dumps, their
 * output, the signal), watchdog.c and env.c (the environment, at start).
 *
 * Every field another thread may read while it changes is accessed with
 * __atomic builtins, relaxed unless said otherwise: on x86-64 the loads
 * and stores are plain moves, and ThreadSanitizer sees atomics, not races.
 */
#ifndef LOCKLAB_MONITOR_IMPL_H
#define LOCKLAB_MONITOR_IMPL_H

#include <pthread.h>
#include <stdalign.h>

#include "locklab/locklab.h"

/* Called by ll_mutex_init_config_at / ll_mutex_destroy (mutex.c). */
void ll_mon_attach(ll_mutex_t *m, const char *file, int line);
void ll_mon_detach(ll_mutex_t *m);

#if LL_MONITOR

#define MON_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define MON_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
/* A field only the holder of the monitored lock writes: the lock orders the writers. */
#define MON_BUMP(x, v) MON_STORE(x, MON_LOAD(x) + (v))
/* A counter written without the lock held. */
#define MON_ADD(x, v) ((void)__atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED))

/* One per live lock, from ll_mutex_init to ll_mutex_destroy. */
struct ll_mon_lock {
	/* Line 0, first: written on every monitored acquisition and release (monitor.h). */
	alignas(64) struct ll_mon_hot hot;
	/* Written by holders on the contended path and at sampled releases. */
	alignas(64) uint64_t contended, spins, parks, wait_ns_sum, wait_ns_max;
	uint64_t hold_samples, hold_ns_sum, hold_ns_max;
	uint64_t wait_hist[LL_MON_HIST_BUCKETS];
	/* Written without the lock held (failed attempts): atomic RMW. */
	alignas(64) uint64_t trylock_failures, timeouts, failed_spins, failed_parks;
	/* Set once at creation, before the lock is published. */
	ll_mutex_t *mutex;
	const struct ll_lock_ops *ops;   /* the algorithm's own table */
	struct ll_lock_ops mon_ops;      /* m->ops while monitored: unlock counts the release */
	const char *created_file;
	int created_line, created_tid;
	uint64_t id;
	/* 1: its waits happen in code that does not report them (glibc, peers). */
	uint8_t opaque;
	/* Under ll_mon_reg.mu. */
	struct ll_mon_lock *next, *prev;
	char name[LL_MON_NAME_MAX];
	size_t snap_index;             /* scratch of the snapshot being taken */
};

/* One per thread that used a monitored lock, from first use to thread exit. */
struct ll_mon_thread {
	struct ll_mon_thread *next, *prev;   /* under ll_mon_reg.threads_mu */
	int tid;
	char name[LL_MON_THREAD_NAME_MAX];
	struct ll_mon_counting *counting;    /* the thread's counters (TLS) */
	/*
	 * The wait under way, written by the thread only, as a sequence lock:
	 * wait_seq odd while the fields change, even and new for each wait.
	 */
	uint64_t wait_seq;
	struct ll_mon_lock *waiting_on;      /* NULL: not waiting */
	uint64_t since_ns, spins0, parks0;
	const char *wait_file;
	int wait_line;
	uint64_t reported_seq;               /* the watchdog's, under threads_mu */
};

/* The registries.  Order: mu before threads_mu. */
struct ll_mon_registry {
	pthread_mutex_t mu;                  /* the list of locks */
	struct ll_mon_lock head;             /* circular */
	size_t count;
	uint64_t next_id;
	int enabled;                         /* statistics for new locks; atomic reads */
	pthread_mutex_t threads_mu;
	struct ll_mon_thread threads;        /* circular */
};
extern struct ll_mon_registry ll_mon_reg;

/* Everything a dump shows, copied out under the registries' mutexes. */
struct ll_mon_thread_info {
	int tid;
	char name[LL_MON_THREAD_NAME_MAX];
};
struct ll_mon_wait_info {
	size_t lock;                         /* index into locks */
	struct ll_waiter w;
};
struct ll_mon_snapshot {
	uint64_t now_ns;
	int enabled;
	size_t nlocks, nwaits, nthreads;
	struct ll_mutex_stats *locks;
	struct ll_mon_wait_info *waits;
	struct ll_mon_thread_info *threads;  /* sorted by tid */
};

/* 0, or ENOMEM. */
int ll_mon_snapshot_take(struct ll_mon_snapshot *s);
void ll_mon_snapshot_free(struct ll_mon_snapshot *s);
/* A thread's name from a snapshot; "" when it has exited. */
const char *ll_mon_thread_name(const struct ll_mon_snapshot *s, int tid);

/*
 * The watchdog's look: every monitored wait of threshold_ns or more not
 * reported before, into *out (malloc'd; the caller frees).  The count.
 */
size_t ll_mon_long_waits(uint64_t threshold_ns, struct ll_watchdog_report **out);

/* Where dumps and reports go when nothing else is said: LOCKLAB_MONITOR_OUT or NULL
 * (stderr); set once, by env.c, before any thread starts (dump.c). */
const char *ll_mon_out_path(void);
void ll_mon_set_out_path(const char *path);

/* Whether a dump may be asked on SIGNO (dump.c): the same signals as the
 * profiler's report signal.  LL_MON_DUMP_SIGNALS names them for error messages. */
int ll_mon_dump_signal_ok(int signo);
#define LL_MON_DUMP_SIGNALS "USR1, USR2, PROF, URG, WINCH, or their numbers"
/* Open the configured output for one dump or report; close with ll_mon_out_close. */
FILE *ll_mon_out_open(const char *path);
void ll_mon_out_close(FILE *f, const char *path);
/* One report as a line of text. */
void ll_mon_report_print(FILE *f, const struct ll_watchdog_report *r);

#endif
#endif
