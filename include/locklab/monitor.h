/*
 * monitor.h: what InnoDB's mutex reports beyond locking, for every lock of
 * the library (docs/monitoring.md).
 *
 *   - per-lock statistics: acquisitions, contended acquisitions, spin waits,
 *     OS waits, trylock failures, timedlock time-outs, a log2 histogram of
 *     wait time, a sampled hold time, the file:line and thread of the last
 *     locker (ll_mutex_lock() and friends are macros that pass
 *     __FILE__/__LINE__);
 *   - a name per lock and the place it was created; a registry of the live
 *     locks;
 *   - who waits: the threads waiting on each lock now, since when, and the
 *     holder;
 *   - a status dump (text table or JSON) from ll_monitor_dump() or on a
 *     signal;
 *   - a watchdog thread that reports waits longer than a threshold.
 *
 * Off at build time (LL_MONITOR=0, see locklab/bits/monitor_hooks.h) the lock
 * calls are the bare ops calls.  Built in, statistics are off until turned on:
 * ll_monitor_set_enabled(1) or LOCKLAB_MONITOR=1; an unmonitored acquiring
 * call costs one test of a word on the line that holds the ops pointer,
 * an unlock nothing (a monitored lock's ops is the monitor's copy).
 *
 *	ll_monitor_set_enabled(1);
 *	ll_mutex_init(&m, "futex", NULL, &err);
 *	ll_mutex_set_name(&m, "buffer_pool");
 *	...
 *	ll_monitor_dump(stderr, LL_DUMP_TEXT);
 *
 * Environment, read when the library loads (a malformed value is a one-line
 * error and exit status 2):
 *   LOCKLAB_MONITOR=0|1            statistics off/on at start
 *   LOCKLAB_MONITOR_SIGNAL=SIG     dump on signal SIG (USR1, SIGUSR2, 12, ...)
 *   LOCKLAB_MONITOR_OUT=PATH       dumps and watchdog reports go to PATH
 *                                  (appended), or `stderr` (the default)
 *   LOCKLAB_MONITOR_FORMAT=text|json
 *   LOCKLAB_WATCHDOG=MS[,PERIOD_MS] start the watchdog: report waits over MS
 *                                  milliseconds, checking every PERIOD_MS
 *                                  (default MS/4)
 */
#ifndef LOCKLAB_MONITOR_H
#define LOCKLAB_MONITOR_H

#include "locklab/bits/api.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "locklab/bits/monitor_hooks.h"
#include "locklab/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ll_mutex;

enum {
	LL_MON_HIST_BUCKETS = 40,   /* bucket k: waits in [2^k, 2^(k+1)) ns (k=0: 0-1 ns); the last takes the rest */
	LL_MON_NAME_MAX = 48,       /* a lock's name, NUL included */
	LL_MON_THREAD_NAME_MAX = 16,
	LL_MON_HOLD_SAMPLE = 128,   /* one acquisition in this many has its hold time measured */
};

enum ll_dump_format { LL_DUMP_TEXT = 0, LL_DUMP_JSON = 1 };

/* 1 when the library was built with the monitor (LL_MONITOR=1). */
LL_API int ll_monitor_available(void);

/* Statistics on or off for every live lock and every lock created later; returns the old setting. */
LL_API int ll_monitor_set_enabled(int on);
LL_API int ll_monitor_enabled(void);

/*
 * The per-lock calls below take a live lock: EINVAL for m NULL (or out NULL),
 * ENOENT for a lock with no record (monitor built out, destroyed, or its
 * record could not be allocated).
 */

/* One lock's statistics on or off: 0, EINVAL or ENOENT. */
LL_API int ll_mutex_monitor(struct ll_mutex *m, int on);

/* Name a lock (at most LL_MON_NAME_MAX - 1 bytes kept; NULL: no name): 0, EINVAL or ENOENT. */
LL_API int ll_mutex_set_name(struct ll_mutex *m, const char *name);

struct ll_mutex_stats {
	uint64_t id;                      /* 1, 2, ... in order of creation */
	char name[LL_MON_NAME_MAX];       /* "" until ll_mutex_set_name */
	const char *algo;
	const char *created_file;         /* where ll_mutex_init was called; NULL: unknown */
	int created_line, created_tid;
	int monitored;                    /* statistics are being counted */
	uint64_t acquisitions;            /* lock, trylock and timedlock that succeeded */
	uint64_t contended;               /* acquisitions whose first try failed: they waited */
	uint64_t spins;                   /* spin waits during waits */
	uint64_t parks;                   /* OS waits during waits */
	uint64_t trylock_failures;        /* trylock that returned EBUSY */
	uint64_t timeouts;                /* timedlock that returned ETIMEDOUT */
	uint64_t wait_ns_sum, wait_ns_max;               /* over the contended acquisitions */
	uint64_t wait_hist[LL_MON_HIST_BUCKETS];         /* sums to `contended` */
	uint64_t hold_samples, hold_ns_sum, hold_ns_max; /* sampled holds (LL_MON_HOLD_SAMPLE) */
	const char *last_file;            /* the last locker's call site; NULL: none yet */
	int last_line, last_tid;
	int holder_tid;                   /* 0: not held (by a monitored call) */
	size_t waiters;                   /* threads in a monitored wait on it now */
};

/* A snapshot of a lock's statistics: 0, EINVAL or ENOENT. */
LL_API int ll_mutex_stats(const struct ll_mutex *m, struct ll_mutex_stats *out);

struct ll_waiter {
	int tid;
	char thread_name[LL_MON_THREAD_NAME_MAX];
	const char *file;                 /* the call site that waits */
	int line;
	uint64_t since_ns;                /* CLOCK_MONOTONIC, as ll_now_ns() */
	uint64_t waited_ns;               /* so far */
	uint64_t spins, parks;            /* so far in this wait */
};

/* The threads in a monitored wait on m now: how many (fills at most max; out NULL: none).
 * m NULL or without a record: 0. */
LL_API size_t ll_mutex_waiters(const struct ll_mutex *m, struct ll_waiter *out, size_t max);

/* Live locks with a monitor record. */
LL_API size_t ll_monitor_lock_count(void);

/* The calling thread's id as the monitor reports it (the kernel's tid). */
LL_API int ll_monitor_thread_id(void);

/* Every live lock, as a text table or one line of JSON: 0 or an errno value (f NULL: EINVAL). */
LL_API int ll_monitor_dump(FILE *f, enum ll_dump_format format);

/*
 * Dump on signal signo (0: stop) to path (appended; NULL: stderr).  The
 * handler only posts a semaphore; a dumper thread writes.  0, or EINVAL
 * with err set (err may be NULL).  signo is one of SIGUSR1, SIGUSR2,
 * SIGPROF, SIGURG, SIGWINCH: a handler on a fault would dump once per
 * fault, forever, and one on SIGTERM or job control would have the
 * program ignore it.
 */
LL_API int ll_monitor_dump_on_signal(int signo, const char *path, enum ll_dump_format format,
				     struct ll_error *err);

/* One long wait, as the watchdog reports it. */
struct ll_watchdog_report {
	uint64_t lock_id;
	char lock_name[LL_MON_NAME_MAX];
	const char *algo;
	const char *created_file;
	int created_line;
	int waiter_tid;
	char waiter_name[LL_MON_THREAD_NAME_MAX];
	const char *wait_file;           /* where the waiter called lock */
	int wait_line;
	uint64_t waited_ns;              /* when the watchdog looked */
	int holder_tid;                  /* 0: unknown (released, or held by an unmonitored call) */
	char holder_name[LL_MON_THREAD_NAME_MAX];
	const char *holder_file;         /* the last locker's call site: the holder's when held */
	int holder_line;
};

typedef void (*ll_watchdog_fn)(const struct ll_watchdog_report *report, void *arg);

struct ll_watchdog_config {
	uint64_t threshold_ns;           /* report waits at least this long (> 0) */
	uint64_t period_ns;              /* look this often (0: threshold / 4, at least 1 ms) */
	ll_watchdog_fn fn;               /* NULL: write a line to `out` */
	void *arg;
	FILE *out;                       /* NULL: LOCKLAB_MONITOR_OUT, else stderr */
};

/*
 * Start the watchdog thread: each period it reports every monitored wait
 * that has lasted threshold_ns or more, once per wait.  It never acts on
 * the lock.  0, EBUSY (already running) or EINVAL (cfg NULL, no threshold), with err set.
 */
LL_API int ll_watchdog_start(const struct ll_watchdog_config *cfg, struct ll_error *err);
/* Stop and join it; nothing when it is not running. */
LL_API void ll_watchdog_stop(void);

/* ---- what locklab.h's inline lock paths use: not for direct use (no NULL checks) ---- */

/* The lock's `mon` word: record address | LL_MON_ON. */
#define LL_MON_ON ((uintptr_t)1)

/*
 * The first cache line of every monitor record: what an uncontended
 * monitored acquisition writes, inline at the call site (no call into the
 * library), and the release clears (the unlock of the record's ops copy).
 * Only the lock's holder writes it; others read it with relaxed atomic
 * loads.
 */
struct ll_mon_hot {
	uint64_t acquisitions;
	const char *last_file;
	uint64_t last_site;          /* line << 32 | tid of the last locker */
	uint64_t hold_t0;            /* start of a sampled hold; 0: none */
	int32_t holder_tid;          /* 0: free, or held by an unmonitored call */
};

#ifdef __cplusplus
#define LL_MON_TLS __thread
#else
#define LL_MON_TLS _Thread_local
#endif
/* The calling thread's id once it has used the monitor; 0 before. */
extern LL_API LL_MON_TLS int ll_mon_tid __attribute__((tls_model("initial-exec")));

/* The first try failed: wait (abs_mono NULL: without a deadline) and count; 0 or ETIMEDOUT. */
LL_API int ll_mon_wait(struct ll_mutex *m, const struct timespec *abs_mono, const char *file,
		       int line);
LL_API void ll_mon_trylock_failed(struct ll_mutex *m);
/* The sampled hold's start (one acquisition in LL_MON_HOLD_SAMPLE). */
LL_API void ll_mon_hold_start(struct ll_mon_hot *h);

/* The caller's first try took the lock, whose record is h: count it. */
static inline void ll_mon_acquired(struct ll_mon_hot *h, const char *file, int line)
{
	int tid = ll_mon_tid;
	if (__builtin_expect(tid == 0, 0))
		tid = ll_monitor_thread_id();
	uint64_t n = __atomic_load_n(&h->acquisitions, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&h->acquisitions, n, __ATOMIC_RELAXED);
	__atomic_store_n(&h->last_file, file, __ATOMIC_RELAXED);
	__atomic_store_n(&h->last_site, (uint64_t)(uint32_t)line << 32 | (uint32_t)tid,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h->holder_tid, tid, __ATOMIC_RELAXED);
	if (__builtin_expect(n % LL_MON_HOLD_SAMPLE == 0, 0))
		ll_mon_hold_start(h);
}

static inline struct ll_mon_hot *ll_mon_hot_of(uintptr_t mon)
{
	return (struct ll_mon_hot *)(mon & ~LL_MON_ON);
}

#ifdef __cplusplus
}
#endif
#endif
